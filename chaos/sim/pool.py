"""The simulator's worker processes: forked players that are replaced when their memory grows
(ring: drivers).

A long campaign plays hundreds of thousands of schedules in a few processes. Python objects do not
leak across schedules (the allocated block count is flat), but a rare schedule builds a world of
tens of thousands of transactions (Kafka 2.5.1's own failover loop, ``composed:52768``), and
after it is collected the allocator keeps part of that heap: its arenas stay pinned by the few
long-lived objects made meanwhile. A worker process whose resident set has grown more than
``growth_limit`` past its settled size (what it held after its first ``settle_jobs`` jobs, the
smallest such size any worker of the pool reached) is therefore retired once its current job is
done, and a fresh one is forked from the parent in its place — the usual cure of long-lived
worker pools (``maxtasksperchild``), here driven by the measured size instead of a count.

Results come back in job order (as ``Pool.imap``). A job that raises is re-raised in the parent
with the worker's traceback; a worker that dies (killed, out of memory) fails the campaign with
the job it was playing named. Workers read their jobs from a pipe and exit when it closes, so
none outlives its parent, even a killed one.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = ["RecyclingPool", "WorkerDied", "rss_mib"]

_J = TypeVar("_J")
_R = TypeVar("_R")

#: How much a worker may grow past its settled size before it is replaced.
GROWTH_LIMIT = 0.05
#: Jobs a worker plays before its size counts as settled (modules and caches warmed up).
SETTLE_JOBS = 20


class WorkerDied(RuntimeError):
    """A worker process ended while it played a job."""


def rss_mib() -> float:
    """This process's resident set size (``VmRSS``), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _serve(conn: Connection, fn: Callable[[Any], Any], inherited: list[Connection]) -> None:
    """A worker: play each job read from ``conn`` and answer (index, ok, result or error, RSS).
    ``inherited``: the parent's ends of every worker's pipe, this one's included, which the fork
    copied here; closed first, so that a pipe reaches end-of-file when the parent goes."""
    for other in inherited:
        other.close()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break
        if message is None:
            break
        index, job = message
        try:
            answer = (index, True, fn(job), rss_mib())
        except BaseException as exc:
            text = "".join(traceback.format_exception(exc))
            answer = (index, False, f"{type(exc).__name__}: {exc}\n{text}", rss_mib())
        try:
            conn.send(answer)
        except (BrokenPipeError, OSError):
            break
    conn.close()
    os._exit(0)


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    jobs: int = 0
    busy: int | None = None  # index of the job it plays


@dataclass
class PoolStats:
    """What a pool did: workers started (first ones included) and retired for their size, the
    settled size, and the largest and the latest size a worker reported."""

    started: int = 0
    retired: int = 0
    settled_mib: float | None = None
    largest_mib: float = 0.0
    latest_mib: float = 0.0


class RecyclingPool(Generic[_J, _R]):
    """``workers`` forked processes playing ``fn`` over jobs (see the module docstring)."""

    def __init__(
        self,
        fn: Callable[[_J], _R],
        workers: int,
        *,
        growth_limit: float = GROWTH_LIMIT,
        settle_jobs: int = SETTLE_JOBS,
    ) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self.fn, self.size = fn, workers
        self.growth_limit, self.settle_jobs = growth_limit, settle_jobs
        self.stats = PoolStats()
        self._ctx = get_context("fork")
        self._workers: list[_Worker] = []

    def __enter__(self) -> RecyclingPool[_J, _R]:
        for _ in range(self.size):
            self._workers.append(self._start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        inherited = [parent, *(w.conn for w in self._workers)]
        process = self._ctx.Process(
            target=_serve, args=(child, self.fn, inherited), daemon=True, name="sim-worker"
        )
        process.start()
        child.close()
        self.stats.started += 1
        return _Worker(process, parent)

    def _stop(self, worker: _Worker) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            worker.conn.send(None)
        worker.conn.close()
        worker.process.join(timeout=10)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(timeout=5)

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            self._stop(worker)

    def _grew(self, worker: _Worker, rss: float) -> bool:
        """Note the size a worker reported; True when it has grown past the limit."""
        s = self.stats
        s.latest_mib, s.largest_mib = rss, max(s.largest_mib, rss)
        if worker.jobs == self.settle_jobs:
            s.settled_mib = rss if s.settled_mib is None else min(s.settled_mib, rss)
        return s.settled_mib is not None and rss > s.settled_mib * (1 + self.growth_limit)

    @staticmethod
    def _died(worker: _Worker, job: object) -> WorkerDied:
        worker.process.join(timeout=5)
        return WorkerDied(
            f"a simulator worker (pid {worker.process.pid}) ended with exit code {worker.process.exitcode} "
            f"while playing job {worker.busy}: {job!r}"
        )

    def imap(self, jobs: Iterable[_J]) -> Iterator[_R]:
        """The results of ``fn`` over ``jobs``, in job order."""
        pending = iter(enumerate(jobs))
        done: dict[int, _R] = {}
        playing: dict[int, _J] = {}
        following = 0
        exhausted = False
        while True:
            for worker in self._workers:
                if worker.busy is None and not exhausted:
                    item = next(pending, None)
                    if item is None:
                        exhausted = True
                        break
                    worker.busy, playing[item[0]] = item[0], item[1]
                    try:
                        worker.conn.send(item)
                    except OSError:  # it died between two jobs (an OOM kill, a signal)
                        raise self._died(worker, item[1]) from None
            while following in done:
                yield done.pop(following)
                following += 1
            if exhausted and not playing:
                return
            ready = wait([w.conn for w in self._workers if w.busy is not None])
            for worker in [w for w in self._workers if w.conn in ready]:
                try:
                    answer: tuple[int, bool, Any, float] = worker.conn.recv()
                    index, ok, value, rss = answer
                except (EOFError, OSError):
                    job = playing.get(worker.busy) if worker.busy is not None else None
                    raise self._died(worker, job) from None
                worker.busy = None
                worker.jobs += 1
                playing.pop(index, None)
                if not ok:
                    raise RuntimeError(f"job {index} failed in a simulator worker: {value}")
                done[index] = value
                if self._grew(worker, rss):
                    self.stats.retired += 1
                    self._stop(worker)
                    at = next(i for i, w in enumerate(self._workers) if w is worker)
                    self._workers[at] = self._start()
