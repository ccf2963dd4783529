"""Client-API steps: CreateTopics (explicit or automatic), CreatePartitions, DeleteTopics (conformance ring).

Requests go to the ``CLIENT`` listener of the step's ``via`` node as a Kafka client sends them
(CreateTopics v4, CreatePartitions v2, DeleteTopics v4); the answer — per-topic error code and
message — is part of the step's segment. A non-controller answers NOT_CONTROLLER (41); the
controller answers once the topic is visible in its metadata or the request's timeout passed.

Automatic placement (:func:`create_topics_auto`): the assignment the controller's node chose is
read back and checked against Kafka's rack-unaware rule (:func:`~conformance.diff.views.placement_problem`),
then the topic is deleted again in the same step, so its random start never reaches a later step;
the segment is relabelled by replica position (``RULES`` "automatic placement").
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.exceptions import KazooException
from kio.index import load_request_schema

from conformance.diff.live import DiffCluster
from conformance.diff.views import placement_problem
from kafkawire.framing import build
from probes.request_proxy import send_request

__all__ = [
    "create_partitions_api",
    "create_topics_api",
    "create_topics_auto",
    "delete_topics_api",
    "shutdown_request",
]

CREATE_TOPICS, DELETE_TOPICS, CONTROLLED_SHUTDOWN, CREATE_PARTITIONS = 19, 20, 7, 37
TIMEOUT_MS = 8000
Params = Mapping[str, Any]


def _nested(schema: type[Any], name: str) -> type[Any]:
    cls: type[Any] = getattr(sys.modules[schema.__module__], name)
    return cls


def _create_request(
    topic: str, partitions: int, rf: int, assignment: Mapping[str, list[int]], config: Mapping[str, str]
) -> Any:
    schema = load_request_schema(CREATE_TOPICS, 4)
    assignments = tuple(
        build(_nested(schema, "CreatableReplicaAssignment"), partition_index=int(p), broker_ids=tuple(r))
        for p, r in sorted(assignment.items(), key=lambda kv: int(kv[0]))
    )
    configs = tuple(
        build(_nested(schema, "CreatableTopicConfig"), name=k, value=v) for k, v in sorted(config.items())
    )
    creatable = build(
        _nested(schema, "CreatableTopic"),
        name=topic,
        num_partitions=partitions,
        replication_factor=rf,
        assignments=assignments,
        configs=configs,
    )
    return build(schema, topics=(creatable,), timeout=TIMEOUT_MS, validate_only=False)


def _send(dc: DiffCluster, via: int, request: Any) -> Any:
    host, port = dc.cluster.endpoint(via)
    return send_request(host, port, request, timeout_s=TIMEOUT_MS / 1000 + 10)


def _results(response: Any, field: str) -> list[dict[str, Any]]:
    return [
        {"topic": str(r.name), "error": int(r.error_code), "message": getattr(r, "error_message", None)}
        for r in getattr(response, field)
    ]


def _answer(dc: DiffCluster, via: int, request: Any, field: str) -> dict[str, Any]:
    try:
        return {"answer": _results(_send(dc, via, request), field)}
    except (OSError, RuntimeError, ValueError) as exc:
        return {"answer": f"no answer: {type(exc).__name__}"}


def create_topics_api(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> dict[str, Any]:
    return _answer(dc, p["via"], _create_request(p["topic"], -1, -1, p["assignment"], p["config"]), "topics")


def create_topics_auto(dc: DiffCluster, p: Params, quiesce: Callable[[], Any]) -> dict[str, Any]:
    t = p["topic"]
    out = _answer(
        dc, p["via"], _create_request(t, p["partitions"], p["replication_factor"], {}, {}), "topics"
    )
    answer = out["answer"]
    if not isinstance(answer, list) or not answer or answer[0]["error"] != 0:
        return out
    try:
        data, _ = dc.cluster.zk.get(f"/brokers/topics/{t}")
        assignment = {int(k): list(v) for k, v in json.loads(data)["partitions"].items()}
    except (KazooException, ValueError, KeyError, TypeError) as exc:
        out["placement"] = f"unreadable: {type(exc).__name__}"
        return out
    brokers = [int(b) for b in dc.cluster.zk.get_children("/brokers/ids")]
    rf = p["replication_factor"]
    if rf == -1:  # the receiving broker's default.replication.factor (KIP-464): recorded, compared
        rf = out["default_replication_factor"] = len(next(iter(assignment.values()), ()))
    if p["partitions"] == -1:  # its num.partitions
        out["default_partitions"] = len(assignment)
    out["placement"] = placement_problem(assignment, brokers, rf) or "Kafka's rule"
    dc.auto_placed[dc.current_step] = (t, assignment)
    out["settled"] = quiesce()
    when = time.monotonic()
    try:
        dc.cluster.zk.create(f"/admin/delete_topics/{t}", None, makepath=True)
        out["deletion"] = "marker written"
        dc.triggers.append(("/admin/delete_topics", when))
    except KazooException as exc:
        out["deletion"] = type(exc).__name__
    return out


def create_partitions_api(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> dict[str, Any]:
    """CreatePartitions v2 (KafkaApis.handleCreatePartitionsRequest: the controller only). Automatic
    placement is Kafka's rack-unaware rule from a fixed start (AdminZkClient.addPartitions: the
    first broker whose id is at least partition 0's first replica), so the written assignment is
    compared as it is, like an explicit one."""
    schema = load_request_schema(CREATE_PARTITIONS, 2)
    assignments = None
    if p["assignment"]:
        assignment = _nested(schema, "CreatePartitionsAssignment")
        assignments = tuple(
            build(assignment, broker_ids=tuple(r))
            for _, r in sorted(p["assignment"].items(), key=lambda kv: int(kv[0]))
        )
    topic = build(
        _nested(schema, "CreatePartitionsTopic"), name=p["topic"], count=p["count"], assignments=assignments
    )
    request = build(schema, topics=(topic,), timeout=TIMEOUT_MS, validate_only=False)
    return _answer(dc, p["via"], request, "results")


def delete_topics_api(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> dict[str, Any]:
    request = build(load_request_schema(DELETE_TOPICS, 4), topic_names=(p["topic"],), timeout=TIMEOUT_MS)
    return _answer(dc, p["via"], request, "responses")


#: the broker epoch a crafted ControlledShutdown carries, relative to the registration's czxid
_EPOCH_DELTA = {"stale": -1, "equal": 0, "newer": 1}


def shutdown_request(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> dict[str, Any]:
    """ControlledShutdown v3 for broker ``node`` sent to ``via`` while ``node`` keeps running.

    What a broker does at the start of its own shutdown (KafkaServer.controlledShutdown@2.5.1), but
    the process stays up, so everything the controller sends it afterwards is seen and compared:
    the LeaderAndIsr that makes it a follower where it led, the StopReplica where it followed, and
    the ISRs without it. The broker epoch is its registration's czxid, one less (``stale``: Kafka
    answers STALE_BROKER_EPOCH and does nothing), one more, or -1 (not checked); a broker with no
    registration sends -1 (Kafka answers BROKER_NOT_AVAILABLE). A broker other than the
    controller answers STALE_CONTROLLER_EPOCH (KafkaController.doControlledShutdown@2.5.1)."""
    node = p["node"]
    czxid = dc.cluster.broker_epoch(node)
    epoch = -1 if czxid is None or p["broker_epoch"] == "none" else czxid + _EPOCH_DELTA[p["broker_epoch"]]
    request = build(load_request_schema(CONTROLLED_SHUTDOWN, 3), broker_id=node, broker_epoch=epoch)
    out: dict[str, Any] = {"registered": czxid is not None}
    try:
        response = _send(dc, p["via"], request)
    except (OSError, RuntimeError, ValueError) as exc:
        out["answer"] = f"no answer: {type(exc).__name__}"
        return out
    remaining = sorted(f"{r.topic_name}-{int(r.partition_index)}" for r in response.remaining_partitions)
    out["answer"] = {"error": int(response.error_code), "remaining": remaining}
    return out
