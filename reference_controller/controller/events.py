"""Controller events, named as in Kafka 2.5's ControllerEventManager (ring: core — data only).

Every event is a frozen dataclass. ZooKeeper watch callbacks, broker responses, timers and API
calls only *enqueue* these; one thread drains the queue and calls `KafkaController.process`.
API-driven events carry a `reply` callable (excluded from equality) that the core calls exactly once
with its result, including when the event is pre-empted (`clearAndPut` on Expire/shutdown).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from kafkawire.api_error import ApiError
from kafkawire.states import TopicPartition
from reference_controller.zkdata import ReplicaAssignment


class ElectionType(Enum):
    PREFERRED = "PREFERRED"
    UNCLEAN = "UNCLEAN"


class ElectionTrigger(Enum):
    ZK_TRIGGERED = "ZkTriggered"
    AUTO_TRIGGERED = "AutoTriggered"
    ADMIN_CLIENT_TRIGGERED = "AdminClientTriggered"


# ---- election and session -----------------------------------------------------------------
@dataclass(frozen=True)
class Startup:
    """Register the `/controller` exists-watch, then elect."""


@dataclass(frozen=True)
class ControllerChange:
    """`/controller` created or changed: maybeResign."""


@dataclass(frozen=True)
class Reelect:
    """`/controller` deleted: maybeResign, then elect."""


@dataclass(frozen=True)
class RegisterBrokerAndReelect:
    """After a new ZooKeeper session: the node has re-registered `/brokers/ids/<id>` (new broker
    epoch `broker_epoch` = its czxid) before enqueueing this; the controller re-elects."""

    broker_epoch: int


@dataclass(frozen=True)
class Expire:
    """The ZooKeeper session expired: resign (enqueued with clearAndPut, pre-empting the queue)."""


@dataclass(frozen=True)
class ZkReconnected:
    """Not Kafka: kazoo dropped every server-side watch on a connection blip (same session).
    The core re-reads every path it has a handler for (re-arming the watches) and processes the
    events it may have missed (Kafka's Java client restores watches; kazoo does not)."""


@dataclass(frozen=True)
class ShutdownEventThread:
    """Node shutdown: resign and stop."""


# ---- ZooKeeper-triggered ------------------------------------------------------------------
@dataclass(frozen=True)
class BrokerChange:
    pass


@dataclass(frozen=True)
class BrokerModifications:
    broker_id: int


@dataclass(frozen=True)
class TopicChange:
    pass


@dataclass(frozen=True)
class PartitionModifications:
    topic: str


@dataclass(frozen=True)
class TopicDeletion:
    pass


@dataclass(frozen=True)
class LogDirEventNotification:
    pass


@dataclass(frozen=True)
class IsrChangeNotification:
    pass


@dataclass(frozen=True)
class ZkPartitionReassignment:
    pass


@dataclass(frozen=True)
class PartitionReassignmentIsrChange:
    partition: TopicPartition


@dataclass(frozen=True)
class TopicUncleanLeaderElectionEnable:
    topic: str


@dataclass(frozen=True)
class UncleanLeaderElectionEnable:
    pass


# ---- elections and timers -----------------------------------------------------------------
# Per partition, Kafka's Either[ApiError, Int]: the error, or the leader the election chose.
ElectionResults = dict[TopicPartition, ApiError | int]


@dataclass(frozen=True)
class ReplicaLeaderElection:
    partitions: frozenset[TopicPartition] | None
    election_type: ElectionType
    trigger: ElectionTrigger
    reply: Callable[[ElectionResults], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AutoPreferredReplicaLeaderElection:
    pass


# ---- broker API ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ControlledShutdownResult:
    error_code: int  # 0, STALE_CONTROLLER_EPOCH (11), STALE_BROKER_EPOCH (77), BROKER_NOT_AVAILABLE (8), ...
    remaining_partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class ControlledShutdown:
    broker_id: int
    broker_epoch: int
    reply: Callable[[ControlledShutdownResult], None] = field(compare=False)


# ---- admin API (KIP-455) ------------------------------------------------------------------
@dataclass(frozen=True)
class ApiPartitionReassignment:
    """AlterPartitionReassignments: per partition a target (None = cancel), in request order, one
    entry per partition (the last one named wins). `reply` gets the per-partition results, or one
    top-level error (NOT_CONTROLLER)."""

    reassignments: tuple[tuple[TopicPartition, tuple[int, ...] | None], ...]
    reply: Callable[[dict[TopicPartition, ApiError] | ApiError], None] = field(compare=False)


@dataclass(frozen=True)
class ListPartitionReassignments:
    """ListPartitionReassignments: the named partitions (None = every one being reassigned)."""

    partitions: frozenset[TopicPartition] | None
    reply: Callable[[dict[TopicPartition, ReplicaAssignment] | ApiError], None] = field(compare=False)


# ---- responses from brokers ---------------------------------------------------------------
@dataclass(frozen=True)
class LeaderAndIsrResponseReceived:
    broker_id: int
    error_code: int
    partition_errors: tuple[tuple[TopicPartition, int], ...]


@dataclass(frozen=True)
class UpdateMetadataResponseReceived:
    broker_id: int
    error_code: int


@dataclass(frozen=True)
class TopicDeletionStopReplicaResponseReceived:
    """A StopReplica(deletePartitions=true) response (or a send failure: error_code != 0)."""

    broker_id: int
    error_code: int
    partition_errors: tuple[tuple[TopicPartition, int], ...]


ControllerEvent = (
    Startup | ControllerChange | Reelect | RegisterBrokerAndReelect | Expire | ZkReconnected
    | ShutdownEventThread | BrokerChange | BrokerModifications | TopicChange | PartitionModifications
    | TopicDeletion | LogDirEventNotification | IsrChangeNotification | ZkPartitionReassignment
    | PartitionReassignmentIsrChange | TopicUncleanLeaderElectionEnable | UncleanLeaderElectionEnable
    | ReplicaLeaderElection | AutoPreferredReplicaLeaderElection | ControlledShutdown
    | ApiPartitionReassignment | ListPartitionReassignments
    | LeaderAndIsrResponseReceived | UpdateMetadataResponseReceived | TopicDeletionStopReplicaResponseReceived
)  # fmt: skip
