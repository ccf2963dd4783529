"""A runner worker answers every task, even one whose set-up raised (ring: unit tests).

The runner waits for one result per task it sent; a set-up that raised out of the worker's loop
(the worker's ZooKeeper ensemble, made on the first ensemble run, failing to start) used to lose
that task's result and leave the campaign waiting. The worker's own loop runs here on a task line,
with an environment whose ensemble cannot be made: nothing else of it is reached.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from chaos.run import worker
from chaos.runner import RunPlan
from chaos.scenarios import SCENARIOS
from cluster.targets import load_target

pytestmark = pytest.mark.unit


def test_a_set_up_that_raises_is_answered_unknown_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_ensemble() -> None:
        raise RuntimeError("ensemble member 2 did not start")

    env = SimpleNamespace(ensemble_env=no_ensemble)
    plans = [RunPlan(i, SCENARIOS["zk-ensemble"], 40 + i, "c1", tmp_path) for i in range(2)]
    monkeypatch.setattr(
        sys, "stdin", io.StringIO("".join(json.dumps(worker.task_of(p)) + "\n" for p in plans))
    )
    out = io.StringIO()
    worker._serve(env, None, load_target("reference"), 0, out)  # type: ignore[arg-type]
    results = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["verdict"] for r in results] == ["unknown", "unknown"]
    assert [r["record"]["seed"] for r in results] == [40, 41]
    for r in results:
        assert r["reason"] == "set-up failed: RuntimeError: ensemble member 2 did not start"
        assert r["record"]["outcome"] == "error"
        assert r["record"]["test_id"] == "chaos/zk-ensemble"
