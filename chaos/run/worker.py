"""A runner worker process: one ZooKeeper, one Toxiproxy, runs one plan at a time (ring: drivers).

``python -m chaos.run.worker --slot N --slots P --target T`` reads one JSON task per line on
stdin and answers one JSON result per line on stdout (the only thing written there: anything
else that prints goes to stderr). Everything it starts — the ZooKeeper JVM(s), the Toxiproxy
server, the nodes — is owned through :mod:`harness.process` (pid files, pdeathsig),
and the worker itself dies with the runner (pdeathsig), so a SIGKILLed runner leaves nothing
that :func:`chaos.run.reap.reap` cannot remove. A worker that cannot set up (no Java, no
ZooKeeper, no Toxiproxy) answers every task with an ``unknown`` run and the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from chaos.links import PortPool, use_toxiproxy
from chaos.runner import Played, Prepared, RunEnv, RunPlan, RunResult, conclude, discard, play, prepare
from chaos.scenarios import SCENARIOS, Scenario
from chaos.toxiproxy.launch import toxiproxy_server
from cluster.targets import REPO_ROOT, Target, load_target
from harness.launcher import launcher_named
from harness.zookeeper import ZooKeeperEnsemble, ZooKeeperServer
from harness.zookeeper.observer import observer_client
from records.run_record import RunRecord, run_order_key, utc_now_iso

__all__ = ["main", "plan_from_task", "task_of"]

ZK_TICK_TIME_MS = 500  # sessions expire within 0.5 s of the profile's 4 s timeout (as conformance)


def task_of(plan: RunPlan) -> dict[str, Any]:
    return {
        "index": plan.index,
        "scenario": plan.scenario.name,
        "faults": list(plan.scenario.faults),
        "seed": plan.seed,
        "campaign_id": plan.campaign_id,
        "out_dir": str(plan.out_dir),
        "keep_all": plan.keep_all,
    }


def plan_from_task(task: dict[str, Any]) -> RunPlan:
    scenario: Scenario = replace(SCENARIOS[task["scenario"]], faults=tuple(task["faults"]))
    return RunPlan(
        int(task["index"]),
        scenario,
        int(task["seed"]),
        str(task["campaign_id"]),
        Path(task["out_dir"]),
        bool(task["keep_all"]),
    )


def _commit() -> str | None:
    with contextlib.suppress(Exception):
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip() or None
    return None


@contextlib.contextmanager
def worker_env(slot: int, slots: int, target: Target, launcher_name: str) -> Iterator[RunEnv]:
    """ZooKeeper + Toxiproxy + admin session for this worker's runs (the ensemble on demand)."""
    launcher = launcher_named(launcher_name)
    with contextlib.ExitStack() as stack:
        zk = stack.enter_context(
            ZooKeeperServer(name=f"chaos-w{slot}", tick_time_ms=ZK_TICK_TIME_MS, max_session_timeout_ms=30000)
        )
        url = stack.enter_context(toxiproxy_server())
        admin = observer_client(zk.connect_string, timeout_s=10.0)
        admin.start(timeout=15.0)
        stack.callback(admin.close)
        stack.callback(admin.stop)
        env = RunEnv(
            target=target,
            target_version=target.version(),
            slot=f"w{slot}",
            launcher=launcher,
            ports=PortPool.for_slot(slot, slots),
            toxiproxy=use_toxiproxy(url),
            zk_connect=zk.connect_string,
            zk_txn_dir=zk.txn_log_dir,
            zk_admin=admin,
            zk_log_tail=lambda: zk.log_tail(64 * 1024),
            four_letter=zk.four_letter,
            commit=_commit(),
        )
        env.ensemble_env = _ensemble_factory(stack, env, slot)
        yield env


def _ensemble_factory(stack: contextlib.ExitStack, base: RunEnv, slot: int) -> Any:
    made: list[RunEnv] = []

    def get() -> RunEnv:
        if made:
            return made[0]
        ensemble = stack.enter_context(
            ZooKeeperEnsemble(
                3, name=f"chaos-w{slot}-ens", tick_time_ms=ZK_TICK_TIME_MS, max_session_timeout_ms=30000
            )
        )
        admin = observer_client(ensemble.connect_string, timeout_s=10.0)
        admin.start(timeout=30.0)
        stack.callback(admin.close)
        stack.callback(admin.stop)
        first = ensemble.members[0]  # never killed by zk_member_kill: its log is the run's history
        made.append(
            replace(
                base,
                zk_connect=ensemble.connect_string,
                zk_txn_dir=first.txn_log_dir,
                zk_admin=admin,
                zk_log_tail=lambda: "\n".join(m.log_tail(16 * 1024) for m in ensemble.members),
                four_letter=first.four_letter,
                ensemble=ensemble,
                ensemble_env=None,
            )
        )
        return made[0]

    return get


def unknown_result(plan: RunPlan, target: str, slot: str, reason: str) -> RunResult:
    """The result of a run that could not even start (no ZooKeeper, no Toxiproxy, …)."""
    now = utc_now_iso()
    record = RunRecord(
        kind="chaos-run",
        run_id=plan.campaign_id,
        run_order=run_order_key(datetime.now(UTC), f"{plan.campaign_id}-{plan.index:05d}"),
        test_id=f"chaos/{plan.scenario.name}",
        behaviour_ids=(),
        target=target,
        profile="2.5",
        outcome="error",
        reason=reason[:1000],
        duration_s=0.0,
        started_at=now,
        finished_at=now,
        fault_package="none",
        seed=plan.seed,
        worker=slot,
    )
    return RunResult("unknown", json.loads(record.to_json()), None, reason, "")


class _Tasks:
    """The task lines of stdin, read by a thread as they arrive, so that the worker can look at
    the next task while a run is still going (``None``: stdin ended)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, args=(lines,), name="chaos-tasks", daemon=True).start()

    def _read(self, lines: Iterable[str]) -> None:
        try:
            for line in lines:
                if line.strip():
                    self._queue.put(json.loads(line))
        finally:
            self._queue.put(None)

    def next(self) -> dict[str, Any] | None:
        return self._queue.get()

    def ask(self, out: _Channel) -> dict[str, Any] | None:
        """Ask the runner for the next task (a ``{"want": 1}`` line on the result channel) and
        wait for its answer: the task, or ``None`` when the campaign has none left for us."""
        out.send({"want": 1})
        answer = self._queue.get()
        if answer is None:
            self._queue.put(None)  # the end stays visible to next()
            return None
        return None if answer.get("none") else answer


class _Channel:
    """The worker's result channel (its stdout pipe to the runner): one JSON object per line,
    written whole by whichever thread sends (a run's conclusion, a request for the next task)."""

    def __init__(self, out: TextIO) -> None:
        self._out, self._lock = out, threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        with self._lock:
            self._out.write(json.dumps(message) + "\n")
            self._out.flush()


class _Ahead:
    """The next run's set-up (:func:`~chaos.runner.prepare`: its schedule, directories and started
    cluster) on a thread, begun shortly before the current run's last step is due (by about the
    time a set-up takes, :attr:`_Pipeline.lead_s`), so that it is ready when that step has been
    invoked. The next run's cluster lives in its own chroot, on its own ports and proxies;
    nothing of the current run can reach it."""

    def __init__(self, env: RunEnv, plan: RunPlan) -> None:
        self.plan = plan
        self._prepared: Prepared | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(env,), name="chaos-ahead", daemon=True)
        self._thread.start()

    def _run(self, env: RunEnv) -> None:
        try:
            self._prepared = replace(prepare(env, self.plan), began_ahead=True)
        except BaseException as exc:  # raised where a run's own prepare would have raised it
            self._error = exc

    def take(self) -> Prepared:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._prepared is not None
        return self._prepared


class _Pipeline:
    """Which task runs next, and its set-up when it was begun ahead (:class:`_Ahead`)."""

    #: a set-up's seconds assumed before the worker has timed one
    FIRST_SETUP_S = 1.0

    def __init__(self, env: RunEnv | None, tasks: _Tasks, out: _Channel) -> None:
        self.env, self.tasks, self.out = env, tasks, out
        self._following: dict[str, Any] | None = None
        self._ahead: _Ahead | None = None
        self._setup_s = self.FIRST_SETUP_S  # moving average of this worker's set-ups

    @property
    def lead_s(self) -> float:
        """How long before the current run's last step is due to begin the next run's set-up:
        half as long again as this worker's set-ups take (they run beside a workload), within
        0.5–3 s."""
        return min(3.0, max(0.5, 1.5 * self._setup_s))

    def begin_next(self) -> None:
        """The current run's last step is about due (or every step has been invoked): ask the
        runner for the next task (the runner hands tasks out as workers ask, so that the campaign's
        last runs go to the workers that are free first) and begin its set-up (not for an ensemble
        scenario: the worker's ensemble is made on first use)."""
        upcoming = self.tasks.ask(self.out)
        if upcoming is None:
            return
        self._following = upcoming
        plan = plan_from_task(upcoming)
        if self.env is not None and plan.scenario.zookeeper != "ensemble":
            self._ahead = _Ahead(self.env, plan)

    def prepared(self, env: RunEnv, plan: RunPlan, *, alone: Callable[[], None]) -> Prepared:
        """The run's set-up: the one begun ahead if its cluster started; else, once, in line. A
        set-up begun ahead overlapped the previous run's end (the worker's threads, its recording
        proxies and the machine were shared), so its failure is not evidence against the target
        until the same set-up fails alone; its error is kept as ``start-error-ahead.txt``."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return self._timed(prepare(env, plan))
        early = ahead.take()
        if early.reason is None:
            return self._timed(early)
        error = early.run_dir / "start-error.txt"
        with contextlib.suppress(OSError):
            error.replace(early.run_dir / "start-error-ahead.txt")
        discard(early)
        alone()  # the previous run's conclusion is over: nothing else of this worker runs
        return self._timed(prepare(env, plan))

    def _timed(self, prepared: Prepared) -> Prepared:
        if prepared.reason is None:
            self._setup_s = 0.7 * self._setup_s + 0.3 * prepared.setup_s
        return prepared

    def next_task(self) -> dict[str, Any] | None:
        task, self._following = self._following, None
        return task if task is not None else self.tasks.next()


class _Concluding:
    """Each run's final phase, checks, evidence and teardown (:func:`~chaos.runner.conclude`) on a
    thread of its own, so that the worker's next runs play meanwhile. Up to :attr:`AT_ONCE`
    conclusions run side by side: a run whose final phase waits out its bound (a state Kafka never
    leaves, e.g. a partition without a leader) no longer holds back the conclusions of the runs
    played after it. Results are written as they end, each naming its plan's index."""

    #: conclusions of one worker at once (each holds its run's cluster until its teardown)
    AT_ONCE = 3

    def __init__(self, out: _Channel, target: str, slot: int) -> None:
        self.out, self.target, self.slot = out, target, slot
        self._threads: list[threading.Thread] = []

    def begin(self, played: Played) -> None:
        self._threads = [t for t in self._threads if t.is_alive()]
        while len(self._threads) >= self.AT_ONCE:
            self._threads.pop(0).join()  # the oldest; the others may end meanwhile
            self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(target=self._conclude, args=(played,), name="chaos-conclude", daemon=True)
        self._threads.append(thread)
        thread.start()

    def emit(self, index: int, result: RunResult) -> None:
        self._write(index, result)

    def join(self) -> None:
        """Wait until every conclusion begun so far has ended."""
        while self._threads:
            self._threads.pop(0).join()

    def _conclude(self, played: Played) -> None:
        plan = played.prep.plan
        try:
            result = conclude(played)
        except BaseException as exc:  # conclude never raises for a run's own failures: a bug
            traceback.print_exc()
            reason = f"runner error after the workload: {type(exc).__name__}: {exc}".splitlines()[0][:400]
            result = unknown_result(plan, self.target, f"w{self.slot}", reason)
            with contextlib.suppress(Exception):
                discard(played.prep)  # its cluster, chroot and work directory go all the same
        self._write(plan.index, result)

    def _write(self, index: int, result: RunResult) -> None:
        self.out.send({**result.__dict__, "index": index})


def _serve(env: RunEnv | None, error: str | None, target: Target, slot: int, out: TextIO) -> None:
    channel = _Channel(out)
    pipeline = _Pipeline(env, _Tasks(sys.stdin), channel)
    concluding = _Concluding(channel, target.name, slot)
    try:
        while (task := pipeline.next_task()) is not None:
            plan = plan_from_task(task)
            if env is None:
                concluding.emit(
                    plan.index, unknown_result(plan, target.name, f"w{slot}", error or "worker set-up failed")
                )
            else:
                if plan.scenario.zookeeper == "ensemble":
                    # its faults act on the worker's one ensemble, which a concluding ensemble
                    # run may still be healing and reading: the two never overlap
                    concluding.join()
                try:
                    prepared = pipeline.prepared(env, plan, alone=concluding.join)
                except Exception as exc:  # e.g. the worker's ensemble, made on first use, did not start
                    traceback.print_exc()
                    reason = f"set-up failed: {type(exc).__name__}: {exc}".splitlines()[0][:400]
                    concluding.emit(plan.index, unknown_result(plan, target.name, f"w{slot}", reason))
                    continue
                concluding.begin(play(prepared, final_phase=pipeline.begin_next, lead_s=pipeline.lead_s))
    finally:
        concluding.join()  # before the worker's ZooKeeper and Toxiproxy go


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m chaos.run.worker")
    p.add_argument("--slot", type=int, required=True)
    p.add_argument("--slots", type=int, required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--launcher", default="process")
    args = p.parse_args(argv)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # librdkafka, logging, prints: never on the result channel
    target = load_target(args.target)
    try:
        with worker_env(args.slot, args.slots, target, args.launcher) as env:
            _serve(env, None, target, args.slot, out)
    except Exception as exc:
        _serve(
            None, f"worker set-up failed: {type(exc).__name__}: {exc}".splitlines()[0], target, args.slot, out
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
