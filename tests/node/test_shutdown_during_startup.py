"""SIGTERM while a node is still starting up (ring: tests).

Kafka 2.5.1 registers its shutdown hook before ``KafkaServerStartable.startup``; the hook's
``KafkaServer.shutdown`` throws "Kafka server is still starting up, cannot shut down!" while
``isStartingUp`` is set, and ``KafkaServerStartable.shutdown`` answers with ``Exit.halt(1)``. So a
broker signalled during its start-up ends at once with status 1 and no controlled shutdown. Real
node processes; the start-up is held in its first step by a ZooKeeper address nobody listens on.
"""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest

from tests.node.helpers import NodeFactory
from tests.polling import wait_for

pytestmark = pytest.mark.integration


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sigterm_during_startup_halts_with_status_1_and_no_controlled_shutdown(tmp_path: Path) -> None:
    factory = NodeFactory(tmp_path, f"127.0.0.1:{_closed_port()}")
    try:
        node = factory.start(1, {"zookeeper.connection.timeout.ms": "60000"})
        wait_for(
            lambda: "Connecting to zookeeper" in node.read("server.log"), 30, "the node's start-up began"
        )
        signalled = time.monotonic()
        node.signal(signal.SIGTERM)
        assert node.wait(10) == 1
        assert time.monotonic() - signalled < 5, "the node waited for its start-up instead of halting"
        log = node.read("server.log")
        assert "Kafka server is still starting up, cannot shut down!" in log
        assert "Halting Kafka." in log
        assert "controlled shutdown" not in log.lower()
        assert "started (kafka.server.KafkaServer)" not in log
    finally:
        factory.close()


def test_sigterm_after_startup_is_a_controlled_shutdown_with_status_0(
    tmp_path: Path, zk_connect: str
) -> None:
    factory = NodeFactory(tmp_path, zk_connect)
    try:
        node = factory.start(1)
        wait_for(
            lambda: "started (kafka.server.KafkaServer)" in node.read("server.log"), 30, "the node started"
        )
        node.signal(signal.SIGTERM)
        assert node.wait(30) == 0
        log = node.read("server.log")
        assert "Starting controlled shutdown" in log
        assert "Halting Kafka." not in log
    finally:
        factory.close()
