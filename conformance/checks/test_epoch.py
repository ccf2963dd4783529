"""EPOCH checks: controller election and the controller epoch (spec §2.1)."""

from __future__ import annotations

import json

import pytest

from cluster.cluster import Cluster, ClusterFactory, ConditionTimeout, wait_for
from conformance.evidence import fmt_records
from conformance.plugin import PhaseMetrics
from conformance.scenarios import settle, wait_cluster_known
from probes.watches import read_watches
from records import phases

pytestmark = pytest.mark.conformance


def _session_of(cluster: Cluster, bid: int) -> int:
    """The session of node ``bid``'s controller (its broker's, unless the target is split)."""
    return cluster.controller_session(bid)


def _move(cluster: Cluster, how: str, old: int) -> None:
    if how == "kill":
        cluster.kill(old, end_session=True)
    elif how == "stop":
        cluster.stop(old)
    elif how == "delete":
        cluster.zk.delete("/controller")
    else:
        raise AssertionError(how)


@pytest.mark.leaves_cluster_as_found
@pytest.mark.behaviour("EPOCH-1")
def test_first_election_sets_epoch_1_at_data_version_1(cluster: Cluster, phase_metrics: PhaseMetrics) -> None:
    cid = cluster.wait_controller()
    election = phases.controller_election(cluster.history())
    if election is not None:
        phase_metrics.record("controller_election", election)
    data, stat = cluster.zk.get("/controller_epoch")
    assert (data, stat.version) == (b"1", 1), (
        f"/controller_epoch = {data!r} v{stat.version}, expected b'1' v1"
    )
    raw, cstat = cluster.zk.get("/controller")
    ctrl = json.loads(raw)
    assert set(ctrl) == {"version", "brokerid", "timestamp"}, f"/controller = {raw!r}"
    assert ctrl["version"] == 1
    assert ctrl["brokerid"] == cid
    assert isinstance(ctrl["timestamp"], str), f"timestamp not a ms string: {raw!r}"
    assert ctrl["timestamp"].isdigit(), f"timestamp not a ms string: {raw!r}"
    assert cstat.ephemeralOwner != 0, "/controller is not ephemeral"
    assert cstat.ephemeralOwner == _session_of(cluster, cid), (
        f"/controller owned by session 0x{cstat.ephemeralOwner:x}, not broker {cid}'s session"
    )


@pytest.mark.leaves_cluster_as_found
@pytest.mark.behaviour("EPOCH-2")
def test_election_is_one_multi_and_losers_never_set_the_epoch(cluster: Cluster) -> None:
    cluster.wait_controller()
    records = cluster.history()
    creates = [
        r
        for r in records
        if r.op == "multi"
        and not r.failed
        and any(o.op in ("create", "create2") and o.path == "/controller" for o in r.ops)
    ]
    trace = fmt_records(records)
    assert len(creates) == 1, f"expected one successful election multi, got {len(creates)}:\n{trace}"
    (multi,) = creates
    kinds = [(o.op, o.path) for o in multi.ops]
    assert len(multi.ops) == 2, f"election multi ops: {kinds}"
    assert kinds[1] == ("setData", "/controller_epoch"), f"election multi ops: {kinds}"
    assert multi.ops[0].ephemeral, kinds
    assert multi.ops[1].data == b"1", kinds
    assert multi.ops[1].version == 1, kinds
    stray = [r for r in records if r.op == "setData" and r.path == "/controller_epoch"]
    stray += [
        r
        for r in records
        if r.op == "multi"
        and r is not multi
        and not r.failed
        and any(o.op == "setData" and o.path == "/controller_epoch" for o in r.ops)
    ]
    assert not stray, f"/controller_epoch set outside the winning election multi:\n{fmt_records(stray)}"
    inits = [r for r in records if r.op in ("create", "create2") and r.path == "/controller_epoch"]
    assert all(r.data == b"0" for r in inits), f"initial /controller_epoch must be '0':\n{fmt_records(inits)}"


@pytest.mark.behaviour("EPOCH-3", "EPOCH-5")
@pytest.mark.parametrize("how", ["kill", "stop", "delete"])
def test_every_controller_move_increments_the_epoch_by_one(
    cluster: Cluster, how: str, phase_metrics: PhaseMetrics
) -> None:
    old = cluster.wait_controller()
    epoch, version = cluster.controller_epoch() or (0, 0)
    assert epoch == 1
    before = max((r.zxid for r in cluster.history()), default=0)
    _move(cluster, how, old)
    excluded = [old] if how != "delete" else []

    def moved() -> tuple[int, int] | None:
        cid, ce = cluster.controller_id(), cluster.controller_epoch()
        return ce if cid is not None and cid not in excluded and ce is not None and ce[0] > epoch else None

    _new_epoch, _new_version = wait_for(
        moved, cluster.deadline(25), lambda: f"a new controller; {cluster.summary()}"
    )
    # evidence instead of a pause: the new controller told every broker, then created a topic
    # written now, at its epoch — a second, spurious move would show up as +2
    new = wait_cluster_known(cluster, 25)
    name = settle(cluster, new)
    st = cluster.partition_state(name, 0) or {}
    assert st.get("controller_epoch") == epoch + 1, (
        f"{name}-0 written at controller epoch {st}, not {epoch + 1}"
    )
    assert cluster.controller_epoch() == (epoch + 1, version + 1), (
        f"after {how}: /controller_epoch {cluster.controller_epoch()}, expected ({epoch + 1}, {version + 1})"
    )
    _record_failover(cluster, phase_metrics, epoch + 1, after_zxid=before)


def _record_failover(cluster: Cluster, metrics: PhaseMetrics, epoch: int, *, after_zxid: int) -> None:
    """Record ``controller_election`` and ``failover_to_ready`` of the election of ``epoch``
    (waits, without failing the check, up to 10 s for that epoch's first UpdateMetadata)."""
    election = phases.controller_election(cluster.history(), after_zxid=after_zxid)
    if election is not None:
        metrics.record("controller_election", election)
    if cluster.journal is None:
        return
    journal = cluster.journal
    try:
        ready = wait_for(
            lambda: phases.failover_to_ready(
                cluster.history(), journal.requests(api="UpdateMetadata"), epoch
            ),
            cluster.deadline(10),
            f"the first UpdateMetadata of epoch {epoch}",
        )
    except ConditionTimeout:
        return  # a phase that did not happen is not recorded
    metrics.record("failover_to_ready", ready)


@pytest.mark.behaviour("EPOCH-3", "EPOCH-6")
def test_controller_session_expiry_moves_controller_and_reregisters(cluster: Cluster) -> None:
    old = cluster.wait_controller()
    old_czxid = cluster.broker_epoch(old)
    cluster.pause(old)
    # its session ends while it is paused, as its timeout would end it; it learns so on resuming
    cluster.end_session(old)
    new = cluster.wait_controller(not_in=[old], deadline_s=25)
    assert cluster.controller_epoch() == (2, 2), f"after expiry: {cluster.summary()}"
    # every session of the node has ended, not only the one that held /controller (in a split
    # topology the broker's session is another one)
    cluster.wait_unregistered(old, deadline_s=25)
    cluster.resume(old)
    wait_for(
        lambda: (cluster.broker_epoch(old) or 0) > (old_czxid or 0),
        cluster.deadline(20),
        lambda: f"broker {old} to re-register with a new czxid (was {old_czxid}); {cluster.summary()}",
    )
    # evidence: the re-registration was handled (every broker told) and a later event too
    wait_cluster_known(cluster, 20)
    settle(cluster, new)
    assert cluster.controller_id() == new, cluster.summary()
    assert cluster.controller_epoch() == (2, 2), cluster.summary()
    session = _session_of(cluster, old)
    watched = read_watches(cluster.four_letter).of_session(session, cluster.chroot)
    assert "/controller" in watched, (
        f"re-registered broker {old} does not watch /controller: {sorted(watched)}"
    )


@pytest.mark.behaviour("EPOCH-4")
def test_epoch_persists_when_all_brokers_are_down(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory()
    cluster.wait_controller()
    for bid in cluster.broker_ids:
        cluster.stop(bid)
    assert cluster.controller_id() is None
    epoch = cluster.controller_epoch()
    assert epoch is not None
    assert epoch[0] >= 1
    cluster.start()
    settle(cluster, wait_cluster_known(cluster))  # the new controller works at its epoch
    assert cluster.controller_epoch() == (epoch[0] + 1, epoch[1] + 1), (
        f"before restart {epoch}, after {cluster.controller_epoch()}"
    )


@pytest.mark.leaves_cluster_as_found
@pytest.mark.behaviour("EPOCH-5")
def test_non_controllers_watch_controller(cluster: Cluster) -> None:
    """Every non-controller's session holds a watch on ``/controller``.

    A broker registers before its controller component starts (Kafka: ``registerBroker`` then
    ``KafkaController.startup``), so the watch appears shortly after registration: wait for it.
    """
    cid = cluster.wait_controller()
    others = [b for b in cluster.broker_ids if b != cid]

    def watched() -> dict[int, frozenset[str]]:
        watches = read_watches(cluster.four_letter)
        return {b: watches.of_session(_session_of(cluster, b), cluster.chroot) for b in others}

    wait_for(
        lambda: all("/controller" in w for w in watched().values()),
        cluster.deadline(10),
        lambda: f"every non-controller watching /controller; watches {watched()}",
    )
