"""A node's SIGTERM after its start-up, and while it is cut from ZooKeeper (ring: tests).

Real node processes and a real ZooKeeper (paused to cut the node from it).
"""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest

from harness.zookeeper import ZooKeeperServer
from tests.node.helpers import NodeFactory
from tests.polling import wait_for

pytestmark = pytest.mark.integration


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def test_a_controlled_shutdown_cut_from_zookeeper_waits_for_it_then_completes(tmp_path: Path) -> None:
    """KafkaZkClient.getControllerId retries until connected (retryRequestUntilConnected;
    ZooKeeperClient.waitUntilConnected has no bound), so a broker SIGTERMed while its ZooKeeper is
    gone waits for it and then shuts down as usual — it does not die of the ConnectionLoss. (Any
    exception out of the controlled shutdown would be swallowed: KafkaServer.shutdown L608.)"""
    with ZooKeeperServer(name="cs-cut") as zk:
        factory = NodeFactory(tmp_path, zk.connect_string)
        try:
            node = factory.start(1, {"zookeeper.session.timeout.ms": "10000"})
            wait_for(
                lambda: "started (kafka.server.KafkaServer)" in node.read("server.log"),
                30,
                "the node started",
            )
            zk.pause()  # its read of /controller goes out and is never answered
            node.signal(signal.SIGTERM)
            wait_for(lambda: "Starting controlled shutdown" in node.read("server.log"), 20, "shutdown began")
            # the client gives the connection up (two thirds of the session timeout): the read
            # in flight fails with ConnectionLoss, and Kafka sends it again once reconnected
            wait_for(
                lambda: "connection lost" in node.read("server.log").lower(), 20, "the node lost ZooKeeper"
            )
            time.sleep(1.0)
            assert node.proc.poll() is None, node.read("server.log")[-3000:] + node.stderr()
            zk.resume()  # within the session timeout: the session is still valid
            assert node.wait(30) == 0, node.stderr()
            log = node.read("server.log")
            assert "Controlled shutdown succeeded" in log, log[-3000:]
            assert "Traceback" not in node.stderr() + log
        finally:
            zk.resume()
            factory.close()
