"""ControllerService with the real core on a real ZooKeeper: election, failover, clean shutdown."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from reference_controller.config import KafkaConfig
from reference_controller.controller.core import KafkaController
from reference_controller.controller.driver.service import ControllerService
from reference_controller.controller.effects import BrokerRequest, Effect
from reference_controller.controller.events import ControlledShutdownResult, ControllerEvent
from reference_controller.zkdata import BrokerInfo, EndPoint, broker_path, decode_controller, encode_broker
from tests.integration.controller.helpers import wait_for

pytestmark = pytest.mark.integration


def node_config(broker_id: int, zk_connect: str) -> KafkaConfig:
    return KafkaConfig.from_properties(
        {"broker.id": str(broker_id), "zookeeper.connect": zk_connect, "listeners": "PLAINTEXT://127.0.0.1:0",
         "auto.leader.rebalance.enable": "false"}
    )  # fmt: skip


@pytest.fixture
def start_service(zk_connect: str) -> Iterator[Callable[[int], tuple[ControllerService, KazooClient]]]:
    started: list[tuple[ControllerService, KazooClient]] = []

    def start(broker_id: int) -> tuple[ControllerService, KazooClient]:
        zk = KazooClient(zk_connect, timeout=10)
        zk.start(timeout=10)
        service = ControllerService(node_config(broker_id, zk_connect), zk, broker_epoch=-1)
        service.startup()
        started.append((service, zk))
        return service, zk

    yield start
    for service, zk in started:
        service.shutdown()
        zk.stop()
        zk.close()


def test_the_first_controller_has_epoch_1_at_data_version_1(
    zk_client: KazooClient, start_service: Callable[[int], tuple[ControllerService, KazooClient]]
) -> None:
    service, _ = start_service(1)
    wait_for(service.is_active, what="broker 1 to become controller")
    data, stat = zk_client.get("/controller_epoch")
    assert (data, stat.version) == (b"1", 1)
    assert decode_controller(zk_client.get("/controller")[0]) == 1


def test_failover_after_the_controller_session_closes_increments_the_epoch(
    zk_client: KazooClient, start_service: Callable[[int], tuple[ControllerService, KazooClient]]
) -> None:
    first, first_zk = start_service(1)
    wait_for(first.is_active, what="broker 1 to become controller")
    second, _ = start_service(2)
    assert not second.is_active()
    first.shutdown()
    first_zk.stop()  # the ephemeral /controller goes with the session
    wait_for(second.is_active, what="broker 2 to take over")
    data, stat = zk_client.get("/controller_epoch")
    assert (data, stat.version) == (b"2", 2)
    assert decode_controller(zk_client.get("/controller")[0]) == 2


def test_shutdown_is_idempotent_and_leaves_no_thread(
    start_service: Callable[[int], tuple[ControllerService, KazooClient]],
) -> None:
    ours = ("controller-event-thread", "controller-scheduler", "config-change-listener", "Controller-")
    service, _ = start_service(1)
    wait_for(service.is_active, what="controller")
    service.shutdown()
    service.shutdown()
    leftover = [t.name for t in threading.enumerate() if t.name.startswith(ours)]
    assert leftover == []
    assert not service.is_active()
    assert service.controlled_shutdown(1, 0, 0.1) == ControlledShutdownResult(11)


class _RecordingChannel:
    """A channel that records membership changes and whether the core was mid-event at the time."""

    def __init__(self, in_event: threading.Event) -> None:
        self.in_event = in_event
        self.calls: list[tuple[str, int, bool]] = []

    def add_broker(self, broker: BrokerInfo) -> None:
        self.calls.append(("add", broker.broker_id, self.in_event.is_set()))

    def remove_broker(self, broker_id: int) -> None:
        self.calls.append(("remove", broker_id, self.in_event.is_set()))

    def send(self, request: BrokerRequest) -> None:
        pass

    def shutdown(self) -> None:
        self.calls.append(("shutdown", -1, self.in_event.is_set()))


def test_a_dead_brokers_channel_is_removed_inside_the_broker_change_event(
    zk_connect: str, zk_client: KazooClient
) -> None:
    """Kafka's processBrokerChange removes a dead (or bounced) broker's channel synchronously,
    before onBrokerFailure runs (KafkaController.scala@2.5.1 L1382-1385): its send thread cannot
    deliver a request queued for the old registration while the rest of the event runs (chaos
    ``partition`` seed 2271: such a StopReplica, answered STALE_BROKER_EPOCH, halted a deletion)."""
    in_event = threading.Event()

    class _Core(KafkaController):
        def process(self, event: ControllerEvent) -> list[Effect]:
            in_event.set()
            try:
                return super().process(event)
            finally:
                in_event.clear()

    channel = _RecordingChannel(in_event)
    broker_zk = KazooClient(zk_connect, timeout=10)
    broker_zk.start(timeout=10)
    zk = KazooClient(zk_connect, timeout=10)
    zk.start(timeout=10)
    service = ControllerService(
        node_config(1, zk_connect),
        zk,
        broker_epoch=-1,
        core_factory=_Core,
        channel_factory=lambda config, put: channel,
    )
    try:
        info = BrokerInfo(2, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),), timestamp_ms=1)
        broker_zk.ensure_path("/brokers/ids")
        broker_zk.create(broker_path(2), encode_broker(info), ephemeral=True)
        service.startup()
        wait_for(service.is_active, what="broker 1 to become controller")
        wait_for(lambda: ("add", 2) in [c[:2] for c in channel.calls], what="a channel to broker 2")
        broker_zk.stop()  # broker 2's registration goes with its session
        wait_for(lambda: ("remove", 2) in [c[:2] for c in channel.calls], what="broker 2's channel removed")
        assert ("remove", 2, True) in channel.calls, channel.calls
        assert all(inside for _, _, inside in channel.calls), channel.calls

        # the controller resigns and wins again in one Reelect event (its /controller deleted):
        # every channel is shut down inside the event, then the new term's channels open
        broker_zk.start(timeout=10)
        broker_zk.create(broker_path(2), encode_broker(info), ephemeral=True)
        wait_for(lambda: channel.calls[-1][:2] == ("add", 2), what="broker 2 back")
        calls_before = len(channel.calls)
        zk_client.delete("/controller")
        wait_for(lambda: zk_client.get("/controller_epoch")[0] == b"2", what="re-election, epoch 2")
        wait_for(lambda: ("add", 2) in [c[:2] for c in channel.calls[calls_before:]], what="channels again")
        term = channel.calls[calls_before:]
        assert [c[0] for c in term] == ["shutdown", "add"], term
        assert all(inside for _, _, inside in term), term
    finally:
        service.shutdown()
        zk.stop()
        zk.close()
        broker_zk.stop()
        broker_zk.close()
