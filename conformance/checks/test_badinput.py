"""BADINPUT checks: malformed znodes and frames never stop the controller or broker."""

from __future__ import annotations

import socket
import struct

import pytest

from cluster import admin
from cluster.cluster import Cluster, wait_for
from conformance.scenarios import create_topic

pytestmark = pytest.mark.conformance


@pytest.mark.behaviour("BADINPUT-1")
def test_malformed_admin_json_is_ignored(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "b1", {0: [1, 2]})
    cluster.zk.create("/admin/reassign_partitions", b"{not json")
    cluster.zk.create("/admin/preferred_replica_election", b"[[[")
    create_topic(cluster, "after", {0: [2, 3]})
    assert (cluster.get_json("/brokers/topics/b1") or {})["partitions"]["0"] == [1, 2]


@pytest.mark.behaviour("BADINPUT-2")
def test_undecodable_topic_and_broker_znodes_are_skipped(cluster: Cluster) -> None:
    cluster.wait_controller()
    cluster.zk.create("/brokers/topics/garbage", b"\x00\xffnot-json")
    cluster.zk.create("/brokers/ids/99", b"{broken", ephemeral=True)
    create_topic(cluster, "fine", {0: [1, 3]})
    cluster.zk.delete("/controller")
    cluster.wait_controller()
    create_topic(cluster, "fine2", {0: [3, 2]})


def _send_raw(port: int, payload: bytes, *, then_close: bool = False) -> bytes:
    """Send ``payload`` and read the answer, if any, until the broker closes the connection;
    ``then_close``: half-close after sending (the client goes away mid-frame: the broker sees
    end-of-stream at once instead of waiting for the bytes the frame's size announced)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(payload)
        if then_close:
            s.shutdown(socket.SHUT_WR)
        try:
            return s.recv(65536)
        except (TimeoutError, ConnectionError):
            return b""


@pytest.mark.leaves_cluster_as_found
@pytest.mark.behaviour("BADINPUT-3")
def test_malformed_frames_do_not_stop_the_broker(cluster: Cluster) -> None:
    cluster.wait_controller()
    _, port = cluster.endpoint(1)
    body = struct.pack(">hhih", 999, 0, 7, -1)
    _send_raw(port, struct.pack(">i", len(body)) + body)  # unknown api key
    body = struct.pack(">hhih", 3, 99, 8, -1)
    _send_raw(port, struct.pack(">i", len(body)) + body)  # unsupported version
    _send_raw(port, struct.pack(">i", 100) + b"\x00\x03", then_close=True)  # truncated frame
    _send_raw(port, struct.pack(">i", -5) + b"junk")  # negative size
    md = wait_for(
        lambda: admin.admin_client(cluster).list_topics(timeout=5), cluster.deadline(15), "Metadata answered"
    )
    assert 1 in {b.id for b in md.brokers.values()}
