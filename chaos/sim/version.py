"""The simulator's version, recorded with every seed (ring: drivers, pure but for the installed
package's metadata): a seed names a run only together with the version that played it."""

from __future__ import annotations

from chaos.generator import Schedule, generate
from chaos.run.manifest import kit_version

__all__ = ["SIM_FORMAT", "replay_command", "sim_version", "token"]

# bumped whenever the simulator's behaviour for a seed changes (2: request journals on the log's
# clock; 3: nodes start at seeded offsets, a killed node's heal ends when it is started again;
# 4: the admin-API ops are played, no longer recorded as info; 5: watch notifications sent while a
# node's ZooKeeper link was cut are lost with it, and the reference's reconnect re-run of
# TopicDeletion no longer arms the watch before its event runs; 6: a terminate's start_fault
# completes at the SIGTERM and its heal waits for the node's exit, as the real nemesis's; 7: a
# CreateTopics is decided by the controller node's own handler logic over its metadata cache and
# seeded placement, and a quarter of them ask for the broker's default partitions or replication;
# every node runs the config-change listener (topic unclean enables, dynamic broker configs), and
# the admin-API clients draw alter_broker_config)
SIM_FORMAT = 7


def sim_version() -> str:
    return f"{kit_version() or 'unversioned'}+sim{SIM_FORMAT}"


def token(schedule: Schedule) -> str:
    """``<scenario>:<seed>@<version>``: what ``python -m chaos sim --replay`` takes."""
    return f"{schedule.scenario}:{schedule.seed}@{sim_version()}"


def replay_command(schedule: Schedule) -> str:
    """The seed's replay when the schedule is the seed's own, else the run directory's sim.json
    (a shrunk schedule is no seed's)."""
    if schedule == generate(schedule.scenario, schedule.seed):
        return f"python -m chaos sim --replay {token(schedule)}"
    return "python -m chaos sim --replay sim.json  (in this run's directory: a shrunk schedule)"
