"""BROKER checks: registration, startup, failure, bounce, endpoint change (spec §1.3, §6.1–§6.3)."""

from __future__ import annotations

import json

import pytest

from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.plugin import PhaseMetrics
from conformance.scenarios import (
    CREATES,
    Step,
    create_topic,
    fmt,
    journal,
    pinned,
    settle,
    state_history,
    wait_cluster_known,
    wait_state,
)
from conformance.topology import TWO_SESSIONS
from records import phases

pytestmark = pytest.mark.conformance


def _placed(cluster_factory: ClusterFactory, controller: int, **kw: object) -> Cluster:
    """A 3-node cluster whose controller is ``controller`` (started first, alone)."""
    cluster = cluster_factory(start=False, **kw)
    cluster.start([controller])
    assert cluster.wait_controller() == controller
    cluster.start([b for b in cluster.broker_ids if b != controller])
    return cluster


@pytest.mark.behaviour("BROKER-1", "REQ-1")
def test_registration_is_one_multi_with_v4_json(cluster: Cluster) -> None:
    cluster.wait_controller()
    records = cluster.history()
    for bid in cluster.broker_ids:
        path = f"/brokers/ids/{bid}"
        regs = [r for r in records if r.op == "multi" and not r.failed and any(o.path == path for o in r.ops)]
        assert regs, f"no registration multi for {path}:\n{fmt(records)}"
        ops = [(o.op, o.path) for o in regs[0].ops]
        assert ops[0][0] in CREATES, f"{path} multi: {ops}"
        assert ops[1] == ("setData", path), f"{path} multi: {ops}"
        assert len(ops) == 2, f"{path} multi: {ops}"
        assert regs[0].ops[0].ephemeral, "create must be ephemeral, null data"
        assert regs[0].ops[0].data in (None, b""), "create must be ephemeral, null data"
        data, stat = cluster.zk.get(path)
        reg = json.loads(data)
        assert {
            "version",
            "host",
            "port",
            "endpoints",
            "jmx_port",
            "timestamp",
            "listener_security_protocol_map",
        } <= set(reg), f"{path}: {reg}"
        assert reg["version"] == 4, reg
        assert isinstance(reg["timestamp"], str), reg
        assert stat.ephemeralOwner != 0, f"{path} stat {stat}"
        assert stat.version == 1, f"{path} stat {stat}"
    create_topic(cluster, "epochs", {0: [1, 2, 3]})
    lai = wait_for(
        lambda: [r for r in journal(cluster).requests(api="LeaderAndIsr") if r.partitions],
        cluster.deadline(10),
        "LeaderAndIsr requests",
    )
    for r in lai:
        assert r.broker_epoch == cluster.broker_epoch(r.dest), f"broker epoch != czxid: {r.describe()}"
        assert r.api_version == 4, f"IBP 2.5 sends LeaderAndIsr v4: {r.describe()}"


@pytest.mark.behaviour("BROKER-2")
def test_broker_startup_gets_metadata_and_its_replicas(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    other = next(b for b in cluster.broker_ids if b != cid)
    cluster.stop(other)
    create_topic(cluster, "late", {0: [cid, other]})
    mark = journal(cluster).mark()
    cluster.start([other])
    um_new = wait_for(
        lambda: [
            r
            for r in journal(cluster).requests(api="UpdateMetadata", dest=other, since=mark)
            if any(p.topic == "late" for p in r.partitions)
        ],
        cluster.deadline(15),
        lambda: journal(cluster).dump(mark),
    )
    assert um_new, "new broker got no full UpdateMetadata"
    lai = wait_for(
        lambda: [
            r
            for r in journal(cluster).requests(api="LeaderAndIsr", dest=other, since=mark)
            if any(p.topic == "late" for p in r.partitions)
        ],
        cluster.deadline(15),
        lambda: journal(cluster).dump(mark),
    )
    assert lai[0].partitions[0].is_new is False, (
        f"OnlineReplica LeaderAndIsr must be isNew=false: {lai[0].describe()}"
    )
    um_old = [
        r
        for r in journal(cluster).requests(api="UpdateMetadata", dest=cid, since=mark)
        if other in r.live_brokers
    ]
    assert um_old, f"existing broker {cid} not told about {other}:\n{journal(cluster).dump(mark)}"


def _record_reelection(cluster: Cluster, metrics: PhaseMetrics, broker: int, topic: str) -> None:
    reelection = phases.leader_reelection_after_broker_failure(cluster.history(), broker, topic, 0)
    if reelection is not None:
        metrics.record("leader_reelection_after_broker_failure", reelection)


@pytest.mark.behaviour("BROKER-3", "ELECT-1", "PSM-4")
def test_leader_failure_with_surviving_controller_bumps_epoch_once(
    cluster_factory: ClusterFactory, phase_metrics: PhaseMetrics
) -> None:
    cluster = _placed(cluster_factory, controller=3)
    create_topic(cluster, "lf", {0: [1, 2]})
    cluster.kill(1, end_session=True)
    st = wait_state(
        cluster, "lf", 0, lambda s: s["leader"] == 2, "leader 2 after broker 1 died", deadline_s=30
    )
    _record_reelection(cluster, phase_metrics, 1, "lf")
    settle(cluster, 2)  # broker 1's failure handling (election, then OfflineReplica) is complete
    assert (st["isr"], st["leader_epoch"]) == ([2], 1), f"state {st}"
    pinned(
        cluster,
        "lf",
        0,
        [Step(1, 0, (1, 2), 1, 0), Step(2, 1, (2,), 1, 1)],
        "after leader 1 died (one election; the dead replica's OfflineReplica finds it out of the ISR)",
    )


@pytest.mark.behaviour("BROKER-3", "FAILOVER-2", "FAILOVER-3")
@pytest.mark.combined_only(TWO_SESSIONS)
def test_leader_that_was_controller_costs_two_epochs(
    cluster_factory: ClusterFactory, phase_metrics: PhaseMetrics
) -> None:
    cluster = _placed(cluster_factory, controller=1)
    create_topic(cluster, "lc", {0: [1, 2]})
    cluster.kill(1, end_session=True)
    st = wait_state(
        cluster, "lc", 0, lambda s: s["leader"] == 2, "leader 2 after controller 1 died", deadline_s=30
    )
    _record_reelection(cluster, phase_metrics, 1, "lc")
    hist = [(s["leader"], s["isr"], s["leader_epoch"]) for s, _ in state_history(cluster, "lc", 0)]
    assert hist[-2:] == [(-1, [2], 1), (2, [2], 2)], f"expected OfflineReplica then election: {hist}"
    assert st["controller_epoch"] == (cluster.controller_epoch() or (0, 0))[0]


@pytest.mark.behaviour("BROKER-4", "RSM-5")
def test_last_isr_member_failure_keeps_it(cluster_factory: ClusterFactory) -> None:
    cluster = _placed(cluster_factory, controller=3)
    create_topic(cluster, "last", {0: [1, 2]})
    cluster.kill(2, end_session=True)
    # the leader (lag) or the controller (OfflineReplica, +1) shrinks the ISR, whichever is first
    shrunk = wait_state(
        cluster, "last", 0, lambda s: s["isr"] == [1], "ISR [1] after follower 2 died", deadline_s=30
    )
    # the controller has handled 2's failure once every live broker was told the new broker list
    cluster.wait_unregistered(2)
    wait_cluster_known(cluster)
    shrunk = cluster.partition_state("last", 0) or shrunk
    cluster.kill(1, end_session=True)
    st = wait_state(
        cluster, "last", 0, lambda s: s["leader"] == -1, "leader -1 after last ISR member died", deadline_s=30
    )
    assert (st["isr"], st["leader_epoch"]) == ([1], shrunk["leader_epoch"] + 1), (
        f"state {st}, before {shrunk}"
    )


@pytest.mark.behaviour("BROKER-5")
def test_bounce_is_failure_then_startup(cluster_factory: ClusterFactory) -> None:
    cluster = _placed(
        cluster_factory,
        controller=3,
        # the controller stays paused through 1's stop and restart: a slow session keeps it controller
        node_overrides={
            1: {"controlled.shutdown.enable": "false"},
            3: {"zookeeper.session.timeout.ms": "20000"},
        },
    )
    create_topic(cluster, "bnc", {0: [1, 2]})
    old = cluster.broker_epoch(1)
    mark = journal(cluster).mark()
    cluster.pause(3)
    try:
        cluster.stop(1)
        cluster.start([1])
    finally:
        cluster.resume(3)
    assert (cluster.broker_epoch(1) or 0) > (old or 0)
    st = wait_state(
        cluster, "bnc", 0, lambda s: s["leader_epoch"] >= 1, "a failure election for bounced 1", deadline_s=20
    )
    assert st["leader"] == 2, f"bounced leader must fail over to 2 first: {st}"
    wait_for(
        lambda: journal(cluster).requests(api="LeaderAndIsr", dest=1, since=mark),
        cluster.deadline(10),
        lambda: journal(cluster).dump(mark),
    )
    wait_state(cluster, "bnc", 0, lambda s: s["isr"] == [2, 1], "bounced 1 back in the ISR", deadline_s=20)
    settle(cluster, 3)
    pinned(
        cluster,
        "bnc",
        0,
        [Step(1, 0, (1, 2), 1, 0), Step(2, 1, (2,), 1, 1), Step(2, 1, (2, 1), 1, 2)],
        "through broker 1's bounce (failure election, then startup and ISR rejoin)",
    )


@pytest.mark.behaviour("BROKER-6")
def test_endpoint_change_sends_update_metadata_to_all(cluster: Cluster) -> None:
    # the controller must know broker 2 (and watch /brokers/ids/2) before the change is made
    wait_cluster_known(cluster)
    data, _ = cluster.zk.get("/brokers/ids/2")
    reg = json.loads(data)
    reg["endpoints"] = [e.replace("CLIENT://127.0.0.1", "CLIENT://localhost") for e in reg["endpoints"]]
    mark = journal(cluster).mark()
    cluster.zk.set("/brokers/ids/2", json.dumps(reg).encode())

    def told() -> set[int]:
        got = set()
        for r in journal(cluster).requests(api="UpdateMetadata", since=mark):
            for b in getattr(r.request, "live_brokers", ()):
                if int(b.id_) == 2 and any(e.host == "localhost" for e in b.endpoints):
                    got.add(r.dest)
        return got if got == set(cluster.broker_ids) else set()

    wait_for(told, cluster.deadline(10), lambda: journal(cluster).dump(mark))
