"""DELETE checks: topic deletion (spec §6.9)."""

from __future__ import annotations

import pytest

from cluster import admin
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import (
    create_topic,
    journal,
    requests_for,
    settle,
    state_history,
    wait_told_gone,
    writes,
)

pytestmark = pytest.mark.conformance


@pytest.mark.behaviour("DELETE-1", "DELETE-2", "RSM-6", "REQ-2")
def test_deletion_sequence_and_cleanup(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "dt", {0: [1, 2], 1: [2, 3]})
    create_topic(cluster, "keep", {0: [3, 1]})
    mark = journal(cluster).mark()
    n = len(cluster.history())
    admin.delete_topic_zk(cluster, "dt")
    gone = ("/brokers/topics/dt", "/config/topics/dt", "/admin/delete_topics/dt")
    # Kafka deletes the three one after another: wait for the last one, not the first
    wait_for(
        lambda: not any(cluster.zk.exists(p) for p in gone),
        cluster.deadline(30),
        lambda: f"dt deleted: still {[p for p in gone if cluster.zk.exists(p)]}",
    )
    later = [op for _, op in writes(cluster.history()[n:])]
    deleted = {op.path or "" for op in later if op.op == "delete"}
    assert set(gone) <= deleted, sorted(deleted)
    touched = {op.path for op in later if op.path and "keep" in op.path}
    assert not touched, f"deletion touched another topic: {touched}"
    for p in (0, 1):
        hist = [(s["leader"], s["isr"]) for s, _ in state_history(cluster, "dt", p)]
        assert hist[-1][0] == -1, f"dt-{p} ISR shrink writes: {hist}"
        assert len(hist[-1][1]) == 1, f"dt-{p} ISR shrink writes: {hist}"
    reqs = journal(cluster).requests(since=mark)
    um = [p for r in reqs if r.api == "UpdateMetadata" for p in r.partitions if p.topic == "dt"]
    assert um, f"UpdateMetadata for dt must carry leader -2: {um}"
    assert all(p.leader == -2 for p in um), f"UpdateMetadata for dt must carry leader -2: {um}"
    for dest in (1, 2, 3):
        mine = [
            r
            for r in reqs
            if r.dest == dest and r.api == "StopReplica" and any(p.topic == "dt" for p in r.partitions)
        ]
        if dest in (1, 2, 3) and any(dest in a for a in ([1, 2], [2, 3])):
            flags = [r.delete_partitions for r in mine]
            assert False in flags, (
                f"broker {dest}: StopReplica delete=false then delete=true expected, got {flags}"
            )
            assert True in flags, (
                f"broker {dest}: StopReplica delete=false then delete=true expected, got {flags}"
            )
            assert flags.index(False) < flags.index(True), (
                f"broker {dest}: StopReplica delete=false then delete=true expected, got {flags}"
            )


@pytest.mark.behaviour("DELETE-3")
def test_dead_replica_makes_deletion_wait(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "wait", {0: [1, 2]})
    victim = 2 if cluster.controller_id() != 2 else 1
    survivor = 1 if victim == 2 else 2
    mark = journal(cluster).mark()
    cluster.stop(victim)
    wait_told_gone(cluster, victim, mark)
    mark = journal(cluster).mark()
    admin.delete_topic_zk(cluster, "wait")
    # evidence: the live replica's StopReplica(delete=true) was answered, and a later event handled
    wait_for(
        lambda: [
            r
            for r in requests_for(cluster, "StopReplica", dest=survivor, topic="wait", since=mark)
            if r.delete_partitions and r.error_code is not None
        ],
        cluster.deadline(15),
        lambda: (
            f"StopReplica(delete=true) for wait answered by broker {survivor}:\n{journal(cluster).dump(mark)}"
        ),
    )
    settle(cluster, survivor)
    for path in ("/brokers/topics/wait", "/config/topics/wait", "/admin/delete_topics/wait"):
        assert cluster.zk.exists(path), (
            f"deletion completed ({path} gone) with a replica on dead broker {victim}"
        )
    cluster.start([victim])
    wait_for(lambda: not cluster.zk.exists("/brokers/topics/wait"), cluster.deadline(30), "deletion resumed")


@pytest.mark.behaviour("DELETE-4")
def test_delete_disabled_removes_only_the_marker(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(overrides={"delete.topic.enable": "false"})
    cluster.wait_controller()
    create_topic(cluster, "stay", {0: [1, 2]})
    before = cluster.partition_state_stat("stay", 0)
    admin.delete_topic_zk(cluster, "stay")
    wait_for(
        lambda: not cluster.zk.exists("/admin/delete_topics/stay"), cluster.deadline(10), "marker removed"
    )
    assert cluster.zk.exists("/brokers/topics/stay")
    assert cluster.zk.exists("/config/topics/stay")
    assert cluster.partition_state_stat("stay", 0) == before


@pytest.mark.behaviour("DELETE-4")
def test_delete_disabled_marker_found_at_failover_is_removed_and_nothing_deleted(
    cluster_factory: ClusterFactory,
) -> None:
    """Kafka 2.5.1 ``TopicDeletionManager.init``: a new controller with deletion disabled removes the
    markers it finds (``deleteTopicDeletions``) and queues nothing; the topic stays untouched."""
    cluster = cluster_factory(overrides={"delete.topic.enable": "false"})
    old = cluster.wait_controller()
    a, b = [bid for bid in cluster.broker_ids if bid != old][:2]
    create_topic(cluster, "stay", {0: [a, b]})
    before = cluster.partition_state_stat("stay", 0)
    cluster.pause(old)  # the marker is written while no controller can handle it
    admin.delete_topic_zk(cluster, "stay")
    cluster.kill(old, end_session=True)
    new = cluster.wait_controller(30, not_in=[old])
    wait_for(
        lambda: not cluster.zk.exists("/admin/delete_topics/stay"),
        cluster.deadline(20),
        f"the next controller ({new}) to remove the marker it found at failover",
    )
    assert cluster.zk.exists("/brokers/topics/stay"), (
        f"topic deleted with delete.topic.enable=false: {cluster.summary()}"
    )
    assert cluster.zk.exists("/config/topics/stay"), f"topic config deleted: {cluster.summary()}"
    assert cluster.partition_state_stat("stay", 0) == before, (
        f"the partition state changed (before {before}, now {cluster.partition_state_stat('stay', 0)}): "
        "a failover with deletion disabled must leave a topic whose replicas are alive untouched"
    )
