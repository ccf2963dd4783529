"""The admin requests of spec §13 sent by the checks themselves (conformance ring; black-box).

confluent-kafka has no KIP-455 reassignment calls and always sends controller APIs to the
controller, so the checks that need AlterPartitionReassignments, ListPartitionReassignments or a
request to a chosen broker build it with kio 0.5.0's schemas at Kafka 2.5.1's versions and send
it over the kit's wire layer (:func:`probes.request_proxy.send_request`). Answers come back as
plain values: per-partition ``(error code, message)`` and reassignments as
``(replicas, adding, removing)``.
"""

from __future__ import annotations

import datetime
import socket
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from kio.schema.alter_configs.v1 import request as ac1
from kio.schema.api_versions.v3 import request as av3
from kio.schema.describe_configs.v2 import request as dc2
from kio.schema.elect_leaders.v0 import request as el0
from kio.schema.elect_leaders.v1 import request as el1
from kio.schema.elect_leaders.v2 import request as el2
from kio.schema.metadata.v9 import request as md9
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from cluster import admin_api
from cluster.cluster import Cluster
from probes.request_proxy import encode_request_frame, send_request

__all__ = [
    "PREFERRED",
    "UNCLEAN",
    "Outcome",
    "alter_configs",
    "alter_reassignments",
    "api_versions",
    "closes_connection",
    "describe_topic_config",
    "elect_leaders",
    "incremental_alter_configs",
    "list_reassignments",
    "metadata_leader",
    "still_serving",
]

TP = tuple[str, int]
Outcome = tuple[int, str | None]
PREFERRED, UNCLEAN = 0, 1
TOPIC, BROKER = 2, 4


def _send(cluster: Cluster, bid: int, request: Any, timeout_s: float = 15.0) -> Any:
    return send_request(*cluster.endpoint(bid), request, timeout_s=cluster.deadline(timeout_s))


def _by_topic(partitions: Iterable[TP]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, partition in partitions:
        out.setdefault(topic, []).append(partition)
    return out


def api_versions(cluster: Cluster, bid: int) -> dict[int, tuple[int, int]]:
    resp = _send(
        cluster, bid, av3.ApiVersionsRequest(client_software_name="kzk", client_software_version="1")
    )
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}


# ---- AlterPartitionReassignments / ListPartitionReassignments ----------------------------------------
def alter_reassignments(
    cluster: Cluster,
    bid: int,
    targets: Iterable[tuple[TP, Iterable[int] | None]],
    *,
    timeout_ms: int = 60000,
) -> tuple[Outcome, dict[TP, Outcome]]:
    """AlterPartitionReassignments v0 to ``bid``: (top-level outcome, per-partition outcomes). The
    entries are sent in the order given (a partition may be named twice)."""
    return admin_api.alter_partition_reassignments(
        cluster.endpoint(bid), targets, timeout_s=cluster.deadline(15.0), request_timeout_ms=timeout_ms
    )


Reassignment = admin_api.Listing


def list_reassignments(
    cluster: Cluster, bid: int, partitions: Iterable[TP] | None = None
) -> tuple[Outcome, dict[TP, Reassignment]]:
    """ListPartitionReassignments v0 (``partitions`` None = Topics null: every reassignment)."""
    return admin_api.list_partition_reassignments(
        cluster.endpoint(bid), partitions, timeout_s=cluster.deadline(15.0), request_timeout_ms=60000
    )


# ---- ElectLeaders ------------------------------------------------------------------------------------
def elect_leaders(
    cluster: Cluster,
    bid: int,
    partitions: Iterable[TP] | None,
    *,
    election_type: int = PREFERRED,
    timeout_ms: int = 30000,
    version: int = 2,
    wait_s: float = 40.0,
) -> tuple[int, dict[TP, Outcome]]:
    """ElectLeaders v0-2 to ``bid``: (top-level error code (0 for v0), per-partition outcomes)."""
    module: Any = {0: el0, 1: el1, 2: el2}[version]
    tps = None
    if partitions is not None:
        tps = tuple(
            module.TopicPartitions(topic=TopicName(t), partitions=tuple(i32(p) for p in ps))
            for t, ps in _by_topic(partitions).items()
        )
    fields: dict[str, Any] = {"topic_partitions": tps, "timeout": i32Timedelta.parse(_ms(timeout_ms))}
    if version >= 1:
        fields["election_type"] = i8(election_type)
    resp = _send(cluster, bid, module.ElectLeadersRequest(**fields), timeout_s=wait_s)
    results = {
        (str(r.topic), int(p.partition_id)): (int(p.error_code), p.error_message)
        for r in resp.replica_election_results
        for p in r.partition_result
    }
    return int(getattr(resp, "error_code", 0)), results


# ---- configs -----------------------------------------------------------------------------------------
def incremental_alter_configs(
    cluster: Cluster,
    bid: int,
    resource_type: int,
    name: str,
    ops: Iterable[tuple[str, int, str | None]],
    *,
    validate_only: bool = False,
) -> Outcome:
    """IncrementalAlterConfigs v1 of one resource to ``bid``; ``ops`` are (name, operation, value)."""
    request = admin_api.incremental_alter_configs_request(
        resource_type, name, ops, validate_only=validate_only
    )
    resp = _send(cluster, bid, request)
    (r,) = resp.responses
    return int(r.error_code), r.error_message


def alter_configs(
    cluster: Cluster,
    bid: int,
    resource_type: int,
    name: str,
    configs: Mapping[str, str | None],
    *,
    validate_only: bool = False,
) -> Outcome:
    request = ac1.AlterConfigsRequest(
        resources=(
            ac1.AlterConfigsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=tuple(ac1.AlterableConfig(name=k, value=v) for k, v in configs.items()),
            ),
        ),
        validate_only=validate_only,
    )
    (r,) = _send(cluster, bid, request).responses
    return int(r.error_code), r.error_message


def describe_topic_config(
    cluster: Cluster, bid: int, topic: str, keys: Iterable[str] | None = None
) -> tuple[Outcome, dict[str, tuple[str | None, int]]]:
    """DescribeConfigs v2 of a topic to ``bid``: (outcome, name → (value, source))."""
    request = dc2.DescribeConfigsRequest(
        resources=(
            dc2.DescribeConfigsResource(
                resource_type=i8(TOPIC),
                resource_name=topic,
                configuration_keys=None if keys is None else tuple(keys),
            ),
        ),
        include_synonyms=False,
    )
    (r,) = _send(cluster, bid, request).results
    return (int(r.error_code), r.error_message), {
        str(c.name): (c.value, int(c.config_source)) for c in r.configs
    }


# ---- bad input ---------------------------------------------------------------------------------------
def closes_connection(cluster: Cluster, bid: int, frame: bytes) -> bool:
    """Send raw bytes; True when the broker closes the connection without answering."""
    with socket.create_connection(cluster.endpoint(bid), timeout=cluster.deadline(10)) as sock:
        sock.sendall(frame)
        try:
            return sock.recv(4) == b""
        except ConnectionResetError:
            return True


def still_serving(cluster: Cluster, bid: int) -> bool:
    """The broker answers an ApiVersions request (it survived what came before)."""
    return 45 in api_versions(cluster, bid)


def request_frame(request: Any, *, version: int | None = None, cut: int = 0) -> bytes:
    """A request frame (optionally claiming another ``version`` in its header, or with its last
    ``cut`` bytes removed and the size prefix fixed)."""
    frame = bytearray(encode_request_frame(request, correlation_id=7))
    if version is not None:
        struct.pack_into(">h", frame, 6, version)
    if cut:
        frame = frame[: len(frame) - cut]
        struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def metadata_broker_ids(cluster: Cluster, bid: int) -> set[int]:
    """The broker ids broker ``bid``'s metadata cache lists as alive (a Metadata v9 request to it,
    for no topic)."""
    request = md9.MetadataRequest(
        topics=(),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    return {int(b.node_id) for b in _send(cluster, bid, request).brokers}


def metadata_leader(cluster: Cluster, bid: int, topic: str, partition: int) -> int | None:
    """The leader broker ``bid``'s metadata cache gives for the partition (a Metadata v9 request to
    it); None when it does not know the partition."""
    request = md9.MetadataRequest(
        topics=(md9.MetadataRequestTopic(name=TopicName(topic)),),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    for t in _send(cluster, bid, request).topics:
        for p in t.partitions if str(t.name) == topic and int(t.error_code) in (0, 5) else ():
            if int(p.partition_index) == partition:
                return int(p.leader_id)
    return None
