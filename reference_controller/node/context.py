"""What the API handlers of a node share, and the ports they reach the rest through (ring: drivers)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kafkawire.api_error import ApiError
from kafkawire.states import TopicPartition
from reference_controller.config import KafkaConfig
from reference_controller.controller.events import ControlledShutdownResult, ElectionResults, ElectionType
from reference_controller.node.isr import IsrManager
from reference_controller.node.journal import ControllerRequestJournal
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.zk_port import NodeZkPort
from reference_controller.zkdata import ReplicaAssignment


class ControllerComponent(Protocol):
    """What the node uses of its controller component (`ControllerService` on kazoo): its life
    cycle, a new broker epoch after re-registration, whether it is the active controller, the
    ControlledShutdown API (blocking: called from a worker thread) and the admin APIs the
    controller answers (AlterPartitionReassignments, ListPartitionReassignments, ElectLeaders:
    each answers once through `reply`, from the controller's thread)."""

    def startup(self) -> None: ...
    def shutdown(self) -> None: ...
    def on_broker_registered(self, broker_epoch: int) -> None: ...
    def is_active(self) -> bool: ...
    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, timeout_s: float
    ) -> ControlledShutdownResult: ...
    def alter_partition_reassignments(
        self,
        reassignments: dict[TopicPartition, tuple[int, ...] | None],
        reply: Callable[[dict[TopicPartition, ApiError] | ApiError], None],
    ) -> None: ...
    def list_partition_reassignments(
        self,
        partitions: frozenset[TopicPartition] | None,
        reply: Callable[[dict[TopicPartition, ReplicaAssignment] | ApiError], None],
    ) -> None: ...
    def elect_leaders(
        self,
        partitions: frozenset[TopicPartition],
        election_type: ElectionType,
        reply: Callable[[ElectionResults], None],
    ) -> None: ...


@dataclass
class NodeContext:
    config: KafkaConfig
    zk: NodeZkPort
    cluster_id: str
    replica_manager: ReplicaManager
    metadata_cache: MetadataCache
    isr_manager: IsrManager
    journal: ControllerRequestJournal
    controller: ControllerComponent | None = None  # None: broker-only mode, or not started yet
    rng: random.Random = field(default_factory=random.Random)

    def controller_is_active(self) -> bool:
        return self.controller is not None and self.controller.is_active()
