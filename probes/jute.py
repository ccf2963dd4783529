"""Decoding of ZooKeeper 3.8 transaction records from jute's binary archive (drivers ring, pure).

What one transaction-log entry's payload holds (``Util.marshallTxnEntry``@release-3.8.0):
``TxnHeader`` then the record for the header's type then, when digests are enabled (the 3.8
default), a ``TxnDigest``. The record types come from ``zookeeper.jute`` and the mapping from
``SerializeUtils.deserializeTxn`` / ``DataTree.processTxn``:

=====================  ====  ===================================================================
header type            code  record
=====================  ====  ===================================================================
create / create2       1/15  CreateTxn(path, data, acl, ephemeral, parentCVersion) [V0: no cver]
createContainer        19    CreateContainerTxn(path, data, acl, parentCVersion)
createTTL              21    CreateTTLTxn(path, data, acl, parentCVersion, ttl)
delete/deleteContainer 2/20  DeleteTxn(path)
setData / reconfig     5/16  SetDataTxn(path, data, version = the *resulting* data version)
setACL                 7     SetACLTxn(path, acl, version = the resulting ACL version)
check (in multis)      13    CheckVersionTxn(path, version = the node's data version + 1)
multi                  14    MultiTxn(vector<Txn(type, buffer)>), each buffer one record above
createSession          -10   CreateSessionTxn(timeOut)
closeSession           -11   CloseSessionTxn(paths2Delete) — the session's ephemerals (3.8)
error                  -1    ErrorTxn(err)
=====================  ====  ===================================================================

Jute's binary archive is big-endian: int 4 bytes, long 8, boolean 1; ``buffer`` and
``ustring`` are an int length then the bytes (length -1 = null); ``vector`` an int count
(-1 = null) then the elements. Nothing here knows about files; see ``txnlog``.

What ZooKeeper 3.8 logs of failures (``PrepRequestProcessor.pRequestHelper``, checked on a
3.8.0 server): a failed standalone write — create of an existing node, setData or delete with
a wrong version, delete of a missing node — *is* logged: an ``error`` txn with only the
``KeeperException`` code (it consumes a zxid; no path, no data, no digest). Reads never are.
A failed multi is a ``multi`` txn whose failing op is ``ErrorTxn(code)`` and later ops
``ErrorTxn(RUNTIMEINCONSISTENCY)``; the ops *before* it are logged as prepared (path, data) but
never applied. :func:`decode_payload` reports them as ``DataTree.processTxn`` does — ``error``
ops with code 0 (OK) — and keeps the prepared op in :attr:`TxnOp.attempted`.

Not recorded at all: the create flags (only ``ephemeral``; a sequential create is logged with
its final, suffixed path — see :attr:`TxnOp.looks_sequential`) and the *expected* version of a
setData/delete (setData logs the resulting version).

**The client protocol** (``ClientCnxn`` ↔ ``NIOServerCnxn``@release-3.8.0), decoded by
:func:`decode_connect_request`, :func:`decode_request`, :func:`decode_connect_response`,
:func:`decode_reply` and :func:`decode_event` for the ZooKeeper request journal: every frame is an
int length then the bytes. The first client frame is a ``ConnectRequest`` (protocolVersion,
lastZxidSeen, timeOut, sessionId, passwd, optional readOnly), answered by a ``ConnectResponse``
(protocolVersion, timeOut — 0 when the session expired —, sessionId, passwd, optional readOnly).
Then each request is ``RequestHeader(xid, type)`` + the type's record, each answer
``ReplyHeader(xid, zxid, err)`` + a record when err is 0. Special xids: -1 a watch event
(``WatcherEvent(type, state, path)``), -2 ping, -4 auth, -8 SetWatches. A multi is a sequence of
``MultiHeader(type, done, err)`` + sub-record, ended by a header with done=true; its answer has one
``MultiHeader`` + result per op (err set on ``ErrorResult``s) and a ReplyHeader err of 0 even when
an op failed. The server ignores trailing bytes after a record; so does the decoder.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from probes.errors import JuteDecodeError
from probes.txnrecords import OP_NAMES, Acl, TxnDigest, TxnOp, TxnRecord

__all__ = [
    "CLIENT_OP_NAMES",
    "CREATE_MODES",
    "EVENT_TYPES",
    "KEEPER_STATES",
    "ClientOp",
    "ConnectRequest",
    "ConnectResponse",
    "JuteReader",
    "OpResult",
    "Reply",
    "WatcherEvent",
    "decode_connect_request",
    "decode_connect_response",
    "decode_event",
    "decode_payload",
    "decode_reply",
    "decode_request",
    "request_header",
]

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_HEADER = struct.Struct(">qiqqi")  # clientId, cxid, zxid, time, type
_DIGEST_SIZE = 12  # TxnDigest: int version + long treeDigest


class JuteReader:
    """Sequential reader over one jute binary archive; raises :class:`JuteDecodeError`."""

    __slots__ = ("_buf", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self._buf = buf
        self.pos = pos

    @property
    def remaining(self) -> int:
        return len(self._buf) - self.pos

    def _short(self, what: str, n: int) -> JuteDecodeError:
        return JuteDecodeError(f"{what}: need {n} bytes at {self.pos}, have {self.remaining}")

    def i32(self) -> int:
        try:
            (value,) = _INT.unpack_from(self._buf, self.pos)
        except struct.error:
            raise self._short("int", 4) from None
        self.pos += 4
        return int(value)

    def i64(self) -> int:
        try:
            (value,) = _LONG.unpack_from(self._buf, self.pos)
        except struct.error:
            raise self._short("long", 8) from None
        self.pos += 8
        return int(value)

    def boolean(self) -> bool:
        if self.pos >= len(self._buf):
            raise self._short("boolean", 1)
        self.pos += 1
        return self._buf[self.pos - 1] != 0

    def skip(self, n: int) -> None:
        if n > self.remaining:
            raise self._short("skip", n)
        self.pos += n

    def buffer(self) -> bytes | None:
        length = self.i32()
        if length < 0:  # jute writes null as -1 (any negative length reads as null)
            return None
        end = self.pos + length
        if end > len(self._buf):
            raise self._short("buffer", length)
        value, self.pos = self._buf[self.pos : end], end
        return value

    def ustring(self) -> str | None:
        raw = self.buffer()
        return None if raw is None else raw.decode("utf-8", errors="replace")

    def string(self) -> str:
        value = self.ustring()
        if value is None:
            raise JuteDecodeError(f"null string at {self.pos - 4}")
        return value

    def count(self) -> int:
        """A vector's element count (null vector = 0 elements)."""
        n = self.i32()
        if n > self.remaining:  # every element takes at least one byte
            raise JuteDecodeError(f"vector of {n} elements with {self.remaining} bytes left")
        return max(n, 0)


def _acl(r: JuteReader) -> tuple[Acl, ...]:
    return tuple(Acl(r.i32(), r.string(), r.string()) for _ in range(r.count()))


def _create(r: JuteReader, name: str) -> TxnOp:
    path, data, acl = r.string(), r.buffer(), _acl(r)
    if name == "createContainer":
        return TxnOp(name, path, data, acl=acl, parent_cversion=r.i32())
    if name == "createTTL":
        cversion = r.i32()
        return TxnOp(name, path, data, acl=acl, parent_cversion=cversion, ttl_ms=r.i64())
    ephemeral = r.boolean()
    # CreateTxnV0 (pre-3.3 logs) ends here; ZooKeeper then sets parentCVersion to -1.
    cversion = r.i32() if r.remaining >= 4 and r.remaining != _DIGEST_SIZE else -1
    return TxnOp(name, path, data, ephemeral=ephemeral, acl=acl, parent_cversion=cversion)


def _close_session(r: JuteReader) -> TxnOp:
    start = r.pos
    try:
        paths = tuple(r.string() for _ in range(r.count()))
        if r.remaining in (0, _DIGEST_SIZE):
            return TxnOp("closeSession", closed_paths=paths)
    except JuteDecodeError:
        pass
    r.pos = start  # zookeeper.closeSessionTxn.enabled=false: no record (a digest may follow)
    return TxnOp("closeSession")


_MULTI_SUB_OPS = frozenset({1, 2, 5, 13, 15, 19, 20, 21, -1})


def _body(r: JuteReader, code: int, *, in_multi: bool) -> TxnOp:
    """Decode the record of one txn of type ``code`` (``DataTree.processTxn``'s mapping)."""
    name = OP_NAMES.get(code)
    if name is None or (in_multi and code not in _MULTI_SUB_OPS):
        raise JuteDecodeError(f"unsupported txn type {code}{' inside a multi' if in_multi else ''}")
    if name.startswith("create") and name != "createSession":
        return _create(r, name)
    if name in ("delete", "deleteContainer"):
        return TxnOp(name, r.string())
    if name in ("setData", "reconfig"):
        return TxnOp(name, r.string(), r.buffer(), version=r.i32())
    if name == "setACL":
        path, acl = r.string(), _acl(r)
        return TxnOp(name, path, acl=acl, version=r.i32())
    if name == "check":
        return TxnOp(name, r.string(), version=r.i32() - 1)
    if name == "error":
        return TxnOp(name, error=r.i32())
    if name == "createSession":
        return TxnOp(name, session_timeout_ms=r.i32())
    if name == "closeSession":
        return _close_session(r)
    return _multi(r)


def _multi(r: JuteReader) -> TxnOp:
    raw: list[TxnOp] = []
    real_error_seen = False
    for _ in range(r.count()):
        code, buf = r.i32(), r.buffer() or b""
        if code == -1 and len(buf) != 4:
            # An ensemble member can log a failed multi after DataTree.processTxn has rewritten it
            # in place: the sub-op's type set to error, its data still the original txn (e.g. a
            # CheckVersionTxn), and no error code stored. DataTree's rule gives the code: OK before
            # the failing op, RUNTIMEINCONSISTENCY after it (seen in a 3-node ensemble's log).
            raw.append(TxnOp("error", error=-2 if real_error_seen else 0))
            continue
        real_error_seen = real_error_seen or code == -1
        sub = JuteReader(buf)
        raw.append(_body(sub, code, in_multi=True))
        if sub.remaining:
            raise JuteDecodeError(f"{sub.remaining} trailing bytes in multi sub-op {code}")
    if not any(o.op == "error" for o in raw):
        return TxnOp("multi", ops=tuple(raw))
    # A failed multi: ops prepared before the failing one are logged in full but never
    # applied; DataTree reports them as OK (0). Ops after it are logged as RUNTIMEINCONSISTENCY.
    ops = tuple(o if o.op == "error" else TxnOp("error", error=0, attempted=o) for o in raw)
    return TxnOp("multi", ops=ops)


def decode_payload(payload: bytes) -> TxnRecord:
    """Decode one entry's payload (header + record + optional digest) into a :class:`TxnRecord`."""
    if len(payload) < _HEADER.size:
        raise JuteDecodeError(f"payload of {len(payload)} bytes is shorter than a TxnHeader")
    session_id, cxid, zxid, time_ms, code = _HEADER.unpack_from(payload, 0)
    r = JuteReader(payload, _HEADER.size)
    txn = _body(r, code, in_multi=False)
    digest = None
    if r.remaining == _DIGEST_SIZE:
        digest = TxnDigest(r.i32(), r.i64())
    elif r.remaining:
        raise JuteDecodeError(f"{r.remaining} unexpected trailing bytes after a {txn.op} record")
    return TxnRecord(zxid, session_id, cxid, time_ms, txn, digest)


# --- the client protocol --------------------------------------------------------------------------

#: ``ZooDefs.OpCode`` (3.8) → name, as a client sends them.
CLIENT_OP_NAMES: dict[int, str] = {
    0: "notification", 1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData",
    6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync", 11: "ping", 12: "getChildren2",
    13: "check", 14: "multi", 15: "create2", 16: "reconfig", 17: "checkWatches",
    18: "removeWatches", 19: "createContainer", 20: "deleteContainer", 21: "createTTL",
    22: "multiRead", 100: "auth", 101: "setWatches", 102: "sasl", 103: "getEphemerals",
    104: "getAllChildrenNumber", 105: "setWatches2", 106: "addWatch", 107: "whoAmI",
    -10: "createSession", -11: "closeSession", -1: "error",
}  # fmt: skip
CREATE_MODES: dict[int, str] = {
    0: "PERSISTENT", 1: "EPHEMERAL", 2: "PERSISTENT_SEQUENTIAL", 3: "EPHEMERAL_SEQUENTIAL",
    4: "CONTAINER", 5: "PERSISTENT_WITH_TTL", 6: "PERSISTENT_SEQUENTIAL_WITH_TTL",
}  # fmt: skip
EVENT_TYPES: dict[int, str] = {
    -1: "None", 1: "NodeCreated", 2: "NodeDeleted", 3: "NodeDataChanged",
    4: "NodeChildrenChanged", 5: "DataWatchRemoved", 6: "ChildWatchRemoved",
    7: "PersistentWatchRemoved",
}  # fmt: skip
KEEPER_STATES: dict[int, str] = {
    0: "Disconnected", 3: "SyncConnected", 4: "AuthFailed", 5: "ConnectedReadOnly",
    6: "SaslAuthenticated", -112: "Expired", 7: "Closed",
}  # fmt: skip
_WATCH_LISTS = ("data", "exist", "child", "persistent", "persistentRecursive")
_STAT_SIZE = 68  # czxid mzxid ctime mtime (long) version cversion aversion (int) owner (long) ...


@dataclass(frozen=True, slots=True)
class ConnectRequest:
    protocol_version: int
    last_zxid_seen: int
    timeout_ms: int
    session_id: int  # 0 = a new session; else the session the client reconnects to
    passwd_len: int
    read_only: bool | None  # None: the (optional) field was absent


@dataclass(frozen=True, slots=True)
class ConnectResponse:
    protocol_version: int
    timeout_ms: int  # 0: the session the client asked for has expired
    session_id: int
    passwd_len: int
    read_only: bool | None


@dataclass(frozen=True, slots=True)
class ClientOp:
    """One request body (or one sub-op of a multi / multiRead), as the client sent it.

    ``version`` is the *expected* version (setData, delete, check, setACL; -1 = any); ``flags``
    the create mode; ``watch`` the watch flag of exists/getData/getChildren/getChildren2;
    ``mode`` the type of checkWatches/removeWatches or the mode of addWatch; ``watch_lists``
    SetWatches' (list name, paths) pairs with ``relative_zxid``; ``scheme`` auth's scheme (the
    credential itself is never kept).
    """

    opcode: int
    path: str | None = None
    watch: bool | None = None
    data: bytes | None = None
    flags: int | None = None
    version: int | None = None
    ttl_ms: int | None = None
    acl: tuple[Acl, ...] = ()
    ops: tuple[ClientOp, ...] = ()
    mode: int | None = None
    relative_zxid: int | None = None
    watch_lists: tuple[tuple[str, tuple[str, ...]], ...] = ()
    scheme: str | None = None

    @property
    def op(self) -> str:
        return CLIENT_OP_NAMES.get(self.opcode, f"op{self.opcode}")

    @property
    def create_mode(self) -> str | None:
        return None if self.flags is None else CREATE_MODES.get(self.flags, f"mode{self.flags}")


@dataclass(frozen=True, slots=True)
class OpResult:
    """One result of a multi's answer: its type (-1 = error), error code, created path."""

    opcode: int
    err: int
    path: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A ``ReplyHeader`` and what the journal keeps of the record after it."""

    xid: int
    zxid: int
    err: int
    path: str | None = None  # create*: the path created (sequential suffix included)
    results: tuple[OpResult, ...] = ()  # multi / multiRead


@dataclass(frozen=True, slots=True)
class WatcherEvent:
    type: int
    state: int
    path: str | None

    @property
    def type_name(self) -> str:
        return EVENT_TYPES.get(self.type, f"type{self.type}")

    @property
    def state_name(self) -> str:
        return KEEPER_STATES.get(self.state, f"state{self.state}")


def _optional_bool(r: JuteReader) -> bool | None:
    return r.boolean() if r.remaining else None


def decode_connect_request(body: bytes) -> ConnectRequest:
    r = JuteReader(body)
    version, zxid, timeout, session = r.i32(), r.i64(), r.i32(), r.i64()
    passwd = r.buffer() or b""
    return ConnectRequest(version, zxid, timeout, session, len(passwd), _optional_bool(r))


def decode_connect_response(body: bytes) -> ConnectResponse:
    r = JuteReader(body)
    version, timeout, session = r.i32(), r.i32(), r.i64()
    passwd = r.buffer() or b""
    return ConnectResponse(version, timeout, session, len(passwd), _optional_bool(r))


def request_header(body: bytes) -> tuple[int, int]:
    """(xid, opcode) of a request frame (raises on a frame shorter than 8 bytes)."""
    r = JuteReader(body)
    return r.i32(), r.i32()


def _strings(r: JuteReader) -> tuple[str, ...]:
    return tuple(r.string() for _ in range(r.count()))


def _multi_request(r: JuteReader, opcode: int) -> ClientOp:
    ops: list[ClientOp] = []
    while True:
        sub, done, _err = r.i32(), r.boolean(), r.i32()
        if done:
            return ClientOp(opcode, ops=tuple(ops))
        if sub in (14, 22):
            raise JuteDecodeError(f"nested multi (type {sub}) inside a multi")
        ops.append(_request_body(r, sub))


def _request_body(r: JuteReader, opcode: int) -> ClientOp:
    """The record of one request of type ``opcode`` (``FinalRequestProcessor``'s mapping)."""
    if opcode in (1, 15, 19, 21):  # CreateRequest / CreateTTLRequest
        path, data, acl, flags = r.string(), r.buffer(), _acl(r), r.i32()
        ttl = r.i64() if opcode == 21 else None
        return ClientOp(opcode, path, data=data, acl=acl, flags=flags, ttl_ms=ttl)
    if opcode in (2, 13):  # DeleteRequest, CheckVersionRequest
        return ClientOp(opcode, r.string(), version=r.i32())
    if opcode in (3, 4, 8, 12):  # Exists/GetData/GetChildren/GetChildren2Request
        return ClientOp(opcode, r.string(), watch=r.boolean())
    if opcode == 5:
        return ClientOp(opcode, r.string(), data=r.buffer(), version=r.i32())
    if opcode == 7:
        path, acl = r.string(), _acl(r)
        return ClientOp(opcode, path, acl=acl, version=r.i32())
    if opcode in (6, 9, 20, 103, 104):  # one path (getEphemerals: a prefix)
        return ClientOp(opcode, r.string())
    if opcode in (17, 18, 106):  # CheckWatches/RemoveWatches(path, type), AddWatch(path, mode)
        return ClientOp(opcode, r.string(), mode=r.i32())
    if opcode in (14, 22):
        return _multi_request(r, opcode)
    if opcode in (101, 105):  # SetWatches / SetWatches2
        zxid, n = r.i64(), 3 if opcode == 101 else 5
        lists = tuple((name, _strings(r)) for name in _WATCH_LISTS[:n])
        return ClientOp(opcode, relative_zxid=zxid, watch_lists=lists)
    if opcode == 100:  # AuthPacket(type, scheme, auth): the credential is not kept
        r.i32()
        scheme = r.string()
        r.buffer()
        return ClientOp(opcode, scheme=scheme)
    if opcode == 16:  # ReconfigRequest(joining, leaving, newMembers, curConfigId)
        joining, leaving, members = r.ustring(), r.ustring(), r.ustring()
        return ClientOp(opcode, data=f"{joining}|{leaving}|{members}".encode(), version=r.i64())
    if opcode in (11, 102, 107, -11):  # ping, sasl (token not kept), whoAmI, closeSession
        return ClientOp(opcode)
    raise JuteDecodeError(f"unknown request type {opcode}")


def decode_request(body: bytes) -> tuple[int, ClientOp]:
    """(xid, op) of one request frame body; raises :class:`JuteDecodeError`."""
    r = JuteReader(body)
    xid, opcode = r.i32(), r.i32()
    return xid, _request_body(r, opcode)


def _multi_results(r: JuteReader) -> tuple[OpResult, ...]:
    out: list[OpResult] = []
    while True:
        opcode, done, err = r.i32(), r.boolean(), r.i32()
        if done:
            return tuple(out)
        path = None
        if opcode == -1:
            err = r.i32()  # ErrorResult: ErrorResponse(err)
        elif opcode in (1, 15, 19, 21):
            path = r.string()
            r.skip(_STAT_SIZE if opcode != 1 else 0)
        elif opcode == 5:
            r.skip(_STAT_SIZE)
        elif opcode == 4:  # multiRead getData: data + stat
            r.buffer()
            r.skip(_STAT_SIZE)
        elif opcode == 8:  # multiRead getChildren
            _strings(r)
        elif opcode not in (2, 13):
            raise JuteDecodeError(f"unknown multi result type {opcode}")
        out.append(OpResult(opcode, err, path))


def decode_reply(body: bytes, opcode: int | None) -> Reply:
    """A reply frame to a request of type ``opcode`` (``None``: unknown, header only)."""
    r = JuteReader(body)
    xid, zxid, err = r.i32(), r.i64(), r.i32()
    if err != 0 or opcode is None:
        return Reply(xid, zxid, err)
    if opcode in (1, 15, 19, 21):
        return Reply(xid, zxid, err, path=r.string())
    if opcode in (14, 22):
        return Reply(xid, zxid, err, results=_multi_results(r))
    return Reply(xid, zxid, err)


def decode_event(body: bytes) -> tuple[Reply, WatcherEvent]:
    """A notification frame (xid -1): its header and the ``WatcherEvent``."""
    r = JuteReader(body)
    header = Reply(r.i32(), r.i64(), r.i32())
    return header, WatcherEvent(r.i32(), r.i32(), r.ustring())
