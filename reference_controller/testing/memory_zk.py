"""An in-memory model of a ZooKeeper ensemble implementing `ZkPort` (ring: test support — a driver for tests).

`MemoryZooKeeper` is the ensemble (one tree, one zxid counter, a transaction history);
`MemoryZkClient` is one session on it and implements `ZkPort`, so unit tests can run several
controllers, brokers and an admin against the same tree. Semantics follow ZooKeeper 3.5:

- Stat: `version` (setData count), `cversion` (child create/delete count), `czxid`/`mzxid` from the
  zxid counter (every op of a multi shares the multi's zxid), `ephemeral_owner` = session id.
- Create: NODEEXISTS, NONODE when the parent is missing, NOCHILDRENFOREPHEMERALS under an
  ephemeral; sequential names append, as 10 digits, the number of children ever created under the
  parent (deletes do not count, unlike cversion — measured on ZooKeeper 3.8: create `a`, create
  sequential → 1, delete `a`, create sequential → 2, while cversion is then 3).
- Delete: BADVERSION, NONODE, NOTEMPTY. setData/check: BADVERSION, NONODE (-1 = any version).
- Multi is atomic. The failing op gets its own code; the other ops are reported as
  RUNTIME_INCONSISTENCY. (ZooKeeper itself reports code 0 — kazoo's `RolledBackError` — for the ops
  before the failing one and RUNTIMEINCONSISTENCY for those after it; since `ZkCode.OK` would read
  as success, this model reports both as RUNTIME_INCONSISTENCY. The kazoo driver maps the same way.)
- Watches are one-shot and per session: `get_data`/`exists` set a data watch iff a node handler is
  registered for the path (`exists` on a missing znode sets an exists watch that fires on creation;
  `get_data` on a missing znode sets none); `get_children` sets a child watch iff a child handler is
  registered (none when the znode is missing). A fired watch is turned into the registered
  handler's event at fire time and queued in the client (`drain_events`), one event per session and
  path per transaction, in firing order. Unregistering a handler does not remove the server watch.
- Session expiry removes the session's ephemerals (firing watches) and its watches; the client gets
  a new session id (as kazoo does) and its session listeners hear SUSPENDED, LOST, CONNECTED.
  `drop_watches` models a kazoo reconnect (watches lost; SUSPENDED, CONNECTED). `close` ends the
  session (ephemerals go; LOST); a closed client's reads raise `NodeZkError(SESSIONEXPIRED)` and
  its writes answer SESSIONEXPIRED.
- The node's port (`NodeZkPort`): `get` is one getData, `set` one setData, `create` and `multi`
  as for the controller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reference_controller.controller.ports import (
    CheckOp,
    CreateOp,
    DeleteOp,
    OpResult,
    SetDataOp,
    Stat,
    ZkCode,
    ZkOp,
)
from reference_controller.node.zk_port import SessionState
from reference_controller.testing.memory_zk_client import (
    NODE_CHILDREN_CHANGED,
    NODE_CREATED,
    NODE_DATA_CHANGED,
    NODE_DELETED,
    MemoryZkClient,
)

__all__ = [
    "NODE_CHILDREN_CHANGED",
    "NODE_CREATED",
    "NODE_DATA_CHANGED",
    "NODE_DELETED",
    "MemoryZkClient",
    "MemoryZooKeeper",
    "TxnRecord",
]


@dataclass
class _Node:
    data: bytes | None
    czxid: int
    mzxid: int
    ephemeral_owner: int = 0
    version: int = 0
    cversion: int = 0
    creations: int = 0  # children ever created: ZooKeeper 3.8's sequence counter
    children: dict[str, None] = field(default_factory=dict)

    def stat(self) -> Stat:
        return Stat(
            version=self.version,
            cversion=self.cversion,
            czxid=self.czxid,
            mzxid=self.mzxid,
            ephemeral_owner=self.ephemeral_owner,
            num_children=len(self.children),
            data_length=len(self.data or b""),
        )


@dataclass(frozen=True)
class TxnRecord:
    """One write request as ZooKeeper's transaction log would show it (failed ones included)."""

    session_id: int
    zxid: int
    ops: tuple[ZkOp, ...]
    results: tuple[OpResult, ...]
    multi: bool

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


class _OpFailed(Exception):
    def __init__(self, code: ZkCode) -> None:
        super().__init__(code.name)
        self.code = code


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _name(path: str) -> str:
    return path.rsplit("/", 1)[1]


class MemoryZooKeeper:
    """The ensemble: the tree, the zxid counter, sessions and the transaction history."""

    def __init__(self) -> None:
        self.zxid = 0
        self.nodes: dict[str, _Node] = {"/": _Node(None, 0, 0), "/zookeeper": _Node(None, 0, 0)}
        self.nodes["/"].children["zookeeper"] = None
        self.sessions: dict[int, MemoryZkClient] = {}
        self.history: list[TxnRecord] = []
        self.reads: list[tuple[int, str, str]] = []  # (session, kind, path)
        self._next_session = 0x100000000

    # ---- sessions -------------------------------------------------------------------------
    def client(self) -> MemoryZkClient:
        client = MemoryZkClient(self, self._new_session_id())
        self.sessions[client.session] = client
        return client

    def _new_session_id(self) -> int:
        self._next_session += 1
        return self._next_session

    def expire_session(self, client: MemoryZkClient) -> None:
        """Expire the client's session: its ephemerals go (firing watches), it gets a new session;
        its listeners hear what kazoo's do (SUSPENDED, LOST, then CONNECTED on the new session)."""
        self._end_session(client)
        client.session = self._new_session_id()
        self.sessions[client.session] = client
        client.notify(SessionState.SUSPENDED, SessionState.LOST, SessionState.CONNECTED)

    def close_session(self, client: MemoryZkClient) -> None:
        """A client's own close: its ephemerals go (firing watches), no new session."""
        self._end_session(client)

    def _end_session(self, client: MemoryZkClient) -> None:
        old = client.session
        client.data_watches.clear()
        client.child_watches.clear()
        ephemerals = sorted((p for p, n in self.nodes.items() if n.ephemeral_owner == old), reverse=True)
        for path in ephemerals:
            self.transact(old, [DeleteOp(path)], multi=False)
        del self.sessions[old]

    # ---- queries --------------------------------------------------------------------------
    def get(self, path: str) -> tuple[bytes | None, Stat] | None:
        node = self.nodes.get(path)
        return None if node is None else (node.data, node.stat())

    def children(self, path: str) -> list[str] | None:
        node = self.nodes.get(path)
        return None if node is None else sorted(node.children)

    def writes(self, session_id: int | None = None, ok_only: bool = True) -> list[TxnRecord]:
        return [
            t
            for t in self.history
            if (session_id is None or t.session_id == session_id) and (t.ok or not ok_only)
        ]

    # ---- transactions ---------------------------------------------------------------------
    def transact(self, session_id: int, ops: Sequence[ZkOp], multi: bool = True) -> list[OpResult]:
        """Apply `ops` atomically; fire watches after commit. Failed requests consume no zxid."""
        zxid = self.zxid + 1
        undo: list[Callable[[], None]] = []
        fired: list[tuple[str, str, str]] = []  # (kind of watch list, path, event type)
        results: list[OpResult] = []
        failure: tuple[int, ZkCode] | None = None
        for index, op in enumerate(ops):
            try:
                results.append(self._apply(session_id, op, zxid, undo, fired))
            except _OpFailed as exc:
                failure = (index, exc.code)
                break
        if failure is not None:
            for action in reversed(undo):
                action()
            index, code = failure
            results = [
                OpResult(op, code if i == index else ZkCode.RUNTIME_INCONSISTENCY) for i, op in enumerate(ops)
            ]
        else:
            self.zxid = zxid
        self.history.append(TxnRecord(session_id, zxid, tuple(ops), tuple(results), multi))
        if failure is None:
            self._fire(fired)
        return results

    def _apply(
        self,
        session_id: int,
        op: ZkOp,
        zxid: int,
        undo: list[Callable[[], None]],
        fired: list[tuple[str, str, str]],
    ) -> OpResult:
        match op:
            case CreateOp():
                return self._create(session_id, op, zxid, undo, fired)
            case SetDataOp():
                node = self._existing(op.path, op.version)
                old = (node.data, node.version, node.mzxid)
                node.data, node.version, node.mzxid = op.data, node.version + 1, zxid
                undo.append(lambda: _restore_data(node, old))
                fired.append(("data", op.path, NODE_DATA_CHANGED))
                return OpResult(op, ZkCode.OK, stat=node.stat())
            case DeleteOp():
                return self._delete(op, undo, fired)
            case CheckOp():
                self._existing(op.path, op.version)
                return OpResult(op, ZkCode.OK)

    def _existing(self, path: str, version: int) -> _Node:
        node = self.nodes.get(path)
        if node is None:
            raise _OpFailed(ZkCode.NONODE)
        if version not in (-1, node.version):
            raise _OpFailed(ZkCode.BADVERSION)
        return node

    def _create(
        self,
        session_id: int,
        op: CreateOp,
        zxid: int,
        undo: list[Callable[[], None]],
        fired: list[tuple[str, str, str]],
    ) -> OpResult:
        parent_path = _parent(op.path)
        parent = self.nodes.get(parent_path)
        if parent is None:
            raise _OpFailed(ZkCode.NONODE)
        if parent.ephemeral_owner:
            raise _OpFailed(ZkCode.NOCHILDRENFOREPHEMERALS)
        path = f"{op.path}{parent.creations:010d}" if op.sequential else op.path
        if path in self.nodes:
            raise _OpFailed(ZkCode.NODEEXISTS)
        self.nodes[path] = _Node(op.data, zxid, zxid, session_id if op.ephemeral else 0)
        parent.children[_name(path)] = None
        parent.cversion += 1
        parent.creations += 1
        undo.append(lambda: self._undo_create(path, parent))
        fired.append(("data", path, NODE_CREATED))
        fired.append(("child", parent_path, NODE_CHILDREN_CHANGED))
        return OpResult(op, ZkCode.OK, created_path=path)

    def _undo_create(self, path: str, parent: _Node) -> None:
        del self.nodes[path]
        del parent.children[_name(path)]
        parent.cversion -= 1
        parent.creations -= 1

    def _delete(
        self, op: DeleteOp, undo: list[Callable[[], None]], fired: list[tuple[str, str, str]]
    ) -> OpResult:
        if op.path == "/":
            raise _OpFailed(ZkCode.BADVERSION)
        node = self._existing(op.path, op.version)
        if node.children:
            raise _OpFailed(ZkCode.NOTEMPTY)
        parent_path = _parent(op.path)
        parent = self.nodes[parent_path]
        del self.nodes[op.path]
        del parent.children[_name(op.path)]
        parent.cversion += 1
        undo.append(lambda: self._undo_delete(op.path, node, parent))
        fired.append(("data", op.path, NODE_DELETED))
        fired.append(("child", op.path, NODE_DELETED))
        fired.append(("child", parent_path, NODE_CHILDREN_CHANGED))
        return OpResult(op, ZkCode.OK)

    def _undo_delete(self, path: str, node: _Node, parent: _Node) -> None:
        self.nodes[path] = node
        parent.children[_name(path)] = None
        parent.cversion -= 1

    def _fire(self, fired: list[tuple[str, str, str]]) -> None:
        for client in list(self.sessions.values()):
            delivered: set[tuple[str, str]] = set()
            for kind, path, event_type in fired:
                watches = client.data_watches if kind == "data" else client.child_watches
                if path not in watches:
                    continue
                watches.discard(path)
                if (path, event_type) in delivered:
                    continue
                delivered.add((path, event_type))
                client.deliver(path, event_type)


def _restore_data(node: _Node, old: tuple[bytes | None, int, int]) -> None:
    node.data, node.version, node.mzxid = old
