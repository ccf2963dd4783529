"""Partition reassignment planning (ring: decisions — pure).

KIP-455's algorithm as Kafka 2.5 documents it above `onPartitionReassignment`
(KafkaController.scala@2.5.1 L488-554). RS = current assigned replica set, ORS = original replica
set, TRS = target replica set, AR = adding replicas (TRS − ORS), RR = removing replicas (ORS − TRS).

Steps:
  U1. Update ZK with RS = ORS + TRS, AR = TRS − ORS, RR = ORS − TRS.
  U2. Update memory with RS = ORS + TRS, AR = TRS − ORS, RR = ORS − TRS.
  U3. If replacing an in-flight reassignment, stop the replicas of the old RS not in the new RS.
  Phase A (TRS ⊄ ISR):
    A1. Bump the leader epoch and send LeaderAndIsr to every replica in RS.
    A2. Move every replica in AR to NewReplica.
  Phase B (TRS ⊆ ISR):
    B1. AR → OnlineReplica.
    B2. RS = TRS, AR = RR = [] in memory.
    B3. LeaderAndIsr with RS = TRS (elect from TRS if the leader ∉ TRS or is dead, else bump epoch).
    B4. RR → OfflineReplica (ISR shrink in ZK, LeaderAndIsr to the leader, StopReplica(delete=false)).
    B5. RR → NonExistentReplica (StopReplica(delete=true)).
    B6. ZK RS = TRS, AR = RR = [].
    B7. Unregister the ISR watch; remove the partition from /admin/reassign_partitions.
    B8. UpdateMetadata to every broker.

Worked table for ORS {1,2,3} → TRS {4,5,6}:

    RS                AR          RR          leader     isr
    {1,2,3}           {}          {}          1          {1,2,3}           (initial state)
    {4,5,6,1,2,3}     {4,5,6}     {1,2,3}     1          {1,2,3}           (step A2)
    {4,5,6,1,2,3}     {4,5,6}     {1,2,3}     1          {1,2,3,4,5,6}     (phase B)
    {4,5,6,1,2,3}     {4,5,6}     {1,2,3}     4          {1,2,3,4,5,6}     (step B3)
    {4,5,6,1,2,3}     {4,5,6}     {1,2,3}     4          {4,5,6}           (step B4)
    {4,5,6}           {}          {}          4          {4,5,6}           (step B6)

Leader-epoch arithmetic in 2.5 (spec §11): A1 +1, B3 +1, B4 +1 per removed ISR member, so
{1,2,3}→{4,5,6} ends at 5 and [0]→[1] at 3.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import Enum

from reference_controller.controller.decisions.states import ReplicaState
from reference_controller.zkdata import ReplicaAssignment


class Phase(Enum):
    """Which half of `onPartitionReassignment` runs."""

    A = "TRS not yet in the ISR: bump the leader epoch, start the adding replicas"
    B = "TRS in the ISR (or nothing to reassign): complete the reassignment"


class LeaderMove(Enum):
    """B3, `moveReassignedPartitionLeaderIfRequired`: what happens to the leader once RS = TRS."""

    ELECT_NOT_IN_TARGET = "the leader is not in TRS: elect one from TRS"
    KEEP_AND_BUMP_EPOCH = "the leader is in TRS and alive: keep it, leader epoch + 1"
    ELECT_DEAD_LEADER = "the leader is in TRS but dead: elect one from TRS"


#: B4, B5: the states a removed replica goes through, in order (`stopRemovedReplicasOfReassignedPartition`).
REMOVED_REPLICA_STATES = (
    ReplicaState.OfflineReplica,
    ReplicaState.ReplicaDeletionStarted,
    ReplicaState.ReplicaDeletionSuccessful,
    ReplicaState.NonExistentReplica,
)


def build_reassignment(current: ReplicaAssignment, target: Sequence[int] | None) -> ReplicaAssignment | None:
    """`maybeBuildReassignment`: rebase on ORS if already reassigning; None target = cancel."""
    if current.is_being_reassigned:
        return current.reassign_to(target if target is not None else current.origin_replicas)
    return None if target is None else current.reassign_to(target)


def is_reassignment_complete(assignment: ReplicaAssignment, isr: Collection[int] | None) -> bool:
    """`isReassignmentComplete`: not being reassigned, or TRS ⊆ ISR (None = no state znode)."""
    if not assignment.is_being_reassigned:
        return True
    if isr is None:
        return False
    return set(assignment.target_replicas) <= set(isr)


def phase(assignment: ReplicaAssignment, isr: Collection[int] | None) -> Phase:
    """Phase B once the reassignment is complete (`isReassignmentComplete`), else phase A."""
    return Phase.B if is_reassignment_complete(assignment, isr) else Phase.A


def leader_move(target_replicas: Collection[int], leader: int, leader_online: bool) -> LeaderMove:
    """B3's choice for the partition's current leader (`moveReassignedPartitionLeaderIfRequired`)."""
    if leader not in target_replicas:
        return LeaderMove.ELECT_NOT_IN_TARGET
    return LeaderMove.KEEP_AND_BUMP_EPOCH if leader_online else LeaderMove.ELECT_DEAD_LEADER


def unneeded_replicas(current: ReplicaAssignment, new: ReplicaAssignment) -> tuple[int, ...]:
    """U3: replicas of the current RS that the new RS no longer contains (`replicas diff`)."""
    return tuple(r for r in current.replicas if r not in new.replicas)


def completed(assignment: ReplicaAssignment) -> ReplicaAssignment:
    """B2: RS = TRS, AR = RR = []."""
    return ReplicaAssignment(assignment.target_replicas)
