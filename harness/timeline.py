"""Wall-time spans recorded by the kit's own code while a check runs (ring: drivers / test tooling).

The cluster, the waits and the conformance fixtures mark what they spend time on
(``with timeline.span("cluster-start"): ...``); the conformance plugin collects the spans of each
check into its timing record (:mod:`records.timing`) and the suite benchmark turns them into a
table of where the wall time went. Spans nest per thread (a wait inside a cluster start has that
start as its parent), so time is attributed once. Recording is off until :func:`enable` is called
(the conformance plugin does, with ``--results-dir``); off, a span costs one attribute read.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from records.timing import Span

__all__ = ["disable", "drain", "enable", "enabled", "record", "span"]

_LOCK = threading.Lock()
_SPANS: list[Span] = []
_STACK = threading.local()
_ON: list[bool] = [False]


def enable() -> None:
    _ON[0] = True


def disable() -> None:
    _ON[0] = False
    drain()


def enabled() -> bool:
    return _ON[0]


def _stack() -> list[str]:
    stack: list[str] | None = getattr(_STACK, "names", None)
    if stack is None:
        stack = _STACK.names = []
    return stack


def record(name: str, start_s: float, end_s: float, **attrs: Any) -> None:
    """A span whose times were observed rather than bracketed (e.g. a znode's ``ctime``)."""
    if not _ON[0]:
        return
    stack = _stack()
    thread = threading.current_thread().name
    with _LOCK:
        _SPANS.append(Span(name, start_s, end_s, stack[-1] if stack else None, thread, attrs))


@contextlib.contextmanager
def span(name: str, **attrs: Any) -> Iterator[dict[str, Any]]:
    """Record the time spent in the block as ``name``; the yielded dict may gain attributes."""
    if not _ON[0]:
        yield attrs
        return
    stack = _stack()
    parent = stack[-1] if stack else None
    stack.append(name)
    start = time.time()
    try:
        yield attrs
    finally:
        end = time.time()
        stack.pop()
        thread = threading.current_thread().name
        with _LOCK:
            _SPANS.append(Span(name, start, end, parent, thread, attrs))


def drain() -> list[Span]:
    """Every span recorded since the last drain, in the order they ended."""
    with _LOCK:
        out = list(_SPANS)
        _SPANS.clear()
    return out
