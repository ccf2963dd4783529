"""A worker concludes several runs side by side, and the runner matches results by run (ring: unit
tests of the worker's and the pool's scheduling logic; :func:`chaos.runner.conclude` itself is
replaced by a timed stand-in, its real behaviour is covered by the campaign tests).

A run whose final phase waits out its 30 s bound (a partition Kafka leaves without a leader, say)
used to hold back the conclusions of the runs played after it on the same worker: their results
waited, and so did the worker's next plays. Measured on a real campaign (``python -m chaos run
--runs 100 --seed 4000 --parallel 2``, 2026-11-29): the two runs after each such run took 31 and
36 s instead of about 7.
"""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chaos.run import pool, worker
from chaos.runner import RunPlan, RunResult
from chaos.scenarios import SCENARIOS

pytestmark = pytest.mark.unit


def _played(tmp_path: Path, index: int) -> Any:
    return SimpleNamespace(
        prep=SimpleNamespace(plan=RunPlan(index, SCENARIOS["links"], 10 + index, "c1", tmp_path))
    )


class _TimedConclusions:
    """Stand-in for ``conclude``: run ``i`` takes ``seconds[i]``; records how many overlap."""

    def __init__(self, seconds: dict[int, float]) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0

    def __call__(self, played: Any) -> RunResult:
        index = played.prep.plan.index
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds[index])
        with self.lock:
            self.running -= 1
        return RunResult("valid", {"seed": 10 + index}, None, None, "")


def _results(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_long_conclusion_does_not_hold_back_the_next_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conclusions = _TimedConclusions({0: 1.5, 1: 0.05, 2: 0.05})
    monkeypatch.setattr(worker, "conclude", conclusions)
    out = io.StringIO()
    concluding = worker._Concluding(worker._Channel(out), "reference", 0)
    start = time.monotonic()
    for i in range(3):
        concluding.begin(_played(tmp_path, i))
    began_all_s = time.monotonic() - start
    time.sleep(0.5)
    # written as they ended, run 0 still going (1 and 2 run side by side: either may end first)
    assert sorted(r["index"] for r in _results(out)) == [1, 2]
    concluding.join()
    assert [r["index"] for r in _results(out)][2] == 0
    assert {r["index"]: r["record"]["seed"] for r in _results(out)} == {0: 10, 1: 11, 2: 12}
    assert began_all_s < 0.5
    assert conclusions.most == 3


def test_no_more_than_at_once_conclusions_run_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conclusions = _TimedConclusions(dict.fromkeys(range(7), 0.2))
    monkeypatch.setattr(worker, "conclude", conclusions)
    out = io.StringIO()
    concluding = worker._Concluding(worker._Channel(out), "reference", 0)
    for i in range(7):
        concluding.begin(_played(tmp_path, i))
    concluding.join()
    assert conclusions.most == worker._Concluding.AT_ONCE
    assert sorted(r["index"] for r in _results(out)) == list(range(7))


def test_the_pool_settles_a_result_by_its_run_not_by_its_place(tmp_path: Path) -> None:
    plans = [RunPlan(i, SCENARIOS["links"], 10 + i, "c1", tmp_path) for i in range(3)]
    held = SimpleNamespace(slot=0, held=list(plans))
    pool._settle(held, {"index": 1})  # type: ignore[arg-type]
    assert [p.index for p in held.held] == [0, 2]
    pool._settle(held, {"index": 2})  # type: ignore[arg-type]
    assert [p.index for p in held.held] == [0]
    with pytest.raises(RuntimeError, match="answered run 7, which it was not given"):
        pool._settle(held, {"index": 7})  # type: ignore[arg-type]
