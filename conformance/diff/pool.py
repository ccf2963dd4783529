"""Worker processes that run scenarios, each with its own ZooKeeper (conformance ring, drivers).

``-n P`` workers are ``spawn``ed processes; each starts one ZooKeeper (tickTime 500 ms, a fresh
data dir, sessions up to 180 s) and gives every scenario its own chroot on it. A worker is replaced
after :data:`TASKS_PER_WORKER` scenarios (a fresh ZooKeeper, fresh port claims), dies with the
campaign (a watch thread: see :func:`_die_with_parent`) and stops its ZooKeeper when it exits; nodes
die with their worker.
:meth:`Pool.traces` runs (scenario, side) jobs in parallel and returns their traces in order.
"""

from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.util
import os
import signal
import tempfile
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster.targets import Target

__all__ = ["TASKS_PER_WORKER", "Job", "JobResult", "Pending", "Pool"]

TASKS_PER_WORKER = 20
#: how long closing waits for the workers to exit after their last job before terminating them
JOIN_GRACE_S = 60.0


@dataclass(frozen=True)
class Job:
    scenario: dict[str, Any]  # the scenario's JSON
    target: Target
    launcher: str
    keep_evidence: bool = False
    profile: str = "2.5"


@dataclass
class JobResult:
    trace: dict[str, Any] | None
    wall_s: float = 0.0
    timings: list[float] | None = None
    evidence: dict[str, str] | None = None
    error: str = ""  # a failure of the harness itself (not of the target): the verdict is unknown


class _Worker:
    zk: Any = None
    work: Path | None = None


_WORKER = _Worker()


def _die_with_parent(parent: int) -> None:
    """SIGKILL this worker once the campaign process is gone.

    Not ``PR_SET_PDEATHSIG``: that fires when the *thread* that started the worker ends, and the
    replacement workers are started by the pool's worker-handler thread, which ends at
    ``close()``. Killed there, a replacement waiting for its next task dies holding the task
    queue's read lock, and every other worker then waits for that lock for ever (a campaign that
    never returned after its last scenario, its ZooKeepers left to the reaper)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)


def _init(root: str, parent: int) -> None:
    from harness.zookeeper import ZooKeeperServer  # noqa: PLC0415 - in the spawned worker only

    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=_die_with_parent, args=(parent,), name="parent-watch", daemon=True).start()
    # the observer connects to the scenario's chroot before its first node creates it, on purpose
    warnings.filterwarnings("ignore", message="No chroot path exists")
    _WORKER.work = Path(tempfile.mkdtemp(prefix=f"w{os.getpid()}-", dir=root))
    zk = ZooKeeperServer(
        name=f"diff-{os.getpid()}", tick_time_ms=500, max_session_timeout_ms=180000, snap_count=20000
    )
    zk.start()
    _WORKER.zk = zk
    multiprocessing.util.Finalize(zk, zk.close, exitpriority=10)


def _run(job: Job) -> JobResult:
    from conformance.diff.runner import run_scenario  # noqa: PLC0415 - in the spawned worker only
    from conformance.diff.scenario import Scenario  # noqa: PLC0415
    from harness.launcher import launcher_named  # noqa: PLC0415

    try:
        scenario = Scenario.from_json(job.scenario)
        assert _WORKER.work is not None
        result = run_scenario(
            scenario,
            job.target,
            _WORKER.zk,
            _WORKER.work,
            launcher=launcher_named(job.launcher),
            keep_evidence=job.keep_evidence,
            profile=job.profile,
        )
        return JobResult(
            result.trace(scenario, job.target.name), result.wall_s, result.timings, result.evidence
        )
    except Exception:
        return JobResult(None, error=traceback.format_exc(limit=8))


class Pending:
    """A submitted job: :meth:`result` waits for it; :meth:`cancel` only stops waiting for it (a job
    already running finishes, and its nodes stop with it; one not yet handed to a worker never runs)."""

    def __init__(self, job: Job) -> None:
        self.job, self.cancelled = job, False
        self._done = threading.Event()
        self._result: JobResult | None = None

    def result(self) -> JobResult:
        self._done.wait()
        assert self._result is not None
        return self._result

    def cancel(self) -> None:
        self.cancelled = True

    def _settle(self, result: JobResult) -> None:
        self._result = result
        self._done.set()


class Pool:
    """``multiprocessing.Pool`` of spawned workers, each replaced after :data:`TASKS_PER_WORKER`
    jobs (its ``maxtasksperchild``; ``ProcessPoolExecutor``'s ``max_tasks_per_child`` can hang in
    Python 3.11 when every worker retires at once).

    Jobs are handed to the workers by this process, at most ``workers`` at a time (a job cancelled
    while it waits never reaches one)."""

    def __init__(
        self,
        workers: int,
        root: Path,
        tasks_per_worker: int = TASKS_PER_WORKER,
        *,
        run: Callable[[Job], JobResult] = _run,
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.workers = max(1, workers)
        self._pool = multiprocessing.get_context("spawn").Pool(
            processes=self.workers,
            initializer=_init,
            initargs=(str(root), os.getpid()),
            maxtasksperchild=tasks_per_worker,
        )
        self._run = run  # what a worker does with a job (a module-level function: it is pickled)
        self._pending: list[Pending] = []
        self._waiting: deque[Pending] = deque()
        self._lock = threading.Lock()
        self._running = 0
        self._closed = threading.Event()

    def submit(self, job: Job) -> Pending:
        pending = Pending(job)
        with self._lock:
            self._pending.append(pending)
            self._waiting.append(pending)
        self._dispatch()
        return pending

    def _dispatch(self) -> None:
        """Hand waiting jobs to the workers while fewer than ``workers`` run (callers: a submit, the
        end of a job on the pool's result thread)."""
        while True:
            with self._lock:
                if self._running >= self.workers or not self._waiting or self._closed.is_set():
                    return
                pending = self._waiting.popleft()
                if pending.cancelled:
                    continue
                self._running += 1
            self._pool.apply_async(
                self._run,
                (pending.job,),
                callback=functools.partial(self._finished, pending),
                error_callback=functools.partial(self._not_run, pending),
            )

    def _not_run(self, pending: Pending, exc: BaseException) -> None:
        self._finished(pending, JobResult(None, error=f"the job did not reach a worker: {exc!r}"))

    def _finished(self, pending: Pending, result: JobResult) -> None:
        with self._lock:
            self._running -= 1
        pending._settle(result)
        self._dispatch()

    def traces(
        self, jobs: Iterable[Job], on_done: Callable[[int, JobResult], None] | None = None
    ) -> list[JobResult]:
        handles = [self.submit(j) for j in jobs]
        out = []
        for i, h in enumerate(handles):
            out.append(h.result())
            if on_done:
                on_done(i, out[-1])
        return out

    def close(self) -> None:
        """Wait for the jobs still wanted; jobs nobody waits for any more are ended with their workers."""
        wanted = [p for p in self._pending if not p.cancelled]
        if len(wanted) < len(self._pending):
            self._closed.set()  # queued jobs are never handed out
            self._pool.terminate()  # workers die at once; their nodes and ZooKeeper die with them
        else:
            for p in wanted:
                p.result()
            self._closed.set()
            self._pool.close()  # workers exit after their last job and stop their ZooKeeper
        self._join()

    def _join(self) -> None:
        """``Pool.join``, bounded: every result is in by now, so a worker still there after
        :data:`JOIN_GRACE_S` is one that never got its stop sentinel — seen once, a replacement
        (``maxtasksperchild``) started while the pool closed, idle for ever while the campaign
        waited for it — and is terminated (its ZooKeeper and nodes die with it, or the reaper
        takes them)."""
        joined = threading.Event()

        def join() -> None:
            self._pool.join()
            joined.set()

        threading.Thread(target=join, name="diff-pool-join", daemon=True).start()
        if not joined.wait(JOIN_GRACE_S):
            self._pool.terminate()
            joined.wait(JOIN_GRACE_S)
