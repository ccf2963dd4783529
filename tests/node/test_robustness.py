"""Robustness found by fuzzing the node (issue 8 item 8), over real TCP to real node processes (ring: tests).

- A LeaderAndIsr naming an illegal topic gets INVALID_TOPIC_EXCEPTION (17) for that partition and
  touches no file; legal partitions of the same request are served; no path ever leaves `log.dirs`.
- Null where the schema has a non-nullable array (e.g. a compact array of length 0) is a parse
  error: the node logs a close of that connection, never an "Unexpected error" traceback, and goes
  on serving.
- CreateTopics v4 with a 32,767-character name is answered (17), not dropped.
"""

from __future__ import annotations

import socket
import struct
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kafkawire.framing import build
from reference_controller import zkdata
from reference_controller.node.wire import nested
from tests.node.helpers import (
    NodeFactory,
    NodeProcess,
    PartitionSpec,
    leader_and_isr,
    send,
    stop_replica,
)
from tests.polling import wait_for

pytestmark = pytest.mark.integration
BROKER_ONLY = {"reference.controller.enable": "false"}
ILLEGAL = ["a/b", "x" * 250, "..", ".", "../escape", "../../escape2", "sp ace", ""]


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def everything_inside(node: NodeProcess) -> None:
    """No file the node made resolves outside its log dir (the node's home holds only its own)."""
    data = node.data_dir.resolve()
    for p in node.data_dir.rglob("*"):
        assert p.resolve().is_relative_to(data), p
    assert {p.name for p in node.home.iterdir()} <= {"data", "logs", "server.properties", "stderr.txt"}
    assert not list(node.home.parent.glob("escape*"))


def raw_exchange(address: tuple[str, int], frame: bytes, timeout_s: float = 10) -> bytes:
    """Send one frame; return the response frame, or b"" when the node closes the connection."""
    with socket.create_connection(address, timeout=timeout_s) as s:
        s.sendall(frame)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                return b""
            head += chunk
        (size,) = struct.unpack(">i", head)
        body = b""
        while len(body) < size:
            chunk = s.recv(size - len(body))
            if not chunk:
                raise AssertionError(f"truncated response: {len(body)} of {size} bytes")
            body += chunk
        return body


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def flexible_header(api_key: int, version: int, correlation_id: int) -> bytes:
    """Request header v2: api key, version, correlation id, client id "fz", no tagged fields."""
    return struct.pack(">hhih", api_key, version, correlation_id, 2) + b"fz" + b"\x00"


@pytest.fixture
def node(node_factory: NodeFactory, zk_client: KazooClient) -> NodeProcess:
    started = node_factory.start(1, BROKER_ONLY)
    started.endpoint(zk_client)
    return started


def test_illegal_topic_names_in_leader_and_isr_get_invalid_topic_and_touch_no_file(
    node: NodeProcess, zk_client: KazooClient
) -> None:
    address = node.endpoint(zk_client)
    before = tree(node.data_dir)
    parts = [PartitionSpec(t, 0, leader=1, leader_epoch=0, isr=(1,), replicas=(1,)) for t in [*ILLEGAL, "ok"]]
    response = leader_and_isr(address, parts)
    errors = {(p.topic_name, int(p.partition_index)): int(p.error_code) for p in response.partition_errors}
    assert errors == {**{(t, 0): 17 for t in ILLEGAL}, ("ok", 0): 0}
    assert tree(node.data_dir) - before == {
        "ok-0",
        *(f"ok-0/{f}" for f in ("00000000000000000000.log", "00000000000000000000.index")),
        "ok-0/00000000000000000000.timeindex",
        "ok-0/leader-epoch-checkpoint",
    }
    stop = stop_replica(address, [(t, 0) for t in ILLEGAL], delete=True)
    assert int(stop.error_code) == 0
    everything_inside(node)
    assert node.proc.poll() is None, node.stderr()
    text = node.read("state-change.log")
    assert "for partition ../escape-0 as the topic name is illegal" in text, text[-2000:]


def test_null_non_nullable_arrays_close_the_connection_with_a_log_line_and_no_traceback(
    node: NodeProcess, zk_client: KazooClient
) -> None:
    address = node.endpoint(zk_client)
    body = struct.pack(">iiq", 0, 1, -1) + b"\x00" + b"\x00" + b"\x00"  # topic_states, live_brokers: null
    update_metadata = frame(flexible_header(6, 6, 7) + body)
    # LeaderAndIsr v4 from the issue: live_leaders is a null compact array
    from_the_issue = bytes.fromhex(
        "000000210004000400000002000372656c000000000000000000ffffffffffffffff010000"
    )
    for raw in (update_metadata, from_the_issue):
        assert raw_exchange(address, raw) == b""
    log = wait_for(
        lambda: (t := node.read("server.log")).count("non-nullable") >= 2 and t, 10, "two close lines"
    )
    assert isinstance(log, str)
    assert "Unexpected error" not in log
    assert "Traceback" not in log
    assert "Closing socket connection" in log
    assert "non-nullable field topic_states" in log
    assert "non-nullable field live_leaders" in log
    # still serving
    ok = leader_and_isr(address, [PartitionSpec("ok", 0, leader=1, leader_epoch=0, isr=(1,), replicas=(1,))])
    assert [int(p.error_code) for p in ok.partition_errors] == [0]


@pytest.fixture
def controller(node_factory: NodeFactory, zk_client: KazooClient) -> tuple[str, int]:
    """A node that is the active controller (CreateTopics is served there only) and knows itself."""
    node = node_factory.start(1)
    wait_for(partial(zk_client.exists, zkdata.CONTROLLER), 30, "/controller")
    address = node.endpoint(zk_client)
    wait_for(
        lambda: any(
            e["api"] == "UpdateMetadata" and [b["id"] for b in e["live_brokers"]] == [1]
            for e in node.journal()
        ),
        30,
        "broker 1 in its own metadata cache (placement needs a live broker)",
    )
    return address


def create_topic_v4(address: tuple[str, int], name: str, num_partitions: int) -> Any:
    """CreateTopics v4, retried while the controller component is not active yet (41)."""

    def body(schema: type[Any]) -> Any:
        topic_cls = nested(schema, "CreatableTopic")
        topic = build(
            topic_cls,
            name=name,
            num_partitions=num_partitions,
            replication_factor=1,
            assignments=(),
            configs=(),
        )
        return build(schema, topics=(topic,), timeout=5000, validate_only=False)

    return wait_for(lambda: (r := send(address, 19, 4, body)).topics[0].error_code != 41 and r, 30, "")


def test_create_topics_v4_with_a_32767_character_name_is_answered_invalid_topic(
    controller: tuple[str, int], zk_client: KazooClient
) -> None:
    name = "a" * 32767
    (result,) = create_topic_v4(controller, name, 1).topics
    assert (str(result.name), int(result.error_code)) == (name, 17)
    message = str(result.error_message)
    assert message.startswith("Topic name is illegal, it can't be longer than 249 characters")
    assert len(message.encode()) <= 32767
    assert zk_client.get_children(zkdata.BROKER_TOPICS) == []


def test_a_partition_count_no_znode_can_hold_is_refused_at_once(
    controller: tuple[str, int], zk_client: KazooClient
) -> None:
    """2^31-1 partitions: INVALID_PARTITIONS (37) before any placement work; the node stays healthy."""
    started = time.monotonic()
    (result,) = create_topic_v4(controller, "huge", 2**31 - 1).topics
    assert int(result.error_code) == 37, result
    assert "jute.maxbuffer" in str(result.error_message)
    assert time.monotonic() - started < 10
    (small,) = create_topic_v4(controller, "small", 2).topics
    assert int(small.error_code) == 0, small
    assert zk_client.get_children(zkdata.BROKER_TOPICS) == ["small"]
