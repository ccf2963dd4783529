"""The workload client: admin ops the way Kafka's tools and clients issue them (ring: drivers).

Jepsen's client role. :meth:`Client.invoke` runs one op of a schedule step and returns its
outcome for the history: ``ok`` (it took effect), ``fail`` (it certainly did not: the znode it
needed already existed or was missing, the broker answered an error that means "not done") or
``info`` (indeterminate: a timeout or a lost connection — it may or may not have happened).

=====================  ==========================================================================
op                     how (Kafka 2.5, spec §1.3 and §5.1)
=====================  ==========================================================================
create_topic           ZooKeeper admin path: ``/config/topics/<t>`` (set or create) then
                       ``/brokers/topics/<t>``
create_topic_admin     confluent-kafka AdminClient ``CreateTopics`` through the CLIENT proxies
add_partitions         ``AdminZkClient.addPartitions``: the topic znode rewritten (setData, version
                       checked) with the new partitions' replicas
reassign               ``/admin/reassign_partitions`` created (NodeExists: one is in progress)
preferred_election     ``/admin/preferred_replica_election`` created
delete_topic           ``/admin/delete_topics/<t>`` created with null data, if the topic exists
broker_bounce          SIGTERM (controlled shutdown), wait for exit, start again
=====================  ==========================================================================

The admin-API ops (``reassign_api``, ``cancel_reassignment``, ``list_reassignments``,
``elect_leaders``, ``alter_topic_config``) are in :mod:`chaos.workload_api`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)

from chaos.links import ChaosCluster
from chaos.nemesis import NodeGuard, start_when_unregistered
from chaos.workload_api import AdminApiOps
from cluster import admin

__all__ = ["Client", "OpResult"]

OpResult = tuple[str, dict[str, Any] | None, str | None]

#: CreateTopics errors that mean the topic was certainly not created by this request.
_NOT_DONE = {
    KafkaError.TOPIC_ALREADY_EXISTS,
    KafkaError.INVALID_REPLICATION_FACTOR,
    KafkaError.INVALID_PARTITIONS,
    KafkaError.INVALID_REPLICA_ASSIGNMENT,
    KafkaError.TOPIC_EXCEPTION,
    KafkaError.NOT_CONTROLLER,
    KafkaError.INVALID_CONFIG,
}
_INDETERMINATE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)


class Client(AdminApiOps):
    """One workload process's connection to the cluster (shares the cluster's admin session)."""

    cluster: ChaosCluster

    def __init__(self, cluster: ChaosCluster, guard: NodeGuard, *, op_timeout_s: float = 5.0) -> None:
        self.cluster, self.guard, self.op_timeout_s = cluster, guard, op_timeout_s
        self._admin: AdminClient | None = None

    def invoke(self, f: str, value: Mapping[str, Any]) -> OpResult:
        try:
            return getattr(self, f"_{f}")(value)  # type: ignore[no-any-return]
        except _INDETERMINATE as exc:
            return "info", None, f"{type(exc).__name__}: {exc}"
        except KazooException as exc:
            return "info", None, f"{type(exc).__name__}: {exc}"

    # --- ZooKeeper admin path -------------------------------------------------------------------

    def _create_topic(self, value: Mapping[str, Any]) -> OpResult:
        topic = str(value["topic"])
        assignment = {int(p): list(r) for p, r in value["assignment"].items()}
        zk = self.cluster.zk
        if zk.exists(f"/brokers/topics/{topic}"):
            return "fail", None, "topic exists"
        # AdminZkClient: setOrCreateEntityConfigs (a config left by an earlier incarnation is
        # overwritten, never deleted: deleting it is the controller's step), then the topic znode
        config = admin.encode({"version": 1, "config": {}})
        try:
            zk.set(f"/config/topics/{topic}", config)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                zk.create(f"/config/topics/{topic}", config, makepath=True)
        try:
            zk.create(f"/brokers/topics/{topic}", admin.topic_znode(assignment), makepath=True)
        except NodeExistsError:
            return "fail", None, "topic exists"
        return "ok", None, None

    def _add_partitions(self, value: Mapping[str, Any]) -> OpResult:
        topic = str(value["topic"])
        try:
            data, stat = self.cluster.zk.get(f"/brokers/topics/{topic}")
        except NoNodeError:
            return "fail", None, "topic does not exist"
        body = json.loads(data)
        partitions: dict[str, list[int]] = body.get("partitions", {})
        new = {p: list(r) for p, r in value["assignment"].items() if p not in partitions}
        if len(partitions) + len(new) != int(value["partitions"]) or not new:
            return (
                "fail",
                None,
                f"topic has {len(partitions)} partitions; cannot grow to {value['partitions']}",
            )
        body["partitions"] = {**partitions, **new}
        try:
            self.cluster.zk.set(f"/brokers/topics/{topic}", admin.encode(body), version=stat.version)
        except (BadVersionError, NoNodeError):
            return "fail", None, "topic znode changed meanwhile"
        return "ok", None, None

    def _reassign(self, value: Mapping[str, Any]) -> OpResult:
        topic = str(value["topic"])
        if not self.cluster.zk.exists(f"/brokers/topics/{topic}"):
            return "fail", None, "topic does not exist"
        targets = {(topic, int(p)): list(r) for p, r in value["assignment"].items()}
        try:
            admin.reassign_zk(self.cluster, targets)
        except NodeExistsError:
            return "fail", None, "a reassignment is in progress"
        return "ok", None, None

    def _preferred_election(self, value: Mapping[str, Any]) -> OpResult:
        partitions = [(str(p["topic"]), int(p["partition"])) for p in value["partitions"]]
        try:
            admin.preferred_election_zk(self.cluster, partitions)
        except NodeExistsError:
            return "fail", None, "a preferred replica election is in progress"
        return "ok", None, None

    def _delete_topic(self, value: Mapping[str, Any]) -> OpResult:
        topic = str(value["topic"])
        if not self.cluster.zk.exists(f"/brokers/topics/{topic}"):
            return "fail", None, "topic does not exist"
        try:
            admin.delete_topic_zk(self.cluster, topic)
        except NodeExistsError:
            return "fail", None, "topic is already marked for deletion"
        return "ok", None, None

    # --- Kafka protocol -------------------------------------------------------------------------

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            bootstrap = self.cluster.bootstrap()
            if not bootstrap:
                raise _NoBroker
            self._admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
        return self._admin

    def _create_topic_admin(self, value: Mapping[str, Any]) -> OpResult:
        topic = NewTopic(
            str(value["topic"]),
            num_partitions=int(value["partitions"]),
            replication_factor=int(value["replication_factor"]),
        )
        try:
            futures = self._admin_client().create_topics(
                [topic], operation_timeout=self.op_timeout_s, request_timeout=self.op_timeout_s
            )
            futures[str(value["topic"])].result(timeout=self.op_timeout_s + 2.0)
        except _NoBroker:
            return "fail", None, "no broker registered: the client has nothing to bootstrap from"
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            code = err.code() if isinstance(err, KafkaError) else None
            return ("fail" if code in _NOT_DONE else "info"), None, str(err)
        except TimeoutError:
            return "info", None, "CreateTopics timed out"
        return "ok", None, None

    # --- processes ------------------------------------------------------------------------------

    def _broker_bounce(self, value: Mapping[str, Any]) -> OpResult:
        bid = int(value["broker_id"])
        if not self.guard.claim(bid):
            return "fail", None, f"node {bid} is under a process fault"
        try:
            if not self.cluster.nodes[bid].running:
                return "fail", None, f"node {bid} is not running"
            code = self.cluster.stop(bid)
            start_when_unregistered(self.cluster, bid)
        except Exception as exc:
            return "info", None, f"{type(exc).__name__}: {exc}"
        finally:
            self.guard.release(bid)
        return "ok", {**value, "exit_code": code}, None


class _NoBroker(LookupError):
    """No broker is registered, so an AdminClient has no bootstrap address."""
