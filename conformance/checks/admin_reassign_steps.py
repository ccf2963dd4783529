"""Steps of the admin-API reassignment checks (conformance ring; black-box).

Kafka's brokers 100, 101, 102 are 1, 2, 3; broker 4, started first, is the controller, so that
pausing a broker never pauses the controller. A paused broker (SIGSTOP) with a 30 s ZooKeeper
session stays registered (live) while it cannot fetch: it stands for Kafka's replication
throttles that keep a target replica out of the ISR.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.checks import admin_wire as aw
from conformance.scenarios import wait_cluster_known, writes
from probes.txnrecords import TxnRecord

__all__ = [
    "CONTROLLER",
    "SLOW",
    "TP",
    "ZNODE",
    "admin_cluster",
    "alter",
    "listed",
    "listed_at",
    "paused",
    "topic_writes",
    "topic_znode",
    "wait_done",
    "znode_writes",
]

SLOW = {"zookeeper.session.timeout.ms": "30000"}
CONTROLLER = 4
ZNODE = "/admin/reassign_partitions"
TP = tuple[str, int]


def admin_cluster(cluster_factory: ClusterFactory) -> Cluster:
    cluster = cluster_factory(4, start=False, overrides=SLOW)
    cluster.start([CONTROLLER])
    assert cluster.wait_controller() == CONTROLLER, cluster.summary()
    cluster.start([1, 2, 3])
    wait_cluster_known(cluster)
    return cluster


@contextmanager
def paused(cluster: Cluster, *bids: int) -> Iterator[None]:
    for bid in bids:
        cluster.pause(bid)
    try:
        yield
    finally:
        for bid in bids:
            cluster.resume(bid)


def topic_znode(assignment: dict[int, list[int]], adding: dict[int, list[int]] | None = None,
                removing: dict[int, list[int]] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "version": 2,
        "partitions": {str(p): r for p, r in assignment.items()},
        "adding_replicas": {str(p): r for p, r in (adding or {}).items()},
        "removing_replicas": {str(p): r for p, r in (removing or {}).items()},
    }


def topic_writes(cluster: Cluster, topic: str, since: int) -> list[tuple[TxnRecord, dict[str, Any]]]:
    return [
        (r, json.loads(op.data or b"{}"))
        for r, op in writes(cluster.history()[since:])
        if op.path == f"/brokers/topics/{topic}" and op.op == "setData"
    ]


def znode_writes(cluster: Cluster, since: int) -> list[tuple[TxnRecord, str]]:
    return [(r, op.op) for r, op in writes(cluster.history()[since:]) if op.path == ZNODE]


def alter(cluster: Cluster, *entries: tuple[TP, list[int] | None]) -> dict[TP, aw.Outcome]:
    top, results = aw.alter_reassignments(cluster, CONTROLLER, list(entries))
    assert top == (0, None), f"AlterPartitionReassignments top-level {top}"
    return results


def listed(cluster: Cluster, partitions: list[TP] | None = None) -> dict[TP, aw.Reassignment]:
    top, result = aw.list_reassignments(cluster, CONTROLLER, partitions)
    assert top == (0, None), f"ListPartitionReassignments top-level {top}"
    return result


def wait_done(cluster: Cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    want = topic_znode(assignment)
    wait_for(
        lambda: cluster.get_json(f"/brokers/topics/{topic}") == want,
        cluster.deadline(40),
        lambda: (
            f"{topic} to end at {want}: {cluster.get_json(f'/brokers/topics/{topic}')}; {cluster.summary()}"
        ),
    )


def listed_at(cluster: Cluster, bid: int) -> dict[TP, aw.Reassignment]:
    top, result = aw.list_reassignments(cluster, bid, None)
    assert top == (0, None), top
    return result
