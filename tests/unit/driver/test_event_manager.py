"""ControllerEventManager and ControllerScheduler: FIFO processing, pre-emption, effects, timers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from kafkawire.api_error import ApiError
from kafkawire.states import TopicPartition
from reference_controller.controller.driver.event_manager import ControllerEventManager
from reference_controller.controller.driver.scheduler import ControllerScheduler
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
    StopReplicaRequest,
)
from reference_controller.controller.events import (
    BrokerChange,
    ControlledShutdown,
    ControlledShutdownResult,
    ControllerEvent,
    ElectionResults,
    ElectionTrigger,
    ElectionType,
    Expire,
    ReplicaLeaderElection,
    ShutdownEventThread,
    TopicChange,
)
from reference_controller.zkdata import BrokerInfo

pytestmark = pytest.mark.unit


class RecordingSink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def send(self, request: BrokerRequest) -> None:
        self.calls.append(("send", request.broker_id))

    def add_broker(self, broker: BrokerInfo) -> None:
        self.calls.append(("add", broker.broker_id))

    def remove_broker(self, broker_id: int) -> None:
        self.calls.append(("remove", broker_id))

    def remove_all_brokers(self) -> None:
        self.calls.append(("remove_all", None))

    def schedule(self, key: str, delay_ms: int, event: ControllerEvent) -> None:
        self.calls.append(("schedule", key))

    def cancel(self, key: str | None) -> None:
        self.calls.append(("cancel", key))


class GatedCore:
    """Blocks in process() on the first event until released, so the queue can be filled."""

    def __init__(self, effects: Callable[[ControllerEvent], list[Effect]] | None = None) -> None:
        self.seen: list[ControllerEvent] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self._effects = effects or (lambda _e: [])

    def process(self, event: ControllerEvent) -> list[Effect]:
        self.seen.append(event)
        self.entered.set()
        self.release.wait(5)
        if isinstance(event, TopicChange):
            raise ValueError("boom")  # noqa: TRY004 - any error: the thread must survive it
        return self._effects(event)


def stop(manager: ControllerEventManager) -> None:
    manager.clear_and_put(ShutdownEventThread())
    manager.join(5)
    assert not manager.is_alive()


def test_events_are_processed_in_fifo_order_and_errors_do_not_kill_the_thread() -> None:
    core = GatedCore()
    core.release.set()
    manager = ControllerEventManager(core.process, RecordingSink())
    manager.start()
    for event in (BrokerChange(), TopicChange(), BrokerChange()):
        manager.put(event)
    manager.put(ShutdownEventThread())
    manager.join(5)
    assert core.seen == [BrokerChange(), TopicChange(), BrokerChange(), ShutdownEventThread()]
    assert not manager.is_alive()


def test_clear_and_put_preempts_queued_api_events_with_their_answers() -> None:
    core = GatedCore()
    manager = ControllerEventManager(core.process, RecordingSink())
    manager.start()
    manager.put(BrokerChange())
    assert core.entered.wait(5)
    shutdown_answers: list[ControlledShutdownResult] = []
    election_answers: list[ElectionResults] = []
    manager.put(ControlledShutdown(3, 77, shutdown_answers.append))
    manager.put(
        ReplicaLeaderElection(
            frozenset({TopicPartition("t", 0), TopicPartition("t", 1)}), ElectionType.PREFERRED,
            ElectionTrigger.ADMIN_CLIENT_TRIGGERED,
            election_answers.append,
        )
    )  # fmt: skip
    manager.put(TopicChange())
    manager.clear_and_put(Expire())
    assert shutdown_answers == [ControlledShutdownResult(11)]
    assert election_answers == [{("t", 0): ApiError(41, None), ("t", 1): ApiError(41, None)}]
    manager.put(ShutdownEventThread())
    core.release.set()
    manager.join(5)
    assert core.seen == [BrokerChange(), Expire(), ShutdownEventThread()]


def test_effects_are_executed_in_order_and_track_controllership() -> None:
    request = StopReplicaRequest(2, 10, 1, 1, False, (TopicPartition("t", 0),))
    effects: list[Effect] = [
        BecameController(1, 1), AddBroker(BrokerInfo(2, ())), SendRequest(request),
        ScheduleEvent("k", 5, BrokerChange()), CancelScheduled("k"), RemoveBroker(2),
    ]  # fmt: skip
    core = GatedCore(lambda e: effects if isinstance(e, BrokerChange) else [Resigned()])
    core.release.set()
    sink = RecordingSink()
    manager = ControllerEventManager(core.process, sink)
    manager.start()
    manager.put(BrokerChange())
    deadline = time.monotonic() + 5
    while manager.processed < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    was_active = manager.is_active
    assert (manager.epoch, manager.epoch_zk_version) == (1, 1)
    stop(manager)
    assert (was_active, manager.is_active) == (True, False)
    assert sink.calls == [
        ("add", 2), ("send", 2), ("schedule", "k"), ("cancel", "k"), ("remove", 2), ("remove_all", None),
    ]  # fmt: skip


def test_scheduler_enqueues_due_events_and_replaces_or_cancels_by_key() -> None:
    fired: list[ControllerEvent] = []
    scheduler = ControllerScheduler(fired.append)
    try:
        scheduler.schedule("a", 50, BrokerChange())
        scheduler.schedule("a", 80, TopicChange())  # replaces the first
        scheduler.schedule("b", 30, Expire())
        scheduler.schedule("c", 10_000, Expire())
        scheduler.cancel("b")
        time.sleep(0.3)
        assert fired == [TopicChange()]
        assert scheduler.pending() == ["c"]
        scheduler.cancel(None)
        assert scheduler.pending() == []
    finally:
        scheduler.shutdown()
