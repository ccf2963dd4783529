"""ControllerBrokerRequestBatch: per-broker batching of controller requests (ring: core).

Mirrors `AbstractControllerBrokerRequestBatch` (ControllerChannelManager.scala@2.5.1 L324-595):
- LeaderAndIsr partition states per broker, `isNew = isNew || alreadyNewInThisBatch`; every
  LeaderAndIsr addition also adds UpdateMetadata for the partition to all live-or-shutting-down
  brokers;
- UpdateMetadata partition states from the leadership cache (partitions without leadership are
  skipped), leader -2 / epoch 0 / zkVersion 0 for topics queued for deletion, offline replicas;
- StopReplica per broker, delete=true and delete=false as separate requests (delete first).
`send_requests_to_brokers` returns `SendRequest` effects: all LeaderAndIsr, then all
UpdateMetadata, then all StopReplica, only for live-or-shutting-down brokers, brokers by id.
LeaderAndIsr's live leaders are the leaders' endpoints on the inter-broker listener
(`_.node(config.interBrokerListenerName)`, ControllerChannelManager.scala@2.5.1 L459-461); a
leader without that listener raises `BrokerEndPointNotAvailableError` (Broker.scala@2.5.1 L64-68),
which `sendRequestsToBrokers` logs and rethrows as an illegal state (L572-595).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition
from reference_controller.controller.context import ControllerContext, tp_str
from reference_controller.controller.effects import (
    Effect,
    LeaderAndIsrRequest,
    SendRequest,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from reference_controller.controller.state_change_log import StateChangeLogger
from reference_controller.errors import ReferenceControllerError
from reference_controller.zkdata import LEADER_DURING_DELETE, LeaderIsrAndControllerEpoch, ReplicaAssignment


class IllegalBatchStateError(ReferenceControllerError):
    """`newBatch()` found a batch that was not drained (Kafka: IllegalStateException ⇒ resign)."""


class BrokerEndPointNotAvailableError(ReferenceControllerError):
    """A live leader has no endpoint on the inter-broker listener (Kafka's exception of that name)."""


_log = logging.getLogger("kafka.controller.ControllerBrokerRequestBatch")


@dataclass(frozen=True)
class _StopReplicaInfo:
    tp: TopicPartition
    delete: bool


class ControllerBrokerRequestBatch:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        state_change_log: StateChangeLogger,
        inter_broker_listener: str,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.state_change_log = state_change_log
        self.inter_broker_listener = inter_broker_listener
        self.leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self.stop_replica: dict[int, list[_StopReplicaInfo]] = {}
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        # Per-batch memos (speed only, never what is recorded): the LeaderAndIsr state last built
        # for (partition, isNew) with the inputs it came from, and the inputs of each recorded
        # UpdateMetadata state. An add whose inputs equal the memo's records an equal state.
        self._lai_memo: dict[
            tuple[TopicPartition, bool],
            tuple[LeaderIsrAndControllerEpoch, ReplicaAssignment, LeaderAndIsrPartitionState],
        ] = {}
        self._um_inputs: dict[TopicPartition, tuple[object, ...]] = {}

    def is_empty(self) -> bool:
        return not (self.leader_and_isr or self.stop_replica or self.update_metadata_brokers)

    def new_batch(self) -> None:
        if not self.is_empty():
            raise IllegalBatchStateError(
                "Controller to broker state change requests batch is not empty while creating a new one"
            )

    def clear(self) -> None:
        self.leader_and_isr.clear()
        self.stop_replica.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self._lai_memo.clear()
        self._um_inputs.clear()

    # ---- adding ---------------------------------------------------------------------------
    def add_leader_and_isr_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        leader_isr: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        is_new: bool,
    ) -> None:
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            states = self.leader_and_isr.get(broker_id)
            if states is None:
                states = self.leader_and_isr[broker_id] = {}
            previous = states.get(tp)
            states[tp] = self._lai_state(
                tp, leader_isr, assignment, is_new or (previous is not None and previous.is_new)
            )
        # addUpdateMetadataRequestForBrokers(liveOrShuttingDownBrokerIds, Set(tp))
        live = self.context.live_brokers
        if not self.update_metadata_brokers.issuperset(live):
            self.update_metadata_brokers.update(b for b in live if b >= 0)
        self._add_update_metadata_partition(tp)

    def _lai_state(
        self,
        tp: TopicPartition,
        leader_isr: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        is_new: bool,
    ) -> LeaderAndIsrPartitionState:
        """The partition's LeaderAndIsr state; one object shared by all replicas of one add."""
        memo = self._lai_memo.get((tp, is_new))
        if memo is not None and memo[0] is leader_isr and memo[1] is assignment:
            return memo[2]
        lai = leader_isr.leader_and_isr
        state = LeaderAndIsrPartitionState(
            topic=tp[0],
            partition=tp[1],
            controller_epoch=leader_isr.controller_epoch,
            leader=lai.leader,
            leader_epoch=lai.leader_epoch,
            isr=tuple(lai.isr),
            zk_version=lai.zk_version,
            replicas=tuple(assignment.replicas),
            adding_replicas=tuple(assignment.adding),
            removing_replicas=tuple(assignment.removing),
            is_new=is_new,
        )
        self._lai_memo[(tp, is_new)] = (leader_isr, assignment, state)
        return state

    def add_stop_replica_request_for_brokers(
        self, broker_ids: Iterable[int], tp: TopicPartition, delete_partition: bool
    ) -> None:
        for broker_id in broker_ids:
            if broker_id >= 0:
                self.stop_replica.setdefault(broker_id, []).append(_StopReplicaInfo(tp, delete_partition))

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            self._add_update_metadata_partition(tp)

    def _add_update_metadata_partition(self, tp: TopicPartition) -> None:
        ctx = self.context
        info = ctx.partition_leadership_info.get(tp)
        if info is None:
            self.state_change_log.logger.info(
                f"Leader not yet assigned for partition {tp_str(tp)}. Skip sending UpdateMetadataRequest."
            )
            return
        lai = info.leader_and_isr
        replicas = ctx.partition_replica_assignment(tp)
        being_deleted = tp[0] in ctx.topics_to_be_deleted
        offline = tuple(r for r in replicas if not ctx.is_replica_online(r, tp))
        inputs = (info, replicas, being_deleted, offline)
        if self._um_inputs.get(tp) == inputs:
            return  # Kafka overwrites with an equal state: the recorded one stands
        self._um_inputs[tp] = inputs
        self.update_metadata_partitions[tp] = UpdateMetadataPartitionState(
            topic=tp[0],
            partition=tp[1],
            controller_epoch=info.controller_epoch,
            leader=LEADER_DURING_DELETE if being_deleted else lai.leader,
            leader_epoch=0 if being_deleted else lai.leader_epoch,
            isr=tuple(lai.isr),
            zk_version=0 if being_deleted else lai.zk_version,
            replicas=tuple(replicas),
            offline_replicas=offline,
        )

    # ---- sending --------------------------------------------------------------------------
    def send_requests_to_brokers(self, controller_epoch: int) -> list[Effect]:
        """The batch's requests as effects (ControllerChannelManager.scala@2.5.1 L572-595).

        On failure Kafka logs what it could not send and throws IllegalStateException. Kafka then
        leaves the maps as they are, so every later `newBatch()` fails; this batch is cleared
        instead, so one bad broker registration cannot wedge the controller for good.
        """
        try:
            return [
                *self._leader_and_isr_requests(controller_epoch),
                *self._update_metadata_requests(controller_epoch),
                *self._stop_replica_requests(controller_epoch),
            ]
        except Exception as exc:
            if self.leader_and_isr:
                _log.error(
                    "Haven't been able to send leader and isr requests, current state of the map is "
                    f"{self.leader_and_isr}. Exception message: {exc}"
                )
            if self.update_metadata_brokers:
                _log.error(
                    "Haven't been able to send metadata update requests to brokers "
                    f"{_set_str(self.update_metadata_brokers)}, current state of the partition info is "
                    f"{self.update_metadata_partitions}. Exception message: {exc}"
                )
            if self.stop_replica:
                _log.error(
                    "Haven't been able to send stop replica requests, current state of the map is "
                    f"{self.stop_replica}. Exception message: {exc}"
                )
            raise IllegalBatchStateError(str(exc)) from exc
        finally:
            self.clear()

    def _reachable(self, broker_ids: Iterable[int]) -> list[int]:
        live = self.context.live_or_shutting_down_broker_ids
        return sorted(b for b in broker_ids if b in live)

    def _leader_and_isr_requests(self, controller_epoch: int) -> list[Effect]:
        effects: list[Effect] = []
        for broker in self._reachable(self.leader_and_isr):
            states = self.leader_and_isr[broker]
            for tp, state in states.items() if self.state_change_log.trace_enabled else ():
                kind = "become-leader" if broker == state.leader else "become-follower"
                self.state_change_log.trace(
                    f"Sending {kind} LeaderAndIsr request {state} to broker {broker} "
                    f"for partition {tp_str(tp)}"
                )
            request = LeaderAndIsrRequest(
                broker_id=broker,
                broker_epoch=self.context.live_broker_epochs.get(broker, -1),
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                partition_states=tuple(states.values()),
                live_leaders=self._live_leaders({s.leader for s in states.values()}),
            )
            effects.append(SendRequest(request))
        return effects

    def _live_leaders(self, leader_ids: set[int]) -> tuple[LiveLeader, ...]:
        leaders: list[LiveLeader] = []
        for broker in self.context.live_or_shutting_down_brokers():
            if broker.broker_id in leader_ids:
                endpoint = broker.endpoint(self.inter_broker_listener)
                if endpoint is None:
                    raise BrokerEndPointNotAvailableError(
                        f"End point with listener name {self.inter_broker_listener} not found "
                        f"for broker {broker.broker_id}"
                    )
                leaders.append(LiveLeader(broker.broker_id, endpoint.host, endpoint.port))
        return tuple(leaders)

    def _update_metadata_requests(self, controller_epoch: int) -> list[Effect]:
        traced = self.update_metadata_partitions.items() if self.state_change_log.trace_enabled else ()
        for tp, state in traced:
            self.state_change_log.trace(
                f"Sending UpdateMetadata request {_um_state_str(state)} to brokers "
                f"{_set_str(self.update_metadata_brokers)} for partition {tp_str(tp)}"
            )
        live_brokers = tuple(self.context.live_or_shutting_down_brokers())
        partition_states = tuple(self.update_metadata_partitions.values())
        return [
            SendRequest(
                UpdateMetadataRequest(
                    broker_id=broker,
                    broker_epoch=self.context.live_broker_epochs.get(broker, -1),
                    controller_id=self.controller_id,
                    controller_epoch=controller_epoch,
                    partition_states=partition_states,
                    live_brokers=live_brokers,
                )
            )
            for broker in self._reachable(self.update_metadata_brokers)
        ]

    def _stop_replica_requests(self, controller_epoch: int) -> list[Effect]:
        effects: list[Effect] = []
        for broker in self._reachable(self.stop_replica):
            infos = self.stop_replica[broker]
            for delete in (True, False):
                partitions = tuple(i.tp for i in infos if i.delete == delete)
                if partitions:
                    effects.append(
                        SendRequest(self._stop_replica(broker, controller_epoch, delete, partitions))
                    )
        return effects

    def _stop_replica(
        self, broker: int, controller_epoch: int, delete: bool, partitions: Sequence[TopicPartition]
    ) -> StopReplicaRequest:
        return StopReplicaRequest(
            broker_id=broker,
            broker_epoch=self.context.live_broker_epochs.get(broker, -1),
            controller_id=self.controller_id,
            controller_epoch=controller_epoch,
            delete_partitions=delete,
            partitions=tuple(partitions),
        )


def _set_str(values: Iterable[int]) -> str:
    return "Set(" + ", ".join(str(v) for v in sorted(values)) + ")"


def _um_state_str(s: UpdateMetadataPartitionState) -> str:
    return (
        f"UpdateMetadataPartitionState(topicName='{s.topic}', partitionIndex={s.partition}, "
        f"controllerEpoch={s.controller_epoch}, leader={s.leader}, leaderEpoch={s.leader_epoch}, "
        f"isr={list(s.isr)}, zkVersion={s.zk_version}, replicas={list(s.replicas)}, "
        f"offlineReplicas={list(s.offline_replicas)})"
    )
