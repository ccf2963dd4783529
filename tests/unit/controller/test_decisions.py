"""Election table rows (spec §3.2), reassignment planning (§4) and rebalance ratios (§6.7)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkawire.states import TopicPartition
from reference_controller.controller.decisions import elections as el
from reference_controller.controller.decisions import reassignment as plan
from reference_controller.controller.decisions import rebalance
from reference_controller.zkdata import LeaderAndIsr, ReplicaAssignment

pytestmark = pytest.mark.unit


def lai(leader: int, isr: tuple[int, ...], epoch: int = 4, zk_version: int = 7) -> LeaderAndIsr:
    return LeaderAndIsr(leader, epoch, isr, zk_version)


# ---- offline ----------------------------------------------------------------------------------
def test_offline_picks_first_live_isr_member_in_assignment_order_and_shrinks_isr() -> None:
    result = el.leader_for_offline((1, 2, 3), lai(1, (3, 2, 1)), online={2, 3}, unclean_enabled=False)
    assert result.leader_and_isr == LeaderAndIsr(2, 5, (3, 2), 7)
    assert result.recipients == (2, 3)
    assert not result.unclean


def test_offline_without_live_isr_and_unclean_disabled_elects_nobody() -> None:
    result = el.leader_for_offline((1, 2), lai(1, (1,)), online={2}, unclean_enabled=False)
    assert result.leader_and_isr is None
    assert result.recipients == (2,)


def test_offline_unclean_elects_first_live_replica_with_isr_of_itself() -> None:
    result = el.leader_for_offline((1, 2, 3), lai(1, (1,)), online={3, 2}, unclean_enabled=True)
    assert result.leader_and_isr == LeaderAndIsr(2, 5, (2,), 7)
    assert result.unclean


def test_offline_with_nothing_live_elects_nobody_even_unclean() -> None:
    assert (
        el.leader_for_offline((1, 2), lai(1, (1, 2)), online=set(), unclean_enabled=True).leader_and_isr
        is None
    )


# ---- reassign ---------------------------------------------------------------------------------
def test_reassign_picks_first_target_replica_live_and_in_isr_keeping_isr() -> None:
    result = el.leader_for_reassign((4, 5, 6), lai(1, (1, 2, 3, 5, 4, 6)), online={1, 2, 3, 5, 6})
    assert result.leader_and_isr == LeaderAndIsr(5, 5, (1, 2, 3, 5, 4, 6), 7)
    assert result.recipients == (4, 5, 6)


def test_reassign_without_eligible_target_elects_nobody() -> None:
    assert el.leader_for_reassign((4,), lai(1, (1,)), online={4}).leader_and_isr is None


# ---- preferred --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("online", "isr", "expected"),
    [({1, 2}, (2, 1), 1), ({2}, (2, 1), None), ({1, 2}, (2,), None)],
)
def test_preferred_only_the_head_if_live_and_in_isr(
    online: set[int], isr: tuple[int, ...], expected: int | None
) -> None:
    result = el.leader_for_preferred_replica((1, 2), lai(2, isr), online)
    assert (result.leader_and_isr.leader if result.leader_and_isr else None) == expected
    assert result.recipients == (1, 2)
    if result.leader_and_isr:
        assert result.leader_and_isr.isr == isr


# ---- controlled shutdown ------------------------------------------------------------------------
def test_controlled_shutdown_skips_shutting_down_and_removes_them_from_isr() -> None:
    result = el.leader_for_controlled_shutdown((1, 2, 3), lai(1, (1, 2, 3)), {1, 2, 3}, shutting_down={1})
    assert result.leader_and_isr == LeaderAndIsr(2, 5, (2, 3), 7)
    assert result.recipients == (1, 2, 3)


def test_controlled_shutdown_without_other_isr_member_elects_nobody() -> None:
    result = el.leader_for_controlled_shutdown((1, 2), lai(1, (1,)), {1, 2}, shutting_down={1})
    assert result.leader_and_isr is None


def test_strategy_names_print_like_kafka() -> None:
    assert (
        str(el.OfflinePartitionLeaderElectionStrategy(False))
        == "OfflinePartitionLeaderElectionStrategy(false)"
    )
    assert str(el.ReassignPartitionLeaderElectionStrategy()) == "ReassignPartitionLeaderElectionStrategy"


# ---- reassignment planning ---------------------------------------------------------------------
def test_reassign_to_123_to_456() -> None:
    result = ReplicaAssignment((1, 2, 3)).reassign_to([4, 5, 6])
    assert result == ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert result.origin_replicas == (1, 2, 3)
    assert result.target_replicas == (4, 5, 6)
    assert plan.completed(result) == ReplicaAssignment((4, 5, 6))


def test_reassignment_rebases_on_origin_when_already_reassigning() -> None:
    current = ReplicaAssignment((1, 2, 3)).reassign_to([4, 5, 6])
    new = plan.build_reassignment(current, [1, 7])
    assert new == ReplicaAssignment((1, 7, 2, 3), (7,), (2, 3))
    assert plan.unneeded_replicas(current, new) == (4, 5, 6)  # U3


def test_cancel_without_target_reverts_to_origin_and_none_when_idle() -> None:
    current = ReplicaAssignment((1,)).reassign_to([2])
    assert plan.build_reassignment(current, None) == ReplicaAssignment((1,))
    assert plan.build_reassignment(ReplicaAssignment((1,)), None) is None


def test_same_target_and_permutation_are_not_being_reassigned() -> None:
    assert not ReplicaAssignment((1, 2)).reassign_to([1, 2]).is_being_reassigned
    assert ReplicaAssignment((1, 2)).reassign_to([2, 1]) == ReplicaAssignment((2, 1))


def test_reassignment_completion() -> None:
    ra = ReplicaAssignment((1,)).reassign_to([2])
    assert not plan.is_reassignment_complete(ra, [1])
    assert plan.is_reassignment_complete(ra, [1, 2])
    assert not plan.is_reassignment_complete(ra, None)
    assert plan.is_reassignment_complete(ReplicaAssignment((1,)), None)


@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True),
    st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True),
)
def test_reassign_to_agrees_with_a_dumb_version(origin: list[int], target: list[int]) -> None:
    result = ReplicaAssignment(tuple(origin)).reassign_to(target)
    full = list(target) + [r for r in origin if r not in target]
    assert list(result.replicas) == full
    assert set(result.adding) == set(target) - set(origin)
    assert set(result.removing) == set(origin) - set(target)
    assert list(result.target_replicas) == target


# ---- rebalance -------------------------------------------------------------------------------------
def test_imbalance_ratio_worked_example() -> None:
    preferred = [TopicPartition("t", p) for p in range(4)]
    ratio, off = rebalance.imbalance(
        1, preferred, {TopicPartition("t", 0): 1, TopicPartition("t", 1): 2, TopicPartition("t", 2): 2}
    )
    assert ratio == 0.5
    assert off == [("t", 1), ("t", 2)]


def test_imbalanced_partitions_respects_percentage() -> None:
    assignments = {TopicPartition("t", p): [1, 2] for p in range(10)}
    leaders = {TopicPartition("t", 0): 2, **{TopicPartition("t", p): 1 for p in range(1, 10)}}
    assert rebalance.imbalanced_partitions(assignments, leaders, 10) == {}
    leaders[TopicPartition("t", 1)] = 2
    assert rebalance.imbalanced_partitions(assignments, leaders, 10) == {
        1: [TopicPartition("t", 0), TopicPartition("t", 1)]
    }
