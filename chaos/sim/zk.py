"""The simulated ZooKeeper: the in-memory model, logging transactions as the real server does
(ring: drivers — a simulated one; no I/O, no clock of its own).

:class:`SimZooKeeper` is :class:`~reference_controller.testing.memory_zk.MemoryZooKeeper` (one
tree, sessions, ephemerals, one-shot watches, atomic multi) plus the transaction log a
ZooKeeper 3.8 server writes for the same requests, as :class:`probes.TxnRecord` values the chaos
checkers read unchanged (:mod:`probes.jute` documents the real format):

- ``createSession`` when a session is created, with its timeout;
- a successful write as its txn (``create`` with ``parent_cversion`` and the ``ephemeral`` flag,
  ``setData`` with the *resulting* version, ``delete``), a multi as ``multi`` of sub-txns
  (``check`` with the version it checked);
- a failed standalone write as ``error`` with the code — it consumes a zxid, as on the real
  server (the memory model alone does not consume one);
- a failed multi as ``multi`` whose ops before the failing one are ``error`` 0 with the prepared
  op in ``attempted``, the failing op ``error`` with its code, later ops ``error`` -2;
- ``closeSession`` with the ephemerals it deletes (``closed_paths``) under one zxid.

Times come from the world's virtual clock (``now_ms``); ``cxid`` counts each session's writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from probes import TxnOp, TxnRecord
from reference_controller.controller.ports import (
    CheckOp,
    CreateOp,
    DeleteOp,
    OpResult,
    SetDataOp,
    ZkCode,
    ZkOp,
)
from reference_controller.node.zk_port import SessionState
from reference_controller.testing.memory_zk import MemoryZkClient, MemoryZooKeeper

__all__ = ["SimZooKeeper"]


class SimZooKeeper(MemoryZooKeeper):
    """The in-memory ensemble with a real-format transaction log (module docstring)."""

    def __init__(self, now_ms: Callable[[], int], session_timeout_ms: int) -> None:
        super().__init__()
        self.now_ms = now_ms
        self.session_timeout_ms = session_timeout_ms
        self.log: list[TxnRecord] = []
        self._cxid: dict[int, int] = {}
        self.watch_events_pending = False  # a fired watch queued an event in some session

    def _fire(self, fired: list[tuple[str, str, str]]) -> None:
        super()._fire(fired)
        if any(client.events for client in self.sessions.values()):
            self.watch_events_pending = True

    # ---- sessions -------------------------------------------------------------------------------
    def client(self) -> MemoryZkClient:
        client = super().client()
        self._session_created(client.session)
        return client

    def expire_session(self, client: MemoryZkClient) -> None:
        super().expire_session(client)
        self._session_created(client.session)

    def server_expire(self, client: MemoryZkClient) -> None:
        """The server expires a session it has not heard from: its ephemerals go now; the client
        learns of it when it reconnects (:meth:`reconnect_expired`)."""
        self._end_session(client)

    def reconnect_expired(self, client: MemoryZkClient) -> None:
        """The client of an expired session reconnects: told LOST, it opens a new session."""
        client.session = self._new_session_id()
        self.sessions[client.session] = client
        self._session_created(client.session)
        client.notify(SessionState.LOST, SessionState.CONNECTED)

    def _session_created(self, session: int) -> None:
        self.zxid += 1
        self._append(session, TxnOp("createSession", session_timeout_ms=self.session_timeout_ms))

    def _end_session(self, client: MemoryZkClient) -> None:
        """closeSession: one zxid, the session's ephemerals deleted (deepest first), watches fired."""
        old = client.session
        if old not in self.sessions:
            return  # the server ended it already (expiry); the client's close has nothing to do
        client.data_watches.clear()
        client.child_watches.clear()
        ephemerals = sorted((p for p, n in self.nodes.items() if n.ephemeral_owner == old), reverse=True)
        zxid = self.zxid + 1
        fired: list[tuple[str, str, str]] = []
        for path in ephemerals:
            self._delete(DeleteOp(path), [], fired)
        self.zxid = zxid
        self._append(old, TxnOp("closeSession", closed_paths=tuple(ephemerals)))
        del self.sessions[old]
        self._fire(fired)

    # ---- transactions ---------------------------------------------------------------------------
    def transact(self, session_id: int, ops: Sequence[ZkOp], multi: bool = True) -> list[OpResult]:
        before = {op.path: self._version(op.path) for op in ops if isinstance(op, CheckOp)}
        parents = {op.path: self._parent_cversion(op.path) for op in ops if isinstance(op, CreateOp)}
        results = super().transact(session_id, ops, multi)
        failed = not all(r.ok for r in results)
        if failed:
            self.zxid += 1  # the real server logs the failure under a zxid of its own
        if multi and failed:
            at = next(i for i, r in enumerate(results) if r.code != ZkCode.RUNTIME_INCONSISTENCY)
            subs = [
                TxnOp("error", error=0, attempted=self._prepared(r.op, before))
                if i < at
                else TxnOp("error", error=int(r.code))
                for i, r in enumerate(results)
            ]
            txn = TxnOp("multi", ops=tuple(subs))
        elif multi:
            txn = TxnOp("multi", ops=tuple(self._applied(r, before, parents) for r in results))
        elif failed:
            txn = TxnOp("error", error=int(results[0].code))
        else:
            txn = self._applied(results[0], before, parents)
        self._append(session_id, txn)
        return results

    def _applied(self, result: OpResult, before: dict[str, int | None], parents: dict[str, int]) -> TxnOp:
        op = result.op
        match op:
            case CreateOp():
                path = result.created_path or op.path
                return TxnOp(
                    "create",
                    path,
                    op.data,
                    ephemeral=op.ephemeral,
                    parent_cversion=parents.get(op.path, 0) + 1,
                )
            case SetDataOp():
                version = result.stat.version if result.stat is not None else None
                return TxnOp("setData", op.path, op.data, version=version)
            case DeleteOp():
                return TxnOp("delete", op.path)
            case CheckOp():
                return TxnOp("check", op.path, version=before.get(op.path))

    def _prepared(self, op: ZkOp, before: dict[str, int | None]) -> TxnOp:
        match op:
            case CreateOp():
                return TxnOp("create", op.path, op.data, ephemeral=op.ephemeral)
            case SetDataOp():
                current = self._version(op.path)
                return TxnOp("setData", op.path, op.data, version=None if current is None else current + 1)
            case DeleteOp():
                return TxnOp("delete", op.path)
            case CheckOp():
                return TxnOp("check", op.path, version=before.get(op.path))

    def _version(self, path: str) -> int | None:
        node = self.nodes.get(path)
        return None if node is None else node.version

    def _parent_cversion(self, path: str) -> int:
        parent = self.nodes.get(path.rsplit("/", 1)[0] or "/")
        return 0 if parent is None else parent.cversion

    def _append(self, session: int, txn: TxnOp) -> None:
        cxid = self._cxid.get(session, 0)
        self._cxid[session] = cxid + 1
        self.log.append(TxnRecord(self.zxid, session, cxid, self.now_ms(), txn))
