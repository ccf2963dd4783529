"""A run whose cluster cannot start is ``unknown`` with the reason — never a pass or a fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from records.run_record import read_records
from tests.chaos.runner.support import chaos

pytestmark = pytest.mark.chaos


def test_nodes_that_never_start_make_the_run_unknown_with_the_reason(tmp_path: Path) -> None:
    target = tmp_path / "broken.toml"
    target.write_text(
        'name = "broken"\n'
        'command = ["{python}", "-c", "raise SystemExit(3)", "{config}"]\n'
        'cwd = "{node_dir}"\n'
    )
    out = tmp_path / "out"
    done = chaos("run", "--runs", "1", "--seed", "5", "--parallel", "1", "--scenario", "process",
                 "--target", str(target), "--out", str(out), "--no-progress")  # fmt: skip
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
