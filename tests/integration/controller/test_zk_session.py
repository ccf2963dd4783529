"""KazooZkPort's connection-state handling on a real ZooKeeper: blips, pauses, session expiry.

A SIGSTOPped server makes kazoo's heartbeat time out (SUSPENDED) well before the session expires;
after SIGCONT the client reconnects on the same session with every server-side watch gone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from harness.zookeeper import ZooKeeperServer
from reference_controller.controller.driver import ZkSessionLostError
from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.events import Expire, TopicChange, ZkReconnected
from reference_controller.controller.ports import ChildHandler, CreateOp, ZkCode
from tests.integration.controller.helpers import EventSink, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SESSION_TIMEOUT_S = 8.0


@pytest.fixture
def paused_server(zk_server_factory: Callable[..., ZooKeeperServer]) -> ZooKeeperServer:
    return zk_server_factory(tick_time_ms=500)  # session timeouts 1–10 s


@pytest.fixture
def client(paused_server: ZooKeeperServer) -> Iterator[tuple[KazooClient, list[str]]]:
    zk = KazooClient(paused_server.connect_string, timeout=SESSION_TIMEOUT_S)
    states: list[str] = []

    def record(state: str) -> bool:
        states.append(state)
        return False

    zk.add_listener(record)
    zk.start(timeout=10)
    yield zk, states
    zk.stop()
    zk.close()


def suspend(server: ZooKeeperServer, states: list[str]) -> None:
    server.pause()
    try:
        wait_for(lambda: KazooState.SUSPENDED in states, SESSION_TIMEOUT_S, "SUSPENDED")
    finally:
        server.resume()


def test_reconnect_on_the_same_session_enqueues_zk_reconnected_and_reads_rearm_watches(
    paused_server: ZooKeeperServer, client: tuple[KazooClient, list[str]]
) -> None:
    zk, states = client
    events = EventSink()
    port = KazooZkPort(zk, events.put, clear_and_put=events.clear_and_put)
    try:
        zk.create("/brokers", b"")
        port.register_child_handler(ChildHandler("/brokers", on_child_change=TopicChange()))
        session = port.session_id()
        port.get_children("/brokers")  # arms the child watch
        suspend(paused_server, states)
        assert events.next(SESSION_TIMEOUT_S) == ZkReconnected()
        assert port.session_id() == session
        zk.create("/brokers/lost", b"")  # the watch was dropped by kazoo: nothing fires
        assert events.drain() == []
        port.get_children("/brokers")  # what the core does on ZkReconnected
        zk.create("/brokers/seen", b"")
        assert events.next() == TopicChange()
        assert events.cleared == []
    finally:
        port.close()


def test_port_calls_block_while_suspended_and_complete_after_reconnection(
    paused_server: ZooKeeperServer, client: tuple[KazooClient, list[str]]
) -> None:
    zk, states = client
    events = EventSink()
    port = KazooZkPort(zk, events.put, clear_and_put=events.clear_and_put)
    try:
        paused_server.pause()
        wait_for(lambda: KazooState.SUSPENDED in states, SESSION_TIMEOUT_S, "SUSPENDED")
        outcome: list[object] = []
        writer = threading.Thread(
            target=lambda: outcome.append(port.create(CreateOp("/while-suspended", None)))
        )
        writer.start()
        writer.join(0.5)
        assert writer.is_alive()  # paused, not failed
        paused_server.resume()
        writer.join(SESSION_TIMEOUT_S)
        assert [getattr(r, "code", r) for r in outcome] == [ZkCode.OK]
        assert zk.get("/while-suspended")[0] is None
    finally:
        port.close()


def test_session_expiry_puts_expire_first_and_fails_calls_in_progress(
    paused_server: ZooKeeperServer, client: tuple[KazooClient, list[str]]
) -> None:
    zk, states = client
    zk_server = paused_server
    events = EventSink()
    port = KazooZkPort(zk, events.put, clear_and_put=events.clear_and_put)
    try:
        session_id, password = zk.client_id
        zk_server.pause()  # no reconnection until the session is gone
        wait_for(lambda: KazooState.SUSPENDED in states, SESSION_TIMEOUT_S, "SUSPENDED")
        failure: list[BaseException] = []

        def blocked_call() -> None:
            try:
                port.exists("/anything")
            except ZkSessionLostError as exc:
                failure.append(exc)

        caller = threading.Thread(target=blocked_call)
        caller.start()
        zk_server.resume()
        killer = KazooClient(zk_server.connect_string, client_id=(session_id, password))
        killer.start(timeout=10)  # same session, then close it: the server expires it
        killer.stop()
        killer.close()
        wait_for(lambda: KazooState.LOST in states, 2 * SESSION_TIMEOUT_S, "LOST")
        caller.join(SESSION_TIMEOUT_S)
        assert events.cleared == [Expire()]
        assert len(failure) == 1
        wait_for(lambda: zk.state == KazooState.CONNECTED, 2 * SESSION_TIMEOUT_S, "a new session")
        assert port.session_id() != session_id
        assert port.exists("/") is not None  # the new session serves calls again
    finally:
        port.close()
