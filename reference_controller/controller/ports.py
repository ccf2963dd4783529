"""The narrow ports the controller core talks through (ring: core boundary — types only).

The core (`reference_controller.controller.core`) is deterministic and single-threaded. It reads and
writes ZooKeeper only through `ZkPort` (implemented by the kazoo driver and by the in-memory model
used in unit tests), takes time from `Clock`, and returns broker requests and timers as effects
(`effects.py`). ZooKeeper calls are synchronous from the core's point of view because their results
drive decisions (BADVERSION retries, NODEEXISTS, the election multi); the driver pipelines batches.

Watch model (Kafka's ZooKeeperClient): handlers are registered in memory; the one-shot ZooKeeper
watch on a path is set by the next read of that path — `exists`/`get_data` for node handlers,
`get_children` for child handlers — iff a handler is registered for it. When a watch fires the
driver enqueues the handler's event. Unregistering drops the handler, not the server-side watch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from reference_controller.controller.events import ControllerEvent


class ZkCode(IntEnum):
    """ZooKeeper result codes the controller distinguishes (KeeperException.Code)."""

    OK = 0
    SYSTEM_ERROR = -1
    RUNTIME_INCONSISTENCY = -2
    CONNECTION_LOSS = -4
    OPERATION_TIMEOUT = -7
    NONODE = -101
    NOAUTH = -102
    BADVERSION = -103
    NOCHILDRENFOREPHEMERALS = -108
    NODEEXISTS = -110
    NOTEMPTY = -111
    SESSIONEXPIRED = -112


@dataclass(frozen=True)
class Stat:
    version: int
    cversion: int
    czxid: int
    mzxid: int
    ephemeral_owner: int
    num_children: int
    data_length: int


@dataclass(frozen=True)
class DataResult:
    """Result of a getData: `stat is None` means the znode does not exist (NONODE)."""

    path: str
    data: bytes | None
    stat: Stat | None


# ---- write operations -----------------------------------------------------------------------
@dataclass(frozen=True)
class CreateOp:
    path: str
    data: bytes | None  # None = null data (Kafka writes null for partitions znodes)
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True)
class SetDataOp:
    path: str
    data: bytes | None
    version: int = -1  # -1 = any version


@dataclass(frozen=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True)
class CheckOp:
    path: str
    version: int


ZkOp = CreateOp | SetDataOp | DeleteOp | CheckOp


@dataclass(frozen=True)
class OpResult:
    """Outcome of one op. `created_path` for creates (sequential suffix included); `stat` for
    setData (the new Stat) and for creates where the server returns one."""

    op: ZkOp
    code: ZkCode
    created_path: str | None = None
    stat: Stat | None = None

    @property
    def ok(self) -> bool:
        return self.code == ZkCode.OK


# ---- handlers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeHandler:
    """A ZNodeChangeHandler: which event to enqueue on creation / deletion / data change of `path`."""

    path: str
    on_create: ControllerEvent | None = None
    on_delete: ControllerEvent | None = None
    on_data_change: ControllerEvent | None = None


@dataclass(frozen=True)
class ChildHandler:
    """A ZNodeChildChangeHandler: the event to enqueue when the children of `path` change."""

    path: str
    on_child_change: ControllerEvent


class ControllerMovedError(Exception):
    """A fenced write failed its `/controller_epoch` check: another controller was elected."""


class ZkPort(Protocol):
    """What the core may ask of ZooKeeper. Paths are absolute within the node's chroot."""

    # handler registry
    def register_node_handler(self, handler: NodeHandler) -> None: ...
    def unregister_node_handler(self, path: str) -> None: ...
    def register_child_handler(self, handler: ChildHandler) -> None: ...
    def unregister_child_handler(self, path: str) -> None: ...

    # reads (set a watch iff a handler is registered for the path)
    def get_data(self, paths: Sequence[str]) -> list[DataResult]:
        """Pipelined getData of every path, results in the same order."""
        ...

    def get_children(self, path: str) -> list[str] | None:
        """Children names (unsorted, as ZooKeeper returns them), or None when the znode is missing."""
        ...

    def exists(self, path: str) -> Stat | None: ...

    # writes
    def fenced(self, ops: Sequence[ZkOp], epoch_zk_version: int) -> list[OpResult]:
        """Each op as `multi[check /controller_epoch epoch_zk_version, op]` (Kafka's
        wrapRequestWithControllerEpochCheck), pipelined, results in order. In batching mode the
        driver may group ops into fewer multis but must keep their order and fencing, and must
        report per-op results (falling back to one multi per op where a group fails on a
        non-fencing error). Raises ControllerMovedError if any check op failed."""
        ...

    def multi(self, ops: Sequence[ZkOp]) -> list[OpResult]:
        """One unfenced multi (the election multi). All ops fail together."""
        ...

    def create(self, op: CreateOp) -> OpResult:
        """One unfenced create (the initial `/controller_epoch` "0")."""
        ...

    def session_id(self) -> int:
        """The ZooKeeper session id of this node (for logs and for the ephemeral `/controller`)."""
        ...


class Clock(Protocol):
    def now_ms(self) -> int: ...
