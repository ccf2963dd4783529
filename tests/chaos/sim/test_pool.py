"""The simulator's worker pool on real forked processes: results in job order, a worker grown
past its settled size replaced, a failing job and a dying worker reported with the job named, and
no worker left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.sim.pool import RecyclingPool, WorkerDied, rss_mib

pytestmark = pytest.mark.chaos

_HOARD: list[bytes] = []


def _square(n: int) -> int:
    time.sleep(0.001 * (n % 3))  # finish out of order
    return n * n


def _grows_at(n: int) -> tuple[int, int]:
    """Job 30 makes its worker keep half its size more, at least 40 MiB (as a heavy schedule
    leaves its heap behind); a fork of a large process (a pytest worker late in a run) starts
    large, so a fixed amount could stay under the 5 % limit. Half, not less: with a fifth, one CI
    run saw the grown worker stay under its settled size + 5 % and not be replaced, so that fork's
    resident size must have shrunk by some 15 % between job 10 (its settled size) and job 30; why
    (page reclaim on a machine running DAMON's kdamond?) was not pinned down."""
    if n == 30:
        grow_mib = max(40.0, rss_mib() / 2)
        _HOARD.append(b"x" * int(grow_mib * 1024 * 1024))  # written, so resident
    return n, os.getpid()


def _fails_at(n: int) -> int:
    if n == 5:
        raise ValueError("job five is bad")
    return n


def _dies_at(n: int) -> int:
    if n == 3:
        os._exit(9)
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is not alive
        return stat.read().split()[2] != "Z"


def test_results_come_back_in_job_order() -> None:
    with RecyclingPool(_square, 2) as pool:
        assert list(pool.imap(range(40))) == [n * n for n in range(40)]
    assert pool.stats.started == 2
    assert pool.stats.retired == 0


def test_a_worker_grown_past_its_settled_size_is_replaced() -> None:
    with RecyclingPool(_grows_at, 1, settle_jobs=10) as pool:
        results = list(pool.imap(range(60)))
    assert [n for n, _ in results] == list(range(60))
    pids = [pid for _, pid in results]
    assert len(set(pids[:31])) == 1  # the first worker played jobs 0-30 ...
    assert set(pids[31:]).isdisjoint(pids[:31])  # ... and a fresh one the rest
    assert (pool.stats.started, pool.stats.retired) == (2, 1)
    assert pool.stats.settled_mib is not None
    assert pool.stats.largest_mib > pool.stats.settled_mib * 1.15
    assert pool.stats.latest_mib < pool.stats.settled_mib * 1.05
    assert not _alive(pids[0])


def test_a_failing_job_is_raised_with_its_traceback() -> None:
    with RecyclingPool(_fails_at, 2) as pool, pytest.raises(RuntimeError, match="job 5 failed") as caught:
        list(pool.imap(range(10)))
    assert "ValueError: job five is bad" in str(caught.value)
    assert "_fails_at" in str(caught.value)


def test_a_dying_worker_names_the_job_it_was_playing() -> None:
    with (
        RecyclingPool(_dies_at, 1) as pool,
        pytest.raises(WorkerDied, match="exit code 9 while playing job 3: 3"),
    ):
        list(pool.imap(range(10)))


def test_no_worker_outlives_the_pool() -> None:
    with RecyclingPool(_grows_at, 2) as pool:
        pids = {pid for _, pid in pool.imap(range(8))}
    assert pids
    assert not any(_alive(pid) for pid in pids)


def test_workers_of_a_killed_campaign_exit_on_their_own(tmp_path: Path) -> None:
    """The parent killed with SIGKILL (no clean-up runs): its workers see their pipe close."""
    script = tmp_path / "campaign.py"
    script.write_text(
        "import os, sys, time\n"
        "from chaos.sim.pool import RecyclingPool\n"
        "def slow(n):\n"
        "    time.sleep(0.2)\n"
        "    return os.getpid()\n"
        "with RecyclingPool(slow, 2) as pool:\n"
        "    for pid in pool.imap(range(1000)):\n"
        "        print(pid, flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[3]
    )
    assert proc.stdout is not None
    pids = {int(proc.stdout.readline()) for _ in range(4)}
    assert len(pids) == 2
    assert all(_alive(p) for p in pids)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_a_worker_killed_between_two_jobs_fails_the_next_one_by_name() -> None:
    pool: RecyclingPool[int, int] = RecyclingPool(_square, 1)

    def jobs() -> Iterator[int]:
        yield 0
        yield 1
        victim = pool._workers[0].process
        os.kill(victim.pid or 0, signal.SIGKILL)  # an OOM kill while it waits for work
        victim.join(timeout=10)
        yield 2

    with pool, pytest.raises(WorkerDied, match=r"exit code -9 while playing job 2: 2"):
        list(pool.imap(jobs()))
