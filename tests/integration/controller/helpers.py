"""Helpers shared by the controller-driver integration tests (ring: test tooling)."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable

from reference_controller.controller.events import ControllerEvent
from tests import polling


class EventSink:
    """Collects the events a driver enqueues; `clear_and_put` is recorded as such."""

    def __init__(self) -> None:
        self.queue: queue.Queue[ControllerEvent] = queue.Queue()
        self.cleared: list[ControllerEvent] = []

    def put(self, event: ControllerEvent) -> None:
        self.queue.put(event)

    def clear_and_put(self, event: ControllerEvent) -> None:
        self.cleared.append(event)
        self.queue.put(event)

    def next(self, timeout_s: float = 5.0) -> ControllerEvent:
        return self.queue.get(timeout=timeout_s)

    def drain(self, settle_s: float = 0.3) -> list[ControllerEvent]:
        time.sleep(settle_s)
        out: list[ControllerEvent] = []
        while True:
            try:
                out.append(self.queue.get_nowait())
            except queue.Empty:
                return out


def wait_for(predicate: Callable[[], bool], timeout_s: float = 10.0, what: str = "condition") -> None:
    """`tests.polling.wait_for` with this tree's defaults (10 s, "condition")."""
    polling.wait_for(predicate, timeout_s, what, interval_s=0.02)
