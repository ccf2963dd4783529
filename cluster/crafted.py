"""Crafted controller requests: LeaderAndIsr, UpdateMetadata, StopReplica with chosen epochs (platform).

The one test-side builder of the ZooKeeper-era controller→broker requests (spec §7.2), for
checks and tools that act as a controller towards a broker: FENCE-2/3 stale requests, the
differential suite's broker probes, the node's own tests. Requests are kio 0.5.0 objects of the
version asked for (2.5's by default: LeaderAndIsr v4, UpdateMetadata v6, StopReplica v2); the
per-version layout (ungrouped partitions before v2 / v1, grouped by topic after) is chosen from
the schema, so one call site serves every version. :func:`send` delivers one request straight to
a broker's listener and returns the decoded response; :func:`answer` reduces a response to its
error codes. The reference controller's own encoder (``reference_controller``) is separate on
purpose: a check must not build its requests with the code it certifies.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from kio.index import load_request_schema

from kafkawire.framing import build
from probes.request_proxy import send_request

__all__ = [
    "LEADER_AND_ISR",
    "STOP_REPLICA",
    "UPDATE_METADATA",
    "Answer",
    "BrokerSpec",
    "PartitionSpec",
    "answer",
    "leader_and_isr_request",
    "send",
    "stop_replica_request",
    "update_metadata_request",
]

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
#: The versions a 2.5 controller sends (IBP 2.5, ControllerChannelManager.scala@2.5.1 L440-571).
VERSIONS_2_5 = {LEADER_AND_ISR: 4, UPDATE_METADATA: 6, STOP_REPLICA: 2}


@dataclass(frozen=True)
class PartitionSpec:
    """One partition state as a controller would send it (``zk_version`` is Kafka's ZkVersion)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int = 0
    controller_epoch: int = 1
    is_new: bool = True
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    offline: tuple[int, ...] = ()


@dataclass(frozen=True)
class BrokerSpec:
    """One live broker of an UpdateMetadata: its endpoints as (listener, host, port)."""

    broker_id: int
    endpoints: tuple[tuple[str, str, int], ...]
    rack: str | None = None


@dataclass(frozen=True)
class Answer:
    """A response reduced to what a controller reads: the error and per-partition errors."""

    error_code: int
    partition_errors: Mapping[tuple[str, int], int] = field(default_factory=dict)


def _nested(schema: type[Any], name: str) -> type[Any]:
    cls: type[Any] = getattr(sys.modules[schema.__module__], name)
    return cls


def _has(schema: type[Any], name: str) -> bool:
    return any(f.name == name for f in fields(schema))


def _grouped(parts: Iterable[PartitionSpec]) -> dict[str, list[PartitionSpec]]:
    out: dict[str, list[PartitionSpec]] = {}
    for p in parts:
        out.setdefault(p.topic, []).append(p)
    return out


def _lai_state(cls: type[Any], p: PartitionSpec) -> Any:
    return build(
        cls,
        topic_name=p.topic,
        partition_index=p.partition,
        controller_epoch=p.controller_epoch,
        leader=p.leader,
        leader_epoch=p.leader_epoch,
        isr=p.isr,
        partition_epoch=p.zk_version,
        zk_version=p.zk_version,
        replicas=p.replicas,
        adding_replicas=p.adding,
        removing_replicas=p.removing,
        is_new=p.is_new,
    )


def leader_and_isr_request(
    parts: Sequence[PartitionSpec],
    *,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int = -1,
    live_leaders: Sequence[tuple[int, str, int]] = (),
    version: int = VERSIONS_2_5[LEADER_AND_ISR],
) -> Any:
    """A LeaderAndIsr request; ``live_leaders`` are (broker id, host, port)."""
    schema = load_request_schema(LEADER_AND_ISR, version)
    state_cls = _nested(schema, "LeaderAndIsrPartitionState")
    leaders = tuple(
        build(_nested(schema, "LeaderAndIsrLiveLeader"), broker_id=b, host_name=h, port=port)
        for b, h, port in live_leaders
    )
    body: dict[str, Any] = {}
    if _has(schema, "topic_states"):
        topic_cls = _nested(schema, "LeaderAndIsrTopicState")
        body["topic_states"] = tuple(
            build(topic_cls, topic_name=t, partition_states=tuple(_lai_state(state_cls, p) for p in ps))
            for t, ps in _grouped(parts).items()
        )
    else:
        body["ungrouped_partition_states"] = tuple(_lai_state(state_cls, p) for p in parts)
    return build(
        schema,
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        live_leaders=leaders,
        **body,
    )


def _um_state(cls: type[Any], p: PartitionSpec) -> Any:
    return build(
        cls,
        topic_name=p.topic,
        partition_index=p.partition,
        controller_epoch=p.controller_epoch,
        leader=p.leader,
        leader_epoch=p.leader_epoch,
        isr=p.isr,
        zk_version=p.zk_version,
        replicas=p.replicas,
        offline_replicas=p.offline,
    )


def _um_broker(schema: type[Any], b: BrokerSpec) -> Any:
    endpoints: tuple[Any, ...] = ()
    if _has_nested(schema, "UpdateMetadataEndpoint"):  # v1+; v0 has one host and port
        endpoint_cls = _nested(schema, "UpdateMetadataEndpoint")
        endpoints = tuple(
            build(endpoint_cls, port=port, host=host, listener=listener, security_protocol=0)
            for listener, host, port in b.endpoints
        )
    first = b.endpoints[0] if b.endpoints else ("", "", -1)
    return build(
        _nested(schema, "UpdateMetadataBroker"),
        id_=b.broker_id,
        v0_host=first[1],
        v0_port=first[2],
        endpoints=endpoints,
        rack=b.rack,
    )


def _has_nested(schema: type[Any], name: str) -> bool:
    return hasattr(sys.modules[schema.__module__], name)


def update_metadata_request(
    parts: Sequence[PartitionSpec],
    brokers: Sequence[BrokerSpec],
    *,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int = -1,
    version: int = VERSIONS_2_5[UPDATE_METADATA],
) -> Any:
    """An UpdateMetadata request carrying ``parts`` and the live ``brokers``."""
    schema = load_request_schema(UPDATE_METADATA, version)
    state_cls = _nested(schema, "UpdateMetadataPartitionState")
    body: dict[str, Any] = {}
    if _has(schema, "topic_states"):
        topic_cls = _nested(schema, "UpdateMetadataTopicState")
        body["topic_states"] = tuple(
            build(topic_cls, topic_name=t, partition_states=tuple(_um_state(state_cls, p) for p in ps))
            for t, ps in _grouped(parts).items()
        )
    else:
        body["ungrouped_partition_states"] = tuple(_um_state(state_cls, p) for p in parts)
    return build(
        schema,
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        live_brokers=tuple(_um_broker(schema, b) for b in brokers),
        **body,
    )


def stop_replica_request(
    partitions: Sequence[tuple[str, int]],
    *,
    delete: bool,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int = -1,
    version: int = VERSIONS_2_5[STOP_REPLICA],
) -> Any:
    """A StopReplica request (one ``delete`` flag for every partition, as before 2.6)."""
    schema = load_request_schema(STOP_REPLICA, version)
    body: dict[str, Any] = {}
    if _has(schema, "topics"):
        topic_cls = _nested(schema, "StopReplicaTopicV1")
        grouped: dict[str, list[int]] = {}
        for t, p in partitions:
            grouped.setdefault(t, []).append(p)
        body["topics"] = tuple(
            build(topic_cls, name=t, partition_indexes=tuple(ps)) for t, ps in grouped.items()
        )
    else:
        partition_cls = _nested(schema, "StopReplicaPartitionV0")
        body["ungrouped_partitions"] = tuple(
            build(partition_cls, topic_name=t, partition_index=p) for t, p in partitions
        )
    return build(
        schema,
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        delete_partitions=delete,
        **body,
    )


def send(address: tuple[str, int], request: Any, timeout_s: float = 10.0) -> Any:
    """Send ``request`` to the broker listening on ``address``; its decoded response (``OSError``
    when the broker does not answer)."""
    return send_request(address[0], address[1], request, timeout_s)


def answer(response: Any) -> Answer:
    """The error code and the per-partition error codes of a controller request's response."""
    errors = {
        (str(pe.topic_name), int(pe.partition_index)): int(pe.error_code)
        for pe in getattr(response, "partition_errors", ()) or ()
    }
    return Answer(int(getattr(response, "error_code", 0)), errors)
