"""Leader election strategies as pure functions (ring: decisions — no I/O).

Mirrors `Election.scala` and `PartitionLeaderElectionAlgorithms` (2.5.1). Every function takes the
partition's assignment, its current `LeaderAndIsr` and the sets of replicas that are online, and
returns an `ElectionResult`: the new `LeaderAndIsr` (leader_epoch + 1, same zkVersion) or None, and
the brokers that must receive the LeaderAndIsr request.

| Strategy | Leader | New ISR | Recipients |
|---|---|---|---|
| Offline | first live ISR member in assignment order; | live ISR members | live replicas |
|         | unclean: first live replica              | [leader]         |               |
| Reassign | first of targetReplicas live and in ISR | unchanged | targetReplicas |
| Preferred | assignment.head iff live and in ISR | unchanged | assignment |
| ControlledShutdown | first live-or-shutting-down ISR member | ISR minus | live-or-shutting-down |
|                    | in assignment order, not shutting down | shutting down | replicas |
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from reference_controller.zkdata import LeaderAndIsr


@dataclass(frozen=True)
class OfflinePartitionLeaderElectionStrategy:
    allow_unclean: bool

    def __str__(self) -> str:
        return f"OfflinePartitionLeaderElectionStrategy({str(self.allow_unclean).lower()})"


@dataclass(frozen=True)
class ReassignPartitionLeaderElectionStrategy:
    def __str__(self) -> str:
        return "ReassignPartitionLeaderElectionStrategy"


@dataclass(frozen=True)
class PreferredReplicaPartitionLeaderElectionStrategy:
    def __str__(self) -> str:
        return "PreferredReplicaPartitionLeaderElectionStrategy"


@dataclass(frozen=True)
class ControlledShutdownPartitionLeaderElectionStrategy:
    def __str__(self) -> str:
        return "ControlledShutdownPartitionLeaderElectionStrategy"


PartitionLeaderElectionStrategy = (
    OfflinePartitionLeaderElectionStrategy
    | ReassignPartitionLeaderElectionStrategy
    | PreferredReplicaPartitionLeaderElectionStrategy
    | ControlledShutdownPartitionLeaderElectionStrategy
)


@dataclass(frozen=True)
class ElectionResult:
    leader_and_isr: LeaderAndIsr | None
    recipients: tuple[int, ...]
    unclean: bool = False


# ---- PartitionLeaderElectionAlgorithms ----------------------------------------------------------
def offline_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int], unclean_enabled: bool
) -> tuple[int | None, bool]:
    """Returns (leader, was_unclean)."""
    for replica in assignment:
        if replica in live and replica in isr:
            return replica, False
    if unclean_enabled:
        for replica in assignment:
            if replica in live:
                return replica, True
    return None, False


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> int | None:
    return next((r for r in reassignment if r in live and r in isr), None)


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> int | None:
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> int | None:
    for replica in assignment:
        if replica in live_or_shutting_down and replica in isr and replica not in shutting_down:
            return replica
    return None


# ---- Election (leaderFor*) -------------------------------------------------------------------
def leader_for_offline(
    assignment: Sequence[int], current: LeaderAndIsr, online: Collection[int], unclean_enabled: bool
) -> ElectionResult:
    live = tuple(r for r in assignment if r in online)
    leader, unclean = offline_partition_leader_election(assignment, current.isr, live, unclean_enabled)
    if leader is None:
        return ElectionResult(None, live)
    new_isr = tuple(r for r in current.isr if r in online) if leader in current.isr else (leader,)
    return ElectionResult(current.new_leader_and_isr(leader, new_isr), live, unclean)


def leader_for_reassign(
    target_replicas: Sequence[int], current: LeaderAndIsr, online: Collection[int]
) -> ElectionResult:
    live = tuple(r for r in target_replicas if r in online)
    leader = reassign_partition_leader_election(target_replicas, current.isr, live)
    lai = None if leader is None else current.new_leader_and_isr(leader, current.isr)
    return ElectionResult(lai, tuple(target_replicas))


def leader_for_preferred_replica(
    assignment: Sequence[int], current: LeaderAndIsr, online: Collection[int]
) -> ElectionResult:
    live = tuple(r for r in assignment if r in online)
    leader = preferred_replica_partition_leader_election(assignment, current.isr, live)
    lai = None if leader is None else current.new_leader_and_isr(leader, current.isr)
    return ElectionResult(lai, tuple(assignment))


def leader_for_controlled_shutdown(
    assignment: Sequence[int],
    current: LeaderAndIsr,
    online_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> ElectionResult:
    live = tuple(r for r in assignment if r in online_or_shutting_down)
    leader = controlled_shutdown_partition_leader_election(assignment, current.isr, live, shutting_down)
    new_isr = tuple(r for r in current.isr if r not in shutting_down)
    lai = None if leader is None else current.new_leader_and_isr(leader, new_isr)
    return ElectionResult(lai, live)
