"""REASSIGN-20..22 checks: the API and `/admin/reassign_partitions` together, failover, and
ListPartitionReassignments (spec §13.1.8-13.2), with ports of ReassignPartitionsClusterTest's API
tests and PlaintextAdminIntegrationTest's listing tests (Kafka 2.5.1).

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
from conformance.checks.admin_reassign_steps import (
    CONTROLLER,
    SLOW,
    ZNODE,
    admin_cluster,
    alter,
    listed,
    listed_at,
    paused,
    topic_writes,
    topic_znode,
    wait_done,
    znode_writes,
)
from conformance.scenarios import (
    create_topic,
    fenced,
    journal,
    requests_for,
    settle,
    wait_cluster_known,
    wait_state,
    writes,
)
from conformance.topology import NO_ACTIVE_CONTROLLER_IN_A_BROKER

pytestmark = pytest.mark.conformance


# ---- REASSIGN-20 ---------------------------------------------------------------------------------------
@pytest.mark.behaviour("REASSIGN-20")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_the_api_removes_its_partitions_from_the_znode_first(cluster_factory: ClusterFactory) -> None:
    """ReassignPartitionsClusterTest.shouldDeleteReassignmentZnodeAfterApiReassignmentForPartitionCompletes
    and shouldBeAbleToCancelZkTriggeredReassignmentThroughApi, with the znode's fenced rewrite
    before the topic znode and 2.5.1's rewrite of a znode whose content does not change."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "A", {0: [1], 1: [1], 2: [1]})
    create_topic(cluster, "B", {0: [1]})
    a0, a1, a2, b0 = ("A", 0), ("A", 1), ("A", 2), ("B", 0)
    with paused(cluster, 2, 3):
        admin.reassign_zk(cluster, {a0: [2], a1: [2], a2: [2]})
        wait_for(
            lambda: set(listed(cluster)) == {a0, a1, a2}, cluster.deadline(15), "znode reassignments listed"
        )
        records = len(cluster.history())
        assert alter(cluster, (a1, [3]), (b0, [3]), (a2, None)) == dict.fromkeys([a1, b0, a2], (0, None))
        assert cluster.get_json(ZNODE) == {
            "version": 1,
            "partitions": [{"topic": "A", "partition": 0, "replicas": [2]}],
        }
        history = [(r.zxid, op.path, op.op) for r, op in writes(cluster.history()[records:])]
        first_topic = next(i for i, h in enumerate(history) if h[1] == "/brokers/topics/A")
        first_znode = next(i for i, h in enumerate(history) if h[1] == ZNODE)
        assert first_znode < first_topic, f"the znode rewrite must come before U1:\n{history}"
        assert all(fenced(r) for r, _ in znode_writes(cluster, records))
        assert listed(cluster) == {
            a0: ((2, 1), (2,), (1,)),
            a1: ((3, 1), (3,), (1,)),
            b0: ((3, 1), (3,), (1,)),
        }
        # an API request that removes nothing from the znode still rewrites it (2.5.1-2.8.2)
        before = cluster.zk.get(ZNODE)
        records = len(cluster.history())
        assert alter(cluster, (("B", 1), [])) == {
            ("B", 1): (39, "Empty replica list specified in partition reassignment.")
        }
        after = cluster.zk.get(ZNODE)
        assert (after[0], after[1].version) == (before[0], before[1].version + 1), (before, after)
        assert len(znode_writes(cluster, records)) == 1
    wait_done(cluster, "A", {0: [2], 1: [3], 2: [1]})
    wait_done(cluster, "B", {0: [3]})
    wait_for(
        lambda: not cluster.zk.exists(ZNODE), cluster.deadline(10), f"{ZNODE} deleted with its last partition"
    )
    assert listed(cluster) == {}


@pytest.mark.behaviour("REASSIGN-20")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_a_znode_created_later_overrides_the_api_reassignment(cluster_factory: ClusterFactory) -> None:
    """ReassignPartitionsClusterTest.znodeReassignmentShouldOverrideApiTriggeredReassignment."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "ov", {0: [1], 1: [1]})
    tp0, tp1 = ("ov", 0), ("ov", 1)
    with paused(cluster, 2, 3):
        assert alter(cluster, (tp0, [2]), (tp1, [2])) == dict.fromkeys([tp0, tp1], (0, None))
        assert listed(cluster, [tp0, tp1]) == dict.fromkeys([tp0, tp1], ((2, 1), (2,), (1,)))
        admin.reassign_zk(cluster, {tp0: [3], tp1: [3]})
        wait_for(
            lambda: listed(cluster, [tp0, tp1]) == dict.fromkeys([tp0, tp1], ((3, 1), (3,), (1,))),
            cluster.deadline(15),
            "the znode's targets to supersede the API's",
        )
    wait_for(lambda: not cluster.zk.exists(ZNODE), cluster.deadline(40), f"{ZNODE} deleted at completion")
    wait_done(cluster, "ov", {0: [3], 1: [3]})
    assert listed(cluster, [tp0, tp1]) == {}


# ---- REASSIGN-21 ---------------------------------------------------------------------------------------
@pytest.mark.behaviour("REASSIGN-21", "FAILOVER-2")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_a_new_controller_resumes_an_api_reassignment_from_the_topic_znode(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(4, start=False, overrides=SLOW)
    cluster.start([CONTROLLER])
    assert cluster.wait_controller() == CONTROLLER
    cluster.start([1, 2, 3])
    wait_cluster_known(cluster)
    create_topic(cluster, "fo", {0: [1]})
    with paused(cluster, 3):
        assert alter(cluster, (("fo", 0), [3])) == {("fo", 0): (0, None)}
        pending = topic_znode({0: [3, 1]}, {0: [3]}, {0: [1]})
        assert cluster.get_json("/brokers/topics/fo") == pending
        records, mark = len(cluster.history()), journal(cluster).mark()
        cluster.stop(CONTROLLER)
        new = cluster.wait_controller(deadline_s=25, not_in=[CONTROLLER])
        st = wait_state(cluster, "fo", 0, lambda s: s["leader_epoch"] == 2, "one bump by the new controller")
        settle(cluster, new, among=(1, 2))
        assert not topic_writes(cluster, "fo", records), "the new controller rewrote the topic znode"
        assert cluster.partition_state("fo", 0) == st, "more than one leader-epoch bump at the failover"
        resumed = [
            r.dest
            for r in requests_for(cluster, "LeaderAndIsr", topic="fo", since=mark)
            for p in r.partitions
            if p.leader_epoch == 2 and p.replicas == (3, 1) and p.adding == (3,) and p.removing == (1,)
        ]
        assert 1 in resumed, f"LeaderAndIsr(replicas=RS, adding, removing) at epoch 2 to RS: {resumed}"
        assert cluster.get_json("/brokers/topics/fo") == pending
        assert listed_at(cluster, new) == {("fo", 0): ((3, 1), (3,), (1,))}
        watches = cluster.four_letter("wchp")
        assert "/brokers/topics/fo/partitions/0/state" in watches, (
            f"no data watch on the state znode:\n{watches}"
        )
    wait_done(cluster, "fo", {0: [3]})


@pytest.mark.behaviour("REASSIGN-21", "REASSIGN-20")
def test_znode_precedence_on_controller_startup(cluster_factory: ClusterFactory) -> None:
    """ReassignPartitionsClusterTest.shouldTriggerReassignmentWithZnodePrecedenceOnControllerStartup:
    reassignments written into the topic znode and `/admin/reassign_partitions` while every broker is
    down; at start-up the znode's targets win, and orders-3, only in the topic znode, completes."""
    cluster = cluster_factory(3)
    cluster.wait_controller()
    create_topic(cluster, "orders", {0: [1, 2], 1: [2, 3], 2: [1, 2], 3: [1, 2]})
    for bid in cluster.broker_ids:
        cluster.stop(bid)
    cluster.zk.set(
        "/brokers/topics/orders",
        admin.encode(
            topic_znode(
                {0: [1, 2], 1: [2, 3], 2: [1, 2, 3], 3: [1, 2, 3]},
                {0: [3], 1: [4], 2: [3], 3: [3]},
                {0: [1], 1: [2], 2: [1], 3: [1]},
            )
        ),
    )
    admin.reassign_zk(
        cluster,
        {("orders", 0): [3, 2], ("orders", 1): [2, 3], ("orders", 2): [2, 3], ("customers", 0): [2, 3]},
    )
    cluster.start()
    cluster.wait_controller()
    wait_for(lambda: not cluster.zk.exists(ZNODE), cluster.deadline(40), f"{ZNODE} done")
    wait_done(cluster, "orders", {0: [3, 2], 1: [2, 3], 2: [2, 3], 3: [2, 3]})
    assert not cluster.zk.exists("/brokers/topics/customers")


# ---- REASSIGN-22 ---------------------------------------------------------------------------------------
@pytest.mark.behaviour("REASSIGN-22")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_list_partition_reassignments(cluster_factory: ClusterFactory) -> None:
    """ReassignPartitionsClusterTest.shouldListMovingPartitionsThroughApi and
    shouldListReassignmentsTriggeredByZk; PlaintextAdminIntegrationTest.testListReassignmentsDoesNot
    ShowNonReassigningPartitions and testListReassignmentsDoesNotShowDeletedPartitions."""
    cluster = admin_cluster(cluster_factory)
    create_topic(cluster, "topic", {0: [1], 1: [2]})
    create_topic(cluster, "topic2", {0: [1]})
    create_topic(cluster, "byzk", {0: [1]})
    tp0, tp1, tp2, zk0, gone = ("topic", 0), ("topic", 1), ("topic2", 0), ("byzk", 0), ("deleted", 0)
    assert listed(cluster) == {}
    assert listed(cluster, [tp0, tp1, gone]) == {}
    with paused(cluster, 2, 3):
        assert alter(cluster, (tp0, [2]), (tp2, [2])) == dict.fromkeys([tp0, tp2], (0, None))
        # a List sent after the response sees the request's effect
        assert listed(cluster, [tp0, tp1, tp2, gone]) == dict.fromkeys([tp0, tp2], ((2, 1), (2,), (1,)))
        admin.reassign_zk(cluster, {zk0: [3]})
        wait_for(
            lambda: zk0 in listed(cluster), cluster.deadline(15), "the znode-triggered reassignment listed"
        )
        everything = listed(cluster)
        assert everything == {**dict.fromkeys([tp0, tp2], ((2, 1), (2,), (1,))), zk0: ((3, 1), (3,), (1,))}
        for (topic, p), (replicas, adding, removing) in everything.items():
            znode = cluster.get_json(f"/brokers/topics/{topic}") or {}
            stored = (
                tuple(znode["partitions"][str(p)]),
                tuple(znode["adding_replicas"].get(str(p), [])),
                tuple(znode["removing_replicas"].get(str(p), [])),
            )
            assert stored == (replicas, adding, removing), (
                f"{topic}-{p}: listed {everything}, topic znode {znode}"
            )
        assert alter(cluster, (tp2, None)) == {tp2: (0, None)}
        assert set(listed(cluster)) == {tp0, zk0}
    wait_done(cluster, "topic", {0: [2], 1: [2]})
    wait_done(cluster, "byzk", {0: [3]})
    assert listed(cluster) == {}
