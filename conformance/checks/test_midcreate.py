"""MIDCREATE checks: controller lost in the middle of topic creation (spec §5.3)."""
# ruff: noqa: PT018 - one assertion per observation keeps its message with the trace it printed

from __future__ import annotations

import time

import pytest

from conformance import admin
from conformance.admin import encode
from conformance.cluster import Cluster, wait_for
from conformance.conftest import ClusterFactory
from conformance.scenarios import journal, state_history, wait_online

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
    cluster.kill(1)
    cluster.wait_controller(not_in=[1], deadline_s=25)
    states = wait_online(cluster, "mid", [0, 1], 25)
    epoch = (cluster.controller_epoch() or (0, 0))[0]
    assert {
        p: (s["leader"], s["isr"], s["leader_epoch"], s["controller_epoch"]) for p, s in states.items()
    } == {0: (2, [2, 3], 0, epoch), 1: (3, [3, 2], 0, epoch)}, f"states {states}"
    lai = [
        p
        for r in journal(cluster).requests(api="LeaderAndIsr", since=mark)
        for p in r.partitions
        if p.topic == "mid"
    ]
    assert lai and all(p.is_new for p in lai), f"LeaderAndIsr(isNew=true) expected: {lai}"


@pytest.mark.behaviour("MIDCREATE-2")
def test_only_missing_state_znodes_are_created(cluster_factory: ClusterFactory) -> None:
    cluster = _paused_controller(cluster_factory)
    admin.create_topic_zk(cluster, "half", {0: [2, 3], 1: [3, 2]})
    cluster.zk.create(
        "/brokers/topics/half/partitions/0/state",
        encode({"controller_epoch": 1, "leader": 3, "version": 1, "leader_epoch": 4, "isr": [3, 2]}),
        makepath=True,
    )
    cluster.kill(1)
    cluster.wait_controller(not_in=[1], deadline_s=25)
    wait_online(cluster, "half", [1], 25)
    time.sleep(1.0)
    hist0 = [s for s, _ in state_history(cluster, "half", 0)]
    assert len(hist0) == 1 and hist0[0]["leader_epoch"] == 4, f"existing state rewritten: {hist0}"
    st1 = cluster.partition_state("half", 1)
    assert st1 is not None and (st1["leader"], st1["leader_epoch"]) == (3, 0), st1


@pytest.mark.behaviour("MIDCREATE-3")
def test_config_only_topic_stays_invisible(cluster: Cluster) -> None:
    cluster.wait_controller()
    cluster.zk.create("/config/topics/cfgonly", encode({"version": 1, "config": {}}), makepath=True)
    cluster.zk.delete("/controller")
    cluster.wait_controller()
    time.sleep(1.5)
    assert not cluster.zk.exists("/brokers/topics/cfgonly"), (
        "controller created a topic from its config alone"
    )
    md = admin.admin_client(cluster).list_topics(timeout=cluster.deadline(10))
    assert "cfgonly" not in md.topics, f"client sees cfgonly: {list(md.topics)}"
    wait_for(lambda: True, 1, "")
