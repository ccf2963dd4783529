"""The harness's observer clients keep trying to reconnect about once a second (real kazoo, real TCP).

Three loopback listeners play an ensemble without a quorum: each accepts a connection and closes
it at once, as a ZooKeeper member in an election does. The test records when the client's
connection attempts arrive. kazoo's default retry doubles the pause after every failed pass over
the hosts (0.1, 0.2, ... 6.4 s within 13 s), so an observer built that way fails the gap bound.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooState
from kazoo.handlers.threading import KazooTimeoutError

from harness.zookeeper import ZooKeeperServer
from harness.zookeeper.observer import OBSERVER_MAX_RETRY_DELAY_S, DeadlineReads, observer_client

pytestmark = pytest.mark.integration

OUTAGE_S = 14.0


@contextlib.contextmanager
def _refusing_members(count: int) -> Iterator[tuple[list[int], list[float]]]:
    """``count`` listeners that accept and close at once; yields their ports and the accept times."""
    accepted: list[float] = []
    stop = threading.Event()
    socks = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.settimeout(0.05)
        socks.append(sock)

    def serve(sock: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            accepted.append(time.monotonic())
            conn.close()

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in socks]
    for t in threads:
        t.start()
    try:
        yield [s.getsockname()[1] for s in socks], accepted
    finally:
        stop.set()
        for t in threads:
            t.join(5.0)
        for s in socks:
            s.close()


def test_an_observer_keeps_retrying_about_once_a_second_through_a_long_outage() -> None:
    with _refusing_members(3) as (ports, accepted):
        client = observer_client(",".join(f"127.0.0.1:{p}" for p in ports))
        client.start_async()
        try:
            started = time.monotonic()
            time.sleep(OUTAGE_S)  # the outage itself: what is asserted is the attempts it saw
            attempts = [t for t in accepted if t >= started]
        finally:
            client.stop()
            client.close()
    assert len(attempts) >= 3 * 5, f"only {len(attempts)} connection attempts in {OUTAGE_S:.0f} s"
    points = [started, *sorted(attempts)]
    gaps = [b - a for a, b in itertools.pairwise(points)]
    # a full pass over three fast-failing hosts takes milliseconds; then at most the bounded
    # delay plus kazoo's jitter (up to 40 % of it) before the next pass
    bound = OBSERVER_MAX_RETRY_DELAY_S * 1.4 + 0.5
    assert max(gaps) <= bound, f"a {max(gaps):.1f} s pause between connection attempts (bound {bound:.1f} s)"
    assert OUTAGE_S - (sorted(attempts)[-1] - started) <= bound, (
        "the attempts stopped before the outage ended"
    )


def test_an_observer_reads_again_within_seconds_of_its_server_returning(
    zk_server_isolated: ZooKeeperServer,
) -> None:
    """A real server stopped for longer than the session timeout and started again on its port:
    the observer is back (a new session) within a few seconds of the server serving."""
    client = observer_client(zk_server_isolated.connect_string, timeout_s=4.0)
    states: list[KazooState] = []
    client.add_listener(states.append)
    client.start(timeout=15.0)
    try:
        client.create("/before", b"1")
        zk_server_isolated.stop()
        deadline = time.monotonic() + 15.0
        while KazooState.SUSPENDED not in states and time.monotonic() < deadline:
            time.sleep(0.05)
        assert KazooState.SUSPENDED in states
        time.sleep(OUTAGE_S)  # the outage itself (long enough for kazoo's default backoff to reach 6.4 s)
        zk_server_isolated.start()
        back = time.monotonic()
        deadline = back + 30.0
        while client.state != KazooState.CONNECTED and time.monotonic() < deadline:
            time.sleep(0.05)
        took = time.monotonic() - back
        assert client.state == KazooState.CONNECTED
        assert took <= OBSERVER_MAX_RETRY_DELAY_S * 1.4 + 2.0, (
            f"reconnected {took:.1f} s after the server returned"
        )
        assert client.exists("/before") is not None
    finally:
        client.stop()
        client.close()


def test_deadline_reads_answer_while_served_and_give_up_on_time_when_not(
    zk_server_isolated: ZooKeeperServer,
) -> None:
    """kazoo would queue a read made while it reconnects and wait for ever; through
    ``DeadlineReads`` the read ends at the deadline with ``KazooTimeoutError``."""
    client = observer_client(zk_server_isolated.connect_string)
    client.start(timeout=15.0)
    try:
        client.create("/a/b", b"v", makepath=True)
        reads = DeadlineReads(client, time.monotonic() + 10.0)
        assert reads.get("/a/b")[0] == b"v"
        assert reads.get_children("/a") == ["b"]
        assert reads.exists("/a/c") is None
        zk_server_isolated.stop()
        began = time.monotonic()
        reads = DeadlineReads(client, began + 2.0)
        with pytest.raises(KazooTimeoutError):
            reads.get_children("/a")
        assert 1.5 <= time.monotonic() - began <= 4.0
        with pytest.raises(KazooTimeoutError):  # past its deadline: no request at all
            reads.get("/a/b")
    finally:
        client.stop()
        client.close()
