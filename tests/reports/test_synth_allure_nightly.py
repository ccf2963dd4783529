"""Synthetic records (checked by the schema's own validator), the Allure 3 report, nightly."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from records.run_record import validate
from reports import allure, nightly, synth
from reports.errors import InputError
from tests.reports.conftest import record

pytestmark = pytest.mark.reports

ROOT = Path(__file__).resolve().parents[2]


def test_synthetic_records_are_schema_valid_and_varied(spark: SparkSession, tmp_path: Path) -> None:
    synth.write(
        synth.synthetic_records(spark, 3_000, seed=2, days=2, duplicate_rate=0.01), str(tmp_path / "s")
    )
    records = []
    for f in sorted((tmp_path / "s").glob("part-*.json.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            records += [json.loads(line) for line in fh]
    assert len(records) == 3_000
    assert [p for r in records for p in validate(r)] == []
    assert {r["schema_version"] for r in records} == {2}
    # record_id as the writers derive it; the last 1 % execute earlier records again: 2,970 ids.
    for r in records:
        suffix = f":{r['seed']}" if r["kind"] == "chaos-run" else ""
        assert r["record_id"] == f"{r['run_id']}:{r['test_id']}{suffix}"
    assert len({r["record_id"] for r in records}) == 2_970
    chaos = [r for r in records if r["kind"] == "chaos-run"]
    assert all(isinstance(r["excused"], dict) for r in chaos)
    assert all(r["excused"] is None for r in records if r["kind"] != "chaos-run")
    with_items = [r for r in chaos if r["excused"]]
    assert 0.05 < len(with_items) / len(chaos) < 0.3
    assert {q for r in with_items for q in r["excused"]} <= set(synth.QUIRKS)
    assert {r["target_version"] for r in records if r["target"] == "kafka-2.5"} == {"2.5.1"}
    outcomes = Counter(r["outcome"] for r in records)
    assert {"passed", "failed", "error", "skipped"} <= set(outcomes)
    assert {r["kind"] for r in records} == {"conformance-test", "chaos-run"}
    assert len({r["fault_package"] for r in records}) == 1 + len(synth.FAULT_PACKAGES)
    heal = sorted(m["value"] for r in records for m in r["phase_metrics"] if m["name"] == "time_to_heal")
    assert heal[-1] > 5 * heal[len(heal) // 2]  # a heavy tail: the max is far above the median


def _allure_result(path: Path, name: str, status: str) -> None:
    path.write_text(
        json.dumps(
            {
                "name": name,
                "status": status,
                "start": 1767607200000,
                "stop": 1767607201000,
                "uuid": path.stem,
                "historyId": name,
                "fullName": f"t#{name}",
                "labels": [],
            }
        ),
        encoding="utf-8",
    )


def test_allure_generates_one_offline_html_file(tmp_path: Path) -> None:
    results = tmp_path / "allure-results"
    results.mkdir()
    _allure_result(results / "a1-result.json", "test_alpha_check", "passed")
    _allure_result(results / "b2-result.json", "test_beta_check", "failed")
    index = allure.generate(results, tmp_path / "report", name="Demo")
    assert index == (tmp_path / "report" / "index.html").resolve()
    assert index.stat().st_size > 100_000  # the app and the data in one file
    summary = json.loads((tmp_path / "report" / "summary.json").read_text(encoding="utf-8"))
    assert summary["stats"] == {"total": 2, "passed": 1, "failed": 1}


def test_allure_without_results_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=f"allure results {tmp_path}: no \\*-result.json files"):
        allure.generate(tmp_path, tmp_path / "out")


def test_nightly_prunes_old_nights_only(tmp_path: Path) -> None:
    for name in ("20260101T000000Z", "20260301T000000Z", "keep-me"):
        (tmp_path / name).mkdir()
    removed = nightly.prune(tmp_path, 30, datetime(2026, 3, 15, tzinfo=UTC))
    assert removed == [tmp_path / "20260101T000000Z"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20260301T000000Z", "keep-me"]


def test_nightly_chaos_command_and_runner_status() -> None:
    args = argparse.Namespace(runner_args=["--parallel", "1"])
    cmd = nightly.chaos_command(Path("/s/n"), 5, args.runner_args)
    assert cmd == [
        sys.executable,
        "-m",
        "chaos",
        "run",
        "--runs",
        "5",
        "--out",
        "/s/n/chaos",
        "--parallel",
        "1",
    ]
    assert nightly._batch_problem(0) is None
    assert nightly._batch_problem(1) is None  # an invalid run is a finding, reported
    assert nightly._batch_problem(3) is None  # so is a run that could not be judged (records: error)
    assert "rejected its arguments" in str(nightly._batch_problem(2))
    assert nightly._batch_problem(-9) == "the chaos runner failed (exit -9)"


def test_nightly_with_a_failing_runner_still_reports_kept_records(tmp_path: Path) -> None:
    kept = tmp_path / "store" / "nights" / "20260101T000000Z" / "chaos"
    kept.mkdir(parents=True)
    chaos_run = record(
        kind="chaos-run",
        test_id="links",
        fault_package="partition",
        seed=1,
        phase_metrics=[{"name": "time_to_heal", "value": 1.5, "unit": "s"}],
    )
    (kept / "chaos-runs-main.jsonl").write_text(json.dumps(chaos_run) + "\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reports",
            "nightly",
            "--runs",
            "1",
            "--store",
            str(tmp_path / "store"),
            "--keep-days",
            "100000",
            "--driver-memory",
            "1g",
            "--",
            "--scenario",
            "no-such-scenario",
        ],
        capture_output=True,
        text=True,
        timeout=1800,  # a ceiling: the report's JVM is slow on a loaded 2-core machine
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "nightly: the chaos runner rejected its arguments (exit 2)" in done.stderr
    assert f"nightly: report at {tmp_path / 'store' / 'report' / 'report.html'}" in done.stdout
    assert "records: 1  rejected: 0" in done.stdout


def _marked_processes(marker: str) -> list[str]:
    """Processes whose environment carries ``marker`` (everything a run started inherits it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            if marker.encode() in environ:
                found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()[:200]!r}")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def test_nightly_with_a_budget_runs_chaos_then_reports_and_leaves_nothing_running(tmp_path: Path) -> None:
    # One-run batches of a short scenario within a one-minute budget, then the report over the night.
    marker = f"kzk-nightly-test-{uuid.uuid4().hex}"
    store = tmp_path / "store"
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "reports", "nightly", "--budget-minutes", "1", "--batch-runs", "1",
         "--store", str(store), "--driver-memory", "1g",
         "--", "--parallel", "1", "--scenario", "links", "--seed", "7", "--no-progress"],
        capture_output=True, text=True, timeout=1800, cwd=ROOT, check=False,
        env=os.environ | {"KZK_NIGHTLY_TEST_MARK": marker},
    )  # fmt: skip
    wall_s = time.monotonic() - t0
    assert done.returncode == 0, done.stderr[-3000:]
    batches = done.stdout.count("nightly: chaos runner: ")
    assert batches >= 1
    nights = list((store / "nights").iterdir())
    assert len(nights) == 1
    records = [
        json.loads(line)
        for f in sorted((nights[0] / "chaos").rglob("chaos-runs-*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(records) >= batches  # every batch ran at least one chaos run and kept its record
    assert {r["kind"] for r in records} == {"chaos-run"}
    summary = json.loads((store / "report" / "summary.json").read_text(encoding="utf-8"))
    assert summary["records"]["by_source_and_kind"] == {"records/chaos-run": len(records)}
    assert f"nightly: report at {store / 'report' / 'report.html'}" in done.stdout
    assert wall_s < 60 + 900  # the budget, plus one batch's overrun and the report
    # Nothing the night started outlives it: runner, nodes, ZooKeeper, proxies, the Spark JVM.
    deadline = time.monotonic() + 30
    while (left := _marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == []
