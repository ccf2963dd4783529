"""The differential mode's worker pool ends when it is closed, whatever thread started its workers."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from conformance.diff.pool import Pool

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
