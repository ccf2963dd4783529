"""The differential mode's worker pool ends when it is closed, whatever thread started its workers."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from cluster.targets import load_target
from conformance.diff.pool import Job, JobResult, Pool

pytestmark = pytest.mark.integration


def test_workers_started_as_replacements_exit_by_themselves_when_the_pool_closes(tmp_path: Path) -> None:
    """Two workers that retire after one job each; after two jobs, one after the other, the pool's
    handler thread has started replacements. Closing must let every worker exit by itself (exit
    code 0: it stopped its ZooKeeper) and return. Workers tied to the thread that started them
    (``PR_SET_PDEATHSIG``) are SIGKILLed when that thread ends at close — and one killed while it
    holds the task queue's lock leaves the others waiting for it for ever."""
    pool = Pool(2, tmp_path / "pool", tasks_per_worker=1)
    workers = pool._pool._pool  # type: ignore[attr-defined]  # multiprocessing pool workers
    for _ in range(2):
        # the pool's own job runs a whole scenario; a pid is all this test needs from a worker
        pool._pool.apply_async(os.getpid).get(timeout=120)
        give_up = time.monotonic() + 120
        while len(workers) < 2 or not all(w.is_alive() for w in workers):
            assert time.monotonic() < give_up, "the pool did not replace its retired worker"
            time.sleep(0.2)
        time.sleep(3)  # the replacement runs its initializer (a ZooKeeper start) and waits for work
    last = list(workers)
    closer = threading.Thread(target=pool.close, daemon=True)
    closer.start()
    closer.join(timeout=120)
    assert not closer.is_alive(), "Pool.close() did not return: a worker waits for the task queue"
    assert [w.exitcode for w in last] == [0, 0], "a worker did not exit by itself"


def _timed_sleep(job: Job) -> JobResult:
    """A job that only occupies its worker: when it started and ended (the clock is shared)."""
    began = time.time()
    time.sleep(float(job.scenario["sleep_s"]))
    return JobResult(None, timings=[began, time.time()], error=str(os.getpid()))


def test_a_pool_runs_as_many_jobs_at_once_as_it_has_workers_and_no_more(tmp_path: Path) -> None:
    """The gate's differential section shares the machine with its checks: a pool of two runs two
    jobs at once and hands a third to a worker only when one of them ended. Two real workers; three
    jobs of 3 s each."""
    pool = Pool(2, tmp_path / "pool", run=_timed_sleep)
    try:
        jobs = [Job({"sleep_s": 3.0}, load_target("reference"), "process") for _ in range(3)]
        handles = [pool.submit(j) for j in jobs]
        first, second, third = (h.result() for h in handles)
        assert first.timings, first.error
        assert second.timings, second.error
        assert third.timings, third.error
        assert second.timings[0] < first.timings[1], "the first two jobs did not run at once"
        assert first.error != second.error, "not on two workers (the jobs answer their worker's pid)"
        assert third.timings[0] >= min(first.timings[1], second.timings[1]), "three jobs ran at once"
    finally:
        pool.close()


def test_a_job_cancelled_before_it_reached_a_worker_never_runs(tmp_path: Path) -> None:
    pool = Pool(1, tmp_path / "pool", run=_timed_sleep)
    target = load_target("reference")
    running = pool.submit(Job({"sleep_s": 2.0}, target, "process"))
    queued = pool.submit(Job({"sleep_s": 0.0}, target, "process"))
    queued.cancel()
    assert running.result().timings
    time.sleep(1.0)
    assert not queued._done.is_set(), "a cancelled job was handed to a worker"
    pool.close()
