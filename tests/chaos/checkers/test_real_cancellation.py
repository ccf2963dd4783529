"""A real API reassignment cancelled under a paused target, judged by the checkers: 3 reference
nodes on a real ZooKeeper, the workload's own admin-API ops over the Kafka wire.

t-0 on [a, b] is reassigned to [p, b] through AlterPartitionReassignments while broker p (not the
controller) is paused (SIGSTOP: registered, so the target is accepted, but it cannot join the
ISR), listed, and cancelled; p resumes. Kafka 2.5.1 ends t-0 on [b, a] (the original replicas in
the reassignment's order); every checker must find the run valid, the cancellation judged — and the
same real inputs with the target left in place must be invalid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers import FinalState, TopicState, aggregate, check_all
from chaos.checkers.admin_api import cancellations_reverted
from chaos.final_state import journals_from_requests, read_zookeeper_state
from chaos.history import History
from chaos.workload_api import AdminApiOps
from cluster import admin
from cluster.cluster import Cluster, wait_for
from cluster.targets import load_target
from conformance.ahead import cluster_on
from harness.zookeeper import ZooKeeperServer
from probes import TopicPartition
from tests.chaos.checkers.real_scenario import OVERRIDES, _quiesce

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


@pytest.fixture
def cluster(zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    target = load_target("reference")
    if reason := target.unavailable_reason():
        pytest.skip(reason)
    made = cluster_on(target, zk_server, zk_chroot, tmp_path, overrides=OVERRIDES)
    try:
        yield made
    finally:
        made.close()


class _Ops(AdminApiOps):
    """The workload's admin-API ops on a plain cluster (no AdminClient op is used here)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster, self.op_timeout_s = cluster, 10.0


def _op(history: History, ops: _Ops, f: str, value: dict[str, Any]) -> dict[str, Any]:
    invoked = history.invoke("client-0", f, value)
    kind, done, error = getattr(ops, f"_{f}")(value)
    history.complete(invoked, kind, done, error)
    assert kind == "ok", (f, done, error)
    assert done is not None
    return dict(done)


def _run(cluster: Cluster) -> tuple[History, FinalState, tuple[int, int, int]]:
    """The run; (a, b, p): t-0 on [a, b] is reassigned to [p, b] with p (not the controller) paused."""
    history = History()
    cluster.start()
    controller = cluster.wait_controller()
    p = max(x for x in (1, 2, 3) if x != controller)
    a, b = sorted({1, 2, 3} - {p})
    assignment = {"topic": "t", "assignment": {"0": [a, b]}}
    history.complete(history.invoke("client-0", "create_topic", assignment), "ok")
    admin.create_topic_zk(cluster, "t", {0: [a, b]})
    wait_for(
        lambda: (s := cluster.partition_state("t", 0)) is not None and sorted(s["isr"]) == [a, b],
        cluster.deadline(30),
        f"t-0 led with ISR [{a}, {b}]",
    )
    ops = _Ops(cluster)
    cluster.pause(p)
    try:
        _op(history, ops, "reassign_api", {"topic": "t", "assignment": {"0": [p, b]}})
        listed = _op(history, ops, "list_reassignments", {"partitions": [{"topic": "t", "partition": 0}]})
        assert listed["reassigning"] == [
            {"topic": "t", "partition": 0, "replicas": [p, b, a], "adding": [p], "removing": [a]}
        ]
        _op(history, ops, "cancel_reassignment", {"topic": "t", "partitions": [0]})
    finally:
        cluster.resume(p)
    quiesce = history.invoke("nemesis", "quiesce", {})
    views = _quiesce(cluster, deadline_s=60)
    history.complete(quiesce, "ok")
    assert cluster.journal is not None
    final = FinalState(
        **read_zookeeper_state(cluster.zk),
        metadata=views,
        journals=journals_from_requests(cluster.journal.requests()),
        quiesced=True,
    )
    return history, final, (a, b, p)


def test_a_real_cancellation_is_judged_reverted_and_a_wrong_one_invalid(cluster: Cluster) -> None:
    history, final, (a, b, p) = _run(cluster)
    records = cluster.history()
    verdicts = check_all(history.ops, records, final)
    report = "\n".join(f"{v.validity:8} {v.checker}: {v.message}" for v in verdicts)
    assert aggregate(verdicts) == "valid", f"{report}\n{cluster.summary()}"
    assert final.topics["t"].replicas == {0: (b, a)}, report
    assert not final.topics["t"].being_reassigned(0)
    assert not any(r.path == "/admin/reassign_partitions" for r in records), "the API wrote the admin znode"
    cancelled = next(v for v in verdicts if v.checker == "cancellations_reverted")
    assert "1 partition(s) judged" in cancelled.message, report
    assert cancelled.excused == {
        "cancellation_keeps_reassignment_order": ("cancelled reassignment not reverted t-0",)
    }
    listed = next(v for v in verdicts if v.checker == "listings_agree_with_topic_znode")
    assert "1 listing(s)" in listed.message, report

    # the same real run, had the cancellation left the target replicas, is invalid
    t = final.topics["t"]
    wrong = dataclasses.replace(final, topics={"t": TopicState(t.czxid, {0: (p, b)})})
    v = cancellations_reverted(history.ops, records, wrong)
    assert v.validity == "invalid", v.message
    assert f"t-0 ends on [{p}, {b}]" in v.message
    assert TopicPartition("t", 0) in final.partition_states
