"""Bad input must never take a node down (ring: integration tests)."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reference_controller import zkdata
from tests.node.helpers import (
    REPO,
    NodeFactory,
    PartitionSpec,
    leader_and_isr,
    send,
    stop_replica,
    update_metadata,
)

pytestmark = pytest.mark.integration
BROKER_ONLY = {"reference.controller.enable": "false"}


def _run_cli(config: Path, *args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reference_controller.node", str(config), *args],
        cwd=config.parent,
        env={"PYTHONPATH": str(REPO), "LOG_DIR": str(config.parent / "logs"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def test_bad_config_value_exits_2_naming_the_key(node_factory: NodeFactory) -> None:
    config = node_factory.write_config(1, {"replica.lag.time.max.ms": "soon"})
    result = _run_cli(config)
    assert result.returncode == 2
    assert "replica.lag.time.max.ms" in result.stderr


def test_bad_override_exits_2_naming_the_key(node_factory: NodeFactory) -> None:
    config = node_factory.write_config(1)
    result = _run_cli(config, "--override", "num.partitions=-3")
    assert result.returncode == 2
    assert "num.partitions" in result.stderr


def test_unreachable_zookeeper_exits_nonzero_naming_the_connect_string(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    factory = NodeFactory(tmp_path, f"127.0.0.1:{port}")
    config = factory.write_config(1, {"zookeeper.connection.timeout.ms": "1500"})
    started = time.monotonic()
    result = _run_cli(config)
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr
    assert 1.4 < time.monotonic() - started < 20


def test_port_in_use_exits_nonzero_naming_host_and_port(node_factory: NodeFactory) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        config = node_factory.write_config(1, {"listeners": f"PLAINTEXT://127.0.0.1:{port}", **BROKER_ONLY})
        result = _run_cli(config)
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr


def _raw_exchange(address: tuple[str, int], payload: bytes, *, one_frame: bool = False) -> bytes:
    """Send raw bytes; read until the node closes the connection (or one whole frame)."""
    with socket.create_connection(address, timeout=5) as s:
        s.sendall(payload)
        chunks: list[bytes] = []
        while not (one_frame and _whole_frame(b"".join(chunks))):
            try:
                data = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)


def _whole_frame(data: bytes) -> bool:
    return len(data) >= 4 and len(data) >= 4 + struct.unpack_from(">i", data)[0]


def test_malformed_frames_and_unknown_apis_close_the_connection_and_the_node_keeps_serving(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    node = node_factory.start(1, BROKER_ONLY)
    address = node.endpoint(zk_client)
    assert _raw_exchange(address, struct.pack(">i", 104857601)) == b""  # oversized
    assert _raw_exchange(address, struct.pack(">i", -5)) == b""  # negative size
    assert _raw_exchange(address, struct.pack(">i", 12) + b"\x00\x03\x00\x09garbage!") == b""  # undecodable
    assert _raw_exchange(address, struct.pack(">ihhi", 8, 999, 0, 7)) == b""  # unknown API key
    assert _raw_exchange(address, struct.pack(">ihhi", 8, 3, 42, 7)) == b""  # Metadata v42
    # ApiVersions v9 answers UNSUPPORTED_VERSION (35) with a v0 body
    reply = _raw_exchange(address, struct.pack(">ihhih", 10, 18, 9, 5, -1), one_frame=True)
    size, correlation_id, error = struct.unpack_from(">iih", reply)
    assert (correlation_id, error) == (5, 35)
    assert size == len(reply) - 4
    resp = send(address, 18, 3, lambda s: s(client_software_name="t", client_software_version="1"))
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}
    assert ranges[3] == (0, 9)
    assert ranges[4] == (0, 4)
    server_log = node.read("server.log")
    assert "Closing socket connection" in server_log
    node.signal(signal.SIGTERM)
    assert node.wait(30) == 0


def test_stale_controller_and_broker_epochs_are_fenced(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    node = node_factory.start(1, BROKER_ONLY)
    address = node.endpoint(zk_client)
    czxid = zk_client.exists(zkdata.broker_path(1)).czxid
    p = PartitionSpec("fenced", 0, leader=1, leader_epoch=3, isr=(1,), replicas=(1,))
    assert int(leader_and_isr(address, [p], controller_epoch=5, broker_epoch=czxid).error_code) == 0
    # FENCE-2: an older controller epoch is refused whole, nothing applied
    newer = PartitionSpec("fenced", 0, leader=1, leader_epoch=9, isr=(1,), replicas=(1,))
    resp = leader_and_isr(address, [newer], controller_epoch=4)
    assert int(resp.error_code) == 11
    assert [int(e.error_code) for e in resp.partition_errors] == [11]
    assert (
        int(update_metadata(address, {1: address}, [], controller_id=1, controller_epoch=4).error_code) == 11
    )
    assert int(stop_replica(address, [("fenced", 0)], delete=True, controller_epoch=4).error_code) == 11
    # FENCE-3: same or older leader epoch → per-partition 11; not a replica → 3
    resp = leader_and_isr(address, [p], controller_epoch=5)
    assert (int(resp.error_code), [int(e.error_code) for e in resp.partition_errors]) == (0, [11])
    other = PartitionSpec("elsewhere", 0, leader=2, leader_epoch=0, isr=(2,), replicas=(2, 3))
    resp = leader_and_isr(address, [other], controller_epoch=5)
    assert [int(e.error_code) for e in resp.partition_errors] == [3]
    # KIP-380: a broker epoch older than the czxid → 77
    resp = leader_and_isr(address, [newer], controller_epoch=5, broker_epoch=czxid - 1)
    assert int(resp.error_code) == 77
    assert (node.data_dir / "fenced-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n3 0\n"
    assert not (node.data_dir / "elsewhere-0").exists()
    assert "since its controller epoch 4 is old. Latest known controller epoch is 5" in node.read(
        "state-change.log"
    )
    journal = node.journal()
    assert [(e["api"], e["error_code"]) for e in journal] == [
        ("LeaderAndIsr", 0), ("LeaderAndIsr", 11), ("UpdateMetadata", 11), ("StopReplica", 11),
        ("LeaderAndIsr", 0), ("LeaderAndIsr", 0), ("LeaderAndIsr", 77),
    ]  # fmt: skip
    assert journal[0]["partitions"][0]["leader_epoch"] == 3
    assert journal[0]["broker_epoch"] == czxid
    assert int(stop_replica(address, [("fenced", 0)], delete=True, controller_epoch=5).error_code) == 0
    assert not (node.data_dir / "fenced-0").exists()
    renamed = [d.name for d in node.data_dir.iterdir() if d.name.startswith("fenced-0.")]
    assert len(renamed) <= 1
    assert all(name.endswith("-delete") for name in renamed)
    time.sleep(1.0)
    assert not [d for d in node.data_dir.iterdir() if d.name.startswith("fenced-0.")]
