"""One chaos run, start to verdict, inside a runner worker (ring: drivers).

:func:`prepare` (steps 1 and 2), :func:`play` (step 3) and :func:`conclude` (4 and 5) execute a
:class:`RunPlan`; a runner worker calls them apart so that one run's set-up overlaps the previous
run's last steps, and a run's ops still in flight, final phase and checks overlap the next run's
workload (each run has its own chroot, ports, proxies and directories; :func:`finish` is the last
two in a row):

1. **plan** — the schedule is generated from (scenario, seed) and written to ``run.json``;
2. **cluster** — a :class:`~chaos.links.ChaosCluster` in a fresh chroot of the worker's
   ZooKeeper (standalone, shared by the worker's runs, or its 3-node ensemble), every link through
   Toxiproxy; a cluster that cannot start makes the run ``unknown`` with the reason;
3. **workload + faults** — one thread per process of the schedule (``client-<n>``, ``nemesis``),
   each op recorded as invoke/ok/fail/info in a :class:`~chaos.history.History`; :func:`play`
   returns once every step has been invoked, :func:`conclude` first waits for the ops still in
   flight (both count as the run's ``workload`` phase);
4. **final phase** — the nemesis heals everything, :func:`~chaos.final_state.quiesce` waits;
5. **check** — :func:`chaos.checkers.check_all` over the history, the chroot's transaction log
   (the timeline the final phase replayed, extended with the last records) and the final state;
   the artefacts, sealed by a manifest (:mod:`chaos.run.artefacts`), and one run record
   (``kind="chaos-run"``) are written. A run whose evidence could not be written is ``unknown``.

The run directory (``history.jsonl``, ``verdict.json``, ``run.json``, node logs, the ZooKeeper
log tail, a transaction-log excerpt, request journals, ``manifest.json``) is kept for invalid and
unknown runs and pruned for valid ones unless ``keep_all``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaos.checkers import check_all
from chaos.checkers.timeline import follow
from chaos.checkers.verdict import Verdict, aggregate, excused_counts
from chaos.final_state import Quiescence, quiesce
from chaos.generator import Schedule, Step, generate
from chaos.history import History
from chaos.links import ChaosCluster, LinkFabric
from chaos.nemesis import Nemesis, NodeGuard
from chaos.run.artefacts import Judged, write_artefacts
from chaos.run.env import RunEnv
from chaos.run.metrics import phase_metrics
from chaos.scenarios import Scenario
from chaos.workload import Client
from harness import process
from harness.zookeeper.observer import delete_tree
from probes.errors import TxnLogCorrupt
from records.run_record import RunRecord, run_order_key, utc_now_iso

__all__ = [
    "PHASES",
    "InFlight",
    "Played",
    "Prepared",
    "RunEnv",
    "RunPlan",
    "RunResult",
    "conclude",
    "discard",
    "finish",
    "play",
    "prepare",
]

OUTCOME = {"valid": "passed", "invalid": "failed", "unknown": "error"}
PROFILE = "2.5"


@dataclass(frozen=True)
class RunPlan:
    """What one run is: which scenario (faults possibly narrowed), which seed, where it goes."""

    index: int
    scenario: Scenario
    seed: int
    campaign_id: str
    out_dir: Path
    keep_all: bool = False

    @property
    def name(self) -> str:
        return f"{self.scenario.name}-{self.index:05d}-s{self.seed}"


@dataclass(frozen=True)
class RunResult:
    """One run's outcome; ``excused``: per Kafka 2.5.1 quirk, how many items it excused."""

    verdict: str
    record: dict[str, Any]
    run_dir: str | None
    reason: str | None
    schedule: str
    excused: dict[str, int] | None = None
    #: seconds per phase of the run (:data:`PHASES`), and whether its set-up began ahead
    phases: dict[str, float] | None = None
    began_ahead: bool = False


#: A run's phases, in order, as :attr:`RunResult.phases` names them.
PHASES = ("set-up", "workload", "heal", "quiescence", "checks", "evidence", "teardown")


class _Laps:
    """Wall seconds per phase of one run."""

    def __init__(self, **done: float) -> None:
        self.seconds = dict(done)

    @contextlib.contextmanager
    def lap(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - began, 3)


def _keep_corrupt_log(exc: BaseException, run_dir: Path) -> None:
    """A transaction log the probes could not decode is evidence: keep a copy in the run dir
    (the ZooKeeper data dir is removed at teardown) so the record can be examined later."""
    bad = getattr(exc, "file", None) if isinstance(exc, TxnLogCorrupt) else None
    if bad is not None:
        with contextlib.suppress(OSError):
            shutil.copy2(bad, run_dir / f"undecodable-{Path(bad).name}")


@dataclass
class Prepared:
    """A run set up and not yet exercised: its schedule, directories and started cluster, or why
    the cluster did not start (``reason``)."""

    plan: RunPlan
    env: RunEnv
    schedule: Schedule
    run_dir: Path
    work: Path
    chroot: str
    started: datetime
    started_iso: str
    t0: float
    cluster: ChaosCluster | None
    reason: str | None
    setup_s: float = 0.0
    began_ahead: bool = False  # set by a worker that prepared it while another run was finishing


def prepare(base: RunEnv, plan: RunPlan) -> Prepared:
    """Steps 1 and 2 of the module docstring: the schedule, the run directory, the cluster."""
    env = base.ensemble_env() if plan.scenario.zookeeper == "ensemble" and base.ensemble_env else base
    started, t0 = datetime.now(UTC), time.monotonic()
    started_iso = utc_now_iso()
    schedule = generate(plan.scenario, plan.seed)
    run_dir = plan.out_dir / "runs" / plan.name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(_run_json(env, plan, schedule), indent=1))
    work = process.new_run_dir(f"chaos-{plan.name}")
    chroot = f"/chaos/{plan.campaign_id}-{plan.index:05d}"
    cluster: ChaosCluster | None = None
    reason: str | None = None
    try:
        cluster = _start_cluster(env, plan, schedule, chroot, work)
    except Exception as exc:
        reason = f"cluster did not start: {type(exc).__name__}: {exc}".splitlines()[0][:400]
        (run_dir / "start-error.txt").write_text(traceback.format_exc())
    return Prepared(
        plan, env, schedule, run_dir, work, chroot, started, started_iso, t0, cluster, reason,
        setup_s=round(time.monotonic() - t0, 3),
    )  # fmt: skip


@dataclass
class InFlight:
    """The threads of a run's processes once every step has been invoked: the ops they still
    wait for end on their own (each op has its own timeout); ``give_up`` bounds the wait."""

    threads: list[threading.Thread]
    give_up: float

    def join(self) -> None:
        for t in self.threads:
            t.join(timeout=max(0.0, self.give_up - time.monotonic()))


@dataclass
class Played:
    """A run whose every step has been invoked (step 3): its last ops may still be in flight
    (``in_flight``, waited for by :func:`conclude` before it heals); not yet healed, checked or
    torn down. ``reason`` is set when the cluster never started or the workload could not be
    run; the run is then ``unknown`` and :func:`conclude` only tears it down."""

    prep: Prepared
    history: History
    nemesis: Nemesis | None
    laps: _Laps
    reason: str | None
    in_flight: InFlight | None = None


def play(prep: Prepared, *, final_phase: Callable[[], None] | None = None, lead_s: float = 0.0) -> Played:
    """Step 3 of a prepared run, until every step of the schedule has been invoked (its last ops
    may still be in flight: :func:`conclude` waits for them). ``final_phase`` is called once,
    ``lead_s`` seconds before the schedule's last step is due, or when every step has been
    invoked if that comes first, and at the latest before this returns (at once if the cluster
    never started): the worker begins the next run's set-up then, so that it is ready when this
    returns. Never raises for a run's own failures."""
    history = History()
    announce = _once(final_phase)
    laps = _Laps(**{"set-up": prep.setup_s})
    nemesis: Nemesis | None = None
    in_flight: InFlight | None = None
    reason = prep.reason
    try:
        if prep.cluster is not None:
            nemesis, in_flight = _workload(
                prep, prep.cluster, history, laps, all_invoked=announce, lead_s=lead_s
            )
    except Exception as exc:
        reason = f"runner error: {type(exc).__name__}: {exc}".splitlines()[0][:400]
        (prep.run_dir / "runner-error.txt").write_text(traceback.format_exc())
        _keep_corrupt_log(exc, prep.run_dir)
    finally:
        announce()
    return Played(prep, history, nemesis, laps, reason, in_flight)


def finish(prep: Prepared, *, final_phase: Callable[[], None] | None = None) -> RunResult:
    """Steps 3 to 5 of a prepared run, one after the other (:func:`play`, then :func:`conclude`)."""
    return conclude(play(prep, final_phase=final_phase))


def conclude(played: Played) -> RunResult:
    """Steps 4 and 5 of a played run: heal, quiescence, checks, evidence, teardown, the record.
    Touches only the run's own cluster, chroot, proxies and directories, so a worker may run the
    next run's workload meanwhile. Never raises for a run's own failures."""
    prep, history, laps, reason = played.prep, played.history, played.laps, played.reason
    plan, env, schedule, cluster = prep.plan, prep.env, prep.schedule, prep.cluster
    run_dir, work, chroot = prep.run_dir, prep.work, prep.chroot
    verdicts: list[Verdict] = []
    quiet: Quiescence | None = None
    judged = Judged((), None, None)
    if played.in_flight is not None:
        with laps.lap("workload"):  # the rest of the workload: the ops still in flight
            played.in_flight.join()
    try:
        if cluster is not None and played.nemesis is not None and reason is None:
            quiet, verdicts, judged = _judge(cluster, history, played.nemesis, laps)
    except Exception as exc:
        reason = f"runner error: {type(exc).__name__}: {exc}".splitlines()[0][:400]
        (run_dir / "runner-error.txt").write_text(traceback.format_exc())
        _keep_corrupt_log(exc, run_dir)
    verdict: str = "unknown" if reason is not None else aggregate(verdicts)
    if reason is None and verdict != "valid":
        reason = "; ".join(f"{v.checker}: {v.message}" for v in verdicts if not v.is_valid)[:1000]
        if quiet is not None and quiet.final_state is None:  # why there is none comes first
            reason = f"final phase: {quiet.last_problem}; {reason}"[:1000]
    metrics = phase_metrics(cluster, history, quiet) if cluster is not None else []
    if not judged.ops:
        judged = Judged(history.ops, judged.records, judged.final_state)
    with laps.lap("evidence"):
        sealed = write_artefacts(
            run_dir, env.zk_log_tail, cluster, judged, verdicts, verdict, quiet, schedule, reason, env.commit
        )
    verdict, reason = sealed.verdict, sealed.reason
    kept = verdict != "valid" or plan.keep_all
    with laps.lap("teardown"):
        _teardown(env, cluster, chroot, work)
        if not kept:
            shutil.rmtree(run_dir, ignore_errors=True)
    # No checker ran (the cluster never started, the runner failed first): nothing was reported
    # either way, so the record says null rather than "no quirk excused anything".
    excused = excused_counts(verdicts) if verdicts else None
    record = RunRecord(
        kind="chaos-run",
        run_id=plan.campaign_id,
        run_order=run_order_key(prep.started, f"{plan.campaign_id}-{plan.index:05d}"),
        test_id=f"chaos/{plan.scenario.name}",
        behaviour_ids=(),
        target=env.target.name,
        target_version=env.target_version,
        profile=PROFILE,
        outcome=OUTCOME[verdict],
        reason=_reason(reason, verdicts),
        duration_s=round(time.monotonic() - prep.t0, 3),
        started_at=prep.started_iso,
        finished_at=utc_now_iso(),
        fault_package="+".join(schedule.fault_kinds) or "none",
        seed=plan.seed,
        phase_metrics=tuple(metrics),
        commit=env.commit,
        worker=env.slot,
        excused=excused,
    )
    return RunResult(
        verdict,
        json.loads(record.to_json()),
        str(run_dir) if kept else None,
        reason,
        schedule.describe(),
        excused,
        laps.seconds,
        prep.began_ahead,
    )


def _reason(reason: str | None, verdicts: list[Verdict]) -> str | None:
    """First line: why (if not valid); then every checker's verdict, ``name=validity``."""
    per_checker = ", ".join(f"{v.checker}={v.validity}" for v in verdicts)
    if reason is None and not per_checker:
        return None
    return "\n".join(p for p in (reason, f"checkers: {per_checker}" if per_checker else None) if p)


def _run_json(env: RunEnv, plan: RunPlan, schedule: Schedule) -> dict[str, Any]:
    return {
        "campaign_id": plan.campaign_id,
        "index": plan.index,
        "scenario": plan.scenario.name,
        "faults": list(plan.scenario.faults),
        "seed": plan.seed,
        "target": env.target.source or env.target.name,
        "schedule": schedule.to_json(),
    }


def _start_cluster(env: RunEnv, plan: RunPlan, schedule: Schedule, chroot: str, work: Path) -> ChaosCluster:
    env.zk_admin.ensure_path(chroot)
    fabric = LinkFabric(env.toxiproxy, prefix=f"{env.slot}r{plan.index}_", ports=env.ports)
    cluster = ChaosCluster(
        env.target,
        fabric=fabric,
        ports=env.ports,
        launcher=env.launcher,
        zk_connect_string=env.zk_connect,
        chroot=chroot,
        txn_log_dir=env.zk_txn_dir,
        base_dir=work,
        broker_ids=schedule.broker_ids,
        four_letter=env.four_letter,
    )
    try:
        # start waits until every node is past its start-up (its controller component has read
        # /controller, which a Kafka server does after its registration's reply): a fault at the
        # first instant must not cut a registration in flight, which Kafka answers by exiting
        cluster.start()
        cluster.wait_controller()
    except BaseException:
        cluster.close()
        raise
    return cluster


def _once(hook: Callable[[], None] | None) -> Callable[[], None]:
    """``hook`` callable once, from any thread (a second caller waits until the first call has
    returned); what it raises is logged and goes no further (a run's verdict never depends on
    whether the next run could be set up)."""
    pending = [hook] if hook is not None else []
    lock = threading.Lock()

    def call() -> None:
        with lock:
            while pending:
                try:
                    pending.pop()()
                except Exception:
                    traceback.print_exc()

    return call


def _workload(
    prep: Prepared,
    cluster: ChaosCluster,
    history: History,
    laps: _Laps,
    *,
    all_invoked: Callable[[], None],
    lead_s: float = 0.0,
) -> tuple[Nemesis, InFlight]:
    """One thread per process of the schedule, each playing its steps, until every step has been
    invoked; returns the nemesis, whose faults the final phase heals, and the threads (their ops
    still in flight). ``all_invoked`` is called ``lead_s`` before the last step is due or once
    every step has been invoked, whichever comes first."""
    guard = NodeGuard()
    nemesis = Nemesis(cluster, guard, ensemble=prep.env.ensemble)
    schedule = prep.schedule
    unfinished = _Countdown(len(schedule.processes))
    threads = [
        threading.Thread(
            target=_play,
            args=(process_name, schedule.for_process(process_name), history, nemesis, Client(cluster, guard)),
            kwargs={"last_invoked": unfinished.count_down},
            name=f"chaos-{process_name}",
            daemon=True,
        )
        for process_name in schedule.processes
    ]
    last_due = max((step.at_s for step in schedule.steps), default=0.0)
    early = threading.Timer(max(0.0, last_due - lead_s), all_invoked)
    early.daemon = True
    with laps.lap("workload"):
        start = time.monotonic()
        give_up = start + prep.plan.scenario.duration_s + 90.0
        for t in threads:
            t.start()
        early.start()
        try:
            unfinished.wait(lambda: not any(t.is_alive() for t in threads), give_up)
        finally:
            early.cancel()
        all_invoked()
    return nemesis, InFlight(threads, give_up)


class _Countdown:
    """Set when every process has invoked its last step (or its thread ended without)."""

    def __init__(self, n: int) -> None:
        self._left, self._cond = n, threading.Condition()

    def count_down(self) -> None:
        with self._cond:
            self._left -= 1
            self._cond.notify_all()

    def wait(self, ended: Callable[[], bool], give_up: float) -> None:
        with self._cond:
            while self._left > 0 and not ended() and time.monotonic() < give_up:
                self._cond.wait(timeout=0.05)


def _judge(
    cluster: ChaosCluster, history: History, nemesis: Nemesis, laps: _Laps
) -> tuple[Quiescence, list[Verdict], Judged]:
    """Heal, wait for quiet, check."""
    with laps.lap("heal"):
        op = history.invoke("nemesis", "heal", {})
        healed = nemesis.heal_all()
        history.complete(op, "ok" if not healed["errors"] else "info", healed)
    with laps.lap("quiescence"):
        op = history.invoke("nemesis", "quiesce", {})
        quiet = quiesce(cluster, history.ops, cluster.deadline(30.0))
    summary = {
        "time_to_heal_s": quiet.time_to_heal_s,
        "quiesced": quiet.quiesced,
        "waited_s": round(quiet.waited_s, 3),
    }
    history.complete(op, "ok" if quiet.quiesced else "info", summary, quiet.last_problem)
    with laps.lap("checks"):
        judged = Judged(history.ops, cluster.history(), quiet.final_state)
        assert judged.records is not None
        timeline = follow(quiet.timeline, judged.records)  # the final phase's replay, extended
        verdicts = check_all(judged.ops, timeline, judged.final_state)
    return quiet, verdicts, judged


def _play(
    process_name: str,
    steps: list[Step],
    history: History,
    nemesis: Nemesis,
    client: Client,
    *,
    last_invoked: Callable[[], None] = lambda: None,
) -> None:
    """Run one process's steps at their times (later if the previous op was slow);
    ``last_invoked`` once its last step has been invoked (at once for a process without steps)."""
    start = time.monotonic()
    if not steps:
        last_invoked()
    for i, step in enumerate(steps):
        delay = start + step.at_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        op = history.invoke(process_name, step.f, step.value)
        if i == len(steps) - 1:
            last_invoked()
        value: dict[str, Any] | None
        try:
            if step.f == "start_fault":
                kind, value, error = nemesis.start(step.value)
            elif step.f == "stop_fault":
                kind, value, error = nemesis.stop(str(step.value["id"]))
            else:
                kind, value, error = client.invoke(step.f, step.value)
        except Exception as exc:
            kind, value, error = "info", None, f"{type(exc).__name__}: {exc}".splitlines()[0]
        history.complete(op, kind, value, error)  # type: ignore[arg-type]


def discard(prep: Prepared) -> None:
    """Undo a set-up that will not be run: its cluster, chroot and work directory (the run
    directory stays, for :func:`prepare` to use again)."""
    _teardown(prep.env, prep.cluster, prep.chroot, prep.work)


def _teardown(env: RunEnv, cluster: ChaosCluster | None, chroot: str, work: Path) -> None:
    if cluster is not None:
        cluster.close()
    with contextlib.suppress(Exception):
        delete_tree(env.zk_admin, chroot)
    shutil.rmtree(work, ignore_errors=True)
