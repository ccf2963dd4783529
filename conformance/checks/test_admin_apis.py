"""ADMIN-1/2 checks: the admin APIs' versions, framing and routing; bad requests (spec §13.0).

Requests are built with kio 0.5.0 at Kafka 2.5.1's versions and sent to a chosen broker over the
kit's wire layer (`admin_wire`), since no Kafka client sends a controller API to a broker that is
not the controller.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.alter_partition_reassignments.v0 import request as apr0
from kio.schema.elect_leaders.v0 import request as el0
from kio.schema.list_partition_reassignments.v0 import request as lpr0
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.checks import admin_wire as aw
from conformance.scenarios import create_topic, fmt, journal, settle, writes
from kafkawire.framing import build
from probes.request_proxy import send_request

pytestmark = pytest.mark.conformance

#: API key → (min, max) version in Kafka 2.5.1 (spec §13.0)
ADMIN_VERSIONS = {32: (0, 2), 33: (0, 1), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0)}
FLEXIBLE = {(45, 0), (46, 0), (43, 2), (44, 1)}


def _harmless(api_key: int, version: int, topic: str) -> Any:
    """A request of every admin API that changes nothing: empty lists, validate-only, describe."""
    schema = load_request_schema(api_key, version)
    mod = __import__(schema.__module__, fromlist=["_"])
    match api_key:
        case 45:
            return build(schema, topics=())
        case 46:
            return build(schema, topics=None)
        case 43:
            return build(schema, election_type=0, topic_partitions=())
        case 44:
            res = build(mod.AlterConfigsResource, resource_type=2, resource_name=topic, configs=())
            return build(schema, resources=(res,), validate_only=True)
        case 33:
            res = build(mod.AlterConfigsResource, resource_type=2, resource_name=topic, configs=())
            return build(schema, resources=(res,), validate_only=True)
        case _:
            res = build(
                mod.DescribeConfigsResource, resource_type=2, resource_name=topic, configuration_keys=None
            )
            return build(schema, resources=(res,), include_synonyms=False)


@pytest.mark.behaviour("ADMIN-1")
def test_every_broker_lists_the_admin_apis_and_each_version_answers(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    create_topic(cluster, "v", {0: [1, 2]})
    for bid in cluster.broker_ids:
        listed = aw.api_versions(cluster, bid)
        got = {k: listed.get(k) for k in ADMIN_VERSIONS}
        assert got == ADMIN_VERSIONS, (
            f"broker {bid} ApiVersions for the admin APIs: {got}, Kafka 2.5.1: {ADMIN_VERSIONS}"
        )
    other = next(b for b in cluster.broker_ids if b != cid)
    for api_key, (low, high) in ADMIN_VERSIONS.items():
        for version in range(low, high + 1):
            request = _harmless(api_key, version, "v")
            assert request.__flexible__ == ((api_key, version) in FLEXIBLE)  # kio's schemas are 2.5.1's
            for bid in (cid, other):
                # a flexible version has request header v2 and response header v1 (tagged fields): a
                # broker decoding or answering with the other header fails to parse or be parsed here
                response = send_request(*cluster.endpoint(bid), request, timeout_s=cluster.deadline(15))
                assert response.__version__ == version, (api_key, version, bid, response)


@pytest.mark.behaviour("ADMIN-1")
def test_malformed_admin_requests_close_the_connection_and_the_broker_keeps_serving(cluster: Cluster) -> None:
    """Kafka answers a request it cannot parse by closing the connection (SocketServer's
    InvalidRequestException), writes nothing, and serves the next connection."""
    cid = cluster.wait_controller()
    create_topic(cluster, "m", {0: [1, 2]})
    records = len(cluster.history())
    alter = apr0.AlterPartitionReassignmentsRequest(
        topics=(apr0.ReassignableTopic(name=TopicName("m"), partitions=(apr0.ReassignablePartition(
            partition_index=i32(0), replicas=(BrokerId(2), BrokerId(1))),)),)
    )  # fmt: skip
    listed = lpr0.ListPartitionReassignmentsRequest(
        topics=(lpr0.ListPartitionReassignmentsTopics(name=TopicName("m"), partition_indexes=(i32(0),)),)
    )
    elect0 = el0.ElectLeadersRequest(
        topic_partitions=(el0.TopicPartitions(topic=TopicName("m"), partitions=(i32(0),)),)
    )
    bad = {
        "AlterPartitionReassignments v1 (unknown version)": aw.request_frame(alter, version=1),
        "ElectLeaders v3 (unknown version)": aw.request_frame(elect0, version=3),
        "DescribeConfigs v3 (unknown version)": aw.request_frame(_harmless(32, 2, "m"), version=3),
        "AlterPartitionReassignments truncated": aw.request_frame(alter, cut=3),
        "ListPartitionReassignments truncated": aw.request_frame(listed, cut=2),
        "ElectLeaders v0 truncated": aw.request_frame(elect0, cut=5),
        "ListPartitionReassignments with PartitionIndexes null": _null_partition_indexes(listed),
        "ElectLeaders v0 with PartitionId null": _null_partition_ids(elect0),
        "AlterPartitionReassignments with 2^31-1 topics": _huge_topics(alter),
    }
    for what, frame in bad.items():
        for bid in (cid, next(b for b in cluster.broker_ids if b != cid)):
            assert aw.closes_connection(cluster, bid, frame), f"broker {bid} answered {what}"
            assert aw.still_serving(cluster, bid), f"broker {bid} stopped serving after {what}"
    changed = [r for r in cluster.history()[records:] if not r.failed]
    assert not changed, f"malformed admin requests wrote to ZooKeeper:\n{fmt(changed)}"
    assert cluster.get_json("/brokers/topics/m") == {
        "version": 2, "partitions": {"0": [1, 2]}, "adding_replicas": {}, "removing_replicas": {},
    }  # fmt: skip


def _null_partition_indexes(request: Any) -> bytes:
    """The compact array `PartitionIndexes` (non-nullable) sent as null: compact length 0."""
    frame = bytearray(aw.request_frame(request))
    # ... name "m" (compact string 0x02 'm'), then PartitionIndexes compact length 2 (one element)
    at = bytes(frame).rindex(b"\x02m\x02") + 2
    frame[at : at + 5] = b"\x00"
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


def _null_partition_ids(request: Any) -> bytes:
    """ElectLeaders v0's `PartitionId` (non-nullable int32 array) sent with length -1."""
    frame = bytearray(aw.request_frame(request))
    at = bytes(frame).rindex(b"\x00\x01m") + 3
    frame[at : at + 8] = struct.pack(">i", -1)
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


def _huge_topics(request: Any) -> bytes:
    """`Topics` claiming 2^31-1 elements (compact length 2^31) in a few bytes."""
    frame = bytearray(aw.request_frame(request))
    header_end = bytes(frame).index(b"\x00", 14)  # after the client id and the empty tagged fields
    body = header_end + 1 + 4  # TimeoutMs
    frame[body : body + 1] = b"\x80\x80\x80\x80\x08"  # unsigned varint 2^31
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


@pytest.mark.behaviour("ADMIN-2")
def test_controller_apis_sent_to_another_broker_answer_not_controller_and_change_nothing(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory()
    cid = cluster.wait_controller()
    create_topic(cluster, "n", {0: [1, 2], 1: [2, 3]})
    create_topic(cluster, "n2", {0: [3, 1]})
    other = next(b for b in cluster.broker_ids if b != cid)
    wait_for(
        lambda: {t for t, _ in aw.elect_leaders(cluster, other, None)[1]} >= {"n", "n2"},
        cluster.deadline(15),
        f"broker {other}'s metadata cache to hold n and n2",
    )
    records, mark = len(cluster.history()), journal(cluster).mark()
    top, results = aw.alter_reassignments(cluster, other, [(("n", 0), (3, 1)), (("n", 1), None)])
    assert (top, results) == ((41, "This is not the correct controller for this cluster."), {}), (
        top,
        results,
    )
    top, listed = aw.list_reassignments(cluster, other)
    assert (top, listed) == ((41, "This is not the correct controller for this cluster."), {}), (top, listed)
    for version in (0, 1, 2):
        err, elected = aw.elect_leaders(cluster, other, [("n", 0), ("n", 1), ("nosuch", 0)], version=version)
        assert (err, elected) == (0, dict.fromkeys([("n", 0), ("n", 1), ("nosuch", 0)], (41, None))), (
            f"ElectLeaders v{version} to broker {other}: {err} {elected}"
        )
    err, elected = aw.elect_leaders(cluster, other, None, election_type=aw.UNCLEAN)
    assert (err, elected) == (0, dict.fromkeys([("n", 0), ("n", 1), ("n2", 0)], (41, None))), (
        f"ElectLeaders with TopicPartitions null to broker {other}: one NOT_CONTROLLER per partition of its "
        f"metadata cache, got {elected}"
    )
    settle_topic = settle(cluster, cid)
    before_settle = [
        (r, op)
        for r, op in writes(cluster.history()[records:])
        if not (op.path or "").startswith(
            ("/brokers/topics/settle", "/config/topics/settle", "/config/changes")
        )
    ]
    assert not before_settle, "requests answered NOT_CONTROLLER wrote:\n" + "\n".join(
        r.describe() for r, _ in before_settle
    )
    sent = [
        r.describe()
        for r in journal(cluster).requests(since=mark)
        if not all(p.topic == settle_topic for p in r.partitions) or not r.partitions
    ]
    assert not sent, "requests answered NOT_CONTROLLER made the controller send:\n" + "\n".join(sent)
