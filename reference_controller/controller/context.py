"""ControllerContext: the controller's in-memory view of the cluster (ring: core — state, no I/O).

Mirrors `ControllerContext.scala@2.5.1`: live brokers and their epochs (czxid of the registration),
shutting-down brokers, replicas on offline log dirs, topics, full replica assignments (RS/AR/RR),
the leadership cache, replica and partition states, partitions being reassigned, the topic
deletion sets, and the controller epoch with its zkVersion. Iteration orders are made
deterministic (sorted) where Kafka iterates hash sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkawire.states import TopicPartition
from reference_controller.controller.decisions.states import PartitionState, ReplicaState
from reference_controller.zkdata import BrokerInfo, LeaderIsrAndControllerEpoch, ReplicaAssignment


def tp_str(tp: TopicPartition) -> str:
    """Kafka's `TopicPartition.toString`: `topic-partition`."""
    return f"{tp[0]}-{tp[1]}"


class PartitionAndReplica(NamedTuple):
    """Kafka's `PartitionAndReplica(topicPartition, replica)`. A NamedTuple rather than a frozen
    dataclass: it is built, hashed and compared per replica on the failover path (60k
    constructions and 170k hashes for 10k partitions); the tuple does those in C. It holds the
    partition's `TopicPartition` itself, so a replica hands it out without building one (90k times
    in a 10k-partition failover). Ordering (topic, partition, replica), repr and `str` are those
    the flat dataclass had."""

    topic_partition: TopicPartition
    replica: int

    @property
    def topic(self) -> str:
        return self.topic_partition[0]

    @property
    def partition(self) -> int:
        return self.topic_partition[1]

    def __str__(self) -> str:
        return f"[Topic={self.topic},Partition={self.partition},Replica={self.replica}]"

    def __repr__(self) -> str:
        fields = f"topic={self.topic!r}, partition={self.partition!r}, replica={self.replica!r}"
        return f"PartitionAndReplica({fields})"


_NO_ASSIGNMENT = ReplicaAssignment(())  # frozen: one shared instance for "no assignment"


def replica_of(tp: TopicPartition, replica: int) -> PartitionAndReplica:
    return PartitionAndReplica(tp, replica)


@dataclass
class Controllership:
    """Who this node believes is the controller, and whether its own failover began (Kafka's
    `activeControllerId` and the "failover started" half of `isActive`). Survives
    `reset_context`: resignation clears the cluster view, not who the controller is."""

    active_controller_id: int = -1
    failover_started: bool = False


@dataclass
class ControllerContext:
    controllership: Controllership = field(default_factory=Controllership)
    epoch: int = 0
    epoch_zk_version: int = 0
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    live_broker_epochs: dict[int, int] = field(default_factory=dict)
    shutting_down_broker_ids: set[int] = field(default_factory=set)
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)
    all_topics: set[str] = field(default_factory=set)
    partition_assignments: dict[str, dict[int, ReplicaAssignment]] = field(default_factory=dict)
    # The TopicPartition of each assigned partition, kept as first given: the failover path lists
    # every partition several times and would otherwise build each one again per listing.
    topic_partitions: dict[str, dict[int, TopicPartition]] = field(default_factory=dict, repr=False)
    partition_leadership_info: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    partitions_being_reassigned: set[TopicPartition] = field(default_factory=set)
    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[PartitionAndReplica, ReplicaState] = field(default_factory=dict)
    topics_to_be_deleted: set[str] = field(default_factory=set)
    topics_with_deletion_started: set[str] = field(default_factory=set)
    topics_ineligible_for_deletion: set[str] = field(default_factory=set)

    # ---- brokers --------------------------------------------------------------------------
    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down_broker_ids

    def live_or_shutting_down_brokers(self) -> list[BrokerInfo]:
        return [self.live_brokers[b] for b in sorted(self.live_brokers)]

    def set_live_broker_and_epochs(self, brokers: dict[int, tuple[BrokerInfo, int]]) -> None:
        self.live_brokers = {b: info for b, (info, _) in brokers.items()}
        self.live_broker_epochs = {b: epoch for b, (_, epoch) in brokers.items()}

    def add_live_brokers_and_epochs(self, brokers: dict[int, tuple[BrokerInfo, int]]) -> None:
        for b, (info, epoch) in brokers.items():
            self.live_brokers[b] = info
            self.live_broker_epochs[b] = epoch

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for b in broker_ids:
            self.live_brokers.pop(b, None)
            self.live_broker_epochs.pop(b, None)

    def is_replica_online(
        self, broker_id: int, tp: TopicPartition, include_shutting_down: bool = False
    ) -> bool:
        # Membership tests only: no per-call set of live brokers (160k calls in a 10k failover).
        if broker_id not in self.live_brokers:
            return False
        if not include_shutting_down and broker_id in self.shutting_down_broker_ids:
            return False
        offline = self.replicas_on_offline_dirs.get(broker_id)
        return offline is None or tp not in offline

    def online_replicas(self, tp: TopicPartition, include_shutting_down: bool = False) -> frozenset[int]:
        return frozenset(
            r
            for r in self.partition_replica_assignment(tp)
            if self.is_replica_online(r, tp, include_shutting_down)
        )

    # ---- assignments ----------------------------------------------------------------------
    def partition_full_replica_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        partitions = self.partition_assignments.get(tp[0])
        if partitions is None:
            return _NO_ASSIGNMENT
        return partitions.get(tp[1], _NO_ASSIGNMENT)

    def partition_replica_assignment(self, tp: TopicPartition) -> tuple[int, ...]:
        return self.partition_full_replica_assignment(tp).replicas

    def update_partition_full_replica_assignment(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        self.partition_assignments.setdefault(tp[0], {})[tp[1]] = assignment
        self.topic_partitions.setdefault(tp[0], {}).setdefault(tp[1], tp)

    def partition_full_replica_assignment_for_topic(self, topic: str) -> dict[int, ReplicaAssignment]:
        return dict(self.partition_assignments.get(topic, {}))

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        partitions = self.topic_partitions.get(topic, {})
        return [partitions[p] for p in sorted(partitions)]

    def all_partitions(self) -> list[TopicPartition]:
        return [tp for topic in sorted(self.partition_assignments) for tp in self.partitions_for_topic(topic)]

    def replicas_for_partition(self, partitions: Iterable[TopicPartition]) -> list[PartitionAndReplica]:
        return [replica_of(tp, r) for tp in partitions for r in self.partition_replica_assignment(tp)]

    def replicas_for_topic(self, topic: str) -> list[PartitionAndReplica]:
        return self.replicas_for_partition(self.partitions_for_topic(topic))

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if broker_id in self.partition_replica_assignment(tp)]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionAndReplica]:
        ids = set(broker_ids)
        return [
            replica_of(tp, r)
            for tp in self.all_partitions()
            for r in self.partition_replica_assignment(tp)
            if r in ids
        ]

    def remove_topic(self, topic: str) -> None:
        """`removeTopic` (ControllerContext.scala@2.5.1 L276-283): the topic, its assignment and its
        leadership cache only. Partition and replica states and `partitionsBeingReassigned` are
        kept, as in Kafka: a topic znode deleted by hand and written again meets its stale states."""
        self.all_topics.discard(topic)
        self.partition_assignments.pop(topic, None)
        self.topic_partitions.pop(topic, None)
        for tp in [tp for tp in self.partition_leadership_info if tp[0] == topic]:
            del self.partition_leadership_info[tp]

    # ---- states ---------------------------------------------------------------------------
    def replica_state(self, replica: PartitionAndReplica) -> ReplicaState:
        return self.replica_states.get(replica, ReplicaState.NonExistentReplica)

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self.partition_states.get(tp, PartitionState.NonExistentPartition)

    def partitions_in_states(self, states: Iterable[PartitionState]) -> list[TopicPartition]:
        """`partitionsInStates`: over the partition-state map (which outlives `removeTopic`)."""
        wanted = set(states)
        return [tp for tp, state in sorted(self.partition_states.items()) if state in wanted]

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionAndReplica]:
        return [r for r in self.replicas_for_topic(topic) if self.replica_state(r) == state]

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_state(r) == state for r in self.replicas_for_topic(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_state(r) == state for r in self.replicas_for_topic(topic))

    # ---- topic deletion -------------------------------------------------------------------
    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_to_be_deleted.update(topics)

    def begin_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_with_deletion_started.update(topics)

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic in self.topics_with_deletion_started

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def reset_context(self) -> None:
        fresh = ControllerContext(controllership=self.controllership)
        self.__dict__.update(fresh.__dict__)
