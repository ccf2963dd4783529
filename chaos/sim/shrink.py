"""Shrinking a failing schedule to a smaller one that still fails (ring: drivers — runs simulations).

Greedy and bounded (:func:`reduce`): first cut the tail (every step after a point, halving the
point), then drop whole faults (a ``start_fault`` with its ``stop_fault``), then single workload
ops; a candidate is kept when it still shows what the original showed — for :func:`shrink`, its
simulation is still ``invalid`` with at least one of the checkers the original failed; for the
differential simulation, the two trees still differ in the same stream. The first steps of each
client (its topic creations at time 0) are kept only if needed like any other op. Stops at
``budget_s`` of wall time with the smallest schedule so far that still shows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from chaos.generator import Schedule, Step
from chaos.sim.run import SimResult

__all__ = ["Reduced", "Shrunk", "reduce", "shrink"]


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


@dataclass(frozen=True)
class Reduced:
    schedule: Schedule
    tries: int
    seconds: float


def reduce(schedule: Schedule, keeps: Callable[[Schedule], bool], budget_s: float = 60.0) -> Reduced:
    """The smallest schedule found within ``budget_s`` for which ``keeps`` holds (module docstring);
    ``schedule`` itself is taken to hold. ``keeps`` is asked only about smaller candidates."""
    start = time.monotonic()
    best, tries = schedule, 0

    def try_(steps: tuple[Step, ...]) -> bool:
        nonlocal best, tries
        if time.monotonic() - start > budget_s or steps == best.steps:
            return False
        candidate = replace(best, steps=steps)
        tries += 1
        if keeps(candidate):
            best = candidate
            return True
        return False

    cut = max((s.at_s for s in best.steps), default=0.0) / 2
    while cut > 0.05 and try_(tuple(s for s in best.steps if s.at_s <= cut)):
        cut /= 2
    for fault_id in sorted({str(s.value["id"]) for s in best.steps if s.f == "start_fault"}):
        try_(_without_fault(best.steps, fault_id))
    index = len(best.steps) - 1
    while index >= 0 and time.monotonic() - start <= budget_s:
        step = best.steps[index]
        if step.process != "nemesis":
            try_(best.steps[:index] + best.steps[index + 1 :])
        index = min(index - 1, len(best.steps) - 1)
    return Reduced(best, tries, round(time.monotonic() - start, 3))


def shrink(
    schedule: Schedule, first: SimResult, run: Callable[[Schedule], SimResult], budget_s: float = 60.0
) -> Shrunk:
    """The smallest schedule found within ``budget_s`` that still fails one of the checkers
    ``first`` failed (module docstring)."""
    target = _failed(first)
    kept = [first]  # the result of the last candidate kept: the one reduce returns

    def still_fails(candidate: Schedule) -> bool:
        result = run(candidate)
        if result.verdict == "invalid" and _failed(result) & target:
            kept.append(result)
            return True
        return False

    reduced = reduce(schedule, still_fails, budget_s)
    return Shrunk(reduced.schedule, kept[-1], reduced.tries, reduced.seconds)
