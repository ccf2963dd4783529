"""A differential scenario against a target whose node dies mid-scenario: the step barrier sees
the exited node and the scenario is the target's error there, at the step it died in.

Before, the barrier (``conformance.diff.barrier.quiesce``) did not look for exited nodes: it
waited out its deadline on that step and on every later one (each recorded as a barrier
``timeout``) until an explicit wait of a later step noticed the dead node — minutes per
scenario, and the error named a later step than the one the node died in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.targets import REPO_ROOT
from tests.conformance_framework.target_files import write_target

pytestmark = pytest.mark.integration

BROKEN = Path(__file__).resolve().parent / "broken_nodes.py"


def test_a_node_that_dies_mid_scenario_is_the_target_error_of_that_step(tmp_path: Path) -> None:
    target = write_target(
        tmp_path, command=f'["{{python}}", "{BROKEN}", "die-on-leader-and-isr", "2", "{{config}}"]'
    )
    out_dir = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "KZK_DIFF_CACHE": str(tmp_path / "cache")}
    args = ["--target", str(target), "--scenarios", "2", "--seed", "20260001", "-n", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "diff", *args, "--out", str(out_dir)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 3, log  # no divergence, but the target failed: not conformant
    report = json.loads((out_dir / "diff-report.json").read_text(encoding="utf-8"))
    results = report["results"]
    assert [r["status"] for r in results] == ["target-error", "target-error"], log
    awaited = [r for r in results if "while the step's work was awaited" in r["reason"]]
    assert awaited, [r["reason"][-200:] for r in results]
    for r in results:
        assert "node 2 exited with 7" in r["reason"], r["reason"]
        trace = json.loads((Path(r["directory"]) / "target-trace.json").read_text(encoding="utf-8"))
        assert trace["status"] == "target-error"
        # every step recorded before the error finished its work: none waited out its barrier
        barriers = [seg["barrier"] for seg in trace["segments"]]
        assert all(b == "ok" for b in barriers), (r["name"], barriers)
    assert "Traceback" not in log
