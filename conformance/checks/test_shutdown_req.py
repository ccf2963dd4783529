"""SHUTDOWN and REQ checks: controlled shutdown and controller request contents (spec §6.10, §7)."""

from __future__ import annotations

import pytest
from kio.schema.controlled_shutdown.v3 import request as cs3
from kio.schema.types import BrokerId
from kio.static.primitive import i64

from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import (
    Step,
    create_topic,
    fmt,
    journal,
    pinned,
    requests_for,
    settle,
    state_history,
    story,
    wait_cluster_known,
    wait_state,
    wait_told_gone,
)
from conformance.topology import NO_CONTROLLER_ENDPOINT
from probes.request_proxy import send_request

pytestmark = pytest.mark.conformance


def _closed_at(cluster: Cluster, session: int) -> int:
    return wait_for(
        lambda: next(
            (r.zxid for r in cluster.history() if r.op == "closeSession" and r.session_id == session), None
        ),
        cluster.deadline(10),
        f"closeSession of session 0x{session:x} in the transaction log",
    )


@pytest.mark.behaviour("SHUTDOWN-1", "SHUTDOWN-2", "SHUTDOWN-3", "ELECT-4", "RSM-5")
@pytest.mark.combined_only(NO_CONTROLLER_ENDPOINT)
def test_controlled_shutdown_moves_leadership_first(cluster_factory: ClusterFactory) -> None:
    """Graceful stop of broker 1 (controller 3): ``cs-0`` (1 leads) gets the controlled-shutdown
    election, ``cs-1`` (1 follows) its ISR removal — each exactly one write, both *before* broker
    1's closeSession, and no write at all once its session has ended (SHUTDOWN-3)."""
    cluster = cluster_factory(start=False)
    cluster.start([3])
    assert cluster.wait_controller() == 3
    cluster.start([1, 2])
    wait_cluster_known(cluster)
    create_topic(cluster, "cs", {0: [1, 2], 1: [2, 1]})
    wait_state(cluster, "cs", 1, lambda s: s["isr"] == [2, 1], "ISR [2,1]")
    stat = cluster.zk.exists("/brokers/ids/1")
    assert stat is not None
    session, mark = int(stat.ephemeralOwner), journal(cluster).mark()
    cluster.stop(1)
    closed = _closed_at(cluster, session)
    wait_told_gone(cluster, 1, mark)
    settle(cluster, 2)
    want = {
        0: [Step(1, 0, (1, 2), 1, 0), Step(2, 1, (2,), 1, 1)],  # controlled-shutdown election
        1: [Step(2, 0, (2, 1), 1, 0), Step(2, 1, (2,), 1, 1)],  # OfflineReplica: ISR removal
    }
    for p, steps in want.items():
        pinned(cluster, "cs", p, steps, "through broker 1's graceful stop")
        _, record = state_history(cluster, "cs", p)[1]
        assert record.zxid < closed, (
            f"cs-{p}: broker 1 left the ISR only after its session ended (write 0x{record.zxid:x} >"
            f" closeSession 0x{closed:x}): Kafka removes it during the ControlledShutdown\n"
            f"{fmt(cluster.history()[-40:])}"
        )
    stops = [
        r.describe()
        for r in requests_for(cluster, "StopReplica", dest=1, topic="cs", since=mark)
        if r.delete_partitions
    ]
    assert not stops, f"controlled shutdown must stop replicas with delete=false only: {stops}"


@pytest.mark.behaviour("SHUTDOWN-1", "ELECT-4", "RSM-5")
@pytest.mark.combined_only(NO_CONTROLLER_ENDPOINT)
def test_controlled_shutdown_answers_the_partitions_it_could_not_move(
    cluster_factory: ClusterFactory,
) -> None:
    """A ControlledShutdown for broker 2 (sent by the check with 2's broker epoch; 2 keeps running)
    to controller 3: ``mv`` = [2, 3] moves to 3; ``fol`` = [3, 2] loses 2 from its ISR
    (StopReplica delete=false to 2); ``stuck`` = [2, 1] with 1 dead (ISR [2]) cannot move and is
    the only remaining partition; ``solo`` = [2] (RF 1) is neither moved nor listed."""
    cluster = cluster_factory(start=False)
    cluster.start([3])
    assert cluster.wait_controller() == 3
    cluster.start([1, 2])
    wait_cluster_known(cluster)
    for topic, replicas in (("mv", [2, 3]), ("fol", [3, 2]), ("stuck", [2, 1]), ("solo", [2])):
        create_topic(cluster, topic, {0: replicas})
    mark = journal(cluster).mark()
    cluster.stop(1)  # stuck-0: the controller removes 1 from the ISR (1 follows)
    wait_told_gone(cluster, 1, mark)
    settle(cluster, 3)
    pinned(cluster, "stuck", 0, [Step(2, 0, (2, 1), 1, 0), Step(2, 1, (2,), 1, 1)], "after 1 stopped")
    mark = journal(cluster).mark()
    req = cs3.ControlledShutdownRequest(broker_id=BrokerId(2), broker_epoch=i64(cluster.broker_epoch(2) or 0))
    resp = send_request(*cluster.endpoint(3), req, timeout_s=cluster.deadline(20))
    remaining = sorted((str(p.topic_name), int(p.partition_index)) for p in resp.remaining_partitions)
    assert (int(resp.error_code), remaining) == (0, [("stuck", 0)]), (
        f"ControlledShutdown(2) answered error {int(resp.error_code)}, remaining {remaining}; Kafka: 0,"
        f" [('stuck', 0)] (replicated partitions 2 still leads)"
    )
    # the elections are done before the answer: the first write after the request is the move
    for topic, step in (("mv", Step(3, 1, (3,), 1, 1)), ("fol", Step(3, 1, (3,), 1, 1))):
        hist = [(s, z) for s, z in zip(story(cluster, topic, 0), range(99), strict=False)]
        assert len(hist) >= 2, f"{topic}-0 not changed by the ControlledShutdown: {hist}"
        assert hist[1][0] == step, (
            f"{topic}-0 after ControlledShutdown(2): wrote ({hist[1][0]}), Kafka ({step})"
        )
    pinned(cluster, "stuck", 0, [Step(2, 0, (2, 1), 1, 0), Step(2, 1, (2,), 1, 1)], "not movable")
    pinned(cluster, "solo", 0, [Step(2, 0, (2,), 1, 0)], "RF 1: left alone")

    def stops() -> list[tuple[str, bool | None]]:
        return [
            (p.topic, r.delete_partitions)
            for r in requests_for(cluster, "StopReplica", dest=2, since=mark)
            for p in r.partitions
        ]

    # queued before the answer, delivered by the controller's send thread: wait for it
    wait_for(
        lambda: ("fol", False) in stops(),
        cluster.deadline(10),
        lambda: f"StopReplica(delete=false) for fol-0 to 2; got {stops()}",
    )
    settle(cluster, 3)
    assert not [t for t, d in stops() if t != "fol" or d], f"unexpected StopReplica to 2: {stops()}"


@pytest.mark.behaviour("SHUTDOWN-1")
@pytest.mark.combined_only(NO_CONTROLLER_ENDPOINT)
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
    # a broker the controller does not know: Kafka reads its cached epoch (Map.apply,
    # KafkaController.scala@2.5.1 L1115) before it checks that the broker is known (L1126), so a
    # request with an epoch fails with UNKNOWN_SERVER_ERROR and only one without (-1) gets
    # BROKER_NOT_AVAILABLE
    unknown = BrokerId(max(cluster.broker_ids) + 7)
    with_epoch = cs3.ControlledShutdownRequest(broker_id=unknown, broker_epoch=i64(epoch))
    assert int(send_request(*cluster.endpoint(cid), with_epoch).error_code) == -1
    without = cs3.ControlledShutdownRequest(broker_id=unknown, broker_epoch=i64(-1))
    assert int(send_request(*cluster.endpoint(cid), without).error_code) == 8


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
