"""ISR-change, offline-replica, broker-membership, reassignment-phase and auto-rebalance choices
(decisions.isr, .membership, .reassignment, .rebalance): worked rows and "a dumb version agrees"
properties against transliterations of the Kafka 2.5.1 code they came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller.controller.decisions import isr, membership, rebalance
from reference_controller.controller.decisions import reassignment as plan
from reference_controller.zkdata import NO_LEADER, LeaderAndIsr, ReplicaAssignment

pytestmark = pytest.mark.unit

brokers = st.integers(0, 6)
tps = st.builds(TopicPartition, st.sampled_from(["a", "b", "c"]), st.integers(0, 3))


# ---- removeReplicasFromIsr ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("leader", "isr_before", "after"),
    [
        (1, (1, 2, 3), (1, (1, 3))),
        (2, (2, 3), (NO_LEADER, (3,))),
        (2, (2,), (NO_LEADER, (2,))),
        (1, (1, 3), None),
    ],
)
def test_isr_after_removal_worked_table(
    leader: int, isr_before: tuple[int, ...], after: tuple[int, tuple[int, ...]] | None
) -> None:
    result = isr.isr_after_removal(LeaderAndIsr(leader, 4, isr_before, 9), 2)
    assert result == (None if after is None else LeaderAndIsr(after[0], 5, after[1], 9))


@given(brokers, st.lists(brokers, unique=True, max_size=5), brokers, st.integers(0, 100))
def test_isr_after_removal_agrees_with_kafkas_do_remove_replicas_from_isr(
    leader: int, isr_members: list[int], replica: int, epoch: int
) -> None:
    current = LeaderAndIsr(leader, epoch, tuple(isr_members), 3)
    result = isr.isr_after_removal(current, replica)
    if replica not in isr_members:  # partitionsWithoutReplica: left alone
        assert result is None
        return
    new_leader = -1 if replica == leader else leader
    new_isr = isr_members if len(isr_members) == 1 else [r for r in isr_members if r != replica]
    assert result == LeaderAndIsr(new_leader, epoch + 1, tuple(new_isr), 3)
    assert result.isr  # KAFKA-5083: never empty


# ---- processIsrChangeNotification ---------------------------------------------------------------
@given(st.lists(st.sampled_from(["isr_change_0000000001", "isr_change_0000000000", "other", "isr_"])))
def test_notification_names_are_the_prefixed_children_in_sequence_order(children: list[str]) -> None:
    assert isr.notification_names(children, "isr_change_") == sorted(
        c for c in children if c[: len("isr_change_")] == "isr_change_"
    )


@given(st.lists(st.lists(tps, max_size=4), max_size=4))
def test_isr_change_partitions_name_each_partition_once_in_first_seen_order(
    notifications: list[list[TopicPartition]],
) -> None:
    seen: list[TopicPartition] = []
    for partitions in notifications:
        for tp in partitions:
            if tp not in seen:
                seen.append(tp)
    assert isr.isr_change_partitions(notifications) == seen


# ---- onLeaderAndIsrResponse ----------------------------------------------------------------------
@given(st.sets(tps), st.lists(st.tuples(tps, st.sampled_from([0, Errors.KAFKA_STORAGE_ERROR, 3]))))
def test_offline_replicas_after_response_agrees_per_replica(
    previous: set[TopicPartition], errors: list[tuple[TopicPartition, int]]
) -> None:
    current, newly = isr.offline_replicas_after_response(previous, errors)
    for tp in previous | {tp for tp, _ in errors}:
        storage_error = any(t == tp and code == Errors.KAFKA_STORAGE_ERROR for t, code in errors)
        answered_none = any(t == tp and code == 0 for t, code in errors)
        assert (tp in current) == (storage_error or (tp in previous and not answered_none))
    assert newly == sorted(tp for tp in current if tp not in previous)


# ---- processBrokerChange -------------------------------------------------------------------------
@given(
    st.dictionaries(brokers, st.integers(0, 5)),
    st.sets(brokers),
    st.dictionaries(brokers, st.integers(0, 5)),
)
def test_broker_changes_agree_with_the_per_broker_table(
    registered: Mapping[int, int], known: set[int], cached: Mapping[int, int]
) -> None:
    new, dead, bounced = [], [], []
    for b in range(7):
        if b in registered and b not in known:
            new.append(b)
        elif b in known and b not in registered:
            dead.append(b)
        elif b in registered and b in known and registered[b] > cached.get(b, -1):
            bounced.append(b)
    changes = membership.broker_changes(registered, known, cached)
    assert changes == membership.BrokerChanges(tuple(new), tuple(dead), tuple(bounced))
    assert changes.any == bool(new or dead or bounced)


# ---- onPartitionReassignment -----------------------------------------------------------------------
@given(st.lists(brokers, unique=True, min_size=1, max_size=4), st.lists(brokers, unique=True, max_size=4),
       st.none() | st.lists(brokers, unique=True, max_size=6))  # fmt: skip
def test_phase_b_once_every_target_replica_is_in_the_isr(
    current: list[int], target: list[int], isr_members: list[int] | None
) -> None:
    assignment = ReplicaAssignment(tuple(current))
    if target:
        assignment = assignment.reassign_to(target)
    complete = not assignment.is_being_reassigned or (
        isr_members is not None and all(r in isr_members for r in assignment.target_replicas)
    )
    assert plan.phase(assignment, isr_members) is (plan.Phase.B if complete else plan.Phase.A)


@pytest.mark.parametrize(
    ("leader", "online", "move"),
    [
        (1, True, plan.LeaderMove.ELECT_NOT_IN_TARGET),
        (1, False, plan.LeaderMove.ELECT_NOT_IN_TARGET),
        (4, True, plan.LeaderMove.KEEP_AND_BUMP_EPOCH),
        (4, False, plan.LeaderMove.ELECT_DEAD_LEADER),
    ],
)
def test_leader_move_after_the_reassignment(leader: int, online: bool, move: plan.LeaderMove) -> None:
    assert plan.leader_move((4, 5, 6), leader, online) is move


def test_removed_replicas_go_offline_then_through_deletion() -> None:
    assert [s.name for s in plan.REMOVED_REPLICA_STATES] == [
        "OfflineReplica", "ReplicaDeletionStarted", "ReplicaDeletionSuccessful", "NonExistentReplica"
    ]  # fmt: skip


# ---- checkAndTriggerAutoLeaderRebalance --------------------------------------------------------
@given(
    st.dictionaries(brokers, st.lists(tps, max_size=4)),
    st.sets(st.tuples(brokers, tps)),
    st.booleans(),
    st.sets(st.sampled_from(["a", "b", "c"])),
    st.sets(st.sampled_from(["a", "b", "c"])),
)
def test_auto_rebalance_candidates_agree_with_kafkas_filter(
    imbalanced: Mapping[int, Sequence[TopicPartition]],
    online: set[tuple[int, TopicPartition]],
    reassigning: bool,
    deleting: set[str],
    topics: set[str],
) -> None:
    expected: dict[int, list[TopicPartition]] = {}
    for broker, not_preferred in imbalanced.items():
        expected[broker] = []
        for tp in not_preferred:
            if (broker, tp) in online and not reassigning and tp.topic not in deleting and tp.topic in topics:
                expected[broker].append(tp)
    got = rebalance.auto_rebalance_candidates(
        imbalanced, lambda b, tp: (b, tp) in online, reassigning, deleting.__contains__, topics
    )
    assert got == expected
    assert list(got) == list(imbalanced)  # the brokers keep their order
