"""`ControllerEventManager`: one queue, one thread, effects executed (ring: drivers).

Kafka's ControllerEventManager (ControllerEventManager.scala@2.5.1, spec §2.3a): ZooKeeper watch
callbacks, broker responses, timers and API calls only `put` events; the thread
`controller-event-thread` takes them in FIFO order, calls the core's `process(event)` and executes
the returned effects in order:

| effect                      | executed by                                           |
|-----------------------------|-------------------------------------------------------|
| SendRequest                 | `EffectSink.send` (the channel manager's per-broker FIFO) |
| AddBroker / RemoveBroker    | `EffectSink.add_broker` / `remove_broker`             |
| ScheduleEvent / CancelScheduled | `EffectSink.schedule` / `cancel`                  |
| BecameController / Resigned | this manager's `is_active` / `epoch`; Resigned also closes every channel |

`clear_and_put(event)` (Expire, ShutdownEventThread) pre-empts every queued event — API events get
their pre-emption answer (ControlledShutdown ⇒ STALE_CONTROLLER_EPOCH (11), Kafka's
ControllerMovedException; ReplicaLeaderElection ⇒ NOT_CONTROLLER (41) per partition; the two
reassignment API events get none, as in 2.5.1) — clears the queue and puts `event`. An exception
from the core or from an effect is logged and never kills the thread. `ShutdownEventThread` is
processed (the core resigns) and then ends the thread.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from reference_controller.controller.effects import (
    AddBroker,
    BecameController,
    BrokerRequest,
    CancelScheduled,
    Effect,
    RemoveBroker,
    Resigned,
    ScheduleEvent,
    SendRequest,
)
from reference_controller.controller.events import (
    ControlledShutdown,
    ControlledShutdownResult,
    ControllerEvent,
    ReplicaLeaderElection,
    ShutdownEventThread,
)
from reference_controller.zkdata import BrokerInfo

log = logging.getLogger("kafka.controller.ControllerEventManager")

EVENT_THREAD_NAME = "controller-event-thread"


class EffectSink(Protocol):
    """Where effects go (the service wires the channel manager and the scheduler)."""

    def send(self, request: BrokerRequest) -> None: ...
    def add_broker(self, broker: BrokerInfo) -> None: ...
    def remove_broker(self, broker_id: int) -> None: ...
    def remove_all_brokers(self) -> None: ...
    def schedule(self, key: str, delay_ms: int, event: ControllerEvent) -> None: ...
    def cancel(self, key: str | None) -> None: ...


def preempt(event: ControllerEvent) -> None:
    """Answer an API event that will never be processed (Kafka's `ControllerEvent.preempt`)."""
    if isinstance(event, ControlledShutdown):
        event.reply(ControlledShutdownResult(Errors.STALE_CONTROLLER_EPOCH))
    elif isinstance(event, ReplicaLeaderElection) and event.reply is not None:
        event.reply(dict.fromkeys(event.partitions or (), ApiError(Errors.NOT_CONTROLLER, None)))
    # ApiPartitionReassignment and ListPartitionReassignments have no pre-emption in 2.5.1: they are
    # dropped unanswered (KAFKA-10193 added one in 2.7.0).


class ControllerEventManager:
    def __init__(self, process: Callable[[ControllerEvent], list[Effect]], sink: EffectSink) -> None:
        self._process = process
        self._sink = sink
        self._cond = threading.Condition()
        self._queue: deque[ControllerEvent] = deque()
        self._thread = threading.Thread(target=self._run, name=EVENT_THREAD_NAME, daemon=True)
        self._active = False
        self.epoch = 0
        self.epoch_zk_version = -1
        self.processed = 0

    # ---- producers (any thread) --------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def put(self, event: ControllerEvent) -> None:
        with self._cond:
            self._queue.append(event)
            self._cond.notify()

    def clear_and_put(self, event: ControllerEvent) -> None:
        with self._cond:
            dropped = list(self._queue)
            self._queue.clear()
            self._queue.append(event)
            self._cond.notify()
        for queued in dropped:
            try:
                preempt(queued)
            except Exception:
                log.exception("Error pre-empting event %s", queued)

    def queue_size(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def is_active(self) -> bool:
        return self._active

    def join(self, timeout_s: float | None = None) -> None:
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    # ---- the event thread ---------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                event = self._queue.popleft()
            self._handle(event)
            if isinstance(event, ShutdownEventThread):
                log.info("Shutting down %s", EVENT_THREAD_NAME)
                return

    def _handle(self, event: ControllerEvent) -> None:
        try:
            effects = self._process(event)
        except Exception:
            log.exception("Error processing event %s", event)
            return
        finally:
            self.processed += 1
        for effect in effects:
            try:
                self._execute(effect)
            except Exception:
                log.exception("Error executing effect %s of event %s", effect, event)

    def _execute(self, effect: Effect) -> None:
        match effect:
            case SendRequest(request=request):
                self._sink.send(request)
            case AddBroker(broker=broker):
                self._sink.add_broker(broker)
            case RemoveBroker(broker_id=broker_id):
                self._sink.remove_broker(broker_id)
            case ScheduleEvent(key=key, delay_ms=delay_ms, event=event):
                self._sink.schedule(key, delay_ms, event)
            case CancelScheduled(key=key):
                self._sink.cancel(key)
            case BecameController(epoch=epoch, epoch_zk_version=zk_version):
                self.epoch, self.epoch_zk_version, self._active = epoch, zk_version, True
            case Resigned():
                self._active = False
                self._sink.remove_all_brokers()  # controllerChannelManager.shutdown()
