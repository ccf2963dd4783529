"""REASSIGN-16..19 checks: reassignment through AlterPartitionReassignments (spec §13.1.1-13.1.7),
with ports of ReassignPartitionsClusterTest's API tests and PlaintextAdminIntegrationTest's
reassignment tests (Kafka 2.5.1).

Kafka's brokers 100, 101, 102 are 1, 2, 3 here; broker 4, started first, is the controller, so
that pausing a broker never pauses the controller. Where Kafka's tests throttle replication to
keep a target replica out of the ISR, these pause the target node (SIGSTOP) with 30 s ZooKeeper
sessions, so it stays registered (live) while it cannot fetch; it is resumed before the check
waits for completion. Requests are built with kio at Kafka 2.5.1's versions (`admin_wire`):
confluent-kafka has no KIP-455 calls.
"""

from __future__ import annotations

import pytest

from cluster import admin
from cluster.cluster import ClusterFactory, wait_for
from conformance.checks import admin_wire as aw
from conformance.checks.admin_reassign_steps import (
    CONTROLLER,
    ZNODE,
    admin_cluster,
    alter,
    listed,
    paused,
    topic_writes,
    topic_znode,
    wait_done,
    znode_writes,
)
from conformance.scenarios import (
    assert_invalid_transitions_in_kafka_shape,
    create_topic,
    fenced,
    fmt,
    journal,
    requests_for,
    settle,
    wait_state,
    writes,
)
from conformance.topology import NO_ACTIVE_CONTROLLER_IN_A_BROKER

pytestmark = pytest.mark.conformance


# ---- REASSIGN-16 ---------------------------------------------------------------------------------------
@pytest.mark.behaviour("REASSIGN-16")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_reassign_through_api_writes_only_the_topic_znode_and_answers_after_a1(
    cluster_factory: ClusterFactory,
) -> None:
    """ReassignPartitionsClusterTest.shouldReassignThroughApi, with Kafka's writes pinned: [1] → [2]."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "api", {0: [1]})
    records, mark = len(cluster.history()), journal(cluster).mark()
    with paused(cluster, 2):
        assert alter(cluster, (("api", 0), [2])) == {("api", 0): (0, None)}
        # the answer follows U1 and A1 (and is not held for the catch-up, impossible while 2 is paused)
        u1 = topic_znode({0: [2, 1]}, {0: [2]}, {0: [1]})
        assert [body for _, body in topic_writes(cluster, "api", records)] == [u1]
        assert all(fenced(r) for r, _ in topic_writes(cluster, "api", records)), "U1 not fenced"
        st = cluster.partition_state("api", 0)
        assert st is not None
        assert (st["leader"], st["leader_epoch"], st["isr"]) == (1, 1, [1]), f"A1: {st}"
        assert listed(cluster) == {("api", 0): ((2, 1), (2,), (1,))}
    wait_done(cluster, "api", {0: [2]})
    st = wait_state(cluster, "api", 0, lambda s: s["isr"] == [2], "ISR [2]")
    assert (st["leader"], st["leader_epoch"]) == (2, 3), f"[1]→[2] ends at leader 2, epoch 3: {st}"
    assert not znode_writes(cluster, records), f"{ZNODE} was written by an API reassignment"

    def phase_a() -> tuple[list[int], list[int]]:
        lair = requests_for(cluster, "LeaderAndIsr", topic="api", since=mark)
        a1 = sorted(
            {
                r.dest
                for r in lair
                for p in r.partitions
                if (p.replicas, p.adding, p.removing, p.leader_epoch, p.is_new)
                == ((2, 1), (2,), (1,), 1, False)
            }
        )
        return a1, [r.dest for r in lair for p in r.partitions if p.is_new and p.leader_epoch == 1]

    # each broker's channel sends in its own time: wait for A1 and A2 to have gone out
    wait_for(
        lambda: phase_a() == ([1, 2], [2]), cluster.deadline(15), lambda: f"A1 to RS, A2 to 2: {phase_a()}"
    )


@pytest.mark.behaviour("REASSIGN-16")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_a_target_already_in_the_isr_completes_before_the_answer(cluster_factory: ClusterFactory) -> None:
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "shrink", {0: [1, 3]})
    wait_state(cluster, "shrink", 0, lambda s: sorted(s["isr"]) == [1, 3], "ISR [1,3]")
    records = len(cluster.history())
    assert alter(cluster, (("shrink", 0), [3])) == {("shrink", 0): (0, None)}
    # U1, then B1-B8 in the same event: the answer comes after B6
    assert [b for _, b in topic_writes(cluster, "shrink", records)] == [
        topic_znode({0: [3, 1]}, {}, {0: [1]}),
        topic_znode({0: [3]}),
    ]
    st = cluster.partition_state("shrink", 0)
    assert st is not None
    assert (st["leader"], st["isr"]) == (3, [3]), st
    assert listed(cluster) == {}
    assert not znode_writes(cluster, records)


# ---- REASSIGN-17 ---------------------------------------------------------------------------------------
@pytest.mark.behaviour("REASSIGN-17")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_invalid_alter_partition_reassignments(cluster_factory: ClusterFactory) -> None:
    """PlaintextAdminIntegrationTest.testInvalidAlterPartitionReassignments, each entry's code and
    message pinned, with the cases of spec §13.1.4 added: a stopped broker, an unknown partition
    whose target is dead, a topic queued for deletion, a partition named twice, TimeoutMs 0."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "inv", {0: [1], 1: [1], 2: [1], 3: [1]})
    create_topic(cluster, "gone", {0: [1, 3]})
    cluster.stop(3)
    admin.delete_topic_zk(cluster, "gone")  # halted: replica 3 is offline, so the topic stays queued
    settle(cluster, CONTROLLER)
    states = {p: cluster.partition_state_stat("inv", p) for p in range(4)}
    records = len(cluster.history())
    top, results = aw.alter_reassignments(
        cluster,
        CONTROLLER,
        [
            (("inv", 0), [1, 2, 4, 9]),  # an extra replica that is no broker
            (("inv", 1), [-3, -2, -1]),
            (("inv", 2), [1, 2, 2]),
            (("inv", 3), []),
            (("inv", 3), [3]),  # named twice: the last entry counts; 3 is stopped
            (("topicA", 0), [1, 2]),
            (("inv", 4), [1, 2]),
            (("inv", 5), [9]),
            (("gone", 0), [1, 2]),
        ],
        timeout_ms=0,
    )
    live = "Set(1, 2, 4)"
    assert top == (0, None)
    assert results == {
        ("inv", 0): (39, f"Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(2, 4, 9), live broker list: {live}"),  # noqa: E501
        ("inv", 1): (39, "Invalid broker id in replica list: ArrayBuffer(-3, -2, -1)"),
        ("inv", 2): (39, "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(1, 2, 2)"),  # noqa: E501
        ("inv", 3): (39, f"Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(3), live broker list: {live}"),  # noqa: E501
        ("topicA", 0): (3, "The partition does not exist."),
        ("inv", 4): (3, "The partition does not exist."),
        ("inv", 5): (39, f"Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(9), live broker list: {live}"),  # noqa: E501
        ("gone", 0): (3, "The partition does not exist."),
    }, results  # fmt: skip
    settle(cluster, CONTROLLER, among=(1, 2, 4))
    changed = [
        (r, op)
        for r, op in writes(cluster.history()[records:])
        if (op.path or "").startswith(("/brokers/topics/inv", "/brokers/topics/gone", ZNODE))
    ]
    assert not changed, "rejected entries wrote:\n" + fmt([r for r, _ in changed])
    assert {p: cluster.partition_state_stat("inv", p) for p in range(4)} == states
    # an entry whose original replica is dead is accepted: only added replicas must be live
    create_topic(cluster, "orig", {0: [1, 2]})
    cluster.stop(1)
    assert alter(cluster, (("orig", 0), [1, 2, 4])) == {("orig", 0): (0, None)}
    assert cluster.get_json("/brokers/topics/orig") == topic_znode({0: [1, 2, 4]}, {0: [4]}, {})


# ---- REASSIGN-18 ---------------------------------------------------------------------------------------
@pytest.mark.behaviour("REASSIGN-18")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_cancel_through_api(cluster_factory: ClusterFactory) -> None:
    """ReassignPartitionsClusterTest.shouldBeAbleToCancelThroughApi: [1,2] → [3,2], cancelled
    while 3 cannot catch up; Kafka's writes pinned (spec §13.1.6): the topic znode twice with the
    original replicas in RS order [2,1], the leader epoch bumped once more, 3 stopped and deleted."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "cancel", {0: [1, 2]})
    wait_state(cluster, "cancel", 0, lambda s: sorted(s["isr"]) == [1, 2], "ISR [1,2]")
    with paused(cluster, 3):
        assert alter(cluster, (("cancel", 0), [3, 2])) == {("cancel", 0): (0, None)}
        assert listed(cluster) == {("cancel", 0): ((3, 2, 1), (3,), (1,))}
        records, mark = len(cluster.history()), journal(cluster).mark()
        assert alter(cluster, (("cancel", 0), None)) == {("cancel", 0): (0, None)}
        plain = topic_znode({0: [2, 1]})
        assert [b for _, b in topic_writes(cluster, "cancel", records)] == [plain, plain]
        st = cluster.partition_state("cancel", 0)
        assert st is not None
        assert (st["leader"], st["leader_epoch"], sorted(st["isr"])) == (1, 2, [1, 2]), st
        assert listed(cluster) == {}
        # a cancellation of a partition not being reassigned, or unknown: 85, nothing written
        records = len(cluster.history())
        results = alter(cluster, (("cancel", 0), None), (("nosuch", 0), None))
        assert results == dict.fromkeys(
            [("cancel", 0), ("nosuch", 0)], (85, "No partition reassignment is in progress.")
        )
        assert not topic_writes(cluster, "cancel", records)
    stops = wait_for(
        lambda: (
            [
                r.delete_partitions
                for r in journal(cluster).requests(api="StopReplica", dest=3, since=mark)
                if r.error_code is not None
            ]
            or None
        ),
        cluster.deadline(20),
        "StopReplica answered by 3",
    )
    wait_for(
        lambda: (
            [
                r.delete_partitions
                for r in journal(cluster).requests(api="StopReplica", dest=3, since=mark)
                if r.error_code is not None
            ]
            == [False, True]
        ),
        cluster.deadline(20),
        lambda: f"StopReplica(delete=false) then (delete=true) to 3: {stops}",
    )
    assert cluster.get_json("/brokers/topics/cancel") == topic_znode({0: [2, 1]})


@pytest.mark.behaviour("REASSIGN-18", "REASSIGN-19")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_cancel_and_set_some_reassignments(cluster_factory: ClusterFactory) -> None:
    """ReassignPartitionsClusterTest.testCancelAndSetSomeReassignments."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "cs", {0: [1], 1: [1], 2: [1], 3: [1]})
    with paused(cluster, 2, 3):
        assert alter(cluster, (("cs", 0), [2]), (("cs", 1), [2])) == dict.fromkeys(
            [("cs", 0), ("cs", 1)], (0, None)
        )
        mark = journal(cluster).mark()
        results = alter(cluster, (("cs", 0), None), (("cs", 1), [3]), (("cs", 2), [2]), (("cs", 3), None))
        assert results == {
            ("cs", 0): (0, None),
            ("cs", 1): (0, None),
            ("cs", 2): (0, None),
            ("cs", 3): (85, "No partition reassignment is in progress."),
        }
        # tp1 rebased on its original replicas: [1] → [3] is RS [3,1]; 2 (adding before) is stopped
        assert cluster.get_json("/brokers/topics/cs") == topic_znode(
            {0: [1], 1: [3, 1], 2: [2, 1], 3: [1]}, {1: [3], 2: [2]}, {1: [1], 2: [1]}
        )
    wait_done(cluster, "cs", {0: [1], 1: [3], 2: [2], 3: [1]})
    stopped = {
        (r.dest, r.delete_partitions)
        for r in journal(cluster).requests(api="StopReplica", since=mark)
        for p in r.partitions
        if (p.topic, p.partition) == ("cs", 1)
    }
    assert {(2, False), (2, True)} <= stopped, f"the replaced target 2 of cs-1 stopped and deleted: {stopped}"


# ---- REASSIGN-19 ---------------------------------------------------------------------------------------
@pytest.mark.behaviour("REASSIGN-19", "RSM-2")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_same_set_in_another_order_and_the_same_target_again(cluster_factory: ClusterFactory) -> None:
    """ReassignPartitionsClusterTest.shouldUseLatestOrderingIfTwoConsecutiveReassignmentsHaveSameSet
    ButDifferentOrdering, with spec §13.1.7's writes: the same target again writes no topic znode
    and bumps the leader epoch once with isNew=false (the repeated NewReplica transition is an
    invalid-transition ERROR); the other order rewrites RS and stops nothing."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "order", {0: [1, 2], 1: [1, 2]})
    for p in (0, 1):
        wait_state(cluster, "order", p, lambda s: sorted(s["isr"]) == [1, 2], "ISR [1,2]")
    tp0, tp1 = ("order", 0), ("order", 1)
    with paused(cluster, 3):
        assert alter(cluster, (tp0, [1, 2, 3]), (tp1, [1, 2, 3])) == dict.fromkeys([tp0, tp1], (0, None))
        assert listed(cluster, [tp0, tp1]) == dict.fromkeys([tp0, tp1], ((1, 2, 3), (3,), ()))
        records, mark = len(cluster.history()), journal(cluster).mark()
        assert alter(cluster, (tp0, [1, 2, 3])) == {tp0: (0, None)}
        assert not topic_writes(cluster, "order", records), "the same target again rewrote the topic znode"
        st = cluster.partition_state("order", 0)
        assert st is not None
        assert st["leader_epoch"] == 2, f"the same target again: one leader-epoch bump, {st}"

        def again() -> list[tuple[int, bool | None]]:
            return [
                (r.dest, p.is_new)
                for r in requests_for(cluster, "LeaderAndIsr", topic="order", since=mark)
                for p in r.partitions
                if p.partition == 0
            ]

        wait_for(
            lambda: 1 in {d for d, _ in again()},
            cluster.deadline(15),
            "LeaderAndIsr for the same target again",
        )
        assert not any(new for _, new in again()), f"LeaderAndIsr isNew=false only: {again()}"
        records = len(cluster.history())
        assert alter(cluster, (tp0, [3, 2, 1]), (tp1, [3, 2, 1])) == dict.fromkeys([tp0, tp1], (0, None))
        assert [b for _, b in topic_writes(cluster, "order", records)][-1] == topic_znode(
            {0: [3, 2, 1], 1: [3, 2, 1]}, {0: [3], 1: [3]}, {}
        )
        assert listed(cluster, [tp0, tp1]) == dict.fromkeys([tp0, tp1], ((3, 2, 1), (3,), ()))
    wait_done(cluster, "order", {0: [3, 2, 1], 1: [3, 2, 1]})
    settle(cluster, CONTROLLER, among=(1, 2, 3))
    assert not requests_for(cluster, "StopReplica", topic="order", since=mark), "a replica was stopped"
    assert_invalid_transitions_in_kafka_shape(cluster, "REASSIGN-19")


@pytest.mark.behaviour("REASSIGN-19")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_a_different_target_stops_the_previously_adding_replica(cluster_factory: ClusterFactory) -> None:
    """Spec §13.1.7: [1] → [2], then → [3] writes RS [3,1], stops 2 before A1/A2 of 3."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "diff", {0: [1]})
    with paused(cluster, 2):
        assert alter(cluster, (("diff", 0), [2])) == {("diff", 0): (0, None)}
        records, mark = len(cluster.history()), journal(cluster).mark()
        assert alter(cluster, (("diff", 0), [3])) == {("diff", 0): (0, None)}
        assert [b for _, b in topic_writes(cluster, "diff", records)] == [
            topic_znode({0: [3, 1]}, {0: [3]}, {0: [1]})
        ]
    wait_done(cluster, "diff", {0: [3]})

    def to2() -> list[bool | None]:
        stops = journal(cluster).requests(api="StopReplica", dest=2, since=mark)
        return [r.delete_partitions for r in stops if r.error_code is not None]

    wait_for(lambda: to2()[:2] == [False, True], cluster.deadline(15), lambda: f"StopReplica to 2: {to2()}")

    def new3() -> list[bool | None]:
        return [
            p.is_new
            for r in journal(cluster).requests(api="LeaderAndIsr", dest=3, since=mark)
            for p in r.partitions
        ]

    wait_for(
        lambda: True in new3(), cluster.deadline(15), lambda: f"A2 LeaderAndIsr(isNew=true) to 3: {new3()}"
    )
