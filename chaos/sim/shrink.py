"""Shrinking a failing schedule to a smaller one that still fails (ring: drivers — runs simulations).

Greedy and bounded: first cut the tail (every step after a point, halving the point), then drop
whole faults (a ``start_fault`` with its ``stop_fault``), then single workload ops; a candidate
is kept when its simulation is still ``invalid`` with at least one of the checkers the original
failed. The first steps of each client (its topic creations at time 0) are kept only if needed
like any other op. Stops at ``budget_s`` of wall time with the smallest failing schedule so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from chaos.generator import Schedule, Step
from chaos.sim.run import SimResult

__all__ = ["Shrunk", "shrink"]


@dataclass(frozen=True)
class Shrunk:
    schedule: Schedule
    result: SimResult
    tries: int
    seconds: float


def _failed(result: SimResult) -> frozenset[str]:
    return frozenset(v.checker for v in result.verdicts if v.validity == "invalid")


def _without_fault(steps: tuple[Step, ...], fault_id: str) -> tuple[Step, ...]:
    return tuple(s for s in steps if not (s.process == "nemesis" and s.value.get("id") == fault_id))


def shrink(
    schedule: Schedule, first: SimResult, run: Callable[[Schedule], SimResult], budget_s: float = 60.0
) -> Shrunk:
    """The smallest failing schedule found within ``budget_s`` (module docstring)."""
    start = time.monotonic()
    target = _failed(first)
    best, best_result, tries = schedule, first, 0

    def still_fails(steps: tuple[Step, ...]) -> bool:
        nonlocal best, best_result, tries
        if time.monotonic() - start > budget_s or steps == best.steps:
            return False
        candidate = replace(best, steps=steps)
        tries += 1
        result = run(candidate)
        if result.verdict == "invalid" and _failed(result) & target:
            best, best_result = candidate, result
            return True
        return False

    cut = max((s.at_s for s in best.steps), default=0.0) / 2
    while cut > 0.05 and still_fails(tuple(s for s in best.steps if s.at_s <= cut)):
        cut /= 2
    for fault_id in sorted({str(s.value["id"]) for s in best.steps if s.f == "start_fault"}):
        still_fails(_without_fault(best.steps, fault_id))
    index = len(best.steps) - 1
    while index >= 0 and time.monotonic() - start <= budget_s:
        step = best.steps[index]
        if step.process != "nemesis":
            still_fails(best.steps[:index] + best.steps[index + 1 :])
        index = min(index - 1, len(best.steps) - 1)
    return Shrunk(best, best_result, tries, round(time.monotonic() - start, 3))
