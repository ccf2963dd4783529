"""ControllerService with the real core on a real ZooKeeper: election, failover, clean shutdown."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from reference_controller.config import KafkaConfig
from reference_controller.controller.driver.service import ControllerService
from reference_controller.controller.events import ControlledShutdownResult
from reference_controller.zkdata import decode_controller
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
