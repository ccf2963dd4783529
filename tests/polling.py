"""The one poll-until-deadline helper of the test trees (ring: test tooling).

A check that waits must wait for the thing it asserts: `wait_for` polls `check` until it returns a
truthy value (which it returns) and, at the deadline, fails with what it last observed — the last
value, or the last exception the check raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T | None], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll `check` until it returns a truthy value; on timeout fail with what was last observed."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:  # report the last failure if we time out
            last = exc
        if last and not isinstance(last, Exception):
            return last  # type: ignore[no-any-return]
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; last observed: {last!r}")
