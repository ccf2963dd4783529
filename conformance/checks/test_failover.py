"""FAILOVER checks: onControllerFailover order and placement independence (spec §2.2, §8, §11)."""
# ruff: noqa: PT018 - one assertion per observation keeps its message with the trace it printed

from __future__ import annotations

import pytest

from conformance import admin
from conformance.admin import encode
from conformance.cluster import wait_for
from conformance.conftest import ClusterFactory
from conformance.scenarios import create_topic, fmt, journal, wait_state, writes

pytestmark = pytest.mark.conformance


@pytest.mark.behaviour("FAILOVER-1", "FAILOVER-2", "FAILOVER-3")
def test_failover_write_order_and_per_broker_request_order(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    create_topic(cluster, "fo", {0: [3, 2], 1: [2, 1]})
    cluster.stop(3)
    wait_state(cluster, "fo", 0, lambda s: s["leader"] == 2, "leader 2 after 3 stopped")
    cluster.pause(1)
    try:
        for path, body in (
            ("/isr_change_notification/isr_change_", {"version": 1, "partitions": []}),
            ("/log_dir_event_notification/log_dir_event_", {"version": 1, "broker": 2, "event": 1}),
        ):
            cluster.zk.create(path, encode(body), sequence=True)
        admin.preferred_election_zk(cluster, [("fo", 1)])
        mark_req = journal(cluster).mark()
        n = len(cluster.history())
        cluster.kill(1)
    finally:
        pass
    new = cluster.wait_controller(not_in=[1], deadline_s=25)
    wait_for(
        lambda: not cluster.zk.exists("/admin/preferred_replica_election"),
        cluster.deadline(15),
        "pending preferred election processed",
    )
    wait_state(cluster, "fo", 1, lambda s: s["leader"] == 2 and 1 not in s["isr"], "1 leaves the ISR of fo-1")
    ws = [(r, op) for r, op in writes(cluster.history()[n:]) if r.session_id != cluster.zk.client_id[0]]
    paths = [op.path or "" for _, op in ws]
    trace = fmt([r for r, _ in ws])
    elect = next(i for i, p in enumerate(paths) if p == "/controller")
    notes = [
        i
        for i, (p, (_, op)) in enumerate(zip(paths, ws, strict=True))
        if i > elect
        and op.op == "delete"
        and p.startswith(("/isr_change_notification/", "/log_dir_event_notification/"))
    ]
    states = [i for i, p in enumerate(paths) if p.endswith("/state")]
    pref = [i for i, p in enumerate(paths) if p == "/admin/preferred_replica_election"]
    states = [i for i in states if i > elect]
    assert len(notes) >= 2, f"notifications not deleted after the election:\n{trace}"
    assert states and max(notes) < min(states), f"state writes before notification deletes:\n{trace}"
    assert pref and max(states) < pref[0], f"preferred election znode not deleted last:\n{trace}"
    for dest in (2,):
        reqs = [r for r in journal(cluster).requests(dest=dest, since=mark_req) if r.controller_id == new]
        assert reqs and reqs[0].api == "UpdateMetadata" and not reqs[0].partitions, (
            f"first request of the new controller to {dest} must be a broker-list UpdateMetadata:\n"
            + "\n".join(r.describe() for r in reqs)
        )


@pytest.mark.behaviour("FAILOVER-4")
@pytest.mark.parametrize("controller", ["C", "B"])
def test_controller_placement_does_not_change_outcome(
    cluster_factory: ClusterFactory, controller: str
) -> None:
    a, b, c = 1, 2, 3
    first = c if controller == "C" else b
    cluster = cluster_factory(start=False)
    cluster.start([first])
    assert cluster.wait_controller() == first
    cluster.start([x for x in (a, b, c) if x != first])
    create_topic(cluster, "ab", {0: [a, b]})
    # hard kills, as in spec §8's trace: a graceful stop lets the new leader re-add the
    # shutting-down follower to the ISR (Kafka 2.5 does too), which adds a racy extra bump
    cluster.kill(a)
    wait_state(cluster, "ab", 0, lambda s: s["leader"] == b, "leader B after A died", deadline_s=25)
    cluster.kill(b)
    cluster.wait_controller(not_in=[a, b], deadline_s=25)
    st = wait_state(cluster, "ab", 0, lambda s: s["leader"] == -1, "leader -1 after B stopped", deadline_s=25)
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (-1, [b], 2), f"controller on {controller}: {st}"
