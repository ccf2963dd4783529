"""``python -m bench.chaos_cluster``: the run-by-run comparison of a local and a cluster campaign
(unit: hand-written records, expected lists worked out by hand) and its refusals (exit 2 before
anything starts). The campaigns themselves are what tests/chaos/runner/test_shards_and_spark.py
runs on a real standalone cluster; the benchmark's full size is a documented command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.chaos_cluster import compare

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def _rec(test_id: str, seed: int, outcome: str) -> dict[str, object]:
    return {"test_id": test_id, "seed": seed, "outcome": outcome}


def test_identical_campaigns_have_nothing_to_report() -> None:
    local = [_rec("chaos/links", 1, "passed"), _rec("chaos/process", 2, "failed")]
    assert compare(local, list(reversed(local))) == {
        "missing": [],
        "repeated": [],
        "extra": [],
        "differing": [],
    }


def test_each_kind_of_mismatch_is_named() -> None:
    local = [
        _rec("chaos/links", 1, "passed"),
        _rec("chaos/process", 2, "passed"),
        _rec("chaos/partition", 3, "passed"),
    ]
    cluster = [
        _rec("chaos/links", 1, "passed"),
        _rec("chaos/links", 1, "passed"),  # a retried shard's copy that was not dropped
        _rec("chaos/partition", 3, "error"),  # judged unknown on the cluster
        _rec("chaos/links", 9, "passed"),  # a seed the local campaign did not run
    ]  # chaos/process seed 2 never came back
    assert compare(local, cluster) == {
        "missing": ["chaos/process seed 2"],
        "repeated": ["chaos/links seed 1 ×2"],
        "extra": ["chaos/links seed 9"],
        "differing": ["chaos/partition seed 3: passed locally, error on the cluster"],
    }


def test_the_same_seed_of_two_scenarios_is_two_runs() -> None:
    local = [_rec("chaos/links", 5, "passed"), _rec("chaos/process", 5, "passed")]
    assert compare(local, [_rec("chaos/links", 5, "passed")])["missing"] == ["chaos/process seed 5"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--runs", "0"], "'0' is not a whole number >= 1"),
        (["--workers", "x"], "'x' is not a whole number >= 1"),
        (["--parallel", "-1"], "not a whole number >= 1"),
    ],
)
def test_bad_options_are_exit_2_before_anything_starts(args: list[str], says: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "bench.chaos_cluster", *args, "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_an_earlier_local_side_of_another_campaign_is_refused(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier"
    (earlier / "local").mkdir(parents=True)
    side = {"where": "local", "exit_code": 0, "wall_s": 800.0, "records": 100, "valid": 100, "invalid": 0,
            "unknown": 0, "workers": 1, "load_before": "1/1/1", "load_after": "1/1/1"}  # fmt: skip
    (earlier / "bench.json").write_text(
        json.dumps({"runs": 100, "seed": 3000, "parallel": 1, "chaos_args": [], "sides": {"local": side}})
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "bench.chaos_cluster", "--runs", "100", "--seed", "3001", "--local-from",
         str(earlier), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "another campaign: seed 3000 there, 3001 here" in done.stderr
    assert not out.exists()


def test_a_results_directory_in_use_is_refused(tmp_path: Path) -> None:
    (tmp_path / "earlier.log").write_text("an earlier campaign's log\n")
    done = subprocess.run(
        [sys.executable, "-m", "bench.chaos_cluster", "--runs", "2", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is not empty; name a new directory" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier.log"]
