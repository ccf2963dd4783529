"""KIP-455 reassignment requests as ``kafka-reassign-partitions.sh --bootstrap-server`` sends them,
and IncrementalAlterConfigs of a broker resource (ring: cluster, drivers).

confluent-kafka (and librdkafka) have no AlterPartitionReassignments (45) or
ListPartitionReassignments (46) call, so these are built with kio 0.5.0's schemas at the only
version Kafka 2.5.1 serves (v0, spec §13.1.1, §13.2) and sent over the kit's wire layer to a
broker's CLIENT listener. Both are controller APIs: a broker that is not the controller answers
NOT_CONTROLLER (41) at the top level and writes nothing, so :func:`to_controller` asks whoever
``/controller`` names and asks again when the answer is NOT_CONTROLLER, as Kafka's AdminClient
does. Answers are plain values: per-partition ``(error code, message)`` and listings as
``(replicas, adding, removing)``.

:func:`incremental_alter_broker_config` is IncrementalAlterConfigs v1 (kio) of one BROKER
resource: confluent-kafka's ``ConfigResource`` refuses the empty name that means the cluster-wide
default (``kafka-configs --entity-default``), so the request is built here as Kafka's own admin
client builds it.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from kio.schema.alter_partition_reassignments.v0 import request as apr0
from kio.schema.incremental_alter_configs.v1 import request as iac1
from kio.schema.list_partition_reassignments.v0 import request as lpr0
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from cluster.cluster import Cluster
from probes.request_proxy import send_request

__all__ = [
    "NOT_CONTROLLER",
    "Answer",
    "Listing",
    "NoController",
    "Outcome",
    "alter_partition_reassignments",
    "incremental_alter_broker_config",
    "incremental_alter_configs_request",
    "list_partition_reassignments",
    "to_controller",
]

TP = tuple[str, int]
Outcome = tuple[int, str | None]
#: (replicas, adding, removing) of one partition being reassigned.
Listing = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
NOT_CONTROLLER = 41
Address = tuple[str, int]
_R = TypeVar("_R")


class NoController(Exception):
    """No controller to send to (``/controller`` absent or naming an unregistered broker)."""


@dataclass(frozen=True)
class Answer:
    """A controller API's answer: its top-level outcome and the broker that gave it."""

    broker: int
    error_code: int
    error_message: str | None


def _request_timeout(timeout_s: float, request_timeout_ms: int | None) -> i32Timedelta:
    """The request's own ``timeout`` field: ``request_timeout_ms`` when given, else the socket's."""
    if request_timeout_ms is None:
        return i32Timedelta.parse(datetime.timedelta(seconds=timeout_s))
    return i32Timedelta.parse(datetime.timedelta(milliseconds=request_timeout_ms))


def alter_partition_reassignments(
    address: Address,
    targets: Iterable[tuple[TP, Iterable[int] | None]],
    *,
    timeout_s: float,
    request_timeout_ms: int | None = None,
) -> tuple[Outcome, dict[TP, Outcome]]:
    """AlterPartitionReassignments v0 (a None target cancels): (top-level, per-partition). The
    entries are sent in the order given (a partition may be named twice); ``timeout_s`` bounds the
    answer's wait, ``request_timeout_ms`` (default: the same) is the request's own field."""
    topics: dict[str, list[tuple[int, tuple[int, ...] | None]]] = {}
    for (topic, partition), replicas in targets:
        topics.setdefault(topic, []).append((partition, None if replicas is None else tuple(replicas)))
    request = apr0.AlterPartitionReassignmentsRequest(
        timeout=_request_timeout(timeout_s, request_timeout_ms),
        topics=tuple(
            apr0.ReassignableTopic(
                name=TopicName(topic),
                partitions=tuple(
                    apr0.ReassignablePartition(
                        partition_index=i32(p),
                        replicas=None if r is None else tuple(BrokerId(b) for b in r),
                    )
                    for p, r in parts
                ),
            )
            for topic, parts in topics.items()
        ),
    )
    resp = send_request(*address, request, timeout_s=timeout_s)
    results = {
        (str(t.name), int(p.partition_index)): (int(p.error_code), p.error_message)
        for t in resp.responses
        for p in t.partitions
    }
    return (int(resp.error_code), resp.error_message), results


def list_partition_reassignments(
    address: Address,
    partitions: Iterable[TP] | None,
    *,
    timeout_s: float,
    request_timeout_ms: int | None = None,
) -> tuple[Outcome, dict[TP, Listing]]:
    """ListPartitionReassignments v0 (``partitions`` None: Topics null, every reassignment)."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(
            lpr0.ListPartitionReassignmentsTopics(
                name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)
            )
            for t, ps in by_topic.items()
        )
    request = lpr0.ListPartitionReassignmentsRequest(
        timeout=_request_timeout(timeout_s, request_timeout_ms), topics=topics
    )
    resp = send_request(*address, request, timeout_s=timeout_s)
    listed = {
        (str(t.name), int(p.partition_index)): (
            tuple(int(r) for r in p.replicas),
            tuple(int(r) for r in p.adding_replicas),
            tuple(int(r) for r in p.removing_replicas),
        )
        for t in resp.topics
        for p in t.partitions
    }
    return (int(resp.error_code), resp.error_message), listed


BROKER_RESOURCE, SET, DELETE = 4, 0, 1  # ConfigResource.Type.BROKER; AlterConfigOp.OpType


def incremental_alter_configs_request(
    resource_type: int, name: str, ops: Iterable[tuple[str, int, str | None]], *, validate_only: bool = False
) -> iac1.IncrementalAlterConfigsRequest:
    """IncrementalAlterConfigs v1 of one resource; ``ops`` are (key, operation, value)."""
    return iac1.IncrementalAlterConfigsRequest(
        resources=(
            iac1.AlterConfigsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=tuple(
                    iac1.AlterableConfig(name=k, config_operation=i8(op), value=v) for k, op, v in ops
                ),
            ),
        ),
        validate_only=validate_only,
    )


def incremental_alter_broker_config(
    address: Address, name: str, changes: Iterable[tuple[str, str | None]], *, timeout_s: float
) -> Outcome:
    """IncrementalAlterConfigs v1 of the BROKER resource ``name`` ("" is the cluster-wide default,
    else a broker id, which only that broker accepts): each change SETs its value, or DELETEs the
    key when the value is None. The resource's (error code, message)."""
    ops = [(k, DELETE if v is None else SET, v) for k, v in changes]
    request = incremental_alter_configs_request(BROKER_RESOURCE, name, ops)
    resp = send_request(*address, request, timeout_s=timeout_s)
    (result,) = resp.responses
    return int(result.error_code), result.error_message


def to_controller(
    cluster: Cluster,
    call: Callable[[Address], tuple[Outcome, _R]],
    *,
    deadline_s: float,
    attempts: int = 3,
) -> tuple[Answer, _R]:
    """``call`` on the controller's CLIENT address, again while the answer is NOT_CONTROLLER (at
    most ``attempts`` times, before ``deadline_s`` of ``time.monotonic()``). Raises
    :class:`NoController` when ``/controller`` names no registered broker; socket errors propagate
    (the caller decides what a lost answer means)."""
    answer: tuple[Answer, _R] | None = None
    for _ in range(attempts):
        bid = cluster.controller_id()
        if bid is None:
            raise NoController("/controller is absent")
        try:
            address = cluster.endpoint(bid)
        except RuntimeError as exc:
            raise NoController(str(exc)) from None
        (code, message), result = call(address)
        answer = Answer(bid, code, message), result
        if code != NOT_CONTROLLER or time.monotonic() >= deadline_s:
            break
    assert answer is not None
    return answer
