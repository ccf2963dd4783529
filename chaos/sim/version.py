"""The simulator's version, recorded with every seed (ring: drivers, pure but for the installed
package's metadata and the kit's source files): a seed names a run only together with the version
that played it.

Two levels: :func:`sim_version` (the package version and :data:`SIM_FORMAT`) is recorded in a
run's ``sim.json`` and records — a ``sim.json`` holds its whole schedule, so another tree of the
same format may play it (that is how ``--diff-tree`` compares two trees); :func:`seed_version`
adds a digest of the code a seed's run depends on (the generator and simulator in ``chaos/``, the
reference, the wire layer and the probes), so a seed token from any other code — a changed copy,
an edited checkout, an older commit — is refused instead of replayed as a different run.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from chaos.generator import Schedule, generate
from chaos.run.manifest import kit_version

__all__ = ["SIM_FORMAT", "code_digest", "replay_command", "seed_version", "sim_version", "token"]

_ROOT = Path(__file__).resolve().parents[2]
#: the source a simulated run of a seed depends on (hashed: every ``*.py`` below each)
_CODE = ("chaos", "reference_controller", "kafkawire", "probes")

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


@functools.cache
def code_digest() -> str:
    """The first 8 hex digits of a SHA-256 over the path and bytes of every ``*.py`` file below
    :data:`_CODE`, in path order."""
    digest = hashlib.sha256()
    for top in _CODE:
        for path in sorted((_ROOT / top).rglob("*.py")):
            if "__pycache__" not in path.parts:
                digest.update(path.relative_to(_ROOT).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:8]


def seed_version() -> str:
    """:func:`sim_version` with the code's digest: what a seed token carries."""
    return f"{sim_version()}.{code_digest()}"


def token(schedule: Schedule) -> str:
    """``<scenario>:<seed>@<seed version>``: what ``python -m chaos sim --replay`` takes."""
    return f"{schedule.scenario}:{schedule.seed}@{seed_version()}"


def replay_command(schedule: Schedule) -> str:
    """The seed's replay when the schedule is the seed's own, else the run directory's sim.json
    (a shrunk schedule is no seed's)."""
    if schedule == generate(schedule.scenario, schedule.seed):
        return f"python -m chaos sim --replay {token(schedule)}"
    return "python -m chaos sim --replay sim.json  (in this run's directory: a shrunk schedule)"
