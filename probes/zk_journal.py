"""ZooKeeper request journal: a transparent recording proxy on a node's ZooKeeper link (drivers ring).

One :class:`ZkRecordingProxy` is a :class:`~probes.tap.Tap`: it listens on loopback and forwards
every byte, unchanged and in order, to its ``upstream`` (a ZooKeeper server — or whatever sits in
front of it: a chaos proxy). Its observer decodes the client protocol with :mod:`probes.jute` and
appends, to a :class:`ZkJournal`, one record per frame:

==================  ===========================================================================
record              what it holds
==================  ===========================================================================
:class:`ZkConnect`  a connection's ``ConnectRequest`` (session asked for, timeout, password length)
:class:`ZkConnected` the ``ConnectResponse`` (session granted, negotiated timeout; 0 = expired)
:class:`ZkRequest`  one request: xid, opcode and the decoded :class:`~probes.jute.ClientOp`
                    (path, watch flag, create mode, expected versions, multi sub-ops, SetWatches…);
                    an undecodable frame keeps its opcode, length and first bytes
:class:`ZkReply`    the answer to a request: xid, zxid, err, created path, multi results
:class:`ZkEvent`    a watch event delivered (xid -1): type, state, path
:class:`ZkClosed`   the end of a connection and which side ended it
==================  ===========================================================================

Every record has a sequence number, a ``time.monotonic()`` timestamp, the connection id and the
session id (0 until the ``ConnectResponse`` names it; earlier records are then patched). Paths are
stored relative to the journal's ``chroot`` (the client puts it in front of every path it sends).
Records are journalled *before* the frame is forwarded, so whoever sees a frame's effect finds it
recorded. Nothing alters traffic: pings, auth, SetWatches, closeSession and anything that is not
the client protocol at all (a four-letter word) pass unchanged; decoding stops for one direction of
a connection only if its framing is lost (recorded as a :class:`ZkRaw`), never the connection.

Chaining (the tap's seams): ``upstream`` may be changed at any time (new connections use it),
``listen_port`` may be fixed, so a fault proxy can go behind (upstream = the fault proxy) or in
front (it forwards to :attr:`ZkRecordingProxy.port`). :meth:`ZkRecordingProxy.drop_connections`
cuts every live connection (clients see a connection loss and reconnect). All proxies may share
one :class:`~probes.tap.ProxyLoop` (an asyncio loop in a daemon thread).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from probes.errors import JuteDecodeError
from probes.jute import (
    CLIENT_OP_NAMES,
    ClientOp,
    ConnectRequest,
    ConnectResponse,
    OpResult,
    WatcherEvent,
    decode_connect_request,
    decode_connect_response,
    decode_event,
    decode_reply,
    decode_request,
    request_header,
)
from probes.tap import Address, ProxyLoop, Side, Tap
from probes.txnrecords import error_name

__all__ = [
    "WATCHING_OPS",
    "WRITE_OPS",
    "ProxyLoop",
    "ZkClosed",
    "ZkConnect",
    "ZkConnected",
    "ZkEvent",
    "ZkJournal",
    "ZkRaw",
    "ZkRecord",
    "ZkRecordingProxy",
    "ZkReply",
    "ZkRequest",
    "describe_client_op",
]

#: Requests that can leave a watch (exists, getData, getChildren, getChildren2).
WATCHING_OPS = frozenset({"exists", "getData", "getChildren", "getChildren2"})
#: Requests that write (a multi counts as a write; a multiRead does not).
WRITE_OPS = frozenset(
    {"create", "create2", "createContainer", "createTTL", "delete", "setData", "setACL", "multi", "reconfig"}
)
_MAX_FRAME = 64 * 1024 * 1024  # far above jute.maxbuffer: a larger "length" is not this protocol
_RAW_KEPT = 256
_SECRET_OPS = frozenset({100, 102})  # auth, sasl: their frames carry credentials, never kept
R = TypeVar("R", bound="ZkRecord")


@dataclass(frozen=True, slots=True)
class ZkRecord:
    seq: int
    time_s: float  # time.monotonic()
    conn: int
    session: int  # signed 64-bit, as the transaction log and kazoo give it; 0 = not yet known

    def describe(self) -> str:
        """One line for traces: ``#12 conn=1 session=0x1000… <what>``."""
        return f"#{self.seq} conn={self.conn} {_sid(self.session)} {self._what()}"

    def _what(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, slots=True)
class ZkConnect(ZkRecord):
    request: ConnectRequest

    def _what(self) -> str:
        q = self.request
        return f"connect asking session=0x{q.session_id & 0xFFFFFFFFFFFFFFFF:x} timeout={q.timeout_ms}ms"


@dataclass(frozen=True, slots=True)
class ZkConnected(ZkRecord):
    response: ConnectResponse

    @property
    def expired(self) -> bool:
        return self.response.timeout_ms <= 0

    def _what(self) -> str:
        return (
            "connected: session expired"
            if self.expired
            else f"connected timeout={self.response.timeout_ms}ms"
        )


@dataclass(frozen=True, slots=True)
class ZkRequest(ZkRecord):
    xid: int
    opcode: int
    length: int
    op: ClientOp | None  # None: undecodable (see decode_error, raw)
    decode_error: str | None = None
    raw: bytes | None = None  # the frame (undecodable frames: its first bytes; else if keep_raw)

    @property
    def name(self) -> str:
        return CLIENT_OP_NAMES.get(self.opcode, f"op{self.opcode}")

    @property
    def path(self) -> str | None:
        return None if self.op is None else self.op.path

    @property
    def watch(self) -> bool:
        return bool(self.op is not None and self.op.watch)

    @property
    def sub_ops(self) -> tuple[ClientOp, ...]:
        return () if self.op is None else self.op.ops

    def _what(self) -> str:
        body = (
            f"{self.name} undecodable, {self.length} bytes ({self.decode_error})"
            if self.op is None
            else describe_client_op(self.op)
        )
        return f"xid={self.xid} {body}"


@dataclass(frozen=True, slots=True)
class ZkReply(ZkRecord):
    xid: int
    zxid: int
    err: int
    request_seq: int | None
    opcode: int | None
    path: str | None = None
    results: tuple[OpResult, ...] = ()
    decode_error: str | None = None

    @property
    def ok(self) -> bool:
        """err 0 and, for a multi, every op OK."""
        return self.err == 0 and all(r.err == 0 for r in self.results)

    def _what(self) -> str:
        errs = [error_name(r.err) for r in self.results]
        extra = f" path={self.path}" if self.path else ""
        extra += f" results={errs}" if self.results else ""
        extra += f" ({self.decode_error})" if self.decode_error else ""
        return (
            f"reply xid={self.xid} to #{self.request_seq}"
            f" zxid=0x{self.zxid & 0xFFFFFFFFFFFFFFFF:x} {error_name(self.err)}{extra}"
        )


@dataclass(frozen=True, slots=True)
class ZkEvent(ZkRecord):
    event: WatcherEvent

    @property
    def type(self) -> str:
        return self.event.type_name

    @property
    def path(self) -> str | None:
        return self.event.path

    def describe(self) -> str:
        e = self.event
        return (
            f"#{self.seq} conn={self.conn} {_sid(self.session)} event {e.type_name} {e.state_name} {e.path}"
        )


@dataclass(frozen=True, slots=True)
class ZkRaw(ZkRecord):
    """Bytes that are not a decodable frame: a lost framing (e.g. a four-letter word) or a
    connect frame that does not decode. ``side`` is who sent them, ``raw`` their first bytes."""

    side: str  # "client" or "server"
    length: int
    error: str
    raw: bytes

    def _what(self) -> str:
        return f"{self.side} sent {self.length} undecodable bytes {self.raw[:16]!r}: {self.error}"


@dataclass(frozen=True, slots=True)
class ZkClosed(ZkRecord):
    by: str  # "client", "server", "proxy" (drop_connections / close), "upstream-unreachable"
    reason: str = ""

    def _what(self) -> str:
        return f"closed by {self.by} {self.reason}".rstrip()


def _sid(session: int) -> str:
    return f"session=0x{session & 0xFFFFFFFFFFFFFFFF:x}"


def describe_client_op(op: ClientOp) -> str:
    """One line: ``getChildren /brokers/ids watch``, ``multi[check /controller_epoch v=1; …]``."""
    if op.ops or op.op in ("multi", "multiRead"):
        return f"{op.op}[" + "; ".join(describe_client_op(o) for o in op.ops) + "]"
    parts = [op.op] if op.path is None else [op.op, op.path]
    if op.watch:
        parts.append("watch")
    if op.flags is not None:
        parts.append(op.create_mode or "")
    if op.data is not None and op.opcode != 16:
        parts.append(f"data={op.data[:120]!r}")
    if op.version is not None:
        parts.append(f"v={op.version}")
    parts += [f"{name}={list(paths)}" for name, paths in op.watch_lists if paths]
    if op.scheme is not None:
        parts.append(f"scheme={op.scheme}")
    return " ".join(parts)


def _relative(path: str | None, chroot: str) -> str | None:
    if path is None or not chroot:
        return path
    if path == chroot:
        return "/"
    return path[len(chroot) :] if path.startswith(chroot + "/") else path


def _relative_op(op: ClientOp, chroot: str) -> ClientOp:
    if not chroot:
        return op
    return dataclasses.replace(
        op,
        path=_relative(op.path, chroot),
        ops=tuple(_relative_op(o, chroot) for o in op.ops),
        watch_lists=tuple((n, tuple(_relative(p, chroot) or p for p in ps)) for n, ps in op.watch_lists),
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": value.hex()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class ZkJournal:
    """Thread-safe, ordered record of one node's ZooKeeper traffic (through any number of proxies).

    ``chroot``: paths are stored relative to it. ``jsonl_path``: every record is also written
    there, one JSON object per line (``{"kind": "ZkRequest", …}``), as it is made: a record made
    before its connection's ConnectResponse (the ``ZkConnect``) keeps session 0 in the file.
    ``keep_raw``: keep every request frame's bytes in :attr:`ZkRequest.raw` (undecodable ones are
    always kept, truncated; auth and SASL frames never, they carry credentials).
    """

    def __init__(
        self, name: str = "", *, chroot: str = "", jsonl_path: Path | None = None, keep_raw: bool = False
    ) -> None:
        self.name, self.chroot, self.keep_raw = name, chroot.rstrip("/"), keep_raw
        self._lock = threading.Lock()
        self._items: list[ZkRecord] = []
        self._replies: dict[int, ZkReply] = {}
        self._conn_ids = itertools.count(1)
        self._file: IO[str] | None = None
        if jsonl_path is not None:
            self._file = jsonl_path.open("a", encoding="utf-8", buffering=1)

    # --- writing (proxies) ----------------------------------------------------------------------

    def new_connection(self) -> int:
        return next(self._conn_ids)

    def append(self, make: Callable[[int, float], R]) -> R:
        """Append ``make(seq, now)``; returns the record."""
        with self._lock:
            record = make(len(self._items), time.monotonic())
            self._items.append(record)
            if isinstance(record, ZkReply) and record.request_seq is not None:
                self._replies[record.request_seq] = record
            if self._file is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._file.write(json.dumps({"kind": type(record).__name__, **_jsonable(record)}) + "\n")
            return record

    def set_session(self, conn: int, session: int) -> None:
        """Name the session of ``conn``'s records made before its ConnectResponse."""
        with self._lock:
            for i, r in enumerate(self._items):
                if r.conn == conn and r.session == 0:
                    patched = self._items[i] = dataclasses.replace(r, session=session)
                    if isinstance(patched, ZkReply) and patched.request_seq is not None:
                        self._replies[patched.request_seq] = patched

    # --- reading (probes) -----------------------------------------------------------------------

    def records(self, since: int = 0) -> list[ZkRecord]:
        with self._lock:
            return list(self._items[since:])

    def mark(self) -> int:
        """Current length: pass as ``since`` to see only later records."""
        with self._lock:
            return len(self._items)

    def _of(self, kind: type[R], since: int, session: int | None) -> list[R]:
        return [
            r
            for r in self.records(since)
            if isinstance(r, kind) and (session is None or r.session == session)
        ]

    def requests(
        self,
        *,
        session: int | None = None,
        op: str | Iterable[str] | None = None,
        path: str | None = None,
        watch: bool | None = None,
        since: int = 0,
        pings: bool = False,
    ) -> list[ZkRequest]:
        """Requests, oldest first; ``op`` a name or names (``"getChildren"``), ``path`` relative to
        the chroot, ``watch`` the watch flag. Pings are left out unless ``pings`` or ``op="ping"``."""
        names = {op} if isinstance(op, str) else None if op is None else set(op)
        return [
            r
            for r in self._of(ZkRequest, since, session)
            if (names is None or r.name in names)
            and (pings or r.opcode != 11 or names is not None)
            and (path is None or r.path == path)
            and (watch is None or r.watch == watch)
        ]

    def reply_to(self, request: ZkRequest) -> ZkReply | None:
        with self._lock:
            return self._replies.get(request.seq)

    def replies(self, *, session: int | None = None, since: int = 0) -> list[ZkReply]:
        return self._of(ZkReply, since, session)

    def events(
        self, *, session: int | None = None, type: str | None = None, path: str | None = None, since: int = 0
    ) -> list[ZkEvent]:
        """Watch events delivered, e.g. ``type="NodeChildrenChanged"``, ``path="/brokers/ids"``."""
        return [
            e
            for e in self._of(ZkEvent, since, session)
            if (type is None or e.type == type) and (path is None or e.path == path)
        ]

    def connections(self) -> list[ZkConnected]:
        return self._of(ZkConnected, 0, None)

    def sessions(self) -> list[int]:
        """Sessions granted (ConnectResponse with a live session), in order of first grant."""
        return list(dict.fromkeys(c.session for c in self.connections() if not c.expired))

    def dump(self, since: int = 0, *, session: int | None = None, last: int = 300) -> str:
        lines = [
            r.describe()
            for r in self.records(since)
            if (session is None or r.session == session) and not _is_ping(r)
        ]
        return "\n".join(lines[-last:]) or "(no records)"

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.close()
                self._file = None


def _is_ping(r: ZkRecord) -> bool:
    return (isinstance(r, ZkRequest) and r.opcode == 11) or (isinstance(r, ZkReply) and r.xid == -2)


class _Connection:
    """The decoder of one proxied connection: the tap's observer (called from the loop thread only)."""

    def __init__(self, journal: ZkJournal, conn: int) -> None:
        self.journal, self.conn = journal, conn
        self.session = 0
        # xid → [(request seq, opcode, whether its reply body can be decoded)], oldest first
        self.pending: dict[int, list[tuple[int | None, int | None, bool]]] = {}
        self.connected = self.connect_sent = False

    def frame(self, side: Side, body: bytes) -> None:
        if side == "client":
            self._on_request(body)
        else:
            self._on_reply(body)

    def framing_lost(self, side: Side, chunk: bytes, error: Exception) -> None:
        """A length no frame has, or a decoder bug: the chunk is kept raw; that side is no longer decoded."""
        self._undecodable(side, chunk, f"not decoded any further: {error}")

    def _undecodable(self, side: str, data: bytes, error: str) -> None:
        raw = data[:_RAW_KEPT]
        self.journal.append(
            lambda seq, t: ZkRaw(seq, t, self.conn, self.session, side, len(data), error, raw)
        )

    def _raw(self, opcode: int, length: int, error: str, body: bytes, xid: int) -> ZkRequest:
        raw = body[:_RAW_KEPT]
        return self.journal.append(
            lambda seq, t: ZkRequest(seq, t, self.conn, self.session, xid, opcode, length, None, error, raw)
        )

    def _on_request(self, body: bytes) -> None:
        if not self.connect_sent:
            self.connect_sent = True
            try:
                req = decode_connect_request(body)
            except JuteDecodeError as exc:
                self._undecodable("client", body, f"ConnectRequest: {exc}")
                return
            self.session = req.session_id
            self.journal.append(lambda seq, t: ZkConnect(seq, t, self.conn, self.session, req))
            return
        try:
            xid, opcode = request_header(body)
        except JuteDecodeError as exc:
            self._undecodable("client", body, f"request header: {exc}")
            return
        try:
            _, op = decode_request(body)
        except JuteDecodeError as exc:
            bad = self._raw(opcode, len(body), str(exc), b"" if opcode in _SECRET_OPS else body, xid)
            self.pending.setdefault(xid, []).append((bad.seq, opcode, False))
            return
        op = _relative_op(op, self.journal.chroot)
        raw = body if self.journal.keep_raw and opcode not in _SECRET_OPS else None
        rec = self.journal.append(
            lambda seq, t: ZkRequest(seq, t, self.conn, self.session, xid, opcode, len(body), op, raw=raw)
        )
        self.pending.setdefault(xid, []).append((rec.seq, opcode, True))

    def _on_reply(self, body: bytes) -> None:
        if not self.connected:
            self.connected = True
            try:
                resp = decode_connect_response(body)
            except JuteDecodeError as exc:
                self._undecodable("server", body, f"ConnectResponse: {exc}")
                return
            if resp.session_id and resp.timeout_ms > 0:
                self.session = resp.session_id
                self.journal.set_session(self.conn, resp.session_id)
            self.journal.append(lambda seq, t: ZkConnected(seq, t, self.conn, self.session, resp))
            return
        if body[:4] == b"\xff\xff\xff\xff":
            self._on_event(body)
            return
        xid = struct.unpack_from(">i", body)[0] if len(body) >= 4 else 0
        waiting = self.pending.get(xid) or [(None, None, False)]
        seq_of, opcode, decodable = waiting.pop(0)
        if not waiting:
            self.pending.pop(xid, None)
        try:
            rep = decode_reply(body, opcode if decodable else None)
            error = None
        except JuteDecodeError as exc:
            rep, error = None, f"reply: {exc}"
        if rep is not None and self.journal.chroot:
            root = self.journal.chroot
            results = tuple(dataclasses.replace(r, path=_relative(r.path, root)) for r in rep.results)
            rep = dataclasses.replace(rep, path=_relative(rep.path, root), results=results)
        self.journal.append(
            lambda seq, t: ZkReply(
                seq, t, self.conn, self.session, xid,
                rep.zxid if rep else 0, rep.err if rep else 0, seq_of, opcode,
                rep.path if rep else None, rep.results if rep else (), error,
            )
        )  # fmt: skip

    def _on_event(self, body: bytes) -> None:
        try:
            _, event = decode_event(body)
        except JuteDecodeError as exc:
            self._undecodable("server", body, f"watch event: {exc}")
            return
        event = dataclasses.replace(event, path=_relative(event.path, self.journal.chroot))
        self.journal.append(lambda seq, t: ZkEvent(seq, t, self.conn, self.session, event))

    def closed(self, by: str, reason: str) -> None:
        self.journal.append(lambda seq, t: ZkClosed(seq, t, self.conn, self.session, by, reason))


class ZkRecordingProxy(Tap):
    """Listen on ``listen_host:listen_port`` (0 = any free port), forward to ``upstream``, record."""

    def __init__(
        self,
        journal: ZkJournal,
        upstream: Address,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        loop: ProxyLoop | None = None,
        connect_timeout_s: float = 5.0,
    ) -> None:
        self.journal = journal
        super().__init__(
            lambda: _Connection(journal, journal.new_connection()),
            upstream,
            max_frame_bytes=_MAX_FRAME,
            listen_host=listen_host,
            listen_port=listen_port,
            loop=loop,
            connect_timeout_s=connect_timeout_s,
        )
