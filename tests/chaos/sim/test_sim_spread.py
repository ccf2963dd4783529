"""Simulated campaigns spread over machines: ``chaos sim --shard i/N`` and ``--master spark://…`` on
a real Spark standalone cluster (a master and two workers on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.spark_standalone import standalone

REPO = Path(__file__).resolve().parents[3]
SEED = 7100
RUNS = 12


def _sim(
    *args: str, env: dict[str, str] | None = None, timeout_s: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos", "sim", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _records(out: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(out.glob("sim-runs-*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def _outcomes(records: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return sorted((r["test_id"], r["seed"], r["outcome"]) for r in records)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--shard", "3/2"], "index 3 is not below the shard count 2"),
        (["--shard", "x"], "not of the form i/N"),
        (["--shard", "0/2", "--master", "spark://127.0.0.1:1"], "either --shard"),
        (["--spark-shards", "3"], "goes with --master"),
        (["--replay", "links:1@0", "--shard", "0/2"], "neither --shard nor --master"),
        (["--master", "spark://127.0.0.1:1"], "cannot be reached"),
    ],
)
def test_bad_spread_options_are_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    done = _sim("--runs", "4", "--seed", "1", "--out", str(tmp_path / "out"), *args, timeout_s=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.unit
def test_two_shards_play_exactly_the_schedules_of_the_whole_campaign(tmp_path: Path) -> None:
    whole = _sim("--runs", str(RUNS), "--seed", str(SEED), "-n", "2", "--out", str(tmp_path / "whole"))
    assert whole.returncode in (0, 1), whole.stderr[-3000:]
    for i in range(2):
        part = _sim(
            "--runs", str(RUNS), "--seed", str(SEED), "--shard", f"{i}/2", "--out", str(tmp_path / "parts")
        )
        assert part.returncode in (0, 1), part.stderr[-3000:]
    parts = _records(tmp_path / "parts")
    assert _outcomes(parts) == _outcomes(_records(tmp_path / "whole"))
    assert len({r["run_id"] for r in parts}) == 1, "the shards of one campaign share its id"
    assert len({r["record_id"] for r in parts}) == RUNS


@pytest.mark.chaos
def test_a_spark_campaign_gives_the_local_verdicts_once_each(tmp_path: Path) -> None:
    local = _sim("--runs", str(RUNS), "--seed", str(SEED), "-n", "2", "--out", str(tmp_path / "local"))
    assert local.returncode in (0, 1), local.stderr[-3000:]
    with standalone(tmp_path / "spark", workers=2, cores=1, memory="1g") as cluster:
        done = _sim(
            "--master", cluster.master_url, "--runs", str(RUNS), "--seed", str(SEED), "--spark-shards", "4",
            "--campaign-id", "simspark0001", "--out", str(tmp_path / "spark-out"),
            env={"PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)}, timeout_s=1800,
        )  # fmt: skip
        log = done.stdout + done.stderr
        assert done.returncode == local.returncode, log[-4000:]
    records = _records(tmp_path / "spark-out")
    assert _outcomes(records) == _outcomes(_records(tmp_path / "local")), log[-4000:]
    assert len({r["record_id"] for r in records}) == RUNS == len(records), "a record missing or twice"
    assert {r["run_id"] for r in records} == {"simspark0001"}
    assert {r["kind"] for r in records} == {"sim-run"}
    assert f"{RUNS} runs: " in log
