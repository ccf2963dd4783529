"""TOPIC checks: topic creation znodes, client CreateTopics, hand-written znodes (spec §5.1, §5.2)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Collection

import pytest
from confluent_kafka.admin import NewPartitions, NewTopic  # type: ignore[attr-defined]
from kio.schema.create_topics.v4 import request as ct4
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from cluster import admin
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.checks.admin_wire import metadata_broker_ids
from conformance.plugin import PhaseMetrics
from conformance.scenarios import (
    CREATES,
    assert_invalid_transitions_in_kafka_shape,
    create_topic,
    fenced,
    fmt,
    journal,
    settle,
    wait_online,
    writes,
)
from conformance.topology import NO_CONTROLLER_BROKER
from probes.logdirs import scan_log_dirs
from probes.request_proxy import send_request
from records import phases

pytestmark = pytest.mark.conformance


def _topic_writes(
    cluster: Cluster, topic: str, since: int = 0
) -> list[tuple[str, str | None, bytes | None, bool]]:
    """(op, path, data, fenced) of every successful write naming ``topic`` (from history index
    ``since``), in order."""
    out: list[tuple[str, str | None, bytes | None, bool]] = []
    for r, op in writes(cluster.history()[since:]):
        if op.path and (op.path.endswith(f"/{topic}") or f"/{topic}/" in op.path):
            out.append((op.op, op.path, op.data, fenced(r)))
    return out


def _check_controller_creates(
    cluster: Cluster,
    topic: str,
    assignment: dict[int, list[int]],
    live: set[int],
    *,
    since: int = 0,
    epochs: Collection[int] = (),
) -> None:
    """The controller's writes for ``topic`` (from history index ``since``) are exactly a new
    topic's: fenced creates of ``partitions``, each ``partitions/<p>`` (null) then its ``state``
    (leader = first live replica, ISR = live replicas, leader epoch 0, zkVersion 0) written by a
    controller of one of ``epochs`` (default: the current one)."""
    epoch = (cluster.controller_epoch() or (0, 0))[0]
    allowed = set(epochs) or {epoch}
    ws = [
        w
        for w in _topic_writes(cluster, topic, since)
        if w[1] and w[1].startswith(f"/brokers/topics/{topic}/")
    ]
    trace = "\n".join(map(str, ws))
    paths = [w[1] for w in ws]
    base = f"/brokers/topics/{topic}/partitions"
    assert paths[0] == base, f"first controller write must create {base}:\n{trace}"
    assert all(w[0] in CREATES and w[3] for w in ws), f"controller writes must be fenced creates:\n{trace}"
    for p, replicas in assignment.items():
        ppath, spath = f"{base}/{p}", f"{base}/{p}/state"
        assert paths.count(ppath) == 1, f"{ppath} / state not created once:\n{trace}"
        assert paths.count(spath) == 1, f"{ppath} / state not created once:\n{trace}"
        assert paths.index(ppath) < paths.index(spath), f"{spath} before {ppath}:\n{trace}"
        assert ws[paths.index(ppath)][2] in (None, b""), f"{ppath} data must be null"
        state = json.loads(ws[paths.index(spath)][2] or b"{}")
        live_replicas = [r for r in replicas if r in live]
        expected = {
            "controller_epoch": state.get("controller_epoch"),
            "leader": live_replicas[0],
            "version": 1,
            "leader_epoch": 0,
            "isr": live_replicas,
        }
        assert state == expected, f"{spath}: {state}, expected {expected}"
        assert state["controller_epoch"] in allowed, f"{spath}: {state}, controller epoch not in {allowed}"
        stat = cluster.zk.exists(spath)
        assert stat is not None, f"{spath} stat {stat}"
        assert stat.version == 0, f"{spath} stat {stat}"
        assert stat.ephemeralOwner == 0, f"{spath} stat {stat}"
    assert len(ws) == 1 + 2 * len(assignment), f"unexpected extra writes:\n{trace}"


def _record_online(cluster: Cluster, metrics: PhaseMetrics, topic: str, partitions: int) -> None:
    online = phases.partition_online_after_create(cluster.history(), topic, partitions)
    if online is not None:
        metrics.record("partition_online_after_create", online)


@pytest.mark.behaviour("TOPIC-1", "TOPIC-2", "TOPIC-4", "PSM-2")
@pytest.mark.combined_only(NO_CONTROLLER_BROKER)
def test_create_topics_through_a_client(cluster: Cluster, phase_metrics: PhaseMetrics) -> None:
    cluster.wait_controller()
    client = admin.admin_client(cluster)
    assignment = {0: [1, 2], 1: [2, 3]}
    fut = client.create_topics(
        [NewTopic("orders", num_partitions=2, replica_assignment=[assignment[0], assignment[1]])]
    )
    fut["orders"].result(timeout=cluster.deadline(20))
    wait_online(cluster, "orders", assignment)
    _record_online(cluster, phase_metrics, "orders", len(assignment))
    ws = _topic_writes(cluster, "orders")
    admin_writes = [w for w in ws if not w[1] or not w[1].startswith("/brokers/topics/orders/")]
    assert [(w[0] in CREATES, w[1]) for w in admin_writes] == [
        (True, "/config/topics/orders"),
        (True, "/brokers/topics/orders"),
    ], f"admin writes: {admin_writes}"
    assert json.loads(admin_writes[0][2] or b"") == {"version": 1, "config": {}}
    assert json.loads(admin_writes[1][2] or b"") == {
        "version": 2,
        "partitions": {"0": [1, 2], "1": [2, 3]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    _check_controller_creates(cluster, "orders", assignment, {1, 2, 3})


@pytest.mark.behaviour("TOPIC-4")
@pytest.mark.combined_only(NO_CONTROLLER_BROKER)
def test_create_topics_errors(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    client = admin.admin_client(cluster)
    client.create_topics([NewTopic("dup", 1, 1)])["dup"].result(timeout=cluster.deadline(20))
    cases = {
        "dup": NewTopic("dup", 1, 1),
        "toowide": NewTopic("toowide", 1, 5),
        "nopart": NewTopic("nopart", 0, 1),
    }
    expected = {
        "dup": "TOPIC_ALREADY_EXISTS",
        "toowide": "INVALID_REPLICATION_FACTOR",
        "nopart": "INVALID_PARTITIONS",
    }
    got = {}
    for name, topic in cases.items():
        try:
            client.create_topics([topic])[name].result(timeout=cluster.deadline(20))
            got[name] = "OK"
        except Exception as exc:
            got[name] = exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else repr(exc)
    assert got == expected, f"CreateTopics errors: {got}"
    other = next(b for b in cluster.broker_ids if b != cid)
    req = ct4.CreateTopicsRequest(
        topics=(
            ct4.CreatableTopic(
                name=TopicName("direct"),
                num_partitions=i32(1),
                replication_factor=i16(1),
                assignments=(),
                configs=(),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
        validate_only=False,
    )
    resp = send_request(*cluster.endpoint(other), req)
    codes = [int(t.error_code) for t in resp.topics]
    assert codes == [41], f"CreateTopics to non-controller {other}: {resp}"


@pytest.mark.behaviour("TOPIC-3", "TOPIC-2")
def test_hand_written_topic_znode_is_created_like_an_admin_topic(
    cluster: Cluster, phase_metrics: PhaseMetrics
) -> None:
    cluster.wait_controller()
    assignment = {0: [3, 1], 1: [1, 2], 2: [2, 3]}
    admin.create_topic_zk(cluster, "hand", assignment, with_config=False)
    wait_online(cluster, "hand", assignment)
    _record_online(cluster, phase_metrics, "hand", len(assignment))
    _check_controller_creates(cluster, "hand", assignment, {1, 2, 3})


@pytest.mark.behaviour("TOPIC-5")
@pytest.mark.combined_only(NO_CONTROLLER_BROKER)
def test_adding_partitions_creates_only_new_ones(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "grow", {0: [1, 2]})
    before = cluster.partition_state_stat("grow", 0)
    client = admin.admin_client(cluster)
    client.create_partitions([NewPartitions("grow", 3, replica_assignment=[[2, 3], [3, 1]])])["grow"].result(
        timeout=cluster.deadline(20)
    )
    wait_online(cluster, "grow", [1, 2])
    settle(cluster, 1)  # the partition-modification event is fully handled
    assert cluster.partition_state_stat("grow", 0) == before, "existing partition state was rewritten"
    st = [w for w in writes(cluster.history()) if w[1].path == "/brokers/topics/grow/partitions/0/state"]
    assert len(st) == 1, f"partition 0 state written {len(st)} times:\n{fmt([r for r, _ in st])}"


@pytest.mark.behaviour("TOPIC-6")
@pytest.mark.combined_only(NO_CONTROLLER_BROKER)
def test_default_placement_and_unregistered_replica(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    ids = sorted(cluster.broker_ids)
    # CreateTopics places replicas over the brokers the receiving broker's (the controller's)
    # metadata cache lists (AdminManager.createTopics, metadataCache.getAliveBrokers): wait until
    # it lists them all, or a broker registered a moment ago is legitimately left out
    wait_for(
        lambda: metadata_broker_ids(cluster, cid) >= set(ids),
        cluster.deadline(20),
        lambda: f"controller {cid}'s metadata to list brokers {ids}; {cluster.summary()}",
    )
    client = admin.admin_client(cluster)
    client.create_topics([NewTopic("spread", 6, 2)])["spread"].result(timeout=cluster.deadline(20))
    parts = {int(p): r for p, r in (cluster.get_json("/brokers/topics/spread") or {})["partitions"].items()}
    firsts = [parts[p][0] for p in range(6)]
    start = ids.index(firsts[0])
    assert firsts == [ids[(start + p) % 3] for p in range(6)], f"leaders not round-robin: {parts}"
    assert all(len(set(r)) == 2 and set(r) <= set(ids) for r in parts.values()), f"bad replica sets: {parts}"
    create_topic(cluster, "ghost", {0: [9, 2, 1]})
    st = cluster.partition_state("ghost", 0)
    assert st is not None, f"ghost-0 state {st}"
    assert (st["leader"], st["isr"]) == (2, [2, 1]), f"ghost-0 state {st}"


@pytest.mark.behaviour("TOPIC-7", "RSM-2")
def test_topic_znode_deleted_by_hand_is_only_forgotten(cluster: Cluster) -> None:
    """(a) A hand (recursive) delete of ``/brokers/topics/gone`` is only forgotten; (b) the topic
    znode written again — with another assignment — is created anew, exactly as a new topic.

    (b) moves the controller first: Kafka 2.5.1 forgets a topic by dropping its assignment and
    leadership only (``ControllerContext.removeTopic``, L276-283), so the *same* controller keeps
    the old partition/replica states and cannot create the re-written topic; the next controller
    does (spec §5.3, as MIDCREATE-1). A controller that recreates it at once passes as well, but
    its state must then be a fresh creation too (see the README).
    """
    cluster.wait_controller()
    create_topic(cluster, "gone", {0: [1, 2]})
    jr = journal(cluster)
    mark = jr.mark()
    me = cluster.zk.client_id[0]
    n_before = len(cluster.history())
    cluster.zk.delete("/brokers/topics/gone", recursive=True)
    # barrier: the controller handles topic-set changes in order, so once a topic written after
    # the delete is online and known everywhere, the delete has been handled
    create_topic(cluster, "fence7", {0: [3, 1]})
    later = cluster.history()[n_before:]
    controller_writes = [
        r
        for r, op in writes(later)
        if r.session_id != me and not (op.path or "").startswith("/brokers/topics/fence7/")
    ]
    assert not controller_writes, f"controller wrote after a hand delete:\n{fmt(controller_writes)}"
    stops = jr.requests(api="StopReplica", since=mark)
    assert not stops, f"StopReplica sent for a forgotten topic: {[s.describe() for s in stops]}"
    about_gone = [
        r.describe() for r in jr.requests(since=mark) if any(p.topic == "gone" for p in r.partitions)
    ]
    assert not about_gone, f"requests about the forgotten topic: {about_gone}"

    # (b) write it again, with another assignment (and a partition it never had)
    assignment = {0: [3, 1], 1: [2, 3]}
    n_again = len(cluster.history())
    mark_again = jr.mark()
    admin.create_topic_zk(cluster, "gone", assignment, with_config=False)
    create_topic(cluster, "fence7b", {0: [1, 2]})  # the controller has seen the re-write
    old_epoch = (cluster.controller_epoch() or (0, 0))[0]
    cluster.zk.delete("/controller")  # EPOCH-3's move: whoever wins starts from ZooKeeper

    def moved() -> int | None:
        epoch = (cluster.controller_epoch() or (0, 0))[0]
        return epoch if epoch > old_epoch and cluster.controller_id() is not None else None

    new_epoch = wait_for(
        moved,
        cluster.deadline(20),
        lambda: f"a controller of an epoch above {old_epoch}: {cluster.summary()}",
    )
    states = wait_online(cluster, "gone", assignment, 25)
    _check_controller_creates(
        cluster, "gone", assignment, {1, 2, 3}, since=n_again, epochs={old_epoch, new_epoch}
    )

    def lai_new() -> set[tuple[int, int]]:
        return {
            (r.dest, p.partition)
            for r in jr.requests(api="LeaderAndIsr", since=mark_again)
            for p in r.partitions
            if p.topic == "gone" and p.is_new and p.leader_epoch == 0
        }

    wanted = {(b, p) for p, s in states.items() for b in s["isr"]}
    wait_for(
        lambda: wanted <= lai_new(),
        cluster.deadline(10),
        lambda: (
            f"LeaderAndIsr(isNew=true, leader epoch 0) for gone to its ISR {sorted(wanted)}:\n{jr.dump()}"
        ),
    )
    for p, replicas in assignment.items():
        for bid in replicas:

            def on(b: int = bid, part: int = p) -> bool:
                return any(
                    d.has_segment_files
                    for scan in scan_log_dirs(list(cluster.nodes[b].log_dirs))
                    for (t, q), d in scan.live().items()
                    if (t, q) == ("gone", part)
                )

            wait_for(on, cluster.deadline(10), f"gone-{p} log dir on broker {bid}")

    # the re-written topic meets invalid transitions on the old controller (README): Kafka's shape
    assert_invalid_transitions_in_kafka_shape(cluster, "TOPIC-7")


@pytest.mark.behaviour("TOPIC-8")
@pytest.mark.combined_only(NO_CONTROLLER_BROKER)
def test_create_topics_defaults_from_the_controller(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(overrides={"num.partitions": "3", "default.replication.factor": "2"})
    cid = cluster.wait_controller()
    # the controller's broker places the replicas on the brokers its metadata cache lists as alive
    # (AdminManager.createTopics): a CreateTopics sent before the first UpdateMetadata reached it is
    # refused ("larger than available brokers"), in Kafka as here, so wait until it lists them all
    ids = set(cluster.broker_ids)
    wait_for(
        lambda: metadata_broker_ids(cluster, cid) >= ids,
        cluster.deadline(20),
        lambda: f"controller {cid}'s metadata to list brokers {sorted(ids)}; {cluster.summary()}",
    )
    client = admin.admin_client(cluster)
    client.create_topics([NewTopic("dflt")])["dflt"].result(timeout=cluster.deadline(20))
    parts = (cluster.get_json("/brokers/topics/dflt") or {}).get("partitions", {})
    assert sorted(parts) == ["0", "1", "2"], f"dflt: {parts}"
    assert all(len(r) == 2 for r in parts.values()), f"dflt: {parts}"
