"""A run whose cluster cannot start is ``unknown`` with the reason — never a pass or a fail."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from records.run_record import read_records
from tests.chaos.runner.support import chaos

pytestmark = pytest.mark.chaos


def _broken_campaign(tmp_path: Path, *, runs: int) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``runs`` process-scenario runs (seeds 5, 6, …) on one worker, of a target whose node exits
    with 3 at once."""
    target = tmp_path / "broken.toml"
    target.write_text(
        'name = "broken"\n'
        'command = ["{python}", "-c", "raise SystemExit(3)", "{config}"]\n'
        'cwd = "{node_dir}"\n'
    )
    out = tmp_path / "out"
    done = chaos("run", "--runs", str(runs), "--seed", "5", "--parallel", "1", "--scenario", "process",
                 "--target", str(target), "--out", str(out), "--no-progress")  # fmt: skip
    return done, out


def test_nodes_that_never_start_make_the_run_unknown_with_the_reason(tmp_path: Path) -> None:
    done, out = _broken_campaign(tmp_path, runs=1)
    assert done.returncode == 3, done.stderr  # unknown: not invalid, and never a pass
    [record] = list(read_records(sorted(out.glob("chaos-runs-*.jsonl"))))
    assert record["outcome"] == "error"
    assert record["target"] == "broken"
    assert str(record["reason"]).startswith("cluster did not start: ")
    assert "exited with 3 before registering" in str(record["reason"])
    assert record["schema_version"] == 2
    assert record["record_id"] == f"{record['run_id']}:chaos/process:5"
    assert record["excused"] is None  # no checker ran: nothing excused, nothing reported
    assert "1 unknown" in done.stdout
    kept = list(out.glob("*/runs/process-00000-s5"))
    assert len(kept) == 1
    assert "exited with 3" in (kept[0] / "start-error.txt").read_text()


def test_a_set_up_begun_ahead_that_failed_is_redone_in_line_before_the_run_is_judged(tmp_path: Path) -> None:
    """A worker begins the next run's set-up while the current run ends; a set-up that fails then
    is not taken as the verdict: it is redone in line, and only that failure makes the run
    unknown. The first attempt's error stays in the run directory."""
    done, out = _broken_campaign(tmp_path, runs=3)
    assert done.returncode == 3, done.stderr
    records = list(read_records(sorted(out.glob("chaos-runs-*.jsonl"))))
    assert len(records) == 3
    assert all(str(r["reason"]).startswith("cluster did not start: ") for r in records), records
    runs = {p.name: p for p in out.glob("*/runs/*")}
    assert sorted(runs) == ["process-00000-s5", "process-00001-s6", "process-00002-s7"]
    assert not (runs["process-00000-s5"] / "start-error-ahead.txt").exists()  # the first is set up in line
    for name in ("process-00001-s6", "process-00002-s7"):
        assert "exited with 3" in (runs[name] / "start-error-ahead.txt").read_text(), name
        assert "exited with 3" in (runs[name] / "start-error.txt").read_text(), name
    assert "the set-up of 0 began while" in done.stdout  # none of the runs used a set-up begun ahead
