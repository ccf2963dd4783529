"""Simulation against reality: one schedule's real verdict beside its simulated one, and what the
simulator's model cannot express about that schedule (ring: decisions — pure, no I/O).

A schedule played both ways gives two :class:`Side` s (verdict, every checker's validity, the
history, the evidence directory). :func:`compare` makes them a :class:`Pair`:

======================  ===========================================================================
outcome                 when
======================  ===========================================================================
``schedule-differs``    the real run's stored schedule is not the simulated one (never compared)
``real-unknown``        the real run could not be judged (a target error, missing evidence): counted
                        apart, neither agreement nor disagreement
``agree``               every checker has the same validity on both sides
``disagree``            any checker differs (a simulated ``unknown`` included: the simulator could not
                        judge what reality could)
======================  ===========================================================================

Whatever the outcome, a pair carries :func:`model_notes` (the schedule's elements the simulator
plays differently from a real run: link delays, admin-API ops, process starts) and a
:class:`Drift` measured from the two histories (how far the real steps started from the
simulated ones, and which ops ended differently), so no comparison is silent about its limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from chaos.generator import CONTROLLER, Schedule, Step
from chaos.history import Op, OpPair, pairs
from chaos.sim.actions import slow_delay_ms

__all__ = [
    "NOTHING_COMPARED",
    "Drift",
    "Outcome",
    "Pair",
    "Side",
    "compare",
    "drift",
    "exit_status",
    "model_notes",
]

Outcome = Literal["agree", "disagree", "real-unknown", "schedule-differs"]
NOTHING_COMPARED = 3


@dataclass(frozen=True)
class Side:
    """One way a schedule was played: its verdict, each checker's validity, its history."""

    verdict: str
    checkers: Mapping[str, str] = field(default_factory=dict)
    reason: str | None = None
    run_dir: str | None = None
    ops: tuple[Op, ...] = ()
    controllers: tuple[int | None, ...] = ()  # the broker of each controller election, in order

    @property
    def failing(self) -> tuple[str, ...]:
        """The checkers that did not hold (invalid or unknown), in the checkers' order."""
        return tuple(name for name, validity in self.checkers.items() if validity != "valid")


@dataclass(frozen=True)
class Drift:
    """How the real history's timing and outcomes departed from the simulated one's.

    ``max_lag_s``: the largest difference, over steps of the schedule, between how late a step
    started after its time in the real run and in the simulation (positive: later in reality);
    ``at``: that step. ``outcomes``: steps (admin-API ops included) that completed differently,
    ``"<process> <f> at <t> s: real <x>, sim <y>"``. ``targets``: faults aimed at "the controller"
    that hit another broker in reality than in the simulation (which node wins an election is a
    race in reality, a seeded draw in the simulation).
    """

    max_lag_s: float
    at: str
    outcomes: tuple[str, ...] = ()
    steps: int = 0
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pair:
    index: int
    scenario: str
    seed: int
    outcome: Outcome
    real: Side
    sim: Side
    differing: tuple[tuple[str, str, str], ...] = ()  # (checker, real validity, sim validity)
    notes: tuple[str, ...] = ()
    drift: Drift | None = None


def compare(index: int, schedule: Schedule, real_schedule: Schedule | None, real: Side, sim: Side) -> Pair:
    """The pair's outcome (module docstring), the checkers that differ, notes and drift."""
    base = Pair(index, schedule.scenario, schedule.seed, "agree", real, sim, notes=model_notes(schedule))
    if real_schedule is not None and real_schedule != schedule:
        return replace(base, outcome="schedule-differs")
    if real.verdict not in ("valid", "invalid"):
        return replace(base, outcome="real-unknown")
    names = list(dict.fromkeys([*real.checkers, *sim.checkers]))
    differing = tuple(
        (n, real.checkers.get(n, "absent"), sim.checkers.get(n, "absent"))
        for n in names
        if real.checkers.get(n) != sim.checkers.get(n)
    )
    outcome: Outcome = "disagree" if differing or real.verdict != sim.verdict else "agree"
    return replace(base, outcome=outcome, differing=differing, drift=drift(schedule, real.ops, sim.ops))


def exit_status(pairs_: Sequence[Pair]) -> int:
    """1 when any pair disagrees or its schedules differ, 3 when none was judged, else 0."""
    outcomes = {p.outcome for p in pairs_}
    if outcomes & {"disagree", "schedule-differs"}:
        return 1
    return 0 if "agree" in outcomes else NOTHING_COMPARED


# --- what the model cannot express ---------------------------------------------------------------


def model_notes(schedule: Schedule) -> tuple[str, ...]:
    """The elements of ``schedule`` the simulator plays differently from a real run, one line each."""
    notes: list[str] = []
    api = [s for s in schedule.steps if s.process.startswith("api-")]
    if api:
        notes.append(
            f"{len(api)} admin-API op(s) played without the wire protocol: each is the controller "
            "event the node's handler puts (IncrementalAlterConfigs of a topic or the broker default "
            "on a broker the seed draws, not the client's least loaded one or the first registered "
            "one), the client's time-out in virtual time"
        )
    notes += [n for s in schedule.steps if s.f == "start_fault" for n in _fault_note(s)]
    if any(s.f == "create_topic_admin" for s in schedule.steps):
        notes.append(
            "create_topic_admin decided and written by the controller's node at once, no CreateTopics "
            "request (an unreachable controller is a NOT_CONTROLLER at once, not a client time-out "
            "seconds later)"
        )
    starts = sorted({str(s.value["fault"]) for s in schedule.steps if s.f == "start_fault"} & _STARTS)
    starts += ["broker_bounce"] if any(s.f == "broker_bounce" for s in schedule.steps) else []
    if starts:
        notes.append(
            f"node (re)starts ({', '.join(starts)}) take no time in the simulator, a process start in reality"
        )
    return tuple(dict.fromkeys(notes))


_STARTS = {"kill", "terminate", "restart"}


def _touches_zookeeper(value: Mapping[str, object]) -> bool:
    if value.get("scope") == "link":
        return str(value.get("link", "")).startswith("ZK_")
    return value.get("scope") in ("node", "zk", "partition")


def _fault_note(step: Step) -> list[str]:
    v, kind = step.value, str(step.value["fault"])
    where = f"{kind} at {step.at_s:g} s"
    zk = " (ZooKeeper calls are not slowed, only watch notifications)" if _touches_zookeeper(v) else ""
    if kind == "latency":
        jitter = f" (jitter ±{v['jitter_ms']} ms drawn once per fault)" if int(str(v["jitter_ms"])) else ""
        return [f"{where}: {v['latency_ms']} ms{jitter} added to every message each way{zk}"]
    if kind == "bandwidth":
        per = slow_delay_ms(v, 0)
        return [f"{where}: {v['rate_kb_s']} KB/s modelled as {per} ms per message whatever its size{zk}"]
    if kind == "slicer":
        per = slow_delay_ms(v, 0)
        modelled = f"{per} ms per message" if per else "no delay at all"
        return [f"{where}: {v['delay_us']} µs per {v['average_size']}-byte slice modelled as {modelled}{zk}"]
    if kind == "zk_session_expire":
        return [f"{where}: the session expires exactly at its timeout, not on ZooKeeper's next expiry tick"]
    if kind == "reset_peer" and int(str(v.get("timeout_ms", 0))):
        return [f"{where}: a reset after {v['timeout_ms']} ms modelled as a cut from the start"]
    return []


# --- drift between the two histories ---------------------------------------------------------------


def _step_pairs(schedule: Schedule, ops: Iterable[Op]) -> dict[tuple[str, int], tuple[Step, OpPair]]:
    """Each step of the schedule, keyed by (process, its position there), with the op that played
    it: the process's invocation at that position, when it is the step's op."""
    by_process: dict[str, list[OpPair]] = {}
    for pair in pairs(tuple(ops)):
        by_process.setdefault(pair.invoke.process, []).append(pair)
    return {
        (process, k): (step, played)
        for process in schedule.processes
        for k, (step, played) in enumerate(
            zip(schedule.for_process(process), by_process.get(process, []), strict=False)
        )
        if step.f == played.invoke.f
    }


def _lags(matched: Sequence[tuple[Step, OpPair]]) -> list[float]:
    """How late each step started after its time, seconds (the earliest-started step is on time)."""
    offsets = [p.invoke.time_ns / 1e9 - s.at_s for s, p in matched]
    start = min(offsets, default=0.0)
    return [o - start for o in offsets]


def drift(schedule: Schedule, real_ops: Sequence[Op], sim_ops: Sequence[Op]) -> Drift | None:
    """The :class:`Drift` of the real history from the simulated one (None: no common step)."""
    real, sim = _step_pairs(schedule, real_ops), _step_pairs(schedule, sim_ops)
    common = [(s, r, sim[key][1]) for key, (s, r) in real.items() if key in sim]
    if not common:
        return None
    real_lags = _lags([(s, r) for s, r, _ in common])
    sim_lags = _lags([(s, m) for s, _, m in common])
    worst = max(range(len(common)), key=lambda i: abs(real_lags[i] - sim_lags[i]))
    step = common[worst][0]
    outcomes = tuple(
        f"{s.process} {s.f} at {s.at_s:g} s: real {r.outcome}, sim {m.outcome}"
        for s, r, m in sorted(common, key=lambda c: (c[0].at_s, c[0].process))
        if r.outcome != m.outcome
    )
    return Drift(
        round(real_lags[worst] - sim_lags[worst], 3),
        f"{step.process} {step.f} at {step.at_s:g} s",
        outcomes,
        len(common),
        _targets(common),
    )


def _targets(common: Sequence[tuple[Step, OpPair, OpPair]]) -> tuple[str, ...]:
    """The "controller"-aimed faults that both sides started, on different brokers."""
    found = []
    for step, real, sim in common:
        if step.f != "start_fault" or step.value.get("node") != CONTROLLER:
            continue
        hit = [p.completion.value.get("node") if p.completion else None for p in (real, sim)]
        if real.outcome == sim.outcome == "ok" and hit[0] != hit[1]:
            found.append(f"{step.value['id']} at {step.at_s:g} s: real node {hit[0]}, sim node {hit[1]}")
    return tuple(found)
