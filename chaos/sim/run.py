"""One simulated run: a schedule played in the simulated world, judged by the chaos checkers,
its evidence written as a real run writes it (ring: drivers — a simulated one).

Phases as in :mod:`chaos.runner`: the cluster starts (every node, until a controller is
elected), each process of the schedule plays its steps at their (virtual) times, one op at a
time, into a :class:`~chaos.history.History` on the virtual clock; the nemesis heals
everything; the final phase runs the world until the healed invariants and every liveness
checker hold (or 30 virtual seconds pass); then :func:`chaos.checkers.check_all` judges the
history, the transaction log and the final state. The run directory holds the same evidence
(``history.jsonl``, ``txn-records.jsonl``, ``final-state.json``, ``verdict.json``,
``requests.txt``, ``schedule.txt``, ``manifest.json``) plus ``sim.json`` (kit version, scenario,
seed, schedule): ``python -m chaos check RUN_DIR`` judges it again unchanged.
"""

from __future__ import annotations

import functools
import gc
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checkers import LIVENESS_CHECKERS, check_all, judge_all
from chaos.checkers.final_state import FinalState
from chaos.checkers.findings import RunInputs
from chaos.checkers.timeline import Timeline, follow
from chaos.checkers.verdict import Verdict, aggregate
from chaos.final_state import Quiescence
from chaos.generator import Schedule, Step
from chaos.history import History
from chaos.run.artefacts import Judged, write_artefacts
from chaos.run.manifest import write_manifest
from chaos.sim.actions import Actions
from chaos.sim.evidence import FinalStateReader
from chaos.sim.replication import Replication
from chaos.sim.version import replay_command, sim_version
from chaos.sim.world import World
from cluster.profile import SPEED_PROFILE

__all__ = ["SimResult", "simulate"]

START_BOUND_MS = 20_000
#: the nodes start at seeded offsets within this window: which one becomes the first controller is
#: a race in a real run (its processes start side by side), so it must not always be broker 1
START_SPREAD_MS = 400
QUIET_BOUND_MS = 30_000
POLL_MS = 250
YOUNG_GENERATION = 10_000
PROPS = {**SPEED_PROFILE, "zookeeper.connect": "simulated:2181", "listeners": "PLAINTEXT://127.0.0.1:0"}


@dataclass(frozen=True)
class SimResult:
    verdict: str
    reason: str | None
    verdicts: tuple[Verdict, ...]
    run_dir: Path | None
    ops: int
    faults: int
    #: what the run showed from outside, per stream: ``zk`` (the transaction log), ``requests``
    #: (every controller request a broker handled, whole, with its answer), ``history`` (the
    #: clients' ops);
    #: compared item by item by the differential mode (:mod:`chaos.sim.differential`)
    observed: dict[str, Sequence[Any]] = field(default_factory=dict, repr=False, compare=False)


# the liveness checkers, the one the final phase waits for most often first
_LIKELY_FIRST = tuple(sorted(LIVENESS_CHECKERS, key=lambda c: c.name != "metadata_agrees_with_zookeeper"))


_frozen = False


def simulate(schedule: Schedule, out_dir: Path | None = None, duration_s: float = 5.0) -> SimResult:
    """Play ``schedule``; write its run directory under ``out_dir`` when given (the caller
    decides whether to keep it). Nothing else is written: the nodes' log dirs are in memory.

    Garbage collection, for a process that plays many schedules: while one plays, the young
    generation holds ``YOUNG_GENERATION`` objects instead of Python's 700 (restored after): a
    schedule allocates many short-lived objects, and collecting them ten times less often costs
    less CPU for the same garbage. A played world is one large reference cycle (nodes, links and
    callbacks pointing at each other): it is collected as soon as the schedule ends, not when the
    oldest generation's turn comes, which can be thousands of schedules later (a schedule whose
    controllers loop through 17,000 elections left 190 MiB waiting so). What the process holds
    before its first schedule (modules, caches) is moved out of the collector's sight once
    (``gc.freeze``), so that collection costs about a millisecond instead of scanning every
    module's objects again."""
    global _frozen
    if not _frozen:
        gc.collect()
        gc.freeze()
        _frozen = True
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], YOUNG_GENERATION), *thresholds[1:])
    try:
        return _simulate(schedule, out_dir, duration_s)
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()


def _simulate(schedule: Schedule, out_dir: Path | None, duration_s: float) -> SimResult:
    world = World(schedule.seed, schedule.broker_ids, dict(PROPS))
    actions = Actions(world)
    for node in world.nodes.values():
        world.at(world.rng.randrange(START_SPREAD_MS), functools.partial(actions.start_node, node))
    Replication(world)
    world.run_until(  # as a real run: every node registered and a controller elected
        world.now + START_BOUND_MS,
        lambda: actions.controller_node() is not None and all(n.registered for n in world.nodes.values()),
    )
    history = History(clock=lambda: (world.now - world.zk.log[0].time_ms) * 1_000_000)
    _play(world, actions, schedule, history, duration_s)
    op = history.invoke("nemesis", "heal", {})
    history.complete(op, "ok", actions.heal_all())
    op = history.invoke("nemesis", "quiesce", {})
    quiet = _quiesce(world, history)
    summary = {"time_to_heal_s": quiet.time_to_heal_s, "quiesced": quiet.quiesced, "waited_s": quiet.waited_s}
    history.complete(op, "ok" if quiet.quiesced else "info", summary, quiet.last_problem)
    records = list(world.zk.log)
    verdicts = check_all(history.ops, follow(quiet.timeline, records), quiet.final_state)
    verdict = aggregate(verdicts)
    reason = (
        None
        if verdict == "valid"
        else "; ".join(f"{v.checker}: {v.message}" for v in verdicts if not v.is_valid)[:1000]
    )
    run_dir = None
    if out_dir is not None:
        run_dir = out_dir / f"{schedule.scenario}-s{schedule.seed}"
        _write(
            run_dir,
            world,
            schedule,
            Judged(history.ops, records, quiet.final_state),
            verdicts,
            verdict,
            quiet,
            reason,
        )
    faults = sum(1 for s in schedule.steps if s.f == "start_fault")
    observed: dict[str, Sequence[Any]] = {"zk": records, "requests": world.exchanges, "history": history.ops}
    return SimResult(
        verdict, reason, tuple(verdicts), run_dir, len(schedule.steps) - 2 * faults, faults, observed
    )


def _play(world: World, actions: Actions, schedule: Schedule, history: History, duration_s: float) -> None:
    """Each process plays its steps at their times, one op at a time (a step starts later when
    the previous op of its process was slow)."""
    t0 = world.now
    running: set[str] = set()

    def next_step(process: str, steps: list[Step], index: int) -> None:
        if index >= len(steps):
            running.discard(process)
            return
        step = steps[index]

        def invoke() -> None:
            op = history.invoke(process, step.f, step.value)

            def done(kind: str, value: dict[str, Any] | None, error: str | None) -> None:
                history.complete(op, kind, value, error)  # type: ignore[arg-type]
                next_step(process, steps, index + 1)

            try:
                actions.invoke(step.f, step.value, done)
            except Exception as exc:
                done("info", None, f"{type(exc).__name__}: {exc}".splitlines()[0])

        world.at(t0 + int(step.at_s * 1000) - world.now, invoke)

    for process in schedule.processes:
        running.add(process)
        next_step(process, schedule.for_process(process), 0)
    world.run_until(t0 + int((duration_s + 90) * 1000), lambda: not running)


def _problem(
    reader: FinalStateReader, history: History, timeline: Timeline | None, *, exact: bool = True
) -> tuple[str | None, FinalState, Timeline]:
    """The healed invariants and the liveness checkers on a fresh final state (as the real final
    phase polls them), over the timeline extended with the records it has not replayed. Not
    ``exact``: whether there is a problem is exact, but it may not be the first in the checkers'
    order (the one that fails most often is judged first, and judging stops at a failure)."""
    world = reader.world
    final = reader.read(quiesced=True)
    timeline = follow(timeline, world.zk.log)
    missing = set(world.nodes) - set(final.live_brokers)
    if missing:
        return f"brokers {sorted(missing)} not registered", final, timeline
    if final.controller not in final.live_brokers:
        return f"controller {final.controller} not a live broker", final, timeline
    inputs = RunInputs(history.ops, timeline, final)
    verdicts: Iterable[Verdict]
    if exact:
        verdicts = judge_all(LIVENESS_CHECKERS, inputs)
    else:  # each checker's verdict is its own (the recognisers are memos), so any order is sound
        verdicts = (judge_all((c,), inputs)[0] for c in _LIKELY_FIRST)
    for verdict in verdicts:
        if not verdict.is_valid:
            return f"{verdict.checker}: {verdict.message}", final, timeline
    return None, final, timeline


def _quiesce(world: World, history: History) -> Quiescence:
    """Poll every ``POLL_MS`` until there is no problem. A poll judges again only when what it
    judges may have changed (the transaction log, a broker's metadata or reachability, the
    journals, the history): the checkers are functions of those, so the problem is the same."""
    start = world.now
    reader = FinalStateReader(world)
    problem, final, timeline = _problem(reader, history, None, exact=False)
    judged = reader.key(), len(history.ops)  # after the poll: its Metadata requests change nothing
    while problem is not None and world.now - start < QUIET_BOUND_MS:
        world.run_until(world.now + POLL_MS)
        if (reader.key(), len(history.ops)) != judged:
            problem, final, timeline = _problem(reader, history, timeline, exact=False)
            judged = reader.key(), len(history.ops)
    quiet = problem is None
    if not quiet:  # the problem reported is the first in the checkers' order, as a real run's
        problem, _, timeline = _problem(reader, history, timeline)
        final = reader.read(quiesced=False)
    waited = round((world.now - start) / 1000, 3)
    return Quiescence(waited if quiet else None, quiet, waited, final, problem, timeline)


def _write(  # noqa: PLR0917 - the parts of one run's evidence
    run_dir: Path,
    world: World,
    schedule: Schedule,
    judged: Judged,
    verdicts: list[Verdict],
    verdict: str,
    quiet: Quiescence,
    reason: str | None,
) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    sealed = write_artefacts(
        run_dir, None, None, judged, verdicts, verdict, quiet, schedule, reason, commit="simulated"
    )
    body = json.loads((run_dir / "verdict.json").read_text())
    body["replay"] = replay_command(schedule)
    (run_dir / "verdict.json").write_text(json.dumps(body, indent=1, default=str))
    sim = {
        "kind": "sim-run",
        "kit_version": sim_version(),
        "scenario": schedule.scenario,
        "seed": schedule.seed,
        "verdict": sealed.verdict,
        "schedule": schedule.to_json(),
    }
    (run_dir / "sim.json").write_text(json.dumps(sim, indent=1) + "\n")
    lines = [
        json.dumps({"dest": b, **r.__dict__, "partitions": [p.__dict__ for p in r.partitions]})
        for b, rs in sorted(world.journals.items())
        for r in rs
    ]
    (run_dir / "requests.txt").write_text("\n".join(lines) + "\n")
    (run_dir / "manifest.json").unlink(missing_ok=True)
    _manifest(run_dir)


def _manifest(run_dir: Path) -> None:
    """The manifest without its wall-clock line, so two runs of one seed are byte-identical."""
    body = write_manifest(run_dir, commit="simulated")
    body.pop("written_at", None)
    (run_dir / "manifest.json").write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
