"""A clock tests and transcripts set by hand (ring: test support; implements the core's `Clock`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ManualClock:
    """A clock for tests and transcripts."""

    now: int = 1_600_000_000_000

    def now_ms(self) -> int:
        return self.now
