"""`KazooNodeZk`: the node's `NodeZkPort` on a started `KazooClient` (ring: drivers).

Each call is kazoo's own synchronous request, so the bytes on the wire are those the node sent
before it had a port: `create` / `set` / `get` / `exists` / `get_children` are kazoo's, `multi` is
kazoo's `transaction()` (null data stays null: kazoo's `TransactionRequest.create/set_data` refuse
`None`, so an op is built with `b""` and its data replaced by `None` before the commit — kazoo's
serialiser writes `None` as length -1, ZooKeeper's null). kazoo's exceptions become `ZkCode`s: as
values for writes, as `NodeZkError` (the kazoo exception as its cause) for reads — the port's
contract, `node.zk_port`; one without a code the port names is SYSTEM_ERROR.
The session listener maps kazoo's `KazooState` to `SessionState`; the client (its session,
its chroot, its handler) is the caller's to start and to close.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, ZookeeperError
from kazoo.protocol.states import KazooState, ZnodeStat

from reference_controller.controller.ports import (
    CheckOp,
    CreateOp,
    DataResult,
    DeleteOp,
    OpResult,
    SetDataOp,
    Stat,
    ZkCode,
    ZkOp,
)
from reference_controller.node.zk_port import NodeZkError, SessionListener, SessionState

_STATES = {
    KazooState.CONNECTED: SessionState.CONNECTED,
    KazooState.SUSPENDED: SessionState.SUSPENDED,
    KazooState.LOST: SessionState.LOST,
}


def to_stat(stat: ZnodeStat) -> Stat:
    return Stat(
        version=stat.version,
        cversion=stat.cversion,
        czxid=stat.czxid,
        mzxid=stat.mzxid,
        ephemeral_owner=stat.ephemeralOwner,
        num_children=stat.numChildren,
        data_length=stat.dataLength,
    )


def code_of(exc: KazooException) -> ZkCode:
    """The `ZkCode` of a kazoo exception: a rolled-back op (code 0) is RUNTIME_INCONSISTENCY; an
    exception without a ZooKeeper code the port names (kazoo's own, or an unnamed code) is
    SYSTEM_ERROR."""
    code = getattr(exc, "code", None) if isinstance(exc, ZookeeperError) else None
    if code == 0:
        return ZkCode.RUNTIME_INCONSISTENCY
    try:
        return ZkCode(int(code))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ZkCode.SYSTEM_ERROR


class KazooNodeZk:
    """`NodeZkPort` over a `KazooClient` the node started (and will close)."""

    def __init__(self, client: KazooClient) -> None:
        self.client = client

    # ---- reads ---------------------------------------------------------------------------------
    def get(self, path: str) -> DataResult:
        try:
            data, stat = self.client.get(path)
        except KazooException as exc:
            if code_of(exc) == ZkCode.NONODE:
                return DataResult(path, None, None)
            raise NodeZkError(path, code_of(exc)) from exc
        return DataResult(path, data, to_stat(stat))

    def exists(self, path: str) -> Stat | None:
        try:
            stat = self.client.exists(path)
        except KazooException as exc:
            raise NodeZkError(path, code_of(exc)) from exc
        return None if stat is None else to_stat(stat)

    def get_children(self, path: str) -> list[str] | None:
        try:
            return list(self.client.get_children(path))
        except KazooException as exc:
            if code_of(exc) == ZkCode.NONODE:
                return None
            raise NodeZkError(path, code_of(exc)) from exc

    # ---- writes --------------------------------------------------------------------------------
    def create(self, op: CreateOp) -> OpResult:
        try:
            created = self.client.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
        except KazooException as exc:
            return OpResult(op, code_of(exc))
        return OpResult(op, ZkCode.OK, created_path=created)

    def set(self, op: SetDataOp) -> OpResult:
        try:
            stat = self.client.set(op.path, op.data, version=op.version)
        except KazooException as exc:
            return OpResult(op, code_of(exc))
        return OpResult(op, ZkCode.OK, stat=to_stat(stat))

    def multi(self, ops: Sequence[ZkOp]) -> list[OpResult]:
        txn = self.client.transaction()
        for op in ops:
            _add(txn, op)
        try:
            outcomes = txn.commit()
        except KazooException as exc:  # the request as a whole (connection loss, closed client)
            return [OpResult(op, code_of(exc)) for op in ops]
        failed = any(isinstance(o, Exception) for o in outcomes)
        return [_result(op, outcome, failed) for op, outcome in zip(ops, outcomes, strict=True)]

    # ---- session -------------------------------------------------------------------------------
    def session_id(self) -> int:
        session = self.client.client_id
        return int(session[0]) if session else 0

    def is_closed(self) -> bool:
        return bool(self.client.client_state == "CLOSED")

    def add_session_listener(self, listener: SessionListener) -> None:
        def on_state(state: str) -> bool:
            listener(_STATES[state])
            return False  # keep listening

        self.client.add_listener(on_state)


def _add(txn: Any, op: ZkOp) -> None:
    """One op on a kazoo transaction; null data written as null (see the module docstring)."""
    match op:
        case CreateOp():
            txn.create(op.path, op.data if op.data is not None else b"", ephemeral=op.ephemeral,
                       sequence=op.sequential)  # fmt: skip
        case SetDataOp():
            txn.set_data(op.path, op.data if op.data is not None else b"", version=op.version)
        case DeleteOp():
            txn.delete(op.path, version=op.version)
        case CheckOp():
            txn.check(op.path, op.version)
    if isinstance(op, CreateOp | SetDataOp) and op.data is None:
        txn.operations[-1] = txn.operations[-1]._replace(data=None)


def _result(op: ZkOp, outcome: Any, failed: bool) -> OpResult:
    if isinstance(outcome, KazooException):
        return OpResult(op, code_of(outcome))
    if failed:  # never OK inside a failed multi
        return OpResult(op, ZkCode.RUNTIME_INCONSISTENCY)
    if isinstance(op, CreateOp):
        return OpResult(op, ZkCode.OK, created_path=outcome)
    if isinstance(op, SetDataOp):
        return OpResult(op, ZkCode.OK, stat=to_stat(outcome))
    return OpResult(op, ZkCode.OK)
