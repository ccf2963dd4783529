"""PREFERRED-3/4, ELECT-7/8 checks: ElectLeaders (API key 43, spec §13.3), with ports of
PlaintextAdminIntegrationTest's election tests and LeaderElectionCommandTest (Kafka 2.5.1).

Elections go through confluent-kafka's `AdminClient.elect_leaders` (which sends ElectLeaders to
the controller), or as requests built with kio where a check needs a chosen version, TimeoutMs
or the raw answer (`admin_wire`). Kafka's brokers 0, 1, 2 are 1, 2, 3 here; broker 4, started
first, is the controller, so that stopping a replica never moves the controller.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import ElectionType, TopicPartition

from cluster import admin
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.checks import admin_wire as aw
from conformance.scenarios import (
    create_topic,
    fenced,
    journal,
    requests_for,
    settle,
    wait_cluster_known,
    wait_delivered,
    wait_online,
    wait_state,
    writes,
)
from conformance.topology import NO_ACTIVE_CONTROLLER_IN_A_BROKER

pytestmark = pytest.mark.conformance
CONTROLLER = 4
PREFERRED_FAILED = (
    "Failed to elect leader for partition {} under strategy PreferredReplicaPartitionLeaderElectionStrategy"
)
UNCLEAN_FAILED = (
    "Failed to elect leader for partition {} under strategy OfflinePartitionLeaderElectionStrategy(true)"
)


def _cluster(cluster_factory: ClusterFactory, **kw: Any) -> Cluster:
    cluster = cluster_factory(4, start=False, **kw)
    cluster.start([CONTROLLER])
    assert cluster.wait_controller() == CONTROLLER, cluster.summary()
    cluster.start([1, 2, 3])
    wait_cluster_known(cluster)
    return cluster


def elect(
    client: Any, kind: ElectionType, partitions: list[tuple[str, int]] | None
) -> dict[tuple[str, int], Any]:
    """confluent-kafka's elect_leaders: partition → None (elected) or (code, message)."""
    tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    # no keyword options: confluent-kafka 2.16's binding of elect_leaders fails on any (its C
    # argument list is one short); the defaults come from socket.timeout.ms (10 s, admin_client)
    result = client.elect_leaders(kind, tps).result(timeout=40)
    out: dict[tuple[str, int], Any] = {}
    for tp, err in result.items():
        error = (
            err.args[0] if err is not None and not hasattr(err, "code") else err
        )  # KafkaError or its exception
        out[(tp.topic, tp.partition)] = None if error is None else (int(error.code()), str(error.str()))
    return out


def leader(cluster: Cluster, topic: str, partition: int = 0) -> int:
    st = cluster.partition_state(topic, partition)
    assert st is not None, f"{topic}-{partition} has no state"
    return int(st["leader"])


def change_preferred_leader(cluster: Cluster, order: list[int], *tps: tuple[str, int]) -> None:
    """The Kafka test's `changePreferredLeader`: a znode reassignment to the same replicas in
    another order moves the preferred replica, not the leader."""
    before = {tp: leader(cluster, *tp) for tp in tps}
    admin.reassign_zk(cluster, dict.fromkeys([tp for tp in tps if before[tp] != order[0]], order))
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(20), "reordering done"
    )
    for tp in tps:
        assert (cluster.get_json(f"/brokers/topics/{tp[0]}") or {})["partitions"][str(tp[1])] == order
        assert leader(cluster, *tp) == before[tp], f"{tp} leader moved by the reordering"


# ---- PREFERRED-3 / PREFERRED-4 ---------------------------------------------------------------------------
@pytest.mark.behaviour("PREFERRED-3", "PREFERRED-4")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_elect_preferred_leaders(cluster_factory: ClusterFactory) -> None:
    """PlaintextAdminIntegrationTest.testElectPreferredLeaders (L1238-1376)."""
    cluster = _cluster(cluster_factory)
    client = admin.admin_client(cluster)
    p1, p2 = ("elect-preferred-leaders-topic-1", 0), ("elect-preferred-leaders-topic-2", 0)
    for topic, _ in (p1, p2):
        create_topic(cluster, topic, {0: [1, 2, 3]})
        wait_state(cluster, topic, 0, lambda s: sorted(s["isr"]) == [1, 2, 3], "ISR [1,2,3]")
    assert (leader(cluster, *p1), leader(cluster, *p2)) == (1, 1)
    not_needed = (84, "Leader election not needed for topic partition")
    assert elect(client, ElectionType.PREFERRED, [p1]) == {p1: not_needed}
    assert elect(client, ElectionType.PREFERRED, None) == {}, (
        "null partitions: nothing elected, nothing listed"
    )
    change_preferred_leader(cluster, [2, 3, 1], p1, p2)
    assert elect(client, ElectionType.PREFERRED, [p1]) == {p1: None}
    assert (leader(cluster, *p1), leader(cluster, *p2)) == (2, 1)
    assert elect(client, ElectionType.PREFERRED, None) == {p2: None}
    assert (leader(cluster, *p1), leader(cluster, *p2)) == (2, 2)
    unknown = ("topic-does-not-exist", 0)
    assert elect(client, ElectionType.PREFERRED, [unknown]) == {unknown: (3, "The partition does not exist.")}
    change_preferred_leader(cluster, [3, 1, 2], p1, p2)
    assert elect(client, ElectionType.PREFERRED, [unknown, p1]) == {
        unknown: (3, "The partition does not exist."),
        p1: None,
    }
    assert (leader(cluster, *p1), leader(cluster, *p2)) == (3, 2)
    assert elect(client, ElectionType.PREFERRED, [p2]) == {p2: None}
    assert leader(cluster, *p2) == 3
    change_preferred_leader(cluster, [2, 3, 1], p1, p2)
    cluster.stop(2)
    for tp in (p1, p2):
        wait_state(cluster, tp[0], 0, lambda s: 2 not in s["isr"], "2 out of the ISR")
    assert elect(client, ElectionType.PREFERRED, [p1]) == {
        p1: (80, PREFERRED_FAILED.format("elect-preferred-leaders-topic-1-0"))
    }
    assert elect(client, ElectionType.PREFERRED, None) == {
        p1: (80, PREFERRED_FAILED.format("elect-preferred-leaders-topic-1-0")),
        p2: (80, PREFERRED_FAILED.format("elect-preferred-leaders-topic-2-0")),
    }
    assert (leader(cluster, *p1), leader(cluster, *p2)) == (3, 3)


@pytest.mark.behaviour("PREFERRED-3", "PREFERRED-4")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_preferred_election_through_the_api_writes_once_and_never_touches_the_znode(
    cluster_factory: ClusterFactory,
) -> None:
    """LeaderElectionCommandTest.testPreferredReplicaElection (--all-topic-partitions), with the
    writes and requests of spec §13.3.4-13.3.5 pinned; a topic queued for deletion answers 17."""
    cluster = _cluster(cluster_factory)
    client = admin.admin_client(cluster)
    create_topic(cluster, "pref", {0: [2, 3], 1: [3, 2]})
    create_topic(cluster, "doomed", {0: [1, 3]})
    cluster.stop(2)  # LeaderElectionCommandTest.testPreferredReplicaElection: the preferred replica bounces
    wait_state(cluster, "pref", 0, lambda s: s["leader"] == 3, "leader 3")
    cluster.stop(1)
    admin.delete_topic_zk(cluster, "doomed")  # replica 1 is offline: deletion waits, the topic stays queued
    cluster.start([2])
    st0 = wait_state(cluster, "pref", 0, lambda s: sorted(s["isr"]) == [2, 3], "2 back in the ISR")
    settle(cluster, CONTROLLER, among=(2, 3, 4))
    records, zk_mark = len(cluster.history()), cluster.zk_journal(CONTROLLER).mark()
    mark = journal(cluster).mark()
    log_before = len(cluster.log_tail(CONTROLLER, lines=100000).splitlines())
    # null: every partition of the controller's metadata cache; pref-1 (already preferred) is left
    # out, and doomed is not there (its deletion started: UpdateMetadata with LeaderDuringDelete)
    assert elect(client, ElectionType.PREFERRED, None) == {("pref", 0): None}
    state_writes = [
        (r, op) for r, op in writes(cluster.history()[records:]) if (op.path or "").endswith("/state")
    ]
    assert [op.path for _, op in state_writes] == ["/brokers/topics/pref/partitions/0/state"], state_writes
    assert all(fenced(r) for r, _ in state_writes)
    st = cluster.partition_state("pref", 0)
    assert st is not None
    assert (st["leader"], st["leader_epoch"], st["isr"]) == (2, st0["leader_epoch"] + 1, st0["isr"]), st
    assert aw.metadata_leader(cluster, CONTROLLER, "pref", 0) == 2, (
        "answered before the controller's cache had it"
    )
    znode = [
        r.describe()
        for r in cluster.zk_journal(CONTROLLER).requests(
            path="/admin/preferred_replica_election", since=zk_mark
        )
    ]
    assert not znode, f"the API election touched /admin/preferred_replica_election: {znode}"
    logged = cluster.log_tail(CONTROLLER, lines=100000).splitlines()[log_before:]
    completion_lines = [line for line in logged if "complete preferred replica leader election" in line]
    assert not completion_lines, f"ZooKeeper-path completion lines for an API election: {completion_lines}"

    def sent() -> tuple[set[int], set[int]]:
        """Destinations of the election's requests, once answered (each broker's channel sends
        them in its own time: the ElectLeaders answer only waits for the controller's own cache)."""

        def dests(api: str) -> set[int]:
            return {
                r.dest
                for r in requests_for(cluster, api, topic="pref", since=mark)
                if r.error_code is not None
            }

        return dests("LeaderAndIsr"), dests("UpdateMetadata")

    wait_for(lambda: sent() == ({2, 3}, {2, 3, 4}), cluster.deadline(15), lambda: f"requests sent: {sent()}")
    settle(cluster, CONTROLLER, among=(2, 3, 4))
    lair, um = sent()
    assert (lair, um) == ({2, 3}, {2, 3, 4}), (
        f"LeaderAndIsr to the replicas, UpdateMetadata to all: {lair} {um}"
    )
    err, results = aw.elect_leaders(cluster, CONTROLLER, [("doomed", 0), ("pref", 1)])
    assert (err, results) == (
        0,
        {
            ("doomed", 0): (17, "The topic is being deleted"),
            ("pref", 1): (84, "Leader election not needed for topic partition"),
        },
    )


# ---- ELECT-7 -------------------------------------------------------------------------------------------
@pytest.mark.behaviour("ELECT-7")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_elect_unclean_leaders(cluster_factory: ClusterFactory) -> None:
    """PlaintextAdminIntegrationTest.testElectUncleanLeadersForOnePartition / ForManyPartitions /
    ForAllPartitions / ForUnknownPartitions / AndNoop / WhenNoLiveBrokers and
    LeaderElectionCommandTest.testTopicPartition / testAllTopicPartition in one cluster: the
    replicas [1, 2] lose 2 (stopped, out of the ISR), then 1; 2 comes back outside the ISR. The
    topic says unclean.leader.election.enable=false: an API unclean election does not read it."""
    cluster = _cluster(cluster_factory)
    client = admin.admin_client(cluster)
    create_topic(
        cluster,
        "unclean-test-topic-1",
        {0: [1, 2], 1: [1, 2], 2: [1, 3]},
        config={"unclean.leader.election.enable": "false"},
    )
    create_topic(cluster, "lonely", {0: [1]})
    topic = "unclean-test-topic-1"
    p1, p2, p3 = (topic, 0), (topic, 1), (topic, 2)
    cluster.stop(2)
    for p in (0, 1):
        wait_state(cluster, topic, p, lambda s: s["isr"] == [1], "ISR [1]")
    cluster.stop(1)
    for p in (0, 1):
        wait_state(cluster, topic, p, lambda s: s["leader"] == -1, "no leader")
    wait_state(cluster, topic, 2, lambda s: s["leader"] == 3, "leader 3")
    cluster.start([2])
    settle(cluster, CONTROLLER, among=(2, 3, 4))
    assert leader(cluster, *p1) == -1, "elected with unclean election disabled"
    before = {p: cluster.partition_state(topic, p) for p in (0, 1, 2)}
    records, zk_mark = len(cluster.history()), cluster.zk_journal(CONTROLLER).mark()
    unknown, unknown_topic = (topic, 3), ("unknown-topic", 0)
    assert elect(client, ElectionType.UNCLEAN, [p1, p3, unknown, unknown_topic]) == {
        p1: None,
        p3: (84, "Leader election not needed for topic partition"),
        unknown: (3, "The partition does not exist."),
        unknown_topic: (3, "The partition does not exist."),
    }
    st = cluster.partition_state(topic, 0)
    assert st is not None
    assert before[0] is not None
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (2, [2], before[0]["leader_epoch"] + 1), st
    config_reads = cluster.zk_journal(CONTROLLER).requests(path=f"/config/topics/{topic}", since=zk_mark)
    assert not config_reads, "the API unclean election read the topic config"
    assert elect(client, ElectionType.UNCLEAN, None) == {
        p2: None,
        ("lonely", 0): (83, UNCLEAN_FAILED.format("lonely-0")),
    }, "null: the partitions with a live leader (p1 now, p3) are left out"
    assert (leader(cluster, *p2), leader(cluster, *p3)) == (2, 3)
    state_writes = [
        op.path for _, op in writes(cluster.history()[records:]) if (op.path or "").endswith("/state")
    ]
    assert sorted(p or "" for p in state_writes) == [
        f"/brokers/topics/{topic}/partitions/0/state",
        f"/brokers/topics/{topic}/partitions/1/state",
    ]
    # no live replica: ELIGIBLE_LEADERS_NOT_AVAILABLE, nothing written
    assert not [
        op
        for _, op in writes(cluster.history()[records:])
        if (op.path or "").startswith("/brokers/topics/lonely")
    ]
    records = len(cluster.history())
    assert elect(client, ElectionType.UNCLEAN, [("lonely", 0)]) == {
        ("lonely", 0): (83, UNCLEAN_FAILED.format("lonely-0"))
    }
    assert not [
        op
        for _, op in writes(cluster.history()[records:])
        if (op.path or "").startswith("/brokers/topics/lonely")
    ]


# ---- ELECT-8 -------------------------------------------------------------------------------------------
@pytest.mark.behaviour("ELECT-8")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_elect_leaders_answers_once_the_controllers_metadata_shows_the_leader(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = _cluster(cluster_factory)
    create_topic(cluster, "e8", {0: [2, 3]})
    cluster.stop(2)
    wait_state(cluster, "e8", 0, lambda s: s["leader"] == 3, "leader 3")
    cluster.start([2])
    wait_state(cluster, "e8", 0, lambda s: sorted(s["isr"]) == [2, 3], "2 back in the ISR")
    for version in (0, 1, 2):
        preferred = 2 if version != 1 else 3
        err, results = aw.elect_leaders(cluster, CONTROLLER, [("e8", 0)], version=version)
        assert (err, results) == (0, {("e8", 0): (0, None)}), (version, err, results)
        assert aw.metadata_leader(cluster, CONTROLLER, "e8", 0) == preferred, (
            "the response came before the controller's own metadata showed the new leader"
        )
        if version == 0:  # make 3 the preferred replica for the next round, then back
            change_preferred_leader(cluster, [3, 2], ("e8", 0))
        elif version == 1:
            change_preferred_leader(cluster, [2, 3], ("e8", 0))
    # nothing to wait for: answered at once, even with a long TimeoutMs
    started = time.monotonic()
    err, results = aw.elect_leaders(
        cluster, CONTROLLER, [("e8", 0), ("nosuch", 0)], timeout_ms=60000, wait_s=15
    )
    assert results == {
        ("e8", 0): (84, "Leader election not needed for topic partition"),
        ("nosuch", 0): (3, "The partition does not exist."),
    }
    assert time.monotonic() - started < 15


@pytest.mark.behaviour("ELECT-8")
@pytest.mark.combined_only(NO_ACTIVE_CONTROLLER_IN_A_BROKER)
def test_elect_leaders_times_out_while_the_controllers_own_metadata_lags(
    cluster_factory: ClusterFactory,
) -> None:
    """The controller's link to its own control-plane listener (the kit's recording proxy) is cut
    before it starts: its own metadata cache never gets an UpdateMetadata, so an elected partition
    is answered REQUEST_TIMED_OUT (7, null message) at TimeoutMs while the election stays written;
    an error in the same request is answered with it, unchanged."""
    cluster = cluster_factory(4, start=False)
    cluster.proxies[(CONTROLLER, CONTROLLER)].upstream = None  # controller → itself: connections refused
    cluster.start([CONTROLLER])
    assert cluster.wait_controller() == CONTROLLER
    cluster.start([1, 2, 3])
    admin.create_topic_zk(cluster, "lag", {0: [2, 3]})
    wait_delivered(cluster, "lag", wait_online(cluster, "lag", [0]), among=(1, 2, 3))
    cluster.stop(2)
    wait_state(cluster, "lag", 0, lambda s: s["leader"] == 3, "leader 3")
    cluster.start([2])
    st = wait_state(cluster, "lag", 0, lambda s: sorted(s["isr"]) == [2, 3], "2 back in the ISR")
    assert aw.metadata_leader(cluster, CONTROLLER, "lag", 0) is None, (
        "the controller's own cache got metadata"
    )
    started = time.monotonic()
    err, results = aw.elect_leaders(
        cluster, CONTROLLER, [("lag", 0), ("nosuch", 0)], timeout_ms=3000, wait_s=30
    )
    elapsed = time.monotonic() - started
    assert (err, results) == (
        0,
        {("lag", 0): (7, None), ("nosuch", 0): (3, "The partition does not exist.")},
    ), results
    assert elapsed >= 2.9, f"answered after {elapsed:.1f} s, before TimeoutMs (3 s)"
    after = cluster.partition_state("lag", 0)
    assert after is not None
    assert (after["leader"], after["leader_epoch"]) == (2, st["leader_epoch"] + 1), (
        f"election not written: {after}"
    )
    wait_for(
        lambda: aw.metadata_leader(cluster, 3, "lag", 0) == 2,
        cluster.deadline(10),
        "broker 3's metadata to show leader 2",
    )
