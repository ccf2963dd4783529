"""Fixtures for the controller-driver integration tests (real ZooKeeper from `harness.pytest_plugin`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from reference_controller.controller.driver.zk_driver import KazooZkPort
from tests.integration.controller.helpers import EventSink
from tests.node.helpers import node_factory

__all__ = ["events", "node_factory", "port", "port_factory"]


@pytest.fixture
def events() -> EventSink:
    return EventSink()


@pytest.fixture
def port_factory(zk_client: KazooClient, events: EventSink) -> Iterator[Callable[..., KazooZkPort]]:
    made: list[KazooZkPort] = []

    def make(batch_writes: bool = False, batch_size: int = 100) -> KazooZkPort:
        port = KazooZkPort(
            zk_client, events.put, batch_writes, clear_and_put=events.clear_and_put, batch_size=batch_size
        )
        made.append(port)
        return port

    yield make
    for port in made:
        port.close()


@pytest.fixture
def port(port_factory: Callable[..., KazooZkPort]) -> KazooZkPort:
    return port_factory()
