"""zoo.cfg settings of harness servers: validation and ensemble membership (ring: drivers / test tooling).

Settings are validated once, when a server is constructed, so a bad value fails at the call that
gave it rather than as a JVM that exits during start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.ports import LOOPBACK


@dataclass(frozen=True)
class QuorumMember:
    """What makes a server an ensemble member: its myid and every member's quorum ports."""

    my_id: int
    peers: tuple[tuple[int, int, int], ...]  # (myid, peer port, election port)
    init_limit: int = 5
    sync_limit: int = 2

    def cfg(self) -> dict[str, str]:
        lines = {"initLimit": str(self.init_limit), "syncLimit": str(self.sync_limit), "cnxTimeout": "2000"}
        for my_id, peer_port, election_port in self.peers:
            lines[f"server.{my_id}"] = f"{LOOPBACK}:{peer_port}:{election_port}"
        return lines


def validate_settings(
    tick: int, min_s: int | None, max_s: int | None, snap: int | None, pre_alloc: int | None
) -> None:
    low, high = min_s or 2 * tick, max_s or 20 * tick
    if tick <= 0 or low <= 0 or high < low:
        raise ValueError(
            f"need tick_time_ms > 0 and 0 < min_session_timeout_ms <= max_session_timeout_ms, "
            f"got {tick}, {low}, {high}"
        )
    if snap is not None and snap < 2:
        raise ValueError(f"snap_count must be >= 2 (ZooKeeper's minimum), got {snap}")
    if pre_alloc is not None and pre_alloc <= 0:
        raise ValueError(f"pre_alloc_size_kb must be > 0, got {pre_alloc}")


def validate_cfg(heap_mb: int, extra: Mapping[str, str | int]) -> None:
    """Reject a heap too small to start and ``extra_cfg`` entries that are not single zoo.cfg lines."""
    if heap_mb < 16:
        raise ValueError(f"heap_mb must be >= 16, got {heap_mb}")
    for key, value in extra.items():
        if not key or "=" in key or any(c in f"{key}{value}" for c in "\n\r"):
            raise ValueError(f"extra_cfg entry {key!r}={value!r} is not a valid zoo.cfg line")
