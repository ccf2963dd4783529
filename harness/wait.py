"""The one wait-until-deadline helper of the kit (ring: drivers).

A check, a chaos nemesis or a benchmark that waits must wait for the thing it asserts: poll a
predicate until it holds, and when the deadline passes say what was last seen. Raised as
:class:`ConditionTimeout` (an ``AssertionError``, so a check that times out fails, not errors).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from harness import timeline

__all__ = ["ConditionTimeout", "wait_for"]

T = TypeVar("T")


class ConditionTimeout(AssertionError):
    """A waited-for condition did not hold before its deadline; the message says what was seen."""


def wait_for(
    predicate: Callable[[], T | None],
    deadline_s: float,
    describe: str | Callable[[], str],
    poll_s: float = 0.05,
) -> T:
    """Poll ``predicate`` until it returns a truthy value (returned); raise with what it last saw.

    Exceptions raised by ``predicate`` count as "not yet" (a znode mid-write, a broker not yet
    listening) and the last one is shown when the deadline passes.
    """
    with timeline.span("wait", what=describe if isinstance(describe, str) else None):
        return _poll(predicate, deadline_s, describe, poll_s)


def _poll(
    predicate: Callable[[], T | None], deadline_s: float, describe: str | Callable[[], str], poll_s: float
) -> T:
    give_up = time.monotonic() + deadline_s
    last: object = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except Exception as exc:
            last = exc
        if time.monotonic() >= give_up:
            seen = describe() if callable(describe) else describe
            raise ConditionTimeout(
                f"timed out after {deadline_s:.1f}s waiting for: {seen}\nlast predicate result: {last!r}"
            )
        time.sleep(poll_s)
