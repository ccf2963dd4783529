"""Unit: black-box phase metrics (``records.phases``) and the run records that carry them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.targets import REPO_ROOT
from conformance.plugin import PhaseMetrics
from probes.request_proxy import ControllerRequest
from probes.txnrecords import TxnOp, TxnRecord
from records import phases
from records.run_record import METRICS, PhaseMetric, RunRecord, read_records, validate

pytestmark = pytest.mark.unit

_zxid = iter(range(1, 1000))


def _rec(time_ms: int, op: TxnOp, session: int = 1) -> TxnRecord:
    return TxnRecord(zxid=next(_zxid), session_id=session, cxid=0, time_ms=time_ms, txn=op)


def _create(path: str, data: object = None, *, ephemeral: bool = False) -> TxnOp:
    raw = None if data is None else json.dumps(data).encode()
    return TxnOp("create", path, raw, ephemeral=ephemeral)


def _multi(*ops: TxnOp) -> TxnOp:
    return TxnOp("multi", ops=(TxnOp("check", "/controller_epoch", version=1), *ops))


def _election(epoch: int) -> TxnOp:
    return TxnOp(
        "multi",
        ops=(
            _create("/controller", {"version": 1}, ephemeral=True),
            TxnOp("setData", "/controller_epoch", str(epoch).encode(), version=epoch),
        ),
    )


def _state(leader: int, isr: list[int]) -> dict[str, object]:
    return {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}


STATE = "/brokers/topics/t/partitions/0/state"
TIMELINE = [
    _rec(1_000, _create("/brokers/ids/1", {}, ephemeral=True), session=11),
    _rec(1_100, _create("/brokers/ids/2", {}, ephemeral=True), session=12),
    _rec(1_250, _election(1), session=11),
    _rec(2_000, _create("/brokers/topics/t", {"partitions": {"0": [1, 2], "1": [2, 1]}})),
    _rec(2_100, _multi(_create("/brokers/topics/t/partitions"))),
    _rec(2_200, _multi(_create(STATE, _state(1, [1, 2])))),
    _rec(2_300, _multi(_create("/brokers/topics/t/partitions/1/state", _state(2, [2, 1])))),
    _rec(3_000, _create("/admin/reassign_partitions", {"version": 1})),
    _rec(4_500, TxnOp("delete", "/admin/reassign_partitions")),
    _rec(5_000, TxnOp("setData", STATE, json.dumps(_state(1, [1])).encode(), version=1)),
    _rec(5_800, TxnOp("setData", STATE, json.dumps(_state(1, [1, 2])).encode(), version=2)),
    _rec(6_000, TxnOp("closeSession", closed_paths=("/brokers/ids/1", "/controller")), session=11),
    _rec(6_400, _election(2), session=12),
    _rec(6_900, _multi(TxnOp("setData", STATE, json.dumps(_state(2, [2])).encode(), version=3))),
]


def _update_metadata(time_s: float, epoch: int) -> ControllerRequest:
    return ControllerRequest(0, 2, 2, time_s, 6, 6, 0, "UpdateMetadata", controller_epoch=epoch)


def test_each_metric_from_a_synthetic_history() -> None:
    assert phases.controller_election(TIMELINE) == pytest.approx(0.25)  # first registration → create
    assert phases.controller_election(TIMELINE, after_zxid=TIMELINE[2].zxid) == pytest.approx(0.4)
    ums = [_update_metadata(1.5, 1), _update_metadata(6.75, 2), _update_metadata(7.0, 2)]
    assert phases.failover_to_ready(TIMELINE, ums, 1) == pytest.approx(0.25)
    assert phases.failover_to_ready(TIMELINE, ums, 2) == pytest.approx(0.35)
    assert phases.failover_to_ready(TIMELINE, ums, 3) is None
    assert phases.partition_online_after_create(TIMELINE, "t", 2) == pytest.approx(0.3)
    assert phases.partition_online_after_create(TIMELINE, "t", 3) is None
    assert phases.reassignment_completion(TIMELINE) == pytest.approx(1.5)
    assert phases.leader_reelection_after_broker_failure(TIMELINE, 1, "t", 0) == pytest.approx(0.9)
    assert phases.leader_reelection_after_broker_failure(TIMELINE, 3, "t", 0) is None
    assert phases.isr_expansion(TIMELINE, "t", 0, 2, since_s=5.5) == pytest.approx(0.3)
    assert phases.controller_election(TIMELINE[2:3]) is None  # neither a registration nor a loss in view
    assert phases.reassignment_completion(TIMELINE[:8]) is None


def _record(metrics: list[PhaseMetric]) -> RunRecord:
    return RunRecord(
        kind="conformance-test",
        run_id="r1",
        run_order="20240101T000000.000000Z-r1",
        test_id="conformance/checks/test_x.py::test_y",
        behaviour_ids=("EPOCH-1",),
        target="reference",
        profile="2.5",
        outcome="passed",
        duration_s=1.0,
        started_at="2024-01-01T00:00:00.000+00:00",
        finished_at="2024-01-01T00:00:01.000+00:00",
        phase_metrics=tuple(metrics),
    )


def test_recorded_metrics_validate_against_the_schema() -> None:
    sink: list[PhaseMetric] = []
    fixture = PhaseMetrics(sink)
    for name in METRICS:
        fixture.record(name, 0.123456)
    record = json.loads(_record(sink).to_json())
    assert validate(record) == []
    assert [(m["name"], m["value"], m["unit"]) for m in record["phase_metrics"]] == [
        (name, 0.1235, d.unit) for name, d in METRICS.items()
    ]
    bad = {**record, "phase_metrics": [{"name": "controller_election", "value": 1, "unit": "ms"}]}
    assert validate(bad) == ["phase_metrics[0]: unit 'ms', expected 's'"]
    bad = {**record, "phase_metrics": [{"name": "nope", "value": 1, "unit": "s"}]}
    assert validate(bad) == ["phase_metrics[0]: unknown metric 'nope'"]


def test_plugin_writes_valid_records_with_the_fixtures_metrics(tmp_path: Path) -> None:
    """End to end through the conformance plugin: a test recording metrics → a valid run record."""
    (tmp_path / "test_m.py").write_text(
        "def test_m(phase_metrics):\n"
        "    phase_metrics.record('controller_election', 0.5)\n"
        "    phase_metrics.record('reassignment_completion', 1.25)\n"
        "def test_none(phase_metrics):\n"
        "    pass\n",
        encoding="utf-8",
    )
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("PYTEST_XDIST_WORKER", None)
    args = ["-q", "-c", os.devnull, "--rootdir", str(tmp_path), "-p", "conformance.plugin"]
    args += ["-p", "no:cacheprovider", "--results-dir", str(results), "test_m.py"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = {r["test_id"]: r for r in read_records(sorted(results.glob("runs-*.jsonl")))}
    assert set(records) == {"test_m.py::test_m", "test_m.py::test_none"}
    assert records["test_m.py::test_m"]["phase_metrics"] == [
        {"name": "controller_election", "value": 0.5, "unit": "s"},
        {"name": "reassignment_completion", "value": 1.25, "unit": "s"},
    ]
    assert records["test_m.py::test_none"]["phase_metrics"] == []
