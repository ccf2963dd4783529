"""``--master spark://…`` for real: a Spark standalone master and one worker on 127.0.0.1
(:mod:`tests.spark_standalone`: each daemon in its own process group, killed as a group whatever
happens, and dying with the test process even when that is killed), the job run against them
through the CLI, and its outputs compared with the same job in local mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reports.conftest import record, runs, write_jsonl
from tests.spark_standalone import standalone as spark_standalone

pytestmark = pytest.mark.reports

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1800  # a ceiling for a loaded 2-core machine
# What the job's outputs are compared on: everything but the run's own facts (times, master).
VOLATILE_SUMMARY_KEYS = ("started_at", "wall_s", "spark")


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``spark://127.0.0.1:PORT`` with one registered worker (1 core, 1 GiB); the worker's dir."""
    with spark_standalone(tmp_path / "cluster", workers=1, cores=1, memory="1g") as cluster:
        yield cluster.master_url, cluster.base / "work" / "w0"


def _build(inputs: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reports", "build", "--input", str(inputs), "--out", str(out),
         "--driver-memory", "1g", *extra],
        capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=ROOT, check=False,
        env=os.environ | {"PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip


def _records(path: Path) -> Path:
    chaos = [
        record(kind="chaos-run", test_id="chaos/links", fault_package="kill-broker", seed=i, run_id=f"c{i}",
               run_order=f"20260101T00000{i}.000000Z-c{i}", outcome="failed" if i == 2 else "passed",
               reason="checker one-controller: 2 controllers at epoch 7" if i == 2 else None,
               phase_metrics=[{"name": "time_to_heal", "value": v, "unit": "s"}],
               started_at=f"2026-01-0{1 + i % 3}T00:00:00+00:00",
               finished_at=f"2026-01-0{1 + i % 3}T00:00:05+00:00")
        for i, v in enumerate([1.5, 2.25, 0.75, 9.0, 3.0])
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_jsonl(path, runs("t.py::a", "PFPPFPPS") + runs("t.py::b", "PPPP", day=2) + chaos)


def test_a_standalone_master_runs_the_job_with_local_mode_outputs(
    standalone: tuple[str, Path], tmp_path: Path
) -> None:
    master_url, work = standalone
    inputs = _records(tmp_path / "in" / "runs.jsonl")
    on_cluster = _build(inputs.parent, tmp_path / "cluster-out", "--master", master_url)
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    # The tasks ran in the worker's executor, not in the driver: its log says so.
    executor_logs = list(work.glob("app-*/*/stderr"))
    assert executor_logs, f"no executor was launched under {work}"
    assert any("Finished task" in p.read_text(errors="replace") for p in executor_logs)

    local = _build(inputs.parent, tmp_path / "local-out", "--master", "local[2]")
    assert local.returncode == 0, local.stderr[-3000:]
    cluster_out, local_out = tmp_path / "cluster-out", tmp_path / "local-out"
    csvs = sorted(p.name for p in local_out.glob("*.csv"))
    assert "flakiness.csv" in csvs
    assert "latency.csv" in csvs
    assert sorted(p.name for p in cluster_out.glob("*.csv")) == csvs
    for name in csvs:
        assert (cluster_out / name).read_text() == (local_out / name).read_text(), name
    parquet = sorted(p.name for p in (local_out / "parquet").iterdir())
    assert sorted(p.name for p in (cluster_out / "parquet").iterdir()) == parquet
    summaries = [json.loads((d / "summary.json").read_text()) for d in (cluster_out, local_out)]
    assert summaries[0]["spark"]["master"] == master_url
    for s in summaries:
        for key in VOLATILE_SUMMARY_KEYS:
            s.pop(key)
    assert summaries[0] == summaries[1]
    assert "records: 17  rejected: 0" in on_cluster.stdout
