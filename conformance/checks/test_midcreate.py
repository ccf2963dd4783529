"""MIDCREATE checks: controller lost in the middle of topic creation (spec §5.3)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster import admin
from cluster.admin import encode
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import (
    create_topic,
    journal,
    settle,
    state_history,
    wait_cluster_known,
    wait_online,
    writes,
)

pytestmark = pytest.mark.conformance


def _paused_controller(cluster_factory: ClusterFactory) -> Cluster:
    cluster = cluster_factory(start=False)
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    cluster.pause(1)
    return cluster


@pytest.mark.behaviour("MIDCREATE-1", "RSM-4")
def test_next_controller_completes_creation(cluster_factory: ClusterFactory) -> None:
    cluster = _paused_controller(cluster_factory)
    mark = journal(cluster).mark()
    admin.create_topic_zk(cluster, "mid", {0: [2, 3], 1: [3, 2]})
    cluster.kill(1, end_session=True)
    cluster.wait_controller(not_in=[1], deadline_s=25)
    states = wait_online(cluster, "mid", [0, 1], 25)
    epoch = (cluster.controller_epoch() or (0, 0))[0]
    assert {
        p: (s["leader"], s["isr"], s["leader_epoch"], s["controller_epoch"]) for p, s in states.items()
    } == {0: (2, [2, 3], 0, epoch), 1: (3, [3, 2], 0, epoch)}, f"states {states}"

    def lai() -> list[tuple[int, int, bool | None]]:
        return [
            (r.dest, p.partition, p.is_new)
            for r in journal(cluster).requests(api="LeaderAndIsr", since=mark)
            for p in r.partitions
            if p.topic == "mid"
        ]

    # the state znodes are written before the requests go out: wait for every ISR member's copy
    expected = {(2, 0, True), (3, 0, True), (3, 1, True), (2, 1, True)}
    wait_for(
        lambda: expected <= set(lai()),
        cluster.deadline(10),
        lambda: f"LeaderAndIsr(isNew=true) for mid-0/1 to brokers 2 and 3; got {lai()}",
    )
    assert all(new for _, _, new in lai()), f"only isNew=true LeaderAndIsr expected: {lai()}"


@pytest.mark.behaviour("MIDCREATE-2")
def test_only_missing_state_znodes_are_created(cluster_factory: ClusterFactory) -> None:
    cluster = _paused_controller(cluster_factory)
    admin.create_topic_zk(cluster, "half", {0: [2, 3], 1: [3, 2]})
    cluster.zk.create(
        "/brokers/topics/half/partitions/0/state",
        encode({"controller_epoch": 1, "leader": 3, "version": 1, "leader_epoch": 4, "isr": [3, 2]}),
        makepath=True,
    )
    cluster.kill(1, end_session=True)
    cluster.wait_controller(not_in=[1], deadline_s=25)
    wait_online(cluster, "half", [1], 25)
    settle(cluster, 2)  # the failover event (and anything it queued) is fully handled
    hist0 = [s for s, _ in state_history(cluster, "half", 0)]
    assert len(hist0) == 1, f"existing state rewritten: {hist0}"
    assert hist0[0]["leader_epoch"] == 4, f"existing state rewritten: {hist0}"
    st1 = cluster.partition_state("half", 1)
    assert st1 is not None, st1
    assert (st1["leader"], st1["leader_epoch"]) == (3, 0), st1


@pytest.mark.behaviour("MIDCREATE-3")
def test_config_only_topic_stays_invisible(cluster: Cluster) -> None:
    """The marker of "the controller is done with it": a topic created after ``cfgonly`` (by the
    same controller, through the same listeners) is online and visible to a client; ``cfgonly``
    then must have left no trace — before and after a failover."""
    cluster.wait_controller()
    n = len(cluster.history())
    cluster.zk.create("/config/topics/cfgonly", encode({"version": 1, "config": {}}), makepath=True)
    create_topic(cluster, "cfg-after", {0: [1, 2]})
    cluster.zk.delete("/controller")
    wait_cluster_known(cluster)
    create_topic(cluster, "cfg-after2", {0: [2, 3]})
    client = admin.admin_client(cluster)

    def listed() -> Any:
        md = client.list_topics(timeout=5)
        return md if "cfg-after2" in md.topics else None

    md = wait_for(listed, cluster.deadline(10), "client metadata to show cfg-after2")
    assert "cfgonly" not in md.topics, f"client sees cfgonly: {list(md.topics)}"
    stray = [op.path for r, op in writes(cluster.history()[n:]) if "cfgonly" in (op.path or "")]
    assert stray == ["/config/topics/cfgonly"], f"writes for the config-only topic: {stray}"
