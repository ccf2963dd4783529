"""Controller → broker requests on the Kafka wire protocol with kio 0.5.0 (ring: drivers, pure part).

Encodes the core's version-independent `LeaderAndIsrRequest` / `UpdateMetadataRequest` /
`StopReplicaRequest` effects at the version `inter.broker.protocol.version` selects
(ControllerChannelManager.scala@2.5.1 L440-571: LeaderAndIsr v0–4, UpdateMetadata v0–6,
StopReplica v0–2), frames them with `kafkawire.framing` (int32 size, request header v1, or v2 for
flexible versions) and decodes the responses. No sockets here: `channel.py` does the I/O.

Version shapes (clients/src/main/resources/common/message/*.json@2.5.1):

| request        | ungrouped | by topic | broker epoch | extras                          |
|----------------|-----------|----------|--------------|---------------------------------|
| LeaderAndIsr   | v0–1      | v2+      | v2+          | is_new v1+, adding/removing v3+ |
| UpdateMetadata | v0–4      | v5+      | v5+          | offline_replicas v4+            |
| StopReplica    | v0        | v1+      | v1+          | —                               |

UpdateMetadata live brokers: v0 carries the `PLAINTEXT` listener's host/port only; v1–2 carry every
endpoint without listener names (Kafka refuses custom listener names below v3:
`UnsupportedVersionError`); v2+ add the rack; v3+ name each endpoint's listener. Topics are grouped
in order of first appearance (Kafka uses a HashMap; brokers do not depend on the order).
The client id is the controller's broker id (`config.brokerId.toString`, ControllerChannelManager L141).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafkawire import framing
from kafkawire.states import LeaderAndIsrPartitionState, TopicPartition
from reference_controller.controller.driver import DriverError
from reference_controller.controller.effects import (
    BrokerRequest,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from reference_controller.controller.events import (
    ControllerEvent,
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from reference_controller.zkdata import BrokerInfo

LEADER_AND_ISR = 4
STOP_REPLICA = 5
UPDATE_METADATA = 6
_MODULES = {
    LEADER_AND_ISR: "leader_and_isr",
    STOP_REPLICA: "stop_replica",
    UPDATE_METADATA: "update_metadata",
}
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class UnsupportedVersionError(DriverError):
    """The request cannot be expressed at the selected version (Kafka's UnsupportedVersionException)."""


@functools.cache  # a module never changes once imported
def schema(api_key: int, version: int, kind: str) -> Any:
    """The kio module `kio.schema.<api>.v<version>.<kind>` (kind: request / response)."""
    return importlib.import_module(f"kio.schema.{_MODULES[api_key]}.v{version}.{kind}")


def api_key_of(request: BrokerRequest) -> int:
    if isinstance(request, LeaderAndIsrRequest):
        return LEADER_AND_ISR
    if isinstance(request, UpdateMetadataRequest):
        return UPDATE_METADATA
    return STOP_REPLICA


def _by_topic(items: Iterable[tuple[str, Any]]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for topic, item in items:
        grouped.setdefault(topic, []).append(item)
    return grouped


# ---- LeaderAndIsr -----------------------------------------------------------------------------
def _lai_partition(m: Any, version: int, s: LeaderAndIsrPartitionState) -> Any:
    fields: dict[str, Any] = {
        "partition_index": s.partition,
        "controller_epoch": s.controller_epoch,
        "leader": s.leader,
        "leader_epoch": s.leader_epoch,
        "isr": s.isr,
        "partition_epoch": s.zk_version,  # kio's (later) name for ZkVersion
        "replicas": s.replicas,
    }
    if version <= 1:
        fields["topic_name"] = s.topic
    if version >= 1:
        fields["is_new"] = s.is_new
    if version >= 3:
        fields["adding_replicas"] = s.adding_replicas
        fields["removing_replicas"] = s.removing_replicas
    return m.LeaderAndIsrPartitionState(**fields)


def leader_and_isr(request: LeaderAndIsrRequest, version: int) -> Any:
    m = schema(LEADER_AND_ISR, version, "request")
    leaders = tuple(m.LeaderAndIsrLiveLeader(broker_id=x.broker_id, host_name=x.host, port=x.port)
                    for x in request.live_leaders)  # fmt: skip
    states = [(s.topic, _lai_partition(m, version, s)) for s in request.partition_states]
    common: dict[str, Any] = {
        "controller_id": request.controller_id,
        "controller_epoch": request.controller_epoch,
        "live_leaders": leaders,
    }
    if version <= 1:
        return m.LeaderAndIsrRequest(ungrouped_partition_states=tuple(s for _, s in states), **common)
    topics = tuple(m.LeaderAndIsrTopicState(topic_name=t, partition_states=tuple(ps))
                   for t, ps in _by_topic(states).items())  # fmt: skip
    return m.LeaderAndIsrRequest(broker_epoch=request.broker_epoch, topic_states=topics, **common)


# ---- UpdateMetadata ---------------------------------------------------------------------------
def _um_partition(m: Any, version: int, s: UpdateMetadataPartitionState) -> Any:
    fields: dict[str, Any] = {
        "partition_index": s.partition,
        "controller_epoch": s.controller_epoch,
        "leader": s.leader,
        "leader_epoch": s.leader_epoch,
        "isr": s.isr,
        "zk_version": s.zk_version,
        "replicas": s.replicas,
    }
    if version <= 4:
        fields["topic_name"] = s.topic
    if version >= 4:
        fields["offline_replicas"] = s.offline_replicas
    return m.UpdateMetadataPartitionState(**fields)


def _um_broker(m: Any, version: int, broker: BrokerInfo) -> Any:
    if version == 0:  # "Version 0 of UpdateMetadataRequest only supports PLAINTEXT"
        ep = broker.endpoint("PLAINTEXT")
        if ep is None:
            raise UnsupportedVersionError(f"UpdateMetadataRequest v0 needs a PLAINTEXT listener: {broker}")
        return m.UpdateMetadataBroker(id_=broker.broker_id, v0_host=ep.host, v0_port=ep.port)
    endpoints = []
    for ep in broker.endpoints:
        protocol = SECURITY_PROTOCOL_IDS.get(ep.security_protocol, 0)
        fields: dict[str, Any] = {"port": ep.port, "host": ep.host, "security_protocol": protocol}
        if version >= 3:
            fields["listener"] = ep.listener
        elif ep.listener != ep.security_protocol:
            raise UnsupportedVersionError(
                f"UpdateMetadataRequest v0-v3 does not support custom listeners, request version: "
                f"{version}, endpoints: {broker.endpoints}"
            )
        endpoints.append(m.UpdateMetadataEndpoint(**fields))
    extra: dict[str, Any] = {"rack": broker.rack} if version >= 2 else {}
    return m.UpdateMetadataBroker(id_=broker.broker_id, endpoints=tuple(endpoints), **extra)


def update_metadata(request: UpdateMetadataRequest, version: int) -> Any:
    m = schema(UPDATE_METADATA, version, "request")
    brokers = tuple(_um_broker(m, version, b) for b in request.live_brokers)
    states = [(s.topic, _um_partition(m, version, s)) for s in request.partition_states]
    common: dict[str, Any] = {
        "controller_id": request.controller_id,
        "controller_epoch": request.controller_epoch,
        "live_brokers": brokers,
    }
    if version <= 4:
        return m.UpdateMetadataRequest(ungrouped_partition_states=tuple(s for _, s in states), **common)
    topics = tuple(m.UpdateMetadataTopicState(topic_name=t, partition_states=tuple(ps))
                   for t, ps in _by_topic(states).items())  # fmt: skip
    return m.UpdateMetadataRequest(broker_epoch=request.broker_epoch, topic_states=topics, **common)


# ---- StopReplica ------------------------------------------------------------------------------
def stop_replica(request: StopReplicaRequest, version: int) -> Any:
    m = schema(STOP_REPLICA, version, "request")
    common: dict[str, Any] = {
        "controller_id": request.controller_id,
        "controller_epoch": request.controller_epoch,
        "delete_partitions": request.delete_partitions,
    }
    if version == 0:
        parts = tuple(
            m.StopReplicaPartitionV0(topic_name=t, partition_index=p) for t, p in request.partitions
        )
        return m.StopReplicaRequest(ungrouped_partitions=parts, **common)
    topics = tuple(m.StopReplicaTopicV1(name=t, partition_indexes=tuple(ps))
                   for t, ps in _by_topic(request.partitions).items())  # fmt: skip
    return m.StopReplicaRequest(broker_epoch=request.broker_epoch, topics=topics, **common)


# ---- framing ----------------------------------------------------------------------------------
def to_kio(request: BrokerRequest, version: int) -> Any:
    if isinstance(request, LeaderAndIsrRequest):
        return leader_and_isr(request, version)
    if isinstance(request, UpdateMetadataRequest):
        return update_metadata(request, version)
    return stop_replica(request, version)


def encode_frame(payload: Any, correlation_id: int, client_id: str) -> bytes:
    """Size-prefixed request: header (v1, or v2 for flexible versions) + body."""
    return framing.encode_request(type(payload), correlation_id, client_id, payload)


@dataclass(frozen=True)
class DecodedResponse:
    correlation_id: int
    body: Any


def decode_response(api_key: int, version: int, body: bytes) -> DecodedResponse:
    """Decode a response body (without its size prefix) with kio."""
    header, payload = framing.decode_response(body, api_key, version)
    return DecodedResponse(int(header.correlation_id), payload)


def response_event(request: BrokerRequest, response: Any) -> ControllerEvent | None:
    """The event the controller processes for a response (ControllerChannelManager callbacks)."""
    error = int(response.error_code)
    if isinstance(request, LeaderAndIsrRequest):
        errors = tuple((TopicPartition(str(e.topic_name), int(e.partition_index)), int(e.error_code))
                       for e in response.partition_errors)  # fmt: skip
        return LeaderAndIsrResponseReceived(request.broker_id, error, errors)
    if isinstance(request, UpdateMetadataRequest):
        return UpdateMetadataResponseReceived(request.broker_id, error)
    if request.delete_partitions:
        errors = tuple((TopicPartition(str(e.topic_name), int(e.partition_index)), int(e.error_code))
                       for e in response.partition_errors)  # fmt: skip
        return TopicDeletionStopReplicaResponseReceived(request.broker_id, error, errors)
    return None
