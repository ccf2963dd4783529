"""Effects the controller core returns from `process(event)` (ring: core — data only).

Requests are version-independent data; the channel driver encodes them with kio at the version
the `inter.broker.protocol.version` selects (LeaderAndIsr v4, UpdateMetadata v6, StopReplica v2 at
IBP 2.5). The core returns them already batched per broker and in Kafka's send order
(ControllerBrokerRequestBatch.sendRequestsToBrokers: LeaderAndIsr, then UpdateMetadata, then
StopReplica), and only for live-or-shutting-down brokers. The driver keeps one FIFO connection per
broker, so the order per broker is preserved on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition
from reference_controller.controller.events import ControllerEvent
from reference_controller.zkdata import BrokerInfo


@dataclass(frozen=True)
class LeaderAndIsrRequest:
    broker_id: int  # destination
    broker_epoch: int  # destination's czxid
    controller_id: int
    controller_epoch: int
    partition_states: tuple[LeaderAndIsrPartitionState, ...]
    live_leaders: tuple[LiveLeader, ...]


@dataclass(frozen=True)
class UpdateMetadataPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int  # -2 (LeaderDuringDelete) for topics queued for deletion
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True)
class UpdateMetadataRequest:
    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    partition_states: tuple[UpdateMetadataPartitionState, ...]
    live_brokers: tuple[BrokerInfo, ...]  # all live-or-shutting-down brokers


@dataclass(frozen=True)
class StopReplicaRequest:
    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    delete_partitions: bool
    partitions: tuple[TopicPartition, ...]


BrokerRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


@dataclass(frozen=True)
class SendRequest:
    """Send `request` to `request.broker_id`. The driver turns the response into an event:
    LeaderAndIsrResponseReceived / UpdateMetadataResponseReceived, and for StopReplica with
    delete_partitions=True, TopicDeletionStopReplicaResponseReceived."""

    request: BrokerRequest


@dataclass(frozen=True)
class AddBroker:
    """Open a channel to a broker (ControllerChannelManager.addBroker)."""

    broker: BrokerInfo


@dataclass(frozen=True)
class RemoveBroker:
    broker_id: int


@dataclass(frozen=True)
class ScheduleEvent:
    """Enqueue `event` after `delay_ms` (replacing any timer with the same `key`)."""

    key: str
    delay_ms: int
    event: ControllerEvent


@dataclass(frozen=True)
class CancelScheduled:
    key: str | None  # None: cancel every timer (scheduler shutdown on resignation)


@dataclass(frozen=True)
class BecameController:
    epoch: int
    epoch_zk_version: int


@dataclass(frozen=True)
class Resigned:
    pass


Effect = (
    SendRequest | AddBroker | RemoveBroker | ScheduleEvent | CancelScheduled | BecameController | Resigned
)
