"""The narrow ports the handler groups use of the controller (ring: core boundary — types only).

Every handler module takes the controller as a `Protocol` of exactly what it uses: the members it
touches itself plus the ports of the handlers and helpers it calls with the controller (a base
class per callee). `KafkaController` (the core) satisfies them all; no handler imports the core (a
wall in `tests/architecture/test_walls.py`), mypy keeps each handler inside its port, and
`tests/architecture/test_handler_ports.py` keeps each port exact (every member is used, none is
declared twice).

| port | used by | members of its own (beside its bases') |
|---|---|---|
| `ContextHolder` | `common.live_or_shutting_down` | context |
| `UpdateMetadataSender` | `common.send_update_metadata_request` | batch, emit |
| `LeadershipCacheReader` | `common.update_leader_and_isr_cache` | zk |
| `NodeHandlerRegistry` | `common`: modification handlers | (un)register_node_handler |
| `DeletionClientPort` | `topics.ControllerDeletionClient` | zk |
| `TopicPort` | `topics`: creation, expansion, deletion | config, is_active, log, … |
| `LeaderElectionPort` | `leader_elections` | config, enqueue, is_active, … |
| `ReassignmentPort` | `reassignment` | enqueue, state_change_log, … |
| `ApiReassignmentPort` | `api_reassignment` | none: `reassignment`'s cover it |
| `BrokerPort` | `brokers` | none: `reassignment`'s cover it |
| `NotificationPort` | `notifications` | none: `brokers`' cover it |
| `ShutdownPort` | `shutdown` | is_active, log, state machines, … |
| `FailoverPort` | `failover` | node_handlers, child handlers |
| `ElectionPort` | `election` | broker_id, clock, existed_at_last_check |

A port of its own module, beside `ports.py`, because its members are the core's own parts
(context, state machines, request batch), which import `ports.py`.
"""

from __future__ import annotations

import logging
from typing import Protocol

from reference_controller.config import KafkaConfig
from reference_controller.controller.context import ControllerContext
from reference_controller.controller.effects import Effect
from reference_controller.controller.events import ControllerEvent
from reference_controller.controller.partition_state_machine import PartitionStateMachine
from reference_controller.controller.ports import ChildHandler, Clock, NodeHandler, ZkPort
from reference_controller.controller.replica_state_machine import ReplicaStateMachine
from reference_controller.controller.request_batch import ControllerBrokerRequestBatch
from reference_controller.controller.state_change_log import StateChangeLogger
from reference_controller.controller.topic_deletion import TopicDeletionManager

ControllerLog = logging.LoggerAdapter[logging.Logger]


# ---- the helpers of `common` ------------------------------------------------------------------
class ContextHolder(Protocol):
    context: ControllerContext


class UpdateMetadataSender(ContextHolder, Protocol):
    """`sendUpdateMetadataRequest`: a fresh batch, sent at once."""

    batch: ControllerBrokerRequestBatch

    def emit(self, effects: list[Effect]) -> None: ...


class LeadershipCacheReader(ContextHolder, Protocol):
    """`updateLeaderAndIsrCache`: the state znodes into the leadership cache."""

    zk: ZkPort


class NodeHandlerRegistry(Protocol):
    """The per-topic and per-broker modification handlers."""

    def register_node_handler(self, handler: NodeHandler, check_exists: bool = False) -> bool: ...
    def unregister_node_handler(self, path: str) -> None: ...


# ---- the handler groups -----------------------------------------------------------------------
class DeletionClientPort(UpdateMetadataSender, NodeHandlerRegistry, Protocol):
    """Kafka's `ControllerDeletionClient`: the writes and requests of topic deletion."""

    zk: ZkPort


class TopicPort(DeletionClientPort, Protocol):
    """Topic creation, partition expansion, topic deletion events."""

    config: KafkaConfig
    log: ControllerLog
    replica_state_machine: ReplicaStateMachine
    partition_state_machine: PartitionStateMachine
    topic_deletion_manager: TopicDeletionManager

    @property
    def is_active(self) -> bool: ...


class LeaderElectionPort(Protocol):
    """Preferred, automatic and unclean leader elections."""

    config: KafkaConfig
    zk: ZkPort
    log: ControllerLog
    context: ControllerContext
    partition_state_machine: PartitionStateMachine
    topic_deletion_manager: TopicDeletionManager

    @property
    def is_active(self) -> bool: ...

    def emit(self, effects: list[Effect]) -> None: ...
    def enqueue(self, event: ControllerEvent) -> None: ...
    def register_node_handler(self, handler: NodeHandler, check_exists: bool = False) -> bool: ...


class ReassignmentPort(UpdateMetadataSender, Protocol):
    """Partition reassignment (KIP-455's phases)."""

    zk: ZkPort
    log: ControllerLog
    state_change_log: StateChangeLogger
    replica_state_machine: ReplicaStateMachine
    partition_state_machine: PartitionStateMachine
    topic_deletion_manager: TopicDeletionManager

    @property
    def is_active(self) -> bool: ...

    def enqueue(self, event: ControllerEvent) -> None: ...
    def register_node_handler(self, handler: NodeHandler, check_exists: bool = False) -> bool: ...
    def unregister_node_handler(self, path: str) -> None: ...


class ApiReassignmentPort(ReassignmentPort, Protocol):
    """AlterPartitionReassignments and ListPartitionReassignments: the reassignment handlers' port."""


class BrokerPort(ReassignmentPort, Protocol):
    """Broker membership: startup and failure resume reassignments, so it needs their port."""


class NotificationPort(BrokerPort, Protocol):
    """ISR-change and log-dir notifications and broker responses (replicas going offline is
    `brokers.on_replicas_become_offline`)."""


class ShutdownPort(UpdateMetadataSender, Protocol):
    """Controlled shutdown."""

    log: ControllerLog
    replica_state_machine: ReplicaStateMachine
    partition_state_machine: PartitionStateMachine
    topic_deletion_manager: TopicDeletionManager

    @property
    def is_active(self) -> bool: ...


class FailoverPort(ReassignmentPort, LeaderElectionPort, Protocol):
    """`onControllerFailover` / `onControllerResignation`: every handler registered or dropped."""

    node_handlers: dict[str, NodeHandler]

    def register_child_handler(self, handler: ChildHandler) -> None: ...
    def unregister_child_handler(self, path: str) -> None: ...


class ElectionPort(FailoverPort, Protocol):
    """Controllership and session events, and the re-runs after a reconnect."""

    broker_id: int
    clock: Clock
    existed_at_last_check: dict[str, bool]
