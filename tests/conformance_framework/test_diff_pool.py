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


def test_a_narrow_pool_runs_one_job_at_a_time_until_its_event_then_all_its_workers(tmp_path: Path) -> None:
    """The gate's differential section runs beside its checks: one job at a time until the checks
    end (the event), then on both workers. Two real workers; four jobs of 3 s each."""
    checks_ended = threading.Event()
    pool = Pool(2, tmp_path / "pool", narrow_until=checks_ended, run=_timed_sleep)
    try:
        jobs = [Job({"sleep_s": 3.0}, load_target("reference"), "process") for _ in range(4)]
        handles = [pool.submit(j) for j in jobs]
        first, second = handles[0].result(), handles[1].result()
        assert first.timings, first.error
        assert second.timings, second.error
        assert second.timings[0] >= first.timings[1], "two jobs ran at once before the event"
        checks_ended.set()
        third, fourth = handles[2].result(), handles[3].result()
        assert third.timings, third.error
        assert fourth.timings, fourth.error
        assert fourth.timings[0] < third.timings[1], "after the event the jobs still ran one at a time"
        assert third.error != fourth.error, "not on two workers (the jobs answer their worker's pid)"
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
