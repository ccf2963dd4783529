"""`ControllerScheduler`: timers that enqueue controller events (ring: drivers).

The core asks for time-driven work with `ScheduleEvent(key, delay_ms, event)` (Kafka's
`kafkaScheduler.scheduleOnce("auto-leader-rebalance-task", …)`) and cancels it with
`CancelScheduled(key)` / `CancelScheduled(None)` (scheduler shutdown on resignation). One thread
sleeps until the earliest deadline and then only *enqueues* the event: the work itself runs on the
controller's event thread. Scheduling a key again replaces its timer.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

from reference_controller.controller.events import ControllerEvent


class ControllerScheduler:
    def __init__(
        self, enqueue: Callable[[ControllerEvent], None], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._enqueue = enqueue
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, str]] = []
        self._timers: dict[str, tuple[int, ControllerEvent]] = {}  # key -> (sequence, event)
        self._sequence = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="controller-scheduler", daemon=True)
        self._thread.start()

    def schedule(self, key: str, delay_ms: int, event: ControllerEvent) -> None:
        with self._cond:
            if self._stopped:
                return
            seq = next(self._sequence)
            self._timers[key] = (seq, event)
            heapq.heappush(self._heap, (self._clock() + max(0, delay_ms) / 1000, seq, key))
            self._cond.notify()

    def cancel(self, key: str | None) -> None:
        with self._cond:
            if key is None:
                self._timers.clear()
                self._heap.clear()
            else:
                self._timers.pop(key, None)  # its heap entry is skipped when it comes due
            self._cond.notify()

    def pending(self) -> list[str]:
        with self._cond:
            return sorted(self._timers)

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._timers.clear()
            self._heap.clear()
            self._cond.notify()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                due = self._next_due()
                while due is None and not self._stopped:
                    self._cond.wait(self._wait_s())
                    due = self._next_due()
                if self._stopped:
                    return
            if due is not None:
                self._enqueue(due)

    def _wait_s(self) -> float | None:
        if not self._heap:
            return None
        return max(0.0, self._heap[0][0] - self._clock())

    def _next_due(self) -> ControllerEvent | None:
        """Pop the earliest live timer if it is due (called with the lock held)."""
        while self._heap:
            deadline, seq, key = self._heap[0]
            timer = self._timers.get(key)
            if timer is None or timer[0] != seq:
                heapq.heappop(self._heap)  # cancelled or replaced
                continue
            if deadline > self._clock():
                return None
            heapq.heappop(self._heap)
            del self._timers[key]
            return timer[1]
        return None
