"""SHUTDOWN and REQ checks: controlled shutdown and controller request contents (spec §6.10, §7)."""

from __future__ import annotations

import pytest
from kio.schema.controlled_shutdown.v3 import request as cs3
from kio.schema.types import BrokerId
from kio.static.primitive import i64

from conformance.conftest import ClusterFactory
from conformance.scenarios import create_topic, fmt, journal, state_history, wait_cluster_known, wait_state
from fixtures.probes.request_proxy import send_request

pytestmark = pytest.mark.conformance


@pytest.mark.behaviour("SHUTDOWN-1", "SHUTDOWN-2", "ELECT-4")
def test_controlled_shutdown_moves_leadership_first(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([3])
    assert cluster.wait_controller() == 3
    cluster.start([1, 2])
    create_topic(cluster, "cs", {0: [1, 2], 1: [2, 1]})
    wait_state(cluster, "cs", 1, lambda s: s["isr"] == [2, 1], "ISR [2,1]")
    stat = cluster.zk.exists("/brokers/ids/1")
    assert stat is not None
    session = int(stat.ephemeralOwner)
    cluster.stop(1)
    records = cluster.history()
    closed = next(i for i, r in enumerate(records) if r.op == "closeSession" and r.session_id == session)
    moved = [
        i
        for i, r in enumerate(records)
        if i < closed and any((o.path or "").endswith("/cs/partitions/0/state") for o in (r.ops or (r.txn,)))
    ]
    assert moved, f"leadership of cs-0 not moved before broker 1 left:\n{fmt(records[-40:])}"
    st0, st1 = cluster.partition_state("cs", 0), cluster.partition_state("cs", 1)
    assert st0 is not None, f"cs-0 {st0}"
    assert (st0["leader"], st0["isr"]) == (2, [2]), f"cs-0 {st0}"
    assert st1 is not None, f"cs-1 {st1}"
    assert (st1["leader"], st1["isr"]) == (2, [2]), f"cs-1 {st1}"
    hist = [s["leader"] for s, _ in state_history(cluster, "cs", 0)]
    assert -1 not in hist, f"cs-0 went leaderless during a controlled shutdown: {hist}"


@pytest.mark.behaviour("SHUTDOWN-1")
def test_controlled_shutdown_request_errors(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory()
    # the controller must know every broker first, or it answers BROKER_NOT_AVAILABLE (8)
    cid = wait_cluster_known(cluster)
    other = next(b for b in cluster.broker_ids if b != cid)
    epoch = cluster.broker_epoch(other) or 0
    stale = cs3.ControlledShutdownRequest(broker_id=BrokerId(other), broker_epoch=i64(epoch - 1))
    assert int(send_request(*cluster.endpoint(cid), stale).error_code) == 77
    third = next(b for b in cluster.broker_ids if b not in (cid, other))
    fresh = cs3.ControlledShutdownRequest(broker_id=BrokerId(other), broker_epoch=i64(epoch))
    assert int(send_request(*cluster.endpoint(third), fresh).error_code) == 11


@pytest.mark.behaviour("REQ-1", "REQ-2", "RSM-7")
def test_request_versions_fields_and_order(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory()
    # every broker registered and known to the controller before the topic exists, so the
    # topic's requests must name all of them
    cid = wait_cluster_known(cluster)
    create_topic(cluster, "rq", {0: [1, 2, 3]})
    reqs = journal(cluster).requests(since=0)  # create_topic waited until every broker answered
    versions = {(r.api, r.api_version) for r in reqs if r.controller_id == cid}
    assert versions <= {("LeaderAndIsr", 4), ("UpdateMetadata", 6), ("StopReplica", 2)}, versions
    epoch = (cluster.controller_epoch() or (0, 0))[0]
    live = tuple(sorted(cluster.broker_ids))
    for r in reqs:
        assert r.decode_error is None, r.describe()
        assert (r.controller_id, r.controller_epoch) == (cid, epoch), r.describe()
        assert r.broker_epoch == cluster.broker_epoch(r.dest), f"broker epoch: {r.describe()}"
        if r.api != "UpdateMetadata":
            continue
        # The controller lists the brokers live when it sent the request: its earliest
        # UpdateMetadata may precede a later broker's registration; the topic's, sent once all are
        # known, must name every one.
        known = set(r.live_brokers)
        assert known <= set(live), f"UpdateMetadata names an unknown broker: {r.describe()}"
        assert {r.dest, cid} <= known, (
            f"UpdateMetadata must list its destination and controller: {r.describe()}"
        )
        if any(p.topic == "rq" for p in r.partitions):
            assert r.live_brokers == live, f"UpdateMetadata must list every live broker: {r.describe()}"
    lai = [r for r in reqs if r.api == "LeaderAndIsr" and r.partitions]
    assert lai, [r.describe() for r in lai]
    assert all(r.live_leaders == (1,) for r in lai), [r.describe() for r in lai]
    for dest in live:
        apis = [r.api for r in reqs if r.dest == dest and any(p.topic == "rq" for p in r.partitions)]
        assert apis[:2] == ["LeaderAndIsr", "UpdateMetadata"], f"batch order to {dest}: {apis}"
