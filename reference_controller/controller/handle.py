"""ControllerHandle: the port the handler modules use of the controller (ring: core boundary — types
only).

A port of its own, beside `ports.py`, because its members are the core's own parts (context, state
machines, request batch), which import `ports.py`; declared there it would tie the ports to the
parts that use them. `KafkaController` implements it; no handler imports the core (a wall in
`tests/architecture/test_walls.py`).
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


class ControllerHandle(Protocol):
    """What the handler modules (`election`, `failover`, `brokers`, `topics`, `reassignment`,
    `notifications`, `leader_elections`, `shutdown`, `common`) may use of the controller: its
    identity and config, its ports, its state (the context, whose `controllership` record the
    election handlers write), the state machines and request batch, and the services that
    collect effects and register watches. `KafkaController` implements it; handlers never import
    the core, so the core depends on the handlers and not the other way round."""

    broker_id: int
    config: KafkaConfig
    zk: ZkPort
    clock: Clock
    log: logging.LoggerAdapter[logging.Logger]
    context: ControllerContext
    state_change_log: StateChangeLogger
    batch: ControllerBrokerRequestBatch
    replica_state_machine: ReplicaStateMachine
    partition_state_machine: PartitionStateMachine
    topic_deletion_manager: TopicDeletionManager
    node_handlers: dict[str, NodeHandler]
    existed_at_last_check: dict[str, bool]

    @property
    def is_active(self) -> bool: ...

    def emit(self, effects: list[Effect]) -> None: ...
    def enqueue(self, event: ControllerEvent) -> None: ...
    def register_node_handler(self, handler: NodeHandler, check_exists: bool = False) -> bool: ...
    def unregister_node_handler(self, path: str) -> None: ...
    def register_child_handler(self, handler: ChildHandler) -> None: ...
    def unregister_child_handler(self, path: str) -> None: ...
