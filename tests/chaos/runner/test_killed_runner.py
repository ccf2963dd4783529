"""A SIGKILLed runner leaves nothing the next invocation does not reap: processes, temp dirs,
pid files (real runner, real nodes, ZooKeeper and Toxiproxy processes)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.reaper import runtime_dir
from tests.chaos.runner.support import alive, chaos, cmdline, descendants

pytestmark = pytest.mark.chaos


def _wait_for_nodes(runner: subprocess.Popen[bytes], deadline_s: float) -> dict[int, int]:
    """The runner's process tree once reference nodes run in it."""
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        assert runner.poll() is None, "the runner ended before any node started"
        tree = descendants(runner.pid)
        if sum("reference_controller.node" in cmdline(p) for p in tree) >= 3:
            return tree
        time.sleep(0.2)
    raise AssertionError(f"no nodes under the runner after {deadline_s:.0f}s")


def _owned_roots(owners: set[int]) -> list[Path]:
    roots = []
    for path in runtime_dir().glob("owner-*.json"):
        record = json.loads(path.read_text())
        if record.get("owner_pid") in owners:
            roots.append(Path(record["run_root"]))
    return roots


def test_killed_runner_leaves_nothing_after_the_next_reap(tmp_path: Path) -> None:
    runner = subprocess.Popen(
        [sys.executable, "-m", "chaos", "run", "--runs", "6", "--parallel", "2", "--scenario", "process",
         "--out", str(tmp_path / "out"), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        tree = _wait_for_nodes(runner, 180.0)
        tree |= descendants(runner.pid)
        kinds = " ".join(cmdline(p) for p in tree)
        assert "chaos.run.worker" in kinds
        assert "org.apache.zookeeper" in kinds
        assert "chaos.toxiproxy" in kinds
        roots = _owned_roots(set(tree))
        assert roots, "the workers recorded no owner run roots"
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    reaped = chaos("reap", timeout_s=120.0)
    assert reaped.returncode == 0, reaped.stderr
    deadline = time.monotonic() + 30.0
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive(tree) == {}
    assert [r for r in roots if r.exists()] == []
    leftover = [p for p in runtime_dir().glob("*.json") if json.loads(p.read_text()).get("owner_pid") in tree]
    assert leftover == []
