"""One session on the in-memory ZooKeeper model: `MemoryZkClient` implements the controller's
`ZkPort` and the node's `NodeZkPort` (ring: test support — a driver for tests), as one kazoo
session serves both in a node. Split out of `memory_zk` (which re-exports it); semantics are
documented there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from reference_controller.controller.events import ControllerEvent
from reference_controller.controller.ports import (
    CheckOp,
    ChildHandler,
    ControllerMovedError,
    CreateOp,
    DataResult,
    DeleteOp,
    NodeHandler,
    OpResult,
    SetDataOp,
    Stat,
    ZkCode,
    ZkOp,
)
from reference_controller.node.zk_port import NodeZkError, SessionListener, SessionState
from reference_controller.zkdata import CONTROLLER_EPOCH


class Ensemble(Protocol):
    """What a session needs of the ensemble it lives on (`memory_zk.MemoryZooKeeper`, which imports
    this module): reads of the tree, the read journal, and transactions."""

    reads: list[tuple[int, str, str]]

    def get(self, path: str) -> tuple[bytes | None, Stat] | None: ...

    def children(self, path: str) -> list[str] | None: ...

    def transact(self, session_id: int, ops: Sequence[ZkOp], multi: bool = True) -> list[OpResult]: ...

    def close_session(self, client: MemoryZkClient) -> None: ...


NODE_CREATED = "NodeCreated"
NODE_DELETED = "NodeDeleted"
NODE_DATA_CHANGED = "NodeDataChanged"
NODE_CHILDREN_CHANGED = "NodeChildrenChanged"


class MemoryZkClient:
    """One ZooKeeper session: implements `ZkPort` and `NodeZkPort`; fired watches queue events
    (`drain_events`); session changes reach the session listeners."""

    def __init__(self, server: Ensemble, session: int) -> None:
        self.server = server
        self.session = session
        self.node_handlers: dict[str, NodeHandler] = {}
        self.child_handlers: dict[str, ChildHandler] = {}
        self.data_watches: set[str] = set()
        self.child_watches: set[str] = set()
        self.events: list[ControllerEvent] = []
        self.watch_events: list[tuple[str, str]] = []  # (event type, path) as delivered
        self.listeners: list[SessionListener] = []
        self.closed = False

    # ---- handler registry -----------------------------------------------------------------
    def register_node_handler(self, handler: NodeHandler) -> None:
        self.node_handlers[handler.path] = handler

    def unregister_node_handler(self, path: str) -> None:
        self.node_handlers.pop(path, None)

    def register_child_handler(self, handler: ChildHandler) -> None:
        self.child_handlers[handler.path] = handler

    def unregister_child_handler(self, path: str) -> None:
        self.child_handlers.pop(path, None)

    # ---- reads ----------------------------------------------------------------------------
    def get_data(self, paths: Sequence[str]) -> list[DataResult]:
        results: list[DataResult] = []
        for path in paths:
            self._check_open(path)
            self.server.reads.append((self.session, "getData", path))
            found = self.server.get(path)
            if found is None:
                results.append(DataResult(path, None, None))
                continue
            if path in self.node_handlers:
                self.data_watches.add(path)
            results.append(DataResult(path, found[0], found[1]))
        return results

    def get_children(self, path: str) -> list[str] | None:
        self._check_open(path)
        self.server.reads.append((self.session, "getChildren", path))
        children = self.server.children(path)
        if children is not None and path in self.child_handlers:
            self.child_watches.add(path)
        return children

    def exists(self, path: str) -> Stat | None:
        self._check_open(path)
        self.server.reads.append((self.session, "exists", path))
        if path in self.node_handlers:
            self.data_watches.add(path)
        found = self.server.get(path)
        return None if found is None else found[1]

    # ---- writes ---------------------------------------------------------------------------
    def fenced(self, ops: Sequence[ZkOp], epoch_zk_version: int) -> list[OpResult]:
        results: list[OpResult] = []
        moved = False
        for op in ops:
            check_result, op_result = self.server.transact(
                self.session, [CheckOp(CONTROLLER_EPOCH, epoch_zk_version), op]
            )
            # The check failed on its own (BADVERSION/NONODE) — not rolled back by a failing op.
            moved = moved or check_result.code not in (ZkCode.OK, ZkCode.RUNTIME_INCONSISTENCY)
            results.append(op_result)
        if moved:
            raise ControllerMovedError(
                f"Controller epoch zkVersion check fails. Expected zkVersion = {epoch_zk_version}"
            )
        return results

    def multi(self, ops: Sequence[ZkOp]) -> list[OpResult]:
        if self.closed:
            return [OpResult(op, ZkCode.SESSIONEXPIRED) for op in ops]
        return self.server.transact(self.session, ops)

    def create(self, op: CreateOp) -> OpResult:
        if self.closed:
            return OpResult(op, ZkCode.SESSIONEXPIRED)
        return self.server.transact(self.session, [op], multi=False)[0]

    def session_id(self) -> int:
        return self.session

    # ---- the node's port (NodeZkPort) -----------------------------------------------------------
    def get(self, path: str) -> DataResult:
        return self.get_data([path])[0]

    def set(self, op: SetDataOp) -> OpResult:
        if self.closed:
            return OpResult(op, ZkCode.SESSIONEXPIRED)
        return self.server.transact(self.session, [op], multi=False)[0]

    def is_closed(self) -> bool:
        return self.closed

    def add_session_listener(self, listener: SessionListener) -> None:
        self.listeners.append(listener)

    def notify(self, *states: SessionState) -> None:
        for state in states:
            for listener in list(self.listeners):
                listener(state)

    def close(self) -> None:
        """kazoo's `stop()`: the session is closed (its ephemerals go) and the client told LOST;
        reads then raise and writes answer SESSIONEXPIRED, as kazoo's closed client does."""
        if not self.closed:
            self.server.close_session(self)
            self.closed = True
            self.notify(SessionState.LOST)

    def _check_open(self, path: str) -> None:
        if self.closed:
            raise NodeZkError(path, ZkCode.SESSIONEXPIRED)

    # ---- conveniences for tests (admin / broker sessions) -----------------------------------
    def set_data(self, path: str, data: bytes | None, version: int = -1) -> OpResult:
        return self.server.transact(self.session, [SetDataOp(path, data, version)], multi=False)[0]

    def delete(self, path: str, version: int = -1) -> OpResult:
        return self.server.transact(self.session, [DeleteOp(path, version)], multi=False)[0]

    def create_recursive(self, path: str, data: bytes | None) -> OpResult:
        """Kafka's `createRecursive`: create missing parents (null data), then the znode."""
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            parent = "/" + "/".join(parts[:depth])
            if self.server.get(parent) is None:
                self.create(CreateOp(parent, None))
        return self.create(CreateOp(path, data))

    def drop_watches(self) -> None:
        """A kazoo reconnect: every server-side watch of this session is lost (SUSPENDED, then
        CONNECTED on the same session)."""
        self.data_watches.clear()
        self.child_watches.clear()
        self.notify(SessionState.SUSPENDED, SessionState.CONNECTED)

    def deliver(self, path: str, event_type: str) -> None:
        self.watch_events.append((event_type, path))
        event: ControllerEvent | None = None
        if event_type == NODE_CHILDREN_CHANGED:
            child_handler = self.child_handlers.get(path)
            event = child_handler.on_child_change if child_handler else None
        else:
            node_handler = self.node_handlers.get(path)
            if node_handler is not None:
                event = {
                    NODE_CREATED: node_handler.on_create,
                    NODE_DELETED: node_handler.on_delete,
                    NODE_DATA_CHANGED: node_handler.on_data_change,
                }[event_type]
        if event is not None:
            self.events.append(event)

    def drain_events(self) -> list[ControllerEvent]:
        events, self.events = self.events, []
        return events
