"""``python -m chaos.sim.reality`` refuses bad input before anything starts: a clear message, exit 2,
no traceback, no results directory written (ring: unit tests — the command in a child process,
which starts no cluster for bad input)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--runs", "0"), "argument --runs: 0 must be at least 1"),
        (("--runs", "many"), "'many' is not a whole number"),
        (("-n", "0"), "argument -n/--parallel: 0 must be at least 1"),
        (("--scenario", "nope"), "unknown scenario 'nope'; valid scenarios: links"),
        (("--scenario", "zk-ensemble"), "needs a ZooKeeper ensemble, which the simulator does not model"),
        (("--faults", "meteor"), "unknown fault 'meteor'"),
        (("--seed", "-1"), "seed -1 is outside 0 .. 2**63-1"),
        (("--seed", str(2**63 - 2), "--runs", "5"), "go past 2**63-1"),
    ],
)
def test_bad_input_is_a_clear_error_with_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "chaos.sim.reality", *args, "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists(), "nothing is written for bad input"


def test_an_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "a-file"
    out.write_text("keep me\n")
    done = subprocess.run(
        [sys.executable, "-m", "chaos.sim.reality", "--runs", "1", "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert f"--out {out} exists and is not a directory" in done.stderr
    assert out.read_text() == "keep me\n"
