"""FENCE checks: fenced controller writes, stale controllers, broker-side fencing (spec §2.1, §7.3, §7.4)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster import admin, crafted
from cluster.cluster import Cluster, ClusterFactory, wait_for
from cluster.nodeconfig import control_listener
from conformance.scenarios import CREATES, create_topic, fenced, fmt, settle, wait_state
from probes.logdirs import scan_log_dirs

pytestmark = pytest.mark.conformance


def _controller_session(cluster: Cluster) -> int:
    stat = cluster.zk.exists("/controller")
    assert stat is not None
    return int(stat.ephemeralOwner)


@pytest.mark.behaviour("FENCE-1")
def test_every_controller_write_is_fenced(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    session = _controller_session(cluster)
    _, version = cluster.controller_epoch() or (0, 0)
    create_topic(cluster, "fw", {0: [1, 2], 1: [2, 3]})
    admin.delete_topic_zk(cluster, "fw")
    wait_for(lambda: not cluster.zk.exists("/brokers/topics/fw"), cluster.deadline(30), "topic fw deleted")
    # standalone failed ops name no path (broker bookkeeping such as creating existing top-level
    # paths); a fenced write that fails is a failed *multi*, which stays in scope
    mine = [
        r
        for r in cluster.history()
        if r.session_id == session and r.op not in ("createSession", "closeSession", "error")
    ]
    election = [r for r in mine if r.op == "multi" and any(o.path == "/controller" for o in r.ops)]
    own = [r for r in mine if r.op == "multi" and any(o.path == f"/brokers/ids/{cid}" for o in r.ops)]
    init = [r for r in mine if r.op in CREATES and r.path == "/controller_epoch"]
    top = [r for r in mine if r.op in CREATES and r.path and r.path.count("/") <= 2 and r.data in (None, b"")]
    rest = [r for r in mine if r not in election + own + init + top and r.path != "/cluster/id"]
    unfenced = [r for r in rest if not fenced(r, version)]
    assert rest, f"controller writes without check of /controller_epoch v{version}:\n{fmt(unfenced)}"
    assert not unfenced, f"controller writes without check of /controller_epoch v{version}:\n{fmt(unfenced)}"


@pytest.mark.behaviour("FENCE-1", "FENCE-4", "EPOCH-3")
def test_stale_controller_writes_fail_and_it_resigns(cluster_factory: ClusterFactory) -> None:
    slow = {"zookeeper.session.timeout.ms": "20000"}
    cluster = cluster_factory(start=False, node_overrides={1: slow, 3: slow})
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    create_topic(cluster, "stale", {0: [2, 3]})
    old_session = _controller_session(cluster)
    cluster.kill(2)
    cluster.pause(1)  # before 2's session expires: the old controller has 2's failure to handle
    try:
        cluster.wait_unregistered(2, deadline_s=15)
        cluster.zk.delete("/controller")
        assert cluster.wait_controller(not_in=[1]) == 3
        epoch = cluster.controller_epoch()
        wait_state(
            cluster, "stale", 0, lambda s: s["leader"] == 3, "new controller 3 elects leader 3", deadline_s=15
        )
        mark = len(cluster.history())
        zmark = cluster.zk_journal(1).mark()
    finally:
        cluster.resume(1)
    # evidence: the old controller handled its queued events. ZooKeeper delivered 2's expiry
    # (child event) before the /controller deletion; Kafka handles the controller change by reading
    # /controller (maybeResign) after the broker change: a request on /controller from node 1 after
    # it resumed, answered. Then a topic on node 1 is created and served (node 1 runs again).
    zj = cluster.zk_journal(1)
    wait_for(
        lambda: [r for r in zj.requests(path="/controller", since=zmark) if zj.reply_to(r) is not None],
        cluster.deadline(15),
        lambda: f"old controller 1 reading /controller after it resumed:\n{zj.dump(zmark)}",
    )
    settle(cluster, 1)
    later = cluster.history()[mark:]
    by_old = [
        r for r in later if r.session_id == old_session and r.op not in ("createSession", "closeSession")
    ]
    landed = [r for r in by_old if (not r.failed and r.op != "multi") or (r.op == "multi" and not r.failed)]
    landed = [
        r for r in landed if not any((o.path or "").startswith("/brokers/ids") for o in (r.ops or (r.txn,)))
    ]
    assert not landed, f"stale controller 1 writes landed:\n{fmt(landed)}"
    assert cluster.controller_id() == 3, cluster.summary()
    assert cluster.controller_epoch() == epoch, cluster.summary()
    st = cluster.partition_state("stale", 0)
    assert st is not None, f"state overwritten: {st}"
    assert st["controller_epoch"] == (epoch or (0, 0))[0], f"state overwritten: {st}"


def _stale_requests(cluster: Cluster, dest: int, controller_epoch: int, broker_epoch: int) -> list[Any]:
    """LeaderAndIsr (a phantom partition led by ``dest``), UpdateMetadata and StopReplica(delete)
    of ``fenced``-0, all with the given epochs."""
    cid = cluster.controller_id() or 0
    phantom = crafted.PartitionSpec(
        "phantom", 0, dest, 7, (dest,), (dest,), controller_epoch=controller_epoch
    )
    return [
        crafted.leader_and_isr_request(
            [phantom], controller_id=cid, controller_epoch=controller_epoch, broker_epoch=broker_epoch
        ),
        crafted.update_metadata_request(
            [], [], controller_id=cid, controller_epoch=controller_epoch, broker_epoch=broker_epoch
        ),
        crafted.stop_replica_request(
            [("fenced", 0)],
            delete=True,
            controller_id=cid,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
        ),
    ]


def _send_all(cluster: Cluster, dest: int, reqs: list[Any]) -> list[int]:
    cid = cluster.controller_id() or 0
    host_port = (
        ("127.0.0.1", cluster.bind_port(dest, control_listener(cid)))
        if cluster.journal
        else cluster.endpoint(dest)
    )
    return [crafted.answer(crafted.send(host_port, r)).error_code for r in reqs]


@pytest.mark.behaviour("FENCE-2")
def test_brokers_reject_an_older_controller_epoch(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    cluster.zk.delete("/controller")  # epoch 2, so that epoch 1 is stale
    cid = cluster.wait_controller()
    create_topic(cluster, "fenced", {0: [1, 2, 3]})
    dest = next(b for b in cluster.broker_ids if b != cid)
    epoch = (cluster.controller_epoch() or (0, 0))[0]
    codes = _send_all(
        cluster, dest, _stale_requests(cluster, dest, epoch - 1, cluster.broker_epoch(dest) or -1)
    )
    assert codes == [11, 11, 11], f"LeaderAndIsr/UpdateMetadata/StopReplica with epoch {epoch - 1}: {codes}"
    # the answers are the evidence: a broker acts on LeaderAndIsr/StopReplica before answering
    scans = scan_log_dirs(list(cluster.nodes[dest].log_dirs))
    assert not any(("phantom", 0) in s.live() for s in scans), "stale LeaderAndIsr created a log dir"
    assert any(("fenced", 0) in s.live() for s in scans), "stale StopReplica deleted a partition"


@pytest.mark.behaviour("FENCE-3")
def test_brokers_reject_an_older_broker_epoch(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    create_topic(cluster, "fenced", {0: [1, 2, 3]})
    dest = next(b for b in cluster.broker_ids if b != cid)
    epoch = (cluster.controller_epoch() or (0, 0))[0]
    codes = _send_all(
        cluster, dest, _stale_requests(cluster, dest, epoch, (cluster.broker_epoch(dest) or 1) - 1)
    )
    assert codes == [77, 77, 77], f"requests with broker epoch czxid-1: {codes}"
    scans = scan_log_dirs(list(cluster.nodes[dest].log_dirs))
    assert not any(("phantom", 0) in s.live() for s in scans), "LeaderAndIsr with stale broker epoch applied"
