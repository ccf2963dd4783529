"""FAILOVER checks: onControllerFailover order and placement independence (spec §2.2, §8, §11)."""

from __future__ import annotations

import json

import pytest

from cluster import admin
from cluster.admin import encode
from cluster.cluster import ClusterFactory, wait_for
from conformance.scenarios import create_topic, fenced, fmt, journal, wait_state, writes

pytestmark = pytest.mark.conformance


def _first(idx: list[int], what: str, trace: str) -> int:
    assert idx, f"no {what} write by the new controller:\n{trace}"
    return min(idx)


@pytest.mark.behaviour("FAILOVER-1", "FAILOVER-2", "FAILOVER-3")
def test_failover_write_order_and_per_broker_request_order(cluster_factory: ClusterFactory) -> None:
    """Spec §2.2 as seen in the transaction log (the new controller's fenced writes) and, separately,
    in the requests each broker receives — never compared across the two channels.

    While controller 1 is paused every step of the failover is given work: notifications to
    delete (3, 4), fo-0 led by 1 (RSM startup: 1 offline → leader -1, +1; PSM startup: elect 2,
    +1), fo-new with no state (PSM startup: NewPartition → created), a pending reassignment of
    fo-re (12), a queued deletion of fo-del (13) and a pending preferred election (14). The
    new controller's writes are its fenced multis (a broker's own ISR writes share its session
    but are not fenced); each step's first write must follow the previous step's writes.
    """
    cluster = cluster_factory(start=False)
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    create_topic(cluster, "fo", {0: [1, 2]})
    create_topic(cluster, "fo-re", {0: [2]})
    create_topic(cluster, "fo-del", {0: [3, 2]})
    cluster.pause(1)
    pending_notes: list[str] = []
    for path, body in (
        ("/isr_change_notification/isr_change_", {"version": 1, "partitions": []}),
        ("/log_dir_event_notification/log_dir_event_", {"version": 1, "broker": 2, "event": 1}),
    ):
        pending_notes.append(cluster.zk.create(path, encode(body), sequence=True))
    admin.create_topic_zk(cluster, "fo-new", {0: [3, 2]})
    admin.reassign_zk(cluster, {("fo-re", 0): [3]})
    admin.delete_topic_zk(cluster, "fo-del")
    admin.preferred_election_zk(cluster, [("fo", 0)])
    mark_req = journal(cluster).mark()
    n = len(cluster.history())
    cluster.kill(1, end_session=True)
    new = cluster.wait_controller(not_in=[1], deadline_s=25)
    wait_for(
        lambda: not cluster.zk.exists("/admin/preferred_replica_election"),
        cluster.deadline(15),
        "pending preferred election processed",
    )
    wait_for(lambda: not cluster.zk.exists("/brokers/topics/fo-del"), cluster.deadline(20), "fo-del deleted")
    wait_for(lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(20), "fo-re moved")
    epoch_version = (cluster.controller_epoch() or (0, 0))[1]
    records = cluster.history()[n:]
    ws = [(r, op) for r, op in writes(records) if fenced(r, epoch_version)]
    paths = [op.path or "" for _, op in ws]
    trace = fmt(records)
    # the notifications pending at failover (later ones, e.g. from ISR changes the failover
    # itself causes, are consumed afterwards and are not part of step 3/4)
    notes = [i for i, p in enumerate(paths) if p in pending_notes]
    assert len(notes) == len(pending_notes), f"{pending_notes} deleted by the new controller:\n{trace}"
    fo0 = [
        (i, json.loads(ws[i][1].data or b"{}"))
        for i, p in enumerate(paths)
        if p == "/brokers/topics/fo/partitions/0/state"
    ]
    rsm = _first([i for i, st in fo0 if st["leader"] == -1], "RSM-startup (fo-0 leader -1)", trace)
    psm = [i for i, st in fo0 if st["leader"] == 2] + [
        i for i, p in enumerate(paths) if p.startswith("/brokers/topics/fo-new/")
    ]
    u1 = _first([i for i, p in enumerate(paths) if p == "/brokers/topics/fo-re"], "reassignment (U1)", trace)
    dele = _first(
        [i for i, p in enumerate(paths) if p.startswith("/brokers/topics/fo-del/")], "deletion", trace
    )
    pref = _first(
        [i for i, p in enumerate(paths) if p == "/admin/preferred_replica_election"], "preferred", trace
    )
    assert max(notes) < rsm, f"RSM startup wrote before the notifications were deleted:\n{trace}"
    assert psm, f"no PSM-startup write (fo-0 elected / fo-new created):\n{trace}"
    assert rsm < min(psm), f"PSM startup wrote before RSM startup:\n{trace}"
    assert max(psm) < u1, f"reassignment resumed before PSM startup finished:\n{trace}"
    assert u1 < dele, f"deletion resumed before the reassignment:\n{trace}"
    assert dele < pref, f"preferred election handled before the deletion resumed:\n{trace}"
    assert [st["leader_epoch"] for _, st in fo0][:2] == [1, 2], f"fo-0 epochs at failover: {fo0}"
    for dest in (2, 3):
        reqs = [r for r in journal(cluster).requests(dest=dest, since=mark_req) if r.controller_id == new]
        listing = "\n".join(r.describe() for r in reqs)
        assert reqs, f"no request from the new controller {new} to {dest}"
        assert reqs[0].api == "UpdateMetadata", f"first request to {dest} must be UpdateMetadata:\n{listing}"
        assert not reqs[0].partitions, (
            f"first UpdateMetadata to {dest} must be the broker list only:\n{listing}"
        )
        # RSM startup (OnlineReplica of live replicas, isNew=false) precedes PSM startup's election
        lai = [r for r in reqs if r.api == "LeaderAndIsr"]
        assert lai, f"no LeaderAndIsr to {dest}:\n{listing}"


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
    cluster.kill(a, end_session=True)
    wait_state(cluster, "ab", 0, lambda s: s["leader"] == b, "leader B after A died", deadline_s=25)
    cluster.kill(b, end_session=True)
    cluster.wait_controller(not_in=[a, b], deadline_s=25)
    st = wait_state(cluster, "ab", 0, lambda s: s["leader"] == -1, "leader -1 after B stopped", deadline_s=25)
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (-1, [b], 2), f"controller on {controller}: {st}"
