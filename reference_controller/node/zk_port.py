"""`NodeZkPort`: what the broker side of a node asks of ZooKeeper (ring: drivers boundary — types
and helpers over the port, no I/O).

The broker's ZooKeeper work (registration with its broker epoch, ISR writes and
`/isr_change_notification`, `/log_dir_event_notification`, controlled shutdown's reads, the admin
writes of CreateTopics / DeleteTopics / CreatePartitions, the top-level paths and the cluster id)
goes through this port, like the controller's through `controller.ports.ZkPort`, so that it runs
on a real ZooKeeper through kazoo (`node.zk_driver.KazooNodeZk`) and on the in-memory ZooKeeper
(`reference_controller.testing.memory_zk`) alike. The value types (`CreateOp`, `SetDataOp`,
`OpResult`, `DataResult`, `Stat`, `ZkCode`) are the controller's.

Contract (one session; paths within the node's chroot; every call blocks until answered):
- Reads answer NONODE as a value (`DataResult.stat is None`, `None`); any other failure
  (CONNECTION_LOSS, SESSIONEXPIRED after a close, …) raises `NodeZkError` naming the code.
- Writes answer every outcome as `OpResult` codes, CONNECTION_LOSS included: each caller keeps
  Kafka's own policy (resend after a connection loss, ignore NODEEXISTS, …) and raises
  `NodeZkError` through `expect` for a code it has no answer to.
- `multi` is atomic: a failing op carries its code, the others RUNTIME_INCONSISTENCY; a request
  that failed as a whole (connection loss, closed session) gives every op that code.
- Session events (`add_session_listener`): CONNECTED, SUSPENDED (connection lost, session alive),
  LOST (session expired; a new session follows with CONNECTED). Listeners run on the client's
  thread and must not call ZooKeeper.
- No watches: the broker side of a 2.5 node in this reference watches nothing in ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Protocol

from reference_controller.controller.ports import (
    CreateOp,
    DataResult,
    OpResult,
    SetDataOp,
    Stat,
    ZkCode,
    ZkOp,
)
from reference_controller.errors import ReferenceControllerError


class SessionState(Enum):
    """kazoo's `KazooState`, Kafka's SyncConnected / Disconnected / Expired."""

    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"
    LOST = "LOST"


SessionListener = Callable[[SessionState], None]
#: Codes that mean "the request may not have reached ZooKeeper; send it again once connected"
#: (kazoo's retryable errors, Kafka's `retryRequestUntilConnected`).
CONNECTION_CODES = (ZkCode.CONNECTION_LOSS, ZkCode.OPERATION_TIMEOUT)


class NodeZkError(ReferenceControllerError):
    """ZooKeeper answered a node's request with a code its caller has no answer to (Kafka's
    `KeeperException`)."""

    def __init__(self, path: str, code: ZkCode) -> None:
        super().__init__(f"KeeperErrorCode = {code.name} for {path}")
        self.path = path
        self.code = code


class NodeZkPort(Protocol):
    """What the broker side of a node may ask of ZooKeeper (see the module docstring)."""

    def get(self, path: str) -> DataResult: ...
    def exists(self, path: str) -> Stat | None: ...
    def get_children(self, path: str) -> list[str] | None: ...
    def create(self, op: CreateOp) -> OpResult: ...
    def set(self, op: SetDataOp) -> OpResult: ...
    def multi(self, ops: Sequence[ZkOp]) -> list[OpResult]: ...
    def session_id(self) -> int: ...
    def is_closed(self) -> bool: ...
    def add_session_listener(self, listener: SessionListener) -> None: ...


def expect(result: OpResult, *answered: ZkCode) -> OpResult:
    """`result` when it is OK or one of the codes the caller answers; else `NodeZkError`."""
    if result.ok or result.code in answered:
        return result
    raise NodeZkError(result.op.path, result.code)


def create_recursive(zk: NodeZkPort, path: str, data: bytes | None) -> OpResult:
    """`KafkaZkClient.createRecursive`: create; on NONODE create the missing parents (null data,
    an existing one is fine) and try again. The answer is the last create's (NODEEXISTS is left to
    the caller); a parent that cannot be created raises `NodeZkError`."""
    result = zk.create(CreateOp(path, data))
    if result.code != ZkCode.NONODE:
        return result
    parent = path.rsplit("/", 1)[0]
    if parent:
        expect(create_recursive(zk, parent, None), ZkCode.NODEEXISTS)
    return zk.create(CreateOp(path, data))


def create_if_absent(zk: NodeZkPort, path: str, data: bytes | None) -> None:
    """A persistent znode (and its parents) unless it exists; any other failure raises."""
    expect(create_recursive(zk, path, data), ZkCode.NODEEXISTS)


def until_sent(send: Callable[[], OpResult], pause: Callable[[], None]) -> OpResult:
    """Send again after a connection loss (kazoo queues requests while disconnected and fails the
    ones in flight when the connection drops), pausing between attempts."""
    while True:
        result = send()
        if result.code not in CONNECTION_CODES:
            return result
        pause()
