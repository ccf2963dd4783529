"""Simulation against reality, the pure part: when a real and a simulated verdict agree, what a
schedule's simulation cannot express, how far a real history drifted from the simulated one
(ring: unit tests — hand-built sides, schedules and histories; no cluster)."""

from __future__ import annotations

import pytest

from chaos.generator import Schedule, Step
from chaos.history import History, Op
from chaos.sim.agreement import Side, compare, drift, exit_status, model_notes

pytestmark = pytest.mark.unit

CHECKERS = ("controller_epoch_increases", "partition_states_valid", "deletions_completed")
CREATE = Step(0.0, "client-0", "create_topic", {"topic": "t0", "assignment": {"0": [1, 2]}})
DELETE = Step(1.0, "client-0", "delete_topic", {"topic": "t0"})
ELECT = Step(0.6, "api-0", "elect_leaders", {"election_type": "UNCLEAN", "partitions": []})
SCHEDULE = Schedule("links", 9, (1, 2, 3), (CREATE, ELECT, DELETE))


def _side(verdict: str, **failing: str) -> Side:
    return Side(verdict, {c: failing.get(c, "valid") for c in CHECKERS}, run_dir=f"/runs/{verdict}")


def test_pairs_agree_when_every_checker_has_the_same_validity() -> None:
    pair = compare(0, SCHEDULE, SCHEDULE, _side("valid"), _side("valid"))
    assert (pair.outcome, pair.differing) == ("agree", ())
    both_invalid = compare(
        1,
        SCHEDULE,
        SCHEDULE,
        _side("invalid", deletions_completed="invalid"),
        _side("invalid", deletions_completed="invalid"),
    )
    assert both_invalid.outcome == "agree"
    assert exit_status([pair, both_invalid]) == 0


def test_a_checker_that_differs_is_a_disagreement_naming_it() -> None:
    pair = compare(0, SCHEDULE, SCHEDULE, _side("invalid", partition_states_valid="invalid"), _side("valid"))
    assert pair.outcome == "disagree"
    assert pair.differing == (("partition_states_valid", "invalid", "valid"),)
    assert pair.real.failing == ("partition_states_valid",)
    assert exit_status([compare(1, SCHEDULE, SCHEDULE, _side("valid"), _side("valid")), pair]) == 1


def test_the_same_invalid_verdict_from_other_checkers_is_a_disagreement() -> None:
    pair = compare(
        0,
        SCHEDULE,
        SCHEDULE,
        _side("invalid", deletions_completed="invalid"),
        _side("invalid", partition_states_valid="invalid"),
    )
    assert pair.outcome == "disagree"
    assert {c for c, _, _ in pair.differing} == {"deletions_completed", "partition_states_valid"}


def test_a_simulation_that_could_not_judge_disagrees_with_a_judged_real_run() -> None:
    pair = compare(0, SCHEDULE, SCHEDULE, _side("valid"), Side("unknown", reason="simulator error: boom"))
    assert pair.outcome == "disagree"
    assert ("deletions_completed", "valid", "absent") in pair.differing


def test_a_real_unknown_is_counted_apart_and_alone_compares_nothing() -> None:
    unknown = Side("unknown", reason="cluster did not start: no Java")
    pair = compare(0, SCHEDULE, SCHEDULE, unknown, _side("invalid", deletions_completed="invalid"))
    assert (pair.outcome, pair.differing) == ("real-unknown", ())
    assert exit_status([pair]) == 3
    assert exit_status([]) == 3
    assert exit_status([pair, compare(1, SCHEDULE, SCHEDULE, _side("valid"), _side("valid"))]) == 0


def test_a_real_run_of_another_schedule_is_never_compared() -> None:
    other = Schedule("links", 9, (1, 2, 3), (CREATE, DELETE))
    pair = compare(0, SCHEDULE, other, _side("valid"), _side("valid"))
    assert pair.outcome == "schedule-differs"
    assert exit_status([pair]) == 1


def test_notes_say_what_of_a_schedule_the_simulator_plays_differently() -> None:
    faults = (
        Step(0.5, "nemesis", "start_fault", {"id": "latency-0", "fault": "latency", "scope": "zk", "node": 2,
                                              "latency_ms": 200, "jitter_ms": 20}),
        Step(1.5, "nemesis", "start_fault", {"id": "bandwidth-1", "fault": "bandwidth", "scope": "link",
                                              "link": "FROM_1_2", "rate_kb_s": 8}),
        Step(2.5, "nemesis", "start_fault", {"id": "slicer-2", "fault": "slicer", "scope": "link",
                                              "link": "CTRL_1_2", "average_size": 16, "size_variation": 0,
                                              "delay_us": 100}),
        Step(3.5, "nemesis", "start_fault", {"id": "reset_peer-3", "fault": "reset_peer", "scope": "link",
                                              "link": "CLIENT_3", "timeout_ms": 500}),
        Step(4.0, "nemesis", "start_fault", {"id": "kill-4", "fault": "kill", "node": "controller"}),
        Step(4.2, "nemesis", "start_fault", {"id": "blackhole-5", "fault": "blackhole", "scope": "link",
                                              "link": "ZK_1"}),
    )  # fmt: skip
    notes = model_notes(Schedule("links", 9, (1, 2, 3), (CREATE, ELECT, *faults)))
    assert notes == (
        "1 admin-API op(s) played without the wire protocol: each is the controller event the node's "
        "handler puts (IncrementalAlterConfigs of a topic or the broker default on a broker the seed "
        "draws, not the client's least loaded one or the first registered one), the client's time-out "
        "in virtual time",
        "latency at 0.5 s: 200 ms (jitter ±20 ms drawn once per fault) added to every message each way "
        "(ZooKeeper calls are not slowed, only watch notifications)",
        "bandwidth at 1.5 s: 8 KB/s modelled as 125 ms per message whatever its size",
        "slicer at 2.5 s: 100 µs per 16-byte slice modelled as no delay at all",
        "reset_peer at 3.5 s: a reset after 500 ms modelled as a cut from the start",
        "node (re)starts (kill) take no time in the simulator, a process start in reality",
    )
    assert model_notes(Schedule("links", 9, (1, 2, 3), (CREATE, DELETE))) == ()


def _history(times_s: dict[str, float], outcomes: dict[str, str]) -> tuple[Op, ...]:
    """client-0's create and delete and api-0's election, invoked at the given times."""
    clock = iter(int(t * 1e9) for t in sorted([*times_s.values(), *(t + 0.01 for t in times_s.values())]))
    history = History(clock=clock.__next__)
    for step in sorted((CREATE, ELECT, DELETE), key=lambda s: times_s[s.f]):
        op = history.invoke(step.process, step.f, step.value)
        history.complete(op, outcomes.get(step.f, "ok"))  # type: ignore[arg-type]
    return history.ops


def test_drift_is_how_much_later_a_real_step_started_than_its_simulated_self() -> None:
    real = _history(
        {"create_topic": 10.0, "elect_leaders": 10.6, "delete_topic": 11.8},
        {"delete_topic": "fail", "elect_leaders": "ok"},
    )
    sim = _history(
        {"create_topic": 0.0, "elect_leaders": 0.6, "delete_topic": 1.0}, {"elect_leaders": "info"}
    )
    found = drift(SCHEDULE, real, sim)
    assert found is not None
    assert (found.max_lag_s, found.at, found.steps) == (0.8, "client-0 delete_topic at 1 s", 3)
    # the admin-API op's outcome differs too: listed as any other step's
    assert found.outcomes == (
        "api-0 elect_leaders at 0.6 s: real ok, sim info",
        "client-0 delete_topic at 1 s: real fail, sim ok",
    )
    pair = compare(0, SCHEDULE, SCHEDULE, Side("valid", ops=real), Side("valid", ops=sim))
    assert pair.drift == found


def test_no_drift_without_a_step_both_histories_played() -> None:
    assert (
        drift(SCHEDULE, (), _history({"create_topic": 0.0, "elect_leaders": 0.6, "delete_topic": 1.0}, {}))
        is None
    )


def test_a_controller_aimed_fault_that_hit_another_broker_is_named() -> None:
    kill = Step(0.5, "nemesis", "start_fault", {"id": "kill-0", "fault": "kill", "node": "controller"})
    pause = Step(1.5, "nemesis", "start_fault", {"id": "pause-1", "fault": "pause", "node": "controller"})
    schedule = Schedule("process", 3, (1, 2, 3), (kill, pause))

    def played(nodes: tuple[int, int], start_s: float) -> tuple[Op, ...]:
        clock = iter(int((start_s + t) * 1e9) for t in (0.5, 0.51, 1.5, 1.51))
        history = History(clock=clock.__next__)
        for step, node in zip((kill, pause), nodes, strict=True):
            op = history.invoke("nemesis", step.f, step.value)
            history.complete(op, "ok", {**step.value, "node": node})
        return history.ops

    found = drift(schedule, played((2, 3), 40.0), played((1, 3), 0.0))
    assert found is not None
    assert found.targets == ("kill-0 at 0.5 s: real node 2, sim node 1",)
    assert (found.max_lag_s, found.outcomes) == (0.0, ())
