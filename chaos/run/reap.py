"""Reap what a killed runner left (ring: drivers).

Everything a runner starts is owned the way :mod:`harness.reaper` expects: worker
processes own their ZooKeeper JVMs, Toxiproxy server and nodes through pid files with start
times, and their temp dirs live in their owner's ``kzk-run-*`` run root. A SIGKILLed runner takes
its workers with it (pdeathsig), and their children follow (pdeathsig from the workers' spawner
threads); whatever survived or was written half-way is removed here by the next invocation,
which never touches a run whose owner is alive.
"""

from __future__ import annotations

from harness.zookeeper import Reaped, reap_orphans

__all__ = ["reap"]


def reap() -> list[Reaped]:
    """Kill and delete what dead owners left; return what was done."""
    return reap_orphans()
