"""The checkers over a real short run: real ZooKeeper, 3 reference nodes, a controller SIGKILL.

The run (``real_scenario.run_failover_scenario``) creates topics through ZooKeeper and through
confluent-kafka's AdminClient, starts a reassignment, kills the controller, deletes a topic while
the controller is down, runs a preferred election, restarts the killed node and waits for
quiescence. A correct controller must get ``valid`` from every checker; the same real inputs
with one stale controller write added must not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.checkers import aggregate, check_all
from chaos.checkers.safety import controller_writes_fenced, no_write_after_epoch_superseded
from cluster.cluster import Cluster, wait_for
from cluster.targets import load_target
from conformance.ahead import cluster_on
from harness.zookeeper import ZooKeeperServer
from probes import TxnRecord
from tests.chaos.checkers.builders import set_data, state_data, state_path
from tests.chaos.checkers.real_scenario import OVERRIDES, run_failover_scenario

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


#: The reference's batching mode (not Kafka): several fenced writes after one epoch check.
BATCH = {"reference.controller.zk.batch.writes": "true"}


@pytest.fixture(params=[{}, BATCH], ids=["default", "batched"])
def cluster(
    request: pytest.FixtureRequest, zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> Iterator[Cluster]:
    target = load_target("reference")
    reason = target.unavailable_reason()
    if reason:
        pytest.skip(reason)
    made = cluster_on(target, zk_server, zk_chroot, tmp_path, overrides={**OVERRIDES, **request.param})
    try:
        yield made
    finally:
        made.close()


def test_every_checker_finds_a_real_controller_failover_valid(cluster: Cluster) -> None:
    capture = run_failover_scenario(cluster)
    verdicts = check_all(capture.history, capture.records, capture.final_state)
    report = "\n".join(f"{v.validity:8} {v.checker}: {v.message}" for v in verdicts)
    assert aggregate(verdicts) == "valid", f"{report}\n{cluster.summary()}"

    # the run really exercised what the checkers judge
    state = capture.final_state
    assert state.controller_epoch == 2, report
    epochs = {r.controller_epoch for journal in state.journals.values() for r in journal}
    assert epochs == {1, 2}, f"requests of both controllers journalled: {epochs}"
    assert set(state.topics) == {"t1", "t3"}
    assert [op.type for op in capture.history.ops if op.f == "quiesce"] == ["invoke", "ok"]
    if cluster.nodes[1].properties.get("reference.controller.zk.batch.writes") == "true":
        sizes = [len(r.ops) for r in capture.records if r.op == "multi" and r.ops[0].op == "check"]
        assert max(sizes) > 2, f"batching mode on, yet every fenced multi has one write: {sizes}"

    # one stale write by the killed controller's session, appended to the real log, is caught
    first_session = next(r.session_id for r in capture.records if r.op == "multi" and r.ops[1].data == b"1")
    last = capture.records[-1]
    stale = TxnRecord(
        last.zxid + 1,
        first_session,
        999,
        last.time_ms,
        set_data(state_path("t1", 1), state_data(3, 99, [3]), 99),
    )
    verdict = no_write_after_epoch_superseded(capture.history.ops, [*capture.records, stale], state)
    assert verdict.validity == "invalid"
    assert verdict.evidence[0]["zxid"] == f"0x{stale.zxid:x}"

    # a fence that cannot fail: a multi whose check asks for any version (-1), by a session that
    # never won an election, goes through on the real ZooKeeper, which logs the current version
    t = cluster.zk.transaction()
    t.check("/controller_epoch", -1)
    t.create("/brokers/topics/t3/partitions/9", b"")
    results = t.commit()
    assert not any(isinstance(r, Exception) for r in results), results
    session = cluster.zk.client_id[0]
    impostor = wait_for(
        lambda: next((r for r in cluster.history() if r.session_id == session and r.op == "multi"), None),
        cluster.deadline(10),
        "the impostor's multi in the transaction log",
    )
    assert (impostor.ops[0].op, impostor.ops[0].path) == ("check", "/controller_epoch")
    assert impostor.ops[0].version == state.controller_epoch_version
    fence = controller_writes_fenced(capture.history.ops, cluster.history(), state)
    assert fence.validity == "invalid", fence.message
    assert [e["zxid"] for e in fence.evidence] == [f"0x{impostor.zxid:x}"]
    assert controller_writes_fenced(capture.history.ops, capture.records, state).is_valid
