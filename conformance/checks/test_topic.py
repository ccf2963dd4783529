"""TOPIC checks: topic creation znodes, client CreateTopics, hand-written znodes (spec §5.1, §5.2)."""

from __future__ import annotations

import datetime
import json
import time

import pytest
from confluent_kafka.admin import NewPartitions, NewTopic  # type: ignore[attr-defined]
from kio.schema.create_topics.v4 import request as ct4
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from conformance import admin
from conformance.cluster import Cluster
from conformance.conftest import ClusterFactory
from conformance.scenarios import CREATES, create_topic, fenced, fmt, wait_online, writes
from fixtures.probes.request_proxy import send_request

pytestmark = pytest.mark.conformance


def _topic_writes(cluster: Cluster, topic: str) -> list[tuple[str, str | None, bytes | None, bool]]:
    """(op, path, data, fenced) of every successful write naming ``topic``, in order."""
    out: list[tuple[str, str | None, bytes | None, bool]] = []
    for r, op in writes(cluster.history()):
        if op.path and (op.path.endswith(f"/{topic}") or f"/{topic}/" in op.path):
            out.append((op.op, op.path, op.data, fenced(r)))
    return out


def _check_controller_creates(
    cluster: Cluster, topic: str, assignment: dict[int, list[int]], live: set[int]
) -> None:
    epoch, version = cluster.controller_epoch() or (0, 0)
    ws = [w for w in _topic_writes(cluster, topic) if w[1] and w[1].startswith(f"/brokers/topics/{topic}/")]
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
            "controller_epoch": epoch,
            "leader": live_replicas[0],
            "version": 1,
            "leader_epoch": 0,
            "isr": live_replicas,
        }
        assert state == expected, f"{spath}: {state}, expected {expected}"
        stat = cluster.zk.exists(spath)
        assert stat is not None, f"{spath} stat {stat}"
        assert stat.version == 0, f"{spath} stat {stat}"
        assert stat.ephemeralOwner == 0, f"{spath} stat {stat}"
    assert len(ws) == 1 + 2 * len(assignment), f"unexpected extra writes:\n{trace}"
    del version


@pytest.mark.behaviour("TOPIC-1", "TOPIC-2", "TOPIC-4", "PSM-2")
def test_create_topics_through_a_client(cluster: Cluster) -> None:
    cluster.wait_controller()
    client = admin.admin_client(cluster)
    assignment = {0: [1, 2], 1: [2, 3]}
    fut = client.create_topics(
        [NewTopic("orders", num_partitions=2, replica_assignment=[assignment[0], assignment[1]])]
    )
    fut["orders"].result(timeout=cluster.deadline(20))
    wait_online(cluster, "orders", assignment)
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
def test_hand_written_topic_znode_is_created_like_an_admin_topic(cluster: Cluster) -> None:
    cluster.wait_controller()
    assignment = {0: [3, 1], 1: [1, 2], 2: [2, 3]}
    admin.create_topic_zk(cluster, "hand", assignment, with_config=False)
    wait_online(cluster, "hand", assignment)
    _check_controller_creates(cluster, "hand", assignment, {1, 2, 3})


@pytest.mark.behaviour("TOPIC-5")
def test_adding_partitions_creates_only_new_ones(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "grow", {0: [1, 2]})
    before = cluster.partition_state_stat("grow", 0)
    client = admin.admin_client(cluster)
    client.create_partitions([NewPartitions("grow", 3, replica_assignment=[[2, 3], [3, 1]])])["grow"].result(
        timeout=cluster.deadline(20)
    )
    wait_online(cluster, "grow", [1, 2])
    time.sleep(0.5)
    assert cluster.partition_state_stat("grow", 0) == before, "existing partition state was rewritten"
    st = [w for w in writes(cluster.history()) if w[1].path == "/brokers/topics/grow/partitions/0/state"]
    assert len(st) == 1, f"partition 0 state written {len(st)} times:\n{fmt([r for r, _ in st])}"


@pytest.mark.behaviour("TOPIC-6")
def test_default_placement_and_unregistered_replica(cluster: Cluster) -> None:
    cluster.wait_controller()
    client = admin.admin_client(cluster)
    client.create_topics([NewTopic("spread", 6, 2)])["spread"].result(timeout=cluster.deadline(20))
    parts = {int(p): r for p, r in (cluster.get_json("/brokers/topics/spread") or {})["partitions"].items()}
    ids = sorted(cluster.broker_ids)
    firsts = [parts[p][0] for p in range(6)]
    start = ids.index(firsts[0])
    assert firsts == [ids[(start + p) % 3] for p in range(6)], f"leaders not round-robin: {parts}"
    assert all(len(set(r)) == 2 and set(r) <= set(ids) for r in parts.values()), f"bad replica sets: {parts}"
    create_topic(cluster, "ghost", {0: [9, 2, 1]})
    st = cluster.partition_state("ghost", 0)
    assert st is not None, f"ghost-0 state {st}"
    assert (st["leader"], st["isr"]) == (2, [2, 1]), f"ghost-0 state {st}"


@pytest.mark.behaviour("TOPIC-7")
def test_topic_znode_deleted_by_hand_is_only_forgotten(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "gone", {0: [1, 2]})
    mark = cluster.journal.mark() if cluster.journal else 0
    n_before = len(cluster.history())
    cluster.zk.delete("/brokers/topics/gone", recursive=True)
    time.sleep(2.0)
    later = cluster.history()[n_before:]
    others = [
        r
        for r, op in writes(later)
        if not (op.op == "delete" and (op.path or "").startswith("/brokers/topics/gone"))
    ]
    controller_writes = [r for r in others if r.session_id != cluster.zk.client_id[0]]
    assert not controller_writes, f"controller wrote after a hand delete:\n{fmt(controller_writes)}"
    if cluster.journal:
        stops = cluster.journal.requests(api="StopReplica", since=mark)
        assert not stops, f"StopReplica sent for a forgotten topic: {[s.describe() for s in stops]}"
    admin.create_topic_zk(cluster, "gone", {0: [2, 3]}, with_config=False)
    st = wait_online(cluster, "gone", [0])[0]
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (2, [2, 3], 0), f"recreated state {st}"


@pytest.mark.behaviour("TOPIC-8")
def test_create_topics_defaults_from_the_controller(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(overrides={"num.partitions": "3", "default.replication.factor": "2"})
    cluster.wait_controller()
    client = admin.admin_client(cluster)
    client.create_topics([NewTopic("dflt")])["dflt"].result(timeout=cluster.deadline(20))
    parts = (cluster.get_json("/brokers/topics/dflt") or {}).get("partitions", {})
    assert sorted(parts) == ["0", "1", "2"], f"dflt: {parts}"
    assert all(len(r) == 2 for r in parts.values()), f"dflt: {parts}"
