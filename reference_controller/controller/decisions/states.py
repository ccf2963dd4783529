"""Replica and partition states with Kafka's valid-previous-state tables (ring: decisions — data).

Mirrors `ReplicaState` (ReplicaStateMachine.scala@2.5.1 L442-480) and `PartitionState`
(PartitionStateMachine.scala@2.5.1 L551-574). The member names are Kafka's, because they appear
verbatim in the state-change log. The tables keep Kafka's declaration order, which is the order
`validPreviousStates.mkString(",")` prints (Scala Set1..Set4 keep insertion order).
"""

from __future__ import annotations

from enum import Enum


class ReplicaState(Enum):
    NewReplica = 1
    OnlineReplica = 2
    OfflineReplica = 3
    ReplicaDeletionStarted = 4
    ReplicaDeletionSuccessful = 5
    ReplicaDeletionIneligible = 6
    NonExistentReplica = 7

    def __str__(self) -> str:
        return self.name


class PartitionState(Enum):
    NewPartition = 0
    OnlinePartition = 1
    OfflinePartition = 2
    NonExistentPartition = 3

    def __str__(self) -> str:
        return self.name


_R = ReplicaState
_P = PartitionState

VALID_PREVIOUS_REPLICA_STATES: dict[ReplicaState, tuple[ReplicaState, ...]] = {
    _R.NewReplica: (_R.NonExistentReplica,),
    _R.OnlineReplica: (_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible),
    _R.OfflineReplica: (_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible),
    _R.ReplicaDeletionStarted: (_R.OfflineReplica,),
    _R.ReplicaDeletionSuccessful: (_R.ReplicaDeletionStarted,),
    # KAFKA-8237 (2.3+): OfflineReplica added in front of ReplicaDeletionStarted.
    _R.ReplicaDeletionIneligible: (_R.OfflineReplica, _R.ReplicaDeletionStarted),
    _R.NonExistentReplica: (_R.ReplicaDeletionSuccessful,),
}

VALID_PREVIOUS_PARTITION_STATES: dict[PartitionState, tuple[PartitionState, ...]] = {
    _P.NewPartition: (_P.NonExistentPartition,),
    _P.OnlinePartition: (_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition),
    _P.OfflinePartition: (_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition),
    _P.NonExistentPartition: (_P.OfflinePartition,),
}


def is_valid_replica_transition(current: ReplicaState, target: ReplicaState) -> bool:
    return current in VALID_PREVIOUS_REPLICA_STATES[target]


def is_valid_partition_transition(current: PartitionState, target: PartitionState) -> bool:
    return current in VALID_PREVIOUS_PARTITION_STATES[target]


def valid_previous_names(states: tuple[ReplicaState, ...] | tuple[PartitionState, ...]) -> str:
    """`validPreviousStates.mkString(",")`."""
    return ",".join(s.name for s in states)
