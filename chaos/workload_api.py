"""The workload's admin-API ops: the controller paths of KIP-455/KIP-460 and topic configs
(ring: drivers; spec §13).

Mixed into :class:`chaos.workload.Client`. Each op records Kafka's answer in its completion value
(per-partition error codes, the listing) together with ``started_ms`` / ``ended_ms``, the
wall clock (``time.time()``, the clock ZooKeeper stamps its transactions with on this host)
around the request, so the checkers can place the answer against the transaction log.

=====================  ==========================================================================
op                     how (Kafka 2.5.1, spec §13)
=====================  ==========================================================================
reassign_api           AlterPartitionReassignments v0 (kio) to the controller's CLIENT listener
cancel_reassignment    the same request with ``Replicas`` null for each partition
list_reassignments     ListPartitionReassignments v0 (kio), named partitions or null (all)
elect_leaders          confluent-kafka ``elect_leaders`` (ElectLeaders), PREFERRED or UNCLEAN
alter_topic_config     confluent-kafka ``incremental_alter_configs`` (SET, or DELETE for null)
alter_broker_config    IncrementalAlterConfigs v1 (kio) of a BROKER resource: ``<default>`` (the
                       empty name, which confluent-kafka refuses) or a broker id, sent to that broker
=====================  ==========================================================================

Outcomes: ``ok`` when every partition (or the resource) answered 0; ``fail`` when the request
was never sent (no controller, connection refused) or every answer is an error that means "not
done" (NOT_CONTROLLER, INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION,
NO_REASSIGNMENT_IN_PROGRESS, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, INVALID_TOPIC_EXCEPTION, INVALID_CONFIG, …); ``info`` for a
timeout, a lost connection, REQUEST_TIMED_OUT (the election may be done: ElectLeaders answers
only once the controller's metadata shows the leader) or UNKNOWN_SERVER_ERROR (an
AlterPartitionReassignments that threw after writing the topic znode, §13.1.5).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from cluster import admin_api
from cluster.cluster import Cluster

__all__ = ["NOT_DONE_CODES", "AdminApiOps", "outcome"]

OpResult = tuple[str, dict[str, Any] | None, str | None]

#: Kafka error codes after which the partition's request certainly changed nothing.
NOT_DONE_CODES = frozenset(
    {
        3,  # UNKNOWN_TOPIC_OR_PARTITION
        17,  # INVALID_TOPIC_EXCEPTION (ElectLeaders: topic being deleted)
        39,  # INVALID_REPLICA_ASSIGNMENT
        40,  # INVALID_CONFIG
        41,  # NOT_CONTROLLER
        42,  # INVALID_REQUEST
        80,  # PREFERRED_LEADER_NOT_AVAILABLE
        83,  # ELIGIBLE_LEADERS_NOT_AVAILABLE
        84,  # ELECTION_NOT_NEEDED
        85,  # NO_REASSIGNMENT_IN_PROGRESS
    }
)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def outcome(codes: Iterable[int]) -> str:
    """ok when all are 0, fail when all mean "not done", info otherwise (or when there are none)."""
    listed = list(codes)
    if listed and all(c == 0 for c in listed):
        return "ok"
    if listed and all(c in NOT_DONE_CODES for c in listed):
        return "fail"
    return "info"


def _partitions(value: Mapping[str, Any]) -> list[tuple[str, int]]:
    return [(str(p["topic"]), int(p["partition"])) for p in value.get("partitions") or ()]


class AdminApiOps:
    """The admin-API ops of :class:`chaos.workload.Client` (see the module docstring)."""

    cluster: Cluster
    op_timeout_s: float

    _admin_client: Callable[[], AdminClient]  # a method of Client, the class this mixes into

    # --- AlterPartitionReassignments / ListPartitionReassignments (kio) --------------------------

    def _alter(
        self, value: Mapping[str, Any], targets: list[tuple[tuple[str, int], list[int] | None]]
    ) -> OpResult:
        started = _now_ms()
        try:
            answer, results = admin_api.to_controller(
                self.cluster,
                lambda address: admin_api.alter_partition_reassignments(
                    address, targets, timeout_s=self.op_timeout_s
                ),
                deadline_s=time.monotonic() + self.op_timeout_s,
            )
        except admin_api.NoController as exc:
            return "fail", None, f"no controller to send to: {exc}"
        except ConnectionRefusedError as exc:
            return "fail", None, f"not sent: {exc}"
        except OSError as exc:
            return "info", None, f"{type(exc).__name__}: {exc}"
        done = {**value, "controller": answer.broker, "started_ms": started, "ended_ms": _now_ms()}
        if answer.error_code:
            done["error_code"] = answer.error_code
            kind = "fail" if answer.error_code in NOT_DONE_CODES else "info"
            return kind, done, f"error {answer.error_code}: {answer.error_message}"
        codes = [results.get(tp, (-2, "no answer for the partition"))[0] for tp, _ in targets]
        done["results"] = [
            {"topic": t, "partition": p, "error_code": c}
            for ((t, p), _), c in zip(targets, codes, strict=True)
        ]
        errors = {f"{t}-{p}": results.get((t, p)) for (t, p), _ in targets if results.get((t, p), (-2,))[0]}
        return outcome(codes), done, (str(errors) if errors else None)

    def _reassign_api(self, value: Mapping[str, Any]) -> OpResult:
        topic = str(value["topic"])
        targets = [((topic, int(p)), [int(b) for b in r]) for p, r in value["assignment"].items()]
        return self._alter(value, list(targets))

    def _cancel_reassignment(self, value: Mapping[str, Any]) -> OpResult:
        topic = str(value["topic"])
        targets: list[tuple[tuple[str, int], list[int] | None]] = [
            ((topic, int(p)), None) for p in value["partitions"]
        ]
        return self._alter(value, targets)

    def _list_reassignments(self, value: Mapping[str, Any]) -> OpResult:
        named = None if value.get("partitions") is None else _partitions(value)
        started = _now_ms()
        try:
            answer, listed = admin_api.to_controller(
                self.cluster,
                lambda address: admin_api.list_partition_reassignments(
                    address, named, timeout_s=self.op_timeout_s
                ),
                deadline_s=time.monotonic() + self.op_timeout_s,
            )
        except admin_api.NoController as exc:
            return "fail", None, f"no controller to send to: {exc}"
        except ConnectionRefusedError as exc:
            return "fail", None, f"not sent: {exc}"
        except OSError as exc:
            return "info", None, f"{type(exc).__name__}: {exc}"
        done: dict[str, Any] = {
            **value,
            "controller": answer.broker,
            "started_ms": started,
            "ended_ms": _now_ms(),
        }
        if answer.error_code:
            done["error_code"] = answer.error_code
            return "fail", done, f"error {answer.error_code}: {answer.error_message}"
        done["reassigning"] = [
            {"topic": t, "partition": p, "replicas": list(r), "adding": list(a), "removing": list(m)}
            for (t, p), (r, a, m) in sorted(listed.items())
        ]
        return "ok", done, None

    # --- ElectLeaders, IncrementalAlterConfigs (confluent-kafka) ---------------------------------

    def _elect_leaders(self, value: Mapping[str, Any]) -> OpResult:
        kind = ElectionType[str(value["election_type"])]
        tps = [TopicPartition(t, p) for t, p in _partitions(value)]
        started = _now_ms()
        try:
            # confluent-kafka 2.16's binding rejects its documented timeout keywords
            # (SystemError); the client's socket.timeout.ms (5 s) bounds the request instead
            future = self._admin_client().elect_leaders(kind, tps)
            answers = future.result(timeout=self.op_timeout_s + 2.0)
        except LookupError:
            return "fail", None, "no broker registered: the client has nothing to bootstrap from"
        except KafkaException as exc:
            return _kafka_failure(exc, "ElectLeaders")
        except TimeoutError:
            return "info", None, "ElectLeaders timed out"
        by_tp = {(k.topic, k.partition): e for k, e in answers.items()}
        results: list[dict[str, Any]] = [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "error_code": _code(by_tp[key]) if (key := (tp.topic, tp.partition)) in by_tp else -2,
            }
            for tp in tps
        ]
        done = {**value, "results": results, "started_ms": started, "ended_ms": _now_ms()}
        errors = [f"{r['topic']}-{r['partition']}: {r['error_code']}" for r in results if r["error_code"]]
        return outcome(int(r["error_code"]) for r in results), done, ("; ".join(errors) or None)

    def _alter_topic_config(self, value: Mapping[str, Any]) -> OpResult:
        return self._alter_configs(ResourceType.TOPIC, str(value["topic"]), value)

    def _alter_broker_config(self, value: Mapping[str, Any]) -> OpResult:
        """A dynamic broker config (IncrementalAlterConfigs v1 through kio): the cluster-wide
        default (the empty resource name) to the first registered broker, or one broker's own
        config to that broker, as Kafka requires."""
        entity = str(value["entity"])
        if entity == "<default>":
            registered = [b for b in self.cluster.broker_ids if self.cluster.zk.exists(f"/brokers/ids/{b}")]
            if not registered:
                return "fail", None, "no broker registered: nothing to send the request to"
            target, name = registered[0], ""
        else:
            target, name = int(entity), entity
        started = _now_ms()
        try:
            address = self.cluster.endpoint(target)
            code, message = admin_api.incremental_alter_broker_config(
                address, name, list(value["config"].items()), timeout_s=self.op_timeout_s
            )
        except RuntimeError as exc:  # the broker is not registered: nothing was sent
            return "fail", None, f"not sent: {exc}"
        except ConnectionRefusedError as exc:
            return "fail", None, f"not sent: {exc}"
        except OSError as exc:
            return "info", None, f"{type(exc).__name__}: {exc}"
        if code:
            kind = "fail" if code in NOT_DONE_CODES else "info"
            return kind, None, f"IncrementalAlterConfigs: error {code}: {message}"
        return "ok", {**value, "broker": target, "started_ms": started, "ended_ms": _now_ms()}, None

    def _alter_configs(self, kind: ResourceType, name: str, value: Mapping[str, Any]) -> OpResult:
        entries = [
            ConfigEntry(
                key,
                None if setting is None else str(setting),
                incremental_operation=AlterConfigOpType.DELETE if setting is None else AlterConfigOpType.SET,
            )
            for key, setting in value["config"].items()
        ]
        resource = ConfigResource(kind, name, incremental_configs=entries)
        started = _now_ms()
        try:
            futures = self._admin_client().incremental_alter_configs(
                [resource], request_timeout=self.op_timeout_s
            )
            next(iter(futures.values())).result(timeout=self.op_timeout_s + 2.0)
        except LookupError:
            return "fail", None, "no broker registered: the client has nothing to bootstrap from"
        except KafkaException as exc:
            return _kafka_failure(exc, "IncrementalAlterConfigs")
        except TimeoutError:
            return "info", None, "IncrementalAlterConfigs timed out"
        return "ok", {**value, "started_ms": started, "ended_ms": _now_ms()}, None


def _code(err: object) -> int:
    """The Kafka error code of a per-partition answer (None: no error; a KafkaException or a
    KafkaError: its code)."""
    if err is None:
        return 0
    if isinstance(err, KafkaException) and err.args:
        err = err.args[0]
    if isinstance(err, KafkaError):
        return int(err.code())
    return -1


def _kafka_failure(exc: KafkaException, api: str) -> OpResult:
    code = _code(exc)
    kind = "fail" if code in NOT_DONE_CODES else "info"
    return kind, None, f"{api}: {exc.args[0] if exc.args else exc}"
