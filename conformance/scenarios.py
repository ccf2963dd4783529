"""Shared steps and observations of the checks (conformance ring; black-box only).

Waiting: :func:`wait_state` polls a partition state znode until a predicate holds. Histories:
:func:`writes` flattens the chroot's transaction log into successful (record, op) pairs, so a
check can ask for the exact sequence of states a znode went through (:func:`state_history`) or
whether a write was fenced (:func:`fenced`). Requests: :func:`journal` skips the check when the
cluster has no recording proxy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest

from conformance import admin
from conformance.cluster import Cluster, wait_for
from fixtures.probes.request_proxy import ControllerRequest, RequestJournal
from fixtures.probes.txnrecords import TxnOp, TxnRecord

__all__ = [
    "State",
    "create_topic",
    "fenced",
    "fmt",
    "journal",
    "requests_for",
    "state_history",
    "wait_cluster_known",
    "wait_delivered",
    "wait_online",
    "wait_state",
    "writes",
]

State = dict[str, Any]
CREATES = ("create", "create2")


def fmt(records: Sequence[TxnRecord], last: int = 120) -> str:
    return "\n".join(r.describe() for r in records[-last:])


def writes(records: Iterable[TxnRecord]) -> list[tuple[TxnRecord, TxnOp]]:
    """Every successful write op, multis flattened (check ops dropped), in zxid order."""
    out: list[tuple[TxnRecord, TxnOp]] = []
    for r in records:
        if r.failed:
            continue
        if r.op == "multi":
            out += [(r, o) for o in r.ops if o.op != "check"]
        elif r.op in (*CREATES, "setData", "delete"):
            out.append((r, r.txn))
    return out


def fenced(record: TxnRecord, epoch_version: int | None = None) -> bool:
    """A multi whose first op checks ``/controller_epoch`` (at ``epoch_version`` if given).

    ZooKeeper logs a check as ``CheckVersionTxn(path, checked version + 1)``; the transaction-log
    probe reports the checked version itself (``TxnOp.version``), which is what is compared here.
    """
    if record.op != "multi" or not record.ops or record.ops[0].op != "check":
        return False
    first = record.ops[0]
    return first.path == "/controller_epoch" and (epoch_version is None or first.version == epoch_version)


def state_history(cluster: Cluster, topic: str, partition: int) -> list[tuple[State, TxnRecord]]:
    """Every state a partition's state znode was written with, in order."""
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    return [
        (json.loads(op.data or b"{}"), r)
        for r, op in writes(cluster.history())
        if op.path == path and op.op in (*CREATES, "setData")
    ]


def wait_state(
    cluster: Cluster,
    topic: str,
    partition: int,
    pred: Callable[[State], bool],
    what: str,
    *,
    deadline_s: float = 20.0,
) -> State:
    def ok() -> State | None:
        st = cluster.partition_state(topic, partition)
        return st if st is not None and pred(st) else None

    return wait_for(
        ok,
        cluster.deadline(deadline_s),
        lambda: (
            f"{topic}-{partition} {what}; state={cluster.partition_state(topic, partition)}; "
            f"{cluster.summary()}"
        ),
    )


def wait_online(
    cluster: Cluster, topic: str, partitions: Iterable[int], deadline_s: float = 20.0
) -> dict[int, State]:
    return {
        p: wait_state(
            cluster, topic, p, lambda s: s["leader"] >= 0, "to have a leader", deadline_s=deadline_s
        )
        for p in partitions
    }


def create_topic(
    cluster: Cluster, topic: str, assignment: dict[int, list[int]], **kw: Any
) -> dict[int, State]:
    """Admin-write a topic (Kafka's ``--zookeeper`` way) and wait until it is online everywhere.

    "Everywhere": every state znode exists with a leader and, with a recording proxy, every live
    broker has answered an UpdateMetadata carrying each partition's current leader epoch — so a
    ``journal().mark()`` taken afterwards sees only requests caused by what the check does next.
    """
    admin.create_topic_zk(cluster, topic, assignment, **kw)
    states = wait_online(cluster, topic, assignment)
    wait_delivered(cluster, topic, states)
    return states


def wait_delivered(cluster: Cluster, topic: str, states: dict[int, State], deadline_s: float = 15.0) -> None:
    """Every registered broker has answered an UpdateMetadata with ``states``' leader epochs."""
    if cluster.journal is None:
        return
    jr = cluster.journal
    wanted = {(topic, p, s["leader_epoch"]) for p, s in states.items()}

    def delivered() -> bool:
        live = [b for b in cluster.broker_ids if cluster.zk.exists(f"/brokers/ids/{b}")]
        for dest in live:
            got = {
                (e.topic, e.partition, e.leader_epoch)
                for r in jr.requests(api="UpdateMetadata", dest=dest)
                if r.error_code is not None
                for e in r.partitions
            }
            if not wanted <= got:
                return False
        return True

    wait_for(
        delivered,
        cluster.deadline(deadline_s),
        lambda: f"UpdateMetadata for {sorted(wanted)} answered by every live broker:\n{jr.dump()}",
    )


def wait_cluster_known(cluster: Cluster, deadline_s: float = 20.0) -> int:
    """The controller is elected and every registered broker has answered an UpdateMetadata of
    this controller epoch listing all registered brokers (the controller knows them all and has
    armed its per-broker watches). Returns the controller id."""
    cid = cluster.wait_controller(deadline_s)
    if cluster.journal is None:
        return cid
    jr = cluster.journal

    def known() -> bool:
        epoch = (cluster.controller_epoch() or (0, 0))[0]
        live = tuple(b for b in cluster.broker_ids if cluster.zk.exists(f"/brokers/ids/{b}"))
        return all(
            any(
                r.controller_epoch == epoch and r.error_code is not None and r.live_brokers == live
                for r in jr.requests(api="UpdateMetadata", dest=dest)
            )
            for dest in live
        )

    wait_for(known, cluster.deadline(deadline_s), lambda: f"cluster metadata settled:\n{jr.dump()}")
    return cid


def journal(cluster: Cluster) -> RequestJournal:
    if cluster.journal is None:
        pytest.skip("this check needs the request-recording proxy (record_requests=False)")
    return cluster.journal


def requests_for(
    cluster: Cluster, api: str, *, dest: int | None = None, topic: str | None = None, since: int = 0
) -> list[ControllerRequest]:
    items = journal(cluster).requests(api=api, dest=dest, since=since)
    return [r for r in items if topic is None or any(p.topic == topic for p in r.partitions)]
