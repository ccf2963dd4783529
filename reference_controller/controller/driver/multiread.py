"""ZooKeeper's ``multiRead`` (opcode 22) through kazoo's connection (ring: drivers).

ZooKeeper 3.6+ answers a batch of getData / getChildren in one request, each with its own
result or error, and sets no watch (``ZooKeeperServer`` processes it with ``watcher = null``).
kazoo does not expose it, so this module supplies the request record kazoo's connection sends
and decodes like its own (a ``type`` opcode, ``serialize()``, ``deserialize(buffer, offset)``),
framed as ZooKeeper's ``MultiOperationRecord`` / ``MultiResponse``:

==========  ==================================================================================
request     per op: MultiHeader(type=4 getData | 8 getChildren, done=false, err=-1),
            path (ustring), watch=false (bool); then MultiHeader(-1, true, -1)
response    per op: MultiHeader(type, done=false, err) then GetDataResult(data buffer, Stat) |
            GetChildrenResult(vector<ustring>) | ErrorResult(err) when type = -1;
            then MultiHeader(-1, true, -1)
==========  ==================================================================================

A server without ``multiRead`` (3.5 and older) answers the unknown opcode with an error
(``UNIMPLEMENTED``, or a closed connection on some versions); :class:`MultiReadSupport`
remembers the first such answer and the driver falls back to pipelined per-request reads.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.states import ZnodeStat

__all__ = ["MULTI_READ_OPCODE", "MultiRead", "MultiReadSupport", "ReadOp"]

MULTI_READ_OPCODE = 22
GET_DATA_OPCODE = 4
GET_CHILDREN_OPCODE = 8
_ERROR_TYPE = -1
_HEADER = struct.Struct("!iBi")
_INT = struct.Struct("!i")
_STAT = struct.Struct("!qqqqiiiqiiq")

ReadKind = Literal["data", "children"]


@dataclass(frozen=True)
class ReadOp:
    """One read of a batch: ``kind`` of the znode at ``path`` (already chrooted)."""

    kind: ReadKind
    path: str


def _ustring(text: str) -> bytes:
    raw = text.encode()
    return _INT.pack(len(raw)) + raw


def _read_buffer(buf: bytes, offset: int) -> tuple[bytes | None, int]:
    (length,) = _INT.unpack_from(buf, offset)
    offset += _INT.size
    if length < 0:
        return None, offset
    return bytes(buf[offset : offset + length]), offset + length


def _read_string(buf: bytes, offset: int) -> tuple[str, int]:
    raw, offset = _read_buffer(buf, offset)
    return (raw or b"").decode(), offset


class MultiRead:
    """kazoo request record for ``multiRead``; the result is one value per op, in order:
    ``(data, ZnodeStat)`` for getData, ``list[str]`` for getChildren, or a
    :class:`kazoo.exceptions.ZookeeperError` instance (e.g. ``NoNodeError()``) for a failed op."""

    type = MULTI_READ_OPCODE

    def __init__(self, ops: Sequence[ReadOp]) -> None:
        self.ops = tuple(ops)

    def serialize(self) -> bytes:
        out = bytearray()
        for op in self.ops:
            opcode = GET_DATA_OPCODE if op.kind == "data" else GET_CHILDREN_OPCODE
            out += _HEADER.pack(opcode, False, -1) + _ustring(op.path) + b"\x00"
        out += _HEADER.pack(-1, True, -1)
        return bytes(out)

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list[Any]:
        results: list[Any] = []
        while True:
            op_type, done, err = _HEADER.unpack_from(buf, offset)
            offset += _HEADER.size
            if done:
                return results
            if op_type == GET_DATA_OPCODE:
                data, offset = _read_buffer(buf, offset)
                stat = ZnodeStat._make(_STAT.unpack_from(buf, offset))
                offset += _STAT.size
                results.append((data, stat))
            elif op_type == GET_CHILDREN_OPCODE:
                (count,) = _INT.unpack_from(buf, offset)
                offset += _INT.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = _read_string(buf, offset)
                    children.append(child)
                results.append(children)
            elif op_type == _ERROR_TYPE:
                (code,) = _INT.unpack_from(buf, offset)
                offset += _INT.size
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"multiRead response: unexpected op type {op_type} (err {err})")

    def __repr__(self) -> str:
        return f"MultiRead({len(self.ops)} ops)"


class MultiReadSupport:
    """Whether the server serves ``multiRead``: unknown until the first answer, then remembered."""

    def __init__(self, enabled: bool = True) -> None:
        self.supported: bool | None = None if enabled else False

    @property
    def usable(self) -> bool:
        return self.supported is not False

    def record(self, supported: bool) -> bool:
        """Remember the server's answer; True when this is news (the caller logs it once)."""
        news = self.supported is None
        self.supported = supported
        return news
