"""Write histories from the transaction log: cursor, chroot view, session→node map (drivers ring).

- :class:`TxnLogCursor` reads incrementally, so a test (or a chaos run) sees only what
  happened after the cursor was made. It survives log-file rollover and leaves an entry that
  ZooKeeper is still writing for the next read.
- :class:`ChrootView` restricts records to one chroot and strips the prefix: every test runs
  in its own chroot on a shared server, and ZooKeeper logs absolute paths.
- :class:`SessionNodeMap` maps ZooKeeper session ids to Kafka nodes from createSession, the
  ephemeral creates of ``<chroot>/brokers/ids/<id>`` and ``<chroot>/controller``, deletes,
  and closeSession records (which carry the session's ephemeral paths in 3.8).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from probes.errors import TxnLogCorrupt, TxnLogError
from probes.txnlog import FILE_HEADER_SIZE, TornTail, list_log_files, scan_log_file
from probes.txnrecords import TxnOp, TxnRecord

__all__ = [
    "ChrootView",
    "CursorPosition",
    "KafkaNodeRole",
    "SessionInfo",
    "SessionNodeMap",
    "TxnLogCursor",
    "TxnLogTimeout",
]


class TxnLogTimeout(TxnLogError, TimeoutError):
    """The awaited record did not appear before the deadline; ``records`` is what did."""

    def __init__(self, message: str, records: Iterable[TxnRecord]) -> None:
        self.records = tuple(records)
        super().__init__(f"{message} ({len(self.records)} records read meanwhile)")


@dataclass(frozen=True, slots=True)
class CursorPosition:
    """Where the next read starts: a log file (None = the first one) and a byte offset."""

    file: Path | None
    offset: int
    last_zxid: int | None


class TxnLogCursor:
    """Incremental reader of a ``version-2`` directory.

    ``read()`` returns the complete records appended since the previous read (or since the
    cursor was made, for :meth:`at_end`), in zxid order, across ``log.<zxid>`` rollover.
    """

    def __init__(
        self,
        txn_log_dir: Path | str,
        position: CursorPosition | None = None,
        *,
        torn_tail: TornTail = "error",
    ) -> None:
        self.txn_log_dir = Path(txn_log_dir)
        start = position or CursorPosition(None, FILE_HEADER_SIZE, None)
        self._file, self._offset, self._last_zxid = start.file, start.offset, start.last_zxid
        self._torn_tail: TornTail = torn_tail

    @classmethod
    def at_start(cls, txn_log_dir: Path | str, *, torn_tail: TornTail = "error") -> TxnLogCursor:
        """A cursor whose first read returns the whole log."""
        return cls(txn_log_dir, torn_tail=torn_tail)

    @classmethod
    def at_end(cls, txn_log_dir: Path | str, *, torn_tail: TornTail = "error") -> TxnLogCursor:
        """A cursor positioned after everything written so far (reads it once to find the end)."""
        cursor = cls(txn_log_dir, torn_tail=torn_tail)
        files = list_log_files(txn_log_dir)
        if files:
            cursor._file = files[-1].path
            cursor.read()
        return cursor

    @property
    def position(self) -> CursorPosition:
        return CursorPosition(self._file, self._offset, self._last_zxid)

    def read(self) -> list[TxnRecord]:
        """Records appended since the last read; raises :class:`TxnLogCorrupt` on corruption."""
        files = list_log_files(self.txn_log_dir)  # list before reading: see the rollover note
        if not files:
            return []
        paths = [f.path for f in files]
        if self._file is None:
            self._file, self._offset = paths[0], FILE_HEADER_SIZE
        if self._file not in paths:
            raise TxnLogError(f"{self._file} is gone from {self.txn_log_dir} (purged?)")
        out: list[TxnRecord] = []
        for i in range(paths.index(self._file), len(paths)):
            # ZooKeeper flushes a file before creating the next, so a file listed before a
            # newer one is complete: read it as final, then move on.
            final = i < len(paths) - 1
            try:
                found = scan_log_file(self._file, self._offset, final=final, torn_tail=self._torn_tail)
            except TxnLogCorrupt as e:
                raise TxnLogCorrupt(e.file, e.offset, e.reason, out + list(e.records)) from e
            out += found.records
            self._offset = found.end_offset
            if found.records:
                self._last_zxid = found.records[-1].zxid
            if final:
                self._file, self._offset = paths[i + 1], FILE_HEADER_SIZE
        return out

    def read_until(
        self,
        predicate: Callable[[TxnRecord], bool],
        *,
        deadline_s: float = 10.0,
        poll_interval_s: float = 0.02,
    ) -> list[TxnRecord]:
        """Read until a record satisfies ``predicate``; return everything read up to then.

        Records after the matching one (read in the same pass) are returned too.
        """
        out: list[TxnRecord] = []
        give_up = time.monotonic() + deadline_s
        while True:
            batch = self.read()
            out += batch
            if any(predicate(r) for r in batch):
                return out
            if time.monotonic() >= give_up:
                raise TxnLogTimeout(f"no matching record in {self.txn_log_dir} after {deadline_s}s", out)
            time.sleep(poll_interval_s)

    def read_through(self, zxid: int, *, deadline_s: float = 10.0) -> list[TxnRecord]:
        """Read until the record with ``zxid`` (e.g. a write's ``stat.mzxid``) has been read."""
        if self._last_zxid is not None and self._last_zxid >= zxid:
            return []
        return self.read_until(lambda r: r.zxid >= zxid, deadline_s=deadline_s)


def _under(path: str, chroot: str) -> bool:
    return not chroot or path == chroot or path.startswith(chroot + "/")


def _strip(path: str, chroot: str) -> str:
    return (path[len(chroot) :] or "/") if _under(path, chroot) else path


@dataclass(frozen=True, slots=True)
class ChrootView:
    """The records of one chroot, with the chroot prefix stripped from their paths.

    A record belongs to the view if any path it names is under ``chroot``. Records that name
    no path (createSession, a standalone ``error``, a failed multi) and every closeSession
    belong to it if their session is in ``sessions`` or wrote under the chroot anywhere in the
    records given to :meth:`filter` (a closeSession keeps only its ephemerals in the chroot).
    """

    chroot: str
    sessions: frozenset[int] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "chroot", self.chroot.rstrip("/"))

    def contains(self, path: str) -> bool:
        return _under(path, self.chroot)

    def strip(self, path: str) -> str:
        return _strip(path, self.chroot)

    def filter(self, records: Iterable[TxnRecord]) -> list[TxnRecord]:
        records = list(records)
        touching = [any(self.contains(p) for p in r.paths()) for r in records]
        sessions = self.sessions | {r.session_id for r, t in zip(records, touching, strict=True) if t}
        return [
            self._stripped(r)
            for r, t in zip(records, touching, strict=True)
            if t or (r.session_id in sessions and (r.op == "closeSession" or not r.paths()))
        ]

    def _stripped(self, record: TxnRecord) -> TxnRecord:
        return replace(record, txn=self._strip_op(record.txn))

    def _strip_op(self, op: TxnOp) -> TxnOp:
        closed = op.closed_paths
        return replace(
            op,
            path=None if op.path is None else self.strip(op.path),
            attempted=None if op.attempted is None else self._strip_op(op.attempted),
            ops=tuple(self._strip_op(o) for o in op.ops),
            closed_paths=None if closed is None else tuple(self.strip(p) for p in closed if self.contains(p)),
        )


_BROKER_PATH = re.compile(r"^(?P<chroot>(?:/[^/]+)*?)/brokers/ids/(?P<id>-?\d+)$")
_CONTROLLER_PATH = re.compile(r"^(?P<chroot>(?:/[^/]+)*?)/controller$")


@dataclass(frozen=True, slots=True)
class KafkaNodeRole:
    """An ephemeral Kafka znode a session created: a broker registration or the controller."""

    chroot: str
    role: str  # "broker" | "controller"
    broker_id: int | None  # the controller's id comes from its JSON ``brokerid``
    path: str
    zxid: int


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: int
    created_zxid: int | None
    timeout_ms: int | None
    closed_zxid: int | None
    closed_paths: tuple[str, ...] | None
    roles: tuple[KafkaNodeRole, ...]
    live_ephemerals: frozenset[str]

    @property
    def broker_id(self) -> int | None:
        """The broker this session belongs to (its first registration or controller claim)."""
        return next((r.broker_id for r in self.roles if r.broker_id is not None), None)


@dataclass(slots=True)
class _Session:
    created_zxid: int | None = None
    timeout_ms: int | None = None
    closed_zxid: int | None = None
    closed_paths: tuple[str, ...] | None = None
    roles: list[KafkaNodeRole] = field(default_factory=list)
    live: set[str] = field(default_factory=set)


def _controller_broker_id(data: bytes | None) -> int | None:
    try:
        value = json.loads(data or b"").get("brokerid")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


class SessionNodeMap:
    """Session id → Kafka node, built incrementally from transaction records (any chroot)."""

    def __init__(self) -> None:
        self._sessions: dict[int, _Session] = {}
        self._owner: dict[str, int] = {}

    @classmethod
    def from_records(cls, records: Iterable[TxnRecord]) -> SessionNodeMap:
        m = cls()
        m.update(records)
        return m

    def update(self, records: Iterable[TxnRecord]) -> None:
        for r in records:
            s = self._sessions.setdefault(r.session_id, _Session())
            if r.op == "createSession":
                s.created_zxid, s.timeout_ms = r.zxid, r.txn.session_timeout_ms
            elif r.op == "closeSession":
                s.closed_zxid, s.closed_paths = r.zxid, r.closed_paths
                for path in set(r.closed_paths or ()) | s.live:
                    self._forget(path)
            for op in (r.txn, *r.ops):
                self._apply(r, s, op)

    def _apply(self, r: TxnRecord, s: _Session, op: TxnOp) -> None:
        if op.op in ("delete", "deleteContainer") and op.path is not None:
            self._forget(op.path)
        if not (op.op.startswith("create") and op.ephemeral and op.path is not None):
            return
        s.live.add(op.path)
        self._owner[op.path] = r.session_id
        if m := _BROKER_PATH.match(op.path):
            s.roles.append(KafkaNodeRole(m["chroot"], "broker", int(m["id"]), op.path, r.zxid))
        elif m := _CONTROLLER_PATH.match(op.path):
            broker = _controller_broker_id(op.data)
            s.roles.append(KafkaNodeRole(m["chroot"], "controller", broker, op.path, r.zxid))

    def _forget(self, path: str) -> None:
        owner = self._owner.pop(path, None)
        if owner is not None:
            self._sessions[owner].live.discard(path)

    @property
    def sessions(self) -> Mapping[int, SessionInfo]:
        return {sid: self.session(sid) for sid in self._sessions}

    def session(self, session_id: int) -> SessionInfo:
        s = self._sessions.get(session_id) or _Session()
        return SessionInfo(
            session_id, s.created_zxid, s.timeout_ms, s.closed_zxid, s.closed_paths,
            tuple(s.roles), frozenset(s.live),
        )  # fmt: skip

    def broker_of(self, session_id: int) -> int | None:
        return self.session(session_id).broker_id

    def sessions_of(self, broker_id: int, chroot: str | None = None) -> tuple[int, ...]:
        """Sessions that registered ``broker_id`` (in zxid order), optionally in one chroot."""
        hits = sorted(
            (role.zxid, sid)
            for sid, s in self._sessions.items()
            for role in s.roles
            if role.broker_id == broker_id and (chroot is None or role.chroot == chroot.rstrip("/"))
        )
        return tuple(dict.fromkeys(sid for _, sid in hits))

    def ephemeral_owner(self, path: str) -> int | None:
        """The session currently owning the ephemeral ``path`` (None if none / not ephemeral)."""
        return self._owner.get(path)
