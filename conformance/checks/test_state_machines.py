"""RSM, PSM and ELECT checks via the state-change log and ZooKeeper (spec §3.1, §3.2, §3.5, §6.11)."""

from __future__ import annotations

import pytest

from cluster import admin
from cluster.admin import encode
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import (
    Step,
    assert_invalid_transitions_in_kafka_shape,
    create_topic,
    journal,
    pinned,
    requests_for,
    settle,
    wait_cluster_known,
    wait_state,
)
from probes.state_change_log import invalid_transitions, partition_transitions, replica_transitions

pytestmark = pytest.mark.conformance

VALID_REPLICA = {
    "NewReplica": {"NonExistentReplica"},
    "OnlineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "OfflineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "ReplicaDeletionStarted": {"OfflineReplica"},
    "ReplicaDeletionSuccessful": {"ReplicaDeletionStarted"},
    "ReplicaDeletionIneligible": {"OfflineReplica", "ReplicaDeletionStarted"},
    "NonExistentReplica": {"ReplicaDeletionSuccessful"},
}
VALID_PARTITION = {
    "NewPartition": {"NonExistentPartition"},
    "OnlinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "OfflinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "NonExistentPartition": {"OfflinePartition"},
}


def _lifecycle(cluster: Cluster) -> None:
    create_topic(cluster, "sm", {0: [1, 2], 1: [2, 3]})
    cluster.kill(2, end_session=True)
    wait_state(cluster, "sm", 1, lambda s: s["leader"] == 3, "leader 3", deadline_s=20)
    cluster.start([2])
    wait_state(cluster, "sm", 0, lambda s: s["isr"] == [1, 2], "2 back in ISR", deadline_s=15)
    admin.delete_topic_zk(cluster, "sm")
    wait_for(lambda: not cluster.zk.exists("/brokers/topics/sm"), cluster.deadline(30), "sm deleted")


@pytest.mark.behaviour("RSM-1", "RSM-2", "PSM-1")
def test_only_valid_transitions_are_traced(cluster_factory: ClusterFactory) -> None:
    """RSM-1/PSM-1: every valid edge a scenario can reach from outside is traced, and every traced
    edge is valid. RSM-2 is *(unit)* in the catalogue: a Kafka 2.5 controller filters the inputs
    that could ask for an invalid transition, so no outside scenario provokes one in a correct
    controller; what the suite checks is the reachable half — a whole lifecycle (create, broker
    failure and return, deletion) logs no invalid-transition ERROR, and no traced TRACE transition
    is outside ``VALID_PREVIOUS`` (a controller that skips its validity check and moves, e.g.,
    DeletionStarted→Online is caught). The ERROR lines' exact shape (spec §3.5) is checked wherever
    they appear (TOPIC-7, REASSIGN-14, LISTEN checks) and invalid transitions are provoked from
    outside in ``test_story.py::test_broker_returning_during_deletion_meets_invalid_transitions``."""
    cluster = cluster_factory(start=False)
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    _lifecycle(cluster)
    entries = cluster.state_changes(1)
    rts = [t for t in replica_transitions(entries) if t.topic == "sm"]
    pts = [t for t in partition_transitions(entries) if t.topic == "sm"]
    assert rts, "no TRACE state transitions in the controller's state-change log"
    assert pts, "no TRACE state transitions in the controller's state-change log"
    bad = [t.entry.raw for t in rts if t.from_state not in VALID_REPLICA.get(t.to_state, set())]
    bad += [t.entry.raw for t in pts if t.from_state not in VALID_PARTITION.get(t.to_state, set())]
    assert not bad, "invalid transitions traced as valid:\n" + "\n".join(bad)
    seen = {(t.from_state, t.to_state) for t in rts}
    for edge in (
        ("NonExistentReplica", "NewReplica"),
        ("NewReplica", "OnlineReplica"),
        ("OnlineReplica", "OfflineReplica"),
        ("OfflineReplica", "OnlineReplica"),
        ("OfflineReplica", "ReplicaDeletionStarted"),
        ("ReplicaDeletionStarted", "ReplicaDeletionSuccessful"),
        ("ReplicaDeletionSuccessful", "NonExistentReplica"),
    ):
        assert edge in seen, f"replica edge {edge} not traced; seen {sorted(seen)}"
    pseen = {(t.from_state, t.to_state) for t in pts}
    for edge in (
        ("NonExistentPartition", "NewPartition"),
        ("NewPartition", "OnlinePartition"),
        ("OnlinePartition", "OfflinePartition"),
        ("OfflinePartition", "OnlinePartition"),
        ("OfflinePartition", "NonExistentPartition"),
    ):
        assert edge in pseen, f"partition edge {edge} not traced; seen {sorted(pseen)}"
    assert_invalid_transitions_in_kafka_shape(cluster, "lifecycle")
    invalid = invalid_transitions(entries)
    assert not invalid, "reachable scenario produced invalid transitions:\n" + "\n".join(
        i.entry.raw for i in invalid
    )


@pytest.mark.behaviour("PSM-3")
def test_partition_without_live_replica_stays_new(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(4, start=False)
    cluster.start([1, 2, 3])
    cluster.wait_controller()
    wait_cluster_known(cluster)
    admin.create_topic_zk(cluster, "nolive", {0: [4]})
    settle(cluster, 1)  # the topic-change event that saw nolive is fully handled
    assert not cluster.zk.exists("/brokers/topics/nolive/partitions"), "state created without a live replica"
    cluster.start([4])
    wait_state(cluster, "nolive", 0, lambda s: s["leader"] == 4, "created when 4 registers")
    pinned(cluster, "nolive", 0, [Step(4, 0, (4,), 1, 0)], "created when its only replica registered")


@pytest.mark.behaviour("PSM-4", "BROKER-4")
def test_failed_election_leaves_partition_and_logs(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([3])
    assert cluster.wait_controller() == 3
    cluster.start([1, 2])
    create_topic(cluster, "noel", {0: [1]})
    cluster.kill(1, end_session=True)
    st = wait_state(cluster, "noel", 0, lambda s: s["leader"] == -1, "leader -1", deadline_s=20)
    assert (st["isr"], st["leader_epoch"]) == ([1], 1), st
    wait_for(
        lambda: any(
            "Failed to elect leader for partition noel-0" in "\n".join((e.message, *e.detail))
            for e in cluster.state_changes(3)
        ),
        cluster.deadline(5),
        "'Failed to elect leader for partition noel-0' in the state-change log",
    )


@pytest.mark.behaviour("ELECT-1", "ELECT-5")
def test_unclean_election_by_topic_config(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([3])
    assert cluster.wait_controller() == 3
    cluster.start([1, 2])
    create_topic(cluster, "unc", {0: [1, 2]})
    cluster.kill(2, end_session=True)
    wait_state(cluster, "unc", 0, lambda s: s["isr"] == [1], "ISR [1]", deadline_s=20)
    cluster.kill(1, end_session=True)
    wait_state(cluster, "unc", 0, lambda s: s["leader"] == -1, "leader -1", deadline_s=20)
    before = cluster.partition_state_stat("unc", 0)
    mark = journal(cluster).mark()
    cluster.start([2])
    # evidence: the controller handled 2's registration (UpdateMetadata naming it), then a later event
    wait_for(
        lambda: [
            r for r in requests_for(cluster, "UpdateMetadata", dest=2, since=mark) if 2 in r.live_brokers
        ],
        cluster.deadline(15),
        lambda: f"UpdateMetadata to the returning broker 2:\n{journal(cluster).dump(mark)}",
    )
    settle(cluster, 2)
    after = cluster.partition_state_stat("unc", 0)
    assert after == before, (
        f"unc-0 changed while unclean election is disabled (topic override absent, broker false): {before} ->"
        f" {after}"
    )
    cluster.zk.set(
        "/config/topics/unc", encode({"version": 1, "config": {"unclean.leader.election.enable": "true"}})
    )
    cluster.zk.create(
        "/config/changes/config_change_",
        encode({"version": 2, "entity_path": "topics/unc"}),
        sequence=True,
        makepath=True,
    )
    st = wait_state(cluster, "unc", 0, lambda s: s["leader"] == 2, "unclean leader 2", deadline_s=20)
    assert st["isr"] == [2], st
