"""Shards of a chaos campaign (pure data, no I/O).

A campaign is ``--runs N --seed S`` over a list of scenarios: run ``i`` has seed ``S + i`` and
scenario ``i mod k``. A shard ``i/N`` (numbered from 0, as Kubernetes indexed jobs and CI matrix
indexes are) is the runs whose index is ``i mod N`` — round-robin, so every shard gets the same mix
of scenarios. Shards of one campaign share its id: derived from the campaign's definition (seed,
runs, scenarios, faults, target), so two schedulers — or a shard retried on another machine — give
every run the same run id and seed, and a run's record id is the same wherever it ran (duplicates
are dropped by record id; :mod:`records.run_record`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["SIM_RUNS_PER_SHARD", "Shard", "ShardError", "campaign_id_for", "parse_shard"]

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A shard spec that is not ``i/N`` with ``0 <= i < N``; the message says why and what to give."""


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def indexes(self, runs: int) -> range:
        """The run indexes of a ``runs``-run campaign that belong to this shard."""
        return range(self.index, runs, self.count)


WHOLE = Shard(0, 1)

#: simulated schedules cost about a tenth of a CPU second each: big shards keep Spark's per-task
#: overhead small
SIM_RUNS_PER_SHARD = 2000


def parse_shard(text: str) -> Shard:
    """``"2/8"`` → shard 2 of 8."""
    m = _SPEC.match(text)
    if not m:
        raise ShardError(f"shard {text!r} is not of the form i/N (e.g. 0/4: the first of 4 shards)")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1:
        raise ShardError(f"shard {text!r}: the shard count must be at least 1")
    if index >= count:
        raise ShardError(
            f"shard {text!r}: index {index} is not below the shard count {count} (shards are 0..{count - 1})"
        )
    return Shard(index, count)


def campaign_id_for(seed: int, runs: int, scenarios: Sequence[str], faults: str, target: str) -> str:
    """The id every shard of this campaign shares (12 hex digits, like a random run id)."""
    key = f"seed={seed};runs={runs};scenarios={','.join(scenarios)};faults={faults};target={target}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]
