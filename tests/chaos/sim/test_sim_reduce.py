"""``chaos.sim.shrink.reduce``: the greedy schedule reducer both shrinkers use (ring: unit tests of
pure logic — the predicate here is a plain function of the schedule, not a simulation)."""

from __future__ import annotations

import pytest

from chaos.generator import Schedule, Step, generate
from chaos.sim.shrink import reduce

pytestmark = pytest.mark.unit


def _ops(schedule: Schedule, f: str) -> list[Step]:
    return [s for s in schedule.steps if s.f == f]


def test_it_keeps_only_what_the_predicate_needs() -> None:
    """Needed: the reassignment of t1 and a creation of t1 before it. Everything else goes:
    faults (with both their steps), other ops, and the steps after the last needed one."""
    schedule = generate("composed", 5)
    reassign = _ops(schedule, "reassign")[0]
    assert reassign.value["topic"] == "t1"  # the seed's schedule as this test reads it
    asked: list[int] = []

    def keeps(c: Schedule) -> bool:
        asked.append(len(c.steps))
        steps = list(c.steps)
        created = [k for k, s in enumerate(steps) if s.f == "create_topic" and s.value["topic"] == "t1"]
        return reassign in steps and bool(created) and created[0] < steps.index(reassign)

    reduced = reduce(schedule, keeps, budget_s=30)
    assert [s.f for s in reduced.schedule.steps] == ["create_topic", "reassign"]
    assert reduced.schedule.steps[1] == reassign
    assert reduced.schedule.steps[0].value["topic"] == "t1"
    assert reduced.tries == len(asked) > 0
    assert max(asked) < len(schedule.steps)  # never asked about the schedule it started from
    assert (reduced.schedule.scenario, reduced.schedule.seed) == (schedule.scenario, schedule.seed)


def test_a_fault_goes_with_both_of_its_steps_or_stays_whole() -> None:
    schedule = generate("composed", 5)
    fault_ids = {s.value["id"] for s in schedule.steps if s.f == "start_fault"}
    assert len(fault_ids) >= 2
    kept = sorted(fault_ids)[0]

    def keeps(c: Schedule) -> bool:
        return any(s.f == "start_fault" and s.value["id"] == kept for s in c.steps) and any(
            s.f == "stop_fault" and s.value["id"] == kept for s in c.steps
        )

    reduced = reduce(schedule, keeps, budget_s=30)
    left = [(s.f, s.value["id"]) for s in reduced.schedule.steps if s.process == "nemesis"]
    assert left == [("start_fault", kept), ("stop_fault", kept)]
    assert all(s.process == "nemesis" for s in reduced.schedule.steps)
