"""LISTEN checks: the controller's watches and every listener's reaction (spec §2.2, §2.3)."""

from __future__ import annotations

import json

import pytest

from cluster import admin
from cluster.admin import encode
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import (
    assert_invalid_transitions_in_kafka_shape,
    create_topic,
    journal,
    settle,
    wait_online,
    wait_state,
)
from probes.watches import read_watches

pytestmark = pytest.mark.conformance


def _watches_of(cluster: Cluster, bid: int) -> frozenset[str]:
    """The watches of node ``bid``'s controller session (its broker's, unless the target is split)."""
    return read_watches(cluster.four_letter).of_session(cluster.controller_session(bid), cluster.chroot)


@pytest.mark.behaviour("LISTEN-2", "LISTEN-4")
def test_controller_and_never_controller_watch_sets(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    create_topic(cluster, "w1", {0: [1, 2]})
    create_topic(cluster, "w2", {0: [2, 3]})
    expected = {
        "/admin/preferred_replica_election",
        "/admin/reassign_partitions",
        "/controller",
        "/brokers/topics/w1",
        "/brokers/topics/w2",
        "/brokers/ids/1",
        "/brokers/ids/2",
        "/brokers/ids/3",
    }

    def settled() -> frozenset[str] | None:
        got = _watches_of(cluster, 1)
        return got if got == expected else None

    wait_for(settled, cluster.deadline(10), lambda: f"controller watches {sorted(_watches_of(cluster, 1))}")
    # never-controllers: the /controller watch appears once their controller component started;
    # then the set must be exactly {/controller} (no /brokers/ids, /brokers/topics data watches)
    wait_for(
        lambda: all(_watches_of(cluster, b) == {"/controller"} for b in (2, 3)),
        cluster.deadline(10),
        lambda: f"never-controllers watch only /controller: { {b: _watches_of(cluster, b) for b in (2, 3)} }",
    )


@pytest.mark.behaviour("LISTEN-1", "LISTEN-5", "ISR-2", "RSM-2")
def test_every_listener_reacts(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([1, 2])
    cid = cluster.wait_controller()
    # /brokers/topics (child) and /brokers/topics/<t> (data)
    create_topic(cluster, "l1", {0: [1, 2]})
    cluster.zk.set("/brokers/topics/l1", admin.topic_znode({0: [1, 2], 1: [2, 1]}))
    wait_online(cluster, "l1", [1])
    # /brokers/ids (child): a new broker is told about itself
    mark = journal(cluster).mark()
    cluster.start([3])
    wait_for(
        lambda: journal(cluster).requests(api="UpdateMetadata", dest=3, since=mark),
        cluster.deadline(10),
        "UpdateMetadata to the new broker 3",
    )
    # /isr_change_notification (child): consumed, UpdateMetadata for exactly those partitions
    mark = journal(cluster).mark()
    note = cluster.zk.create(
        "/isr_change_notification/isr_change_",
        encode({"version": 1, "partitions": [{"topic": "l1", "partition": 1}]}),
        sequence=True,
    )
    wait_for(lambda: not cluster.zk.exists(note), cluster.deadline(10), f"{note} consumed")
    # the UpdateMetadata is queued before the notification is deleted but delivered by each
    # broker's send thread afterwards: wait until every broker got it
    wait_for(
        lambda: (
            {r.dest for r in journal(cluster).requests(api="UpdateMetadata", since=mark) if r.partitions}
            == set(cluster.broker_ids)
        ),
        cluster.deadline(10),
        lambda: f"UpdateMetadata after ISR notification at every broker:\n{journal(cluster).dump(mark)}",
    )
    ums = [r for r in journal(cluster).requests(api="UpdateMetadata", since=mark) if r.partitions]
    assert all({(p.topic, p.partition) for p in r.partitions} == {("l1", 1)} for r in ums), (
        f"UpdateMetadata after ISR notification:\n{journal(cluster).dump(mark)}"
    )
    # /log_dir_event_notification (child): consumed
    ev = cluster.zk.create(
        "/log_dir_event_notification/log_dir_event_",
        encode({"version": 1, "broker": 2, "event": 1}),
        sequence=True,
    )
    wait_for(lambda: not cluster.zk.exists(ev), cluster.deadline(10), f"{ev} consumed")
    # /admin/preferred_replica_election (exists): processed and deleted
    admin.preferred_election_zk(cluster, [("l1", 0)])
    wait_for(
        lambda: not cluster.zk.exists("/admin/preferred_replica_election"),
        cluster.deadline(10),
        "preferred election znode deleted",
    )
    # /admin/reassign_partitions (exists): reassignment runs and the znode goes
    admin.reassign_zk(cluster, {("l1", 0): [2, 3]})
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(20), "reassignment done"
    )
    assert (cluster.get_json("/brokers/topics/l1") or {})["partitions"]["0"] == [2, 3]
    # /admin/delete_topics (child): deletion
    admin.delete_topic_zk(cluster, "l1")
    wait_for(lambda: not cluster.zk.exists("/brokers/topics/l1"), cluster.deadline(30), "topic l1 deleted")
    # /controller (exists): re-election
    cluster.zk.delete("/controller")
    cluster.wait_controller()
    assert (cluster.controller_epoch() or (0, 0))[0] == 2
    del cid
    # the reassignment and deletion above can log invalid transitions: Kafka's shape (RSM-2)
    assert_invalid_transitions_in_kafka_shape(cluster, "LISTEN-5")


@pytest.mark.behaviour("LISTEN-3")
def test_editing_admin_znodes_in_place_does_nothing(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "ed", {0: [1, 2]})
    admin.reassign_zk(cluster, {("ed", 0): [9, 1]})  # broker 9 never registers: stays pending
    wait_for(
        lambda: (cluster.get_json("/brokers/topics/ed") or {})["partitions"]["0"][0] == 9,
        cluster.deadline(10),
        "U1 written for the pending reassignment",
    )
    cluster.zk.set(
        "/admin/reassign_partitions",
        encode({"version": 1, "partitions": [{"topic": "ed", "partition": 0, "replicas": [2, 3]}]}),
    )
    settle(cluster, 1)  # a controller that reacted to the edit has done so by now
    topic = cluster.get_json("/brokers/topics/ed") or {}
    assert topic["partitions"]["0"] == [9, 1, 2], f"edited reassignment was acted on: {topic}"
    st = wait_state(cluster, "ed", 0, lambda s: True, "state")
    assert 3 not in st["isr"], json.dumps(st)
    assert_invalid_transitions_in_kafka_shape(cluster, "LISTEN-3")
