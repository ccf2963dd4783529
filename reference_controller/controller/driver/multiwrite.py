"""Lean pipelined ``multi`` requests through kazoo's connection (ring: drivers).

The controller's default write mode is Kafka's: one ``multi[check /controller_epoch v, op]`` per
write, thousands in flight at once (a broker leading 5k partitions dies → 5,000 of them; a 10k
partition topic creation → 20,000). kazoo's raw API spends most of a request's client-side cost in
Python: a ``TransactionRequest`` and kazoo records per op, ``Transaction.serialize`` through
``bytearray`` per field, an ``AsyncResult`` with its own ``Condition`` per request, a wake-up
``send`` on the connection's pipe per request, and ``Transaction.deserialize`` building namedtuples.
This module sends the *same bytes* with less work:

- :func:`encode_multi` writes a ``MultiOperationRecord`` body exactly as kazoo's ``Transaction``
  does (``MultiHeader(type, false, -1)`` + the op's record per op, then ``MultiHeader(-1, true,
  -1)``; kazoo's string/buffer conventions: null or empty string → length -1, null data → -1,
  ``OPEN_ACL_UNSAFE`` for creates), with the fencing check encoded once per batch.
- :class:`MultiRequest` is the record kazoo's connection sends (``type`` 14, ``serialize``,
  ``deserialize(buffer, offset)``); its answer is decoded to one plain value per op: the created
  path (``str``; kazoo's ``Transaction.unchroot`` strips the chroot, as for its own multis), the
  setData ``Stat`` fields (a ``tuple`` of the 11 jute ints), ``None`` for check/delete, or the
  op's error code (``int``; 0 = rolled back, as ZooKeeper marks the ops of a failed multi).
- :class:`Pipeline` queues each chunk of a batch with one wake-up of kazoo's connection thread
  (its requests go to kazoo's queue together, exactly as ``KazooClient._call`` queues one) and
  has one wait for the whole batch: ZooKeeper answers a session's requests in order and kazoo
  completes them in order, so no ``AsyncResult``/``Condition`` per request is needed; each slot
  records its value or the exception kazoo sets (``ConnectionLoss`` when the connection drops,
  …) for the driver to map exactly as before.

Everything on the wire is unchanged: same opcode, same body bytes, same order, same session
(kazoo still numbers and frames every request). The other half of the client-side cost is kazoo's
connection loop itself: see ``kazoo_handler.py``. ``tests/integration/controller/test_multiwrite.py``
compares the bytes of both paths through a recording proxy and the outcomes against a real
ZooKeeper.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from kazoo.exceptions import AuthFailedError, ConnectionClosedError, SessionExpiredError
from kazoo.protocol.states import KeeperState

from reference_controller.controller.ports import CheckOp, CreateOp, DeleteOp, SetDataOp, Stat, ZkOp

__all__ = [
    "MULTI_OPCODE",
    "MultiRequest",
    "Pipeline",
    "decode_multi",
    "encode_multi",
    "encode_op",
    "stat_of",
]

MULTI_OPCODE = 14
CREATE_OPCODE = 1
DELETE_OPCODE = 2
SET_DATA_OPCODE = 5
CHECK_OPCODE = 13
ERROR_TYPE = -1

_HEADER = struct.Struct("!iBi")
_INT = struct.Struct("!i")
_STAT = struct.Struct("!qqqqiiiqiiq")
_END = _HEADER.pack(-1, True, -1)
_NULL = _INT.pack(-1)
_CREATE_HEADER = _HEADER.pack(CREATE_OPCODE, False, -1)
_DELETE_HEADER = _HEADER.pack(DELETE_OPCODE, False, -1)
_SET_DATA_HEADER = _HEADER.pack(SET_DATA_OPCODE, False, -1)
_CHECK_HEADER = _HEADER.pack(CHECK_OPCODE, False, -1)


def _string(text: str | None) -> bytes:
    """kazoo's ``write_string``: a null *or empty* string is written as length -1."""
    if not text:
        return _NULL
    raw = text.encode()
    return _INT.pack(len(raw)) + raw


def _buffer(data: bytes | None) -> bytes:
    """kazoo's ``write_buffer``: null data is length -1, empty data length 0."""
    if data is None:
        return _NULL
    return _INT.pack(len(data)) + data


#: ``OPEN_ACL_UNSAFE`` as kazoo's ``Create.serialize`` writes it: a vector of one ACL
#: (perms ALL = 31, scheme "world", id "anyone").
_OPEN_ACL = _INT.pack(1) + _INT.pack(31) + _string("world") + _string("anyone")


def encode_op(op: ZkOp, path: str) -> bytes:
    """One sub-op of a multi: its MultiHeader and record; ``path`` is ``op.path`` chrooted."""
    if isinstance(op, SetDataOp):
        return _SET_DATA_HEADER + _string(path) + _buffer(op.data) + _INT.pack(op.version)
    if isinstance(op, CreateOp):
        flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
        return _CREATE_HEADER + _string(path) + _buffer(op.data) + _OPEN_ACL + _INT.pack(flags)
    if isinstance(op, DeleteOp):
        return _DELETE_HEADER + _string(path) + _INT.pack(op.version)
    if isinstance(op, CheckOp):
        return _CHECK_HEADER + _string(path) + _INT.pack(op.version)
    raise TypeError(f"not a ZooKeeper write op: {op!r}")


def encode_multi(encoded_ops: Sequence[bytes]) -> bytes:
    """The ``MultiOperationRecord`` body of already encoded sub-ops (kazoo's ``Transaction``)."""
    return b"".join(encoded_ops) + _END


def decode_multi(buf: bytes, offset: int) -> list[Any]:
    """A ``MultiResponse``: per op the created path, the setData stat tuple, None (check/delete
    done) or the op's error code (int); kazoo's ``Transaction.deserialize`` reads the same fields."""
    results: list[Any] = []
    unpack_header = _HEADER.unpack_from
    while True:
        op_type, done, _err = unpack_header(buf, offset)
        offset += 9
        if done:
            return results
        if op_type == SET_DATA_OPCODE:
            results.append(_STAT.unpack_from(buf, offset))
            offset += 68
        elif op_type == ERROR_TYPE:
            results.append(_INT.unpack_from(buf, offset)[0])
            offset += 4
        elif op_type == CREATE_OPCODE:
            (length,) = _INT.unpack_from(buf, offset)
            offset += 4
            if length < 0:
                results.append(None)
            else:
                results.append(buf[offset : offset + length].decode())
                offset += length
        elif op_type in (CHECK_OPCODE, DELETE_OPCODE):
            results.append(None)
        else:
            raise ValueError(f"multi response: unexpected op type {op_type}")


def stat_of(fields: tuple[int, ...]) -> Stat:
    """The port's ``Stat`` of a jute Stat tuple (czxid, mzxid, ctime, mtime, version, cversion,
    aversion, ephemeralOwner, dataLength, numChildren, pzxid)."""
    return Stat(
        version=fields[4],
        cversion=fields[5],
        czxid=fields[0],
        mzxid=fields[1],
        ephemeral_owner=fields[7],
        num_children=fields[9],
        data_length=fields[8],
    )


class MultiRequest:
    """kazoo request record of one pre-encoded ``multi`` (opcode 14, as kazoo's ``Transaction``)."""

    type = MULTI_OPCODE
    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body

    def serialize(self) -> bytes:
        return self.body

    @staticmethod
    def deserialize(buf: bytes, offset: int) -> list[Any]:
        return decode_multi(buf, offset)

    def __repr__(self) -> str:
        return f"MultiRequest({len(self.body)} bytes)"


_UNSET: Any = object()


class _Slot:
    """kazoo's async-object interface (``set`` / ``set_exception``) for one request of a batch."""

    __slots__ = ("_index", "_pipeline")

    def __init__(self, pipeline: Pipeline, index: int) -> None:
        self._pipeline = pipeline
        self._index = index

    def set(self, value: Any = None) -> None:
        self._pipeline._complete(self._index, value, None)

    def set_exception(self, exception: BaseException) -> None:
        self._pipeline._complete(self._index, None, exception)


class Pipeline:
    """One batch of requests in flight on a kazoo client; :meth:`wait` returns when every request
    has its answer (or kazoo's exception for it), each recorded once."""

    def __init__(self, count: int) -> None:
        self.values: list[Any] = [_UNSET] * count
        self.errors: list[BaseException | None] = [None] * count
        self._remaining = count
        self._lock = threading.Lock()
        self._done = threading.Event()
        if count == 0:
            self._done.set()

    def _complete(self, index: int, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self.values[index] is not _UNSET:
                return  # kazoo may fail a request twice (e.g. closed while queued): first wins
            self.values[index] = value
            self.errors[index] = error
            self._remaining -= 1
            if self._remaining == 0:
                self._done.set()

    def send(self, zk: Any, requests: Sequence[Any], first: int = 0) -> None:
        """Queue ``requests`` (slots ``first``, ``first + 1``, …) on kazoo client ``zk`` as
        ``KazooClient._call`` queues one request each, but with a single wake-up of the connection
        thread (one byte per queued request, written at once)."""
        slots = [(request, _Slot(self, first + i)) for i, request in enumerate(requests)]
        refusal = _refusal(zk)
        if refusal is not None:
            for _request, slot in slots:
                slot.set_exception(refusal)
            return
        zk._queue.extend(slots)
        try:
            zk._connection._write_sock.sendall(b"\0" * len(slots))
        except Exception:  # as kazoo's _call: any failure = the connection is closed
            for _request, slot in slots:
                slot.set_exception(ConnectionClosedError("Connection has been closed"))

    def abandon(self, indices: Iterable[int], error: BaseException) -> None:
        """Record ``error`` for slots that are not sent at all."""
        for index in indices:
            self._complete(index, None, error)

    def wait(self) -> None:
        self._done.wait()


def _refusal(zk: Any) -> BaseException | None:
    """The exception kazoo's ``_call`` sets instead of queueing, for the client's current state."""
    state = zk._state
    error: BaseException
    if state == KeeperState.AUTH_FAILED:
        error = AuthFailedError()
    elif state == KeeperState.CLOSED:
        error = ConnectionClosedError("Connection has been closed")
    elif state == KeeperState.EXPIRED_SESSION:
        error = SessionExpiredError()
    else:
        return None
    return error
