"""Two worlds for the node's ZooKeeper port: the in-memory ZooKeeper, and a real ZooKeeper through
kazoo (`KazooNodeZk`) — the same node code runs on both (ring: test tooling).

A `World` is the broker's session (`broker`, the port under test), an independent session that
looks (`observer`), what the broker's session listener heard (`states`), and `expire()`, which
ends the broker's session at the server and returns once the client is CONNECTED on a new one.
On real ZooKeeper the session is ended the way ZooKeeper's own tests do it: a second client
attaches to the same session id and password and closes it; the broker's client then hears
SUSPENDED, LOST and CONNECTED (on a new session), as it would after a real expiry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from kazoo.client import KazooClient

from reference_controller.node.zk_driver import KazooNodeZk
from reference_controller.node.zk_port import NodeZkPort, SessionState
from reference_controller.testing.memory_zk import MemoryZooKeeper
from tests.polling import wait_for

EXPIRY_WAIT_S = 30.0


@dataclass
class World:
    name: str
    broker: NodeZkPort
    observer: NodeZkPort
    expire: Callable[[], None]
    close: Callable[[], None]
    states: list[SessionState] = field(default_factory=list)


def memory_world() -> World:
    server = MemoryZooKeeper()
    broker, observer = server.client(), server.client()
    world = World("memory", broker, observer, lambda: server.expire_session(broker), broker.close)
    broker.add_session_listener(world.states.append)
    return world


def _kill_session(client: KazooClient, connect: str, states: list[SessionState]) -> None:
    """Close the client's session from another client attached to it (retried: the broker's
    client may win its session back before the close reaches the server)."""
    seen = len(states)
    session_id, password = client.client_id

    def lost() -> bool:
        return SessionState.LOST in states[seen:]

    for _ in range(5):
        thief = KazooClient(connect, client_id=(session_id, password), timeout=10.0)
        thief.start(timeout=10.0)
        thief.stop()
        thief.close()
        try:
            wait_for(lost, 5.0, "LOST")
            break
        except AssertionError:
            continue
    wait_for(lambda: lost() and states[-1] == SessionState.CONNECTED and client.connected,
             EXPIRY_WAIT_S, f"LOST then CONNECTED on a new session; heard {states[seen:]}")  # fmt: skip


@pytest.fixture
def zookeeper_world(zk_connect: str) -> Iterator[World]:
    clients = [KazooClient(zk_connect, timeout=10.0) for _ in range(2)]
    for client in clients:
        client.start(timeout=15.0)
    broker_client, observer_client = clients
    states: list[SessionState] = []
    lock = threading.Lock()

    def heard(state: SessionState) -> None:
        with lock:
            states.append(state)

    def close() -> None:
        broker_client.stop()

    world = World(
        "zookeeper",
        KazooNodeZk(broker_client),
        KazooNodeZk(observer_client),
        lambda: _kill_session(broker_client, zk_connect, states),
        close,
        states,
    )
    world.broker.add_session_listener(heard)
    yield world
    for client in clients:
        client.stop()
        client.close()


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("zookeeper", marks=pytest.mark.integration),
    ]
)
def world(request: pytest.FixtureRequest) -> World:
    """The node's broker-side ZooKeeper logic runs once per world; the world brings the test's
    layer marker (unit in memory, integration on a real ZooKeeper)."""
    if request.param == "memory":
        return memory_world()
    zookeeper: World = request.getfixturevalue("zookeeper_world")
    return zookeeper
