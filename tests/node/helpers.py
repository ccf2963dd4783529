"""Test helpers: node processes, a hand-rolled controller built with kio, waiting (ring: test tooling)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema

from cluster import crafted
from reference_controller import zkdata
from reference_controller.node.wire import KafkaClient
from tests.polling import wait_for

REPO = Path(__file__).resolve().parents[2]


@dataclass
class NodeProcess:
    broker_id: int
    home: Path
    proc: subprocess.Popen[bytes]
    zk_connect: str

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    def read(self, name: str) -> str:
        path = self.log_dir / name
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def journal(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.read("controller-requests.jsonl").splitlines() if line]

    def stderr(self) -> str:
        err = self.home / "stderr.txt"
        return err.read_text(encoding="utf-8") if err.exists() else ""

    def endpoint(self, zk: KazooClient, listener: str = "PLAINTEXT") -> tuple[str, int]:
        data, _ = wait_for(
            lambda: (
                zk.exists(zkdata.broker_path(self.broker_id)) and zk.get(zkdata.broker_path(self.broker_id))
            ),
            20,
            f"/brokers/ids/{self.broker_id}",
        )
        ep = zkdata.decode_broker(self.broker_id, data).endpoint(listener)
        assert ep is not None, f"broker {self.broker_id} has no {listener} endpoint"
        return ep.host, ep.port

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def wait(self, timeout_s: float) -> int:
        return self.proc.wait(timeout=timeout_s)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


@dataclass
class NodeFactory:
    root: Path
    zk_connect: str
    nodes: list[NodeProcess] = field(default_factory=list)

    def write_config(self, broker_id: int, overrides: Mapping[str, str] | None = None) -> Path:
        home = self.root / f"node{broker_id}"
        home.mkdir(parents=True, exist_ok=True)
        props = {
            "broker.id": str(broker_id),
            "zookeeper.connect": self.zk_connect,
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(home / "data"),
            "zookeeper.session.timeout.ms": "6000",
            "zookeeper.connection.timeout.ms": "10000",
            "replica.lag.time.max.ms": "1500",
            "replica.fetch.wait.max.ms": "200",
            "replica.fetch.backoff.ms": "200",
            "controlled.shutdown.retry.backoff.ms": "200",
            "log.segment.delete.delay.ms": "500",
            "reference.isr.change.propagation.blackout.ms": "100",
            "reference.isr.change.propagation.interval.ms": "1000",
        }
        props.update(overrides or {})
        path = home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
        return path

    def start(
        self, broker_id: int, overrides: Mapping[str, str] | None = None, args: tuple[str, ...] = ()
    ) -> NodeProcess:
        config = self.write_config(broker_id, overrides)
        home = config.parent
        env = {**os.environ, "LOG_DIR": str(home / "logs"), "PYTHONPATH": str(REPO)}
        with (home / "stderr.txt").open("ab") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "reference_controller.node", str(config), *args],
                cwd=home,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        node = NodeProcess(broker_id, home, proc, self.zk_connect)
        self.nodes.append(node)
        return node

    def close(self) -> None:
        for node in self.nodes:
            node.kill()


# ---- a hand-rolled controller ------------------------------------------------------------------
def send(address: tuple[str, int], api_key: int, version: int, body: Callable[[type[Any]], Any]) -> Any:
    """Send one request built by `body(schema)` and return the decoded response."""
    schema = load_request_schema(api_key, version)

    async def run() -> Any:
        client = KafkaClient(address[0], address[1], "test-controller")
        try:
            return await client.request(schema, body(schema), 10.0)
        finally:
            await client.close()

    return asyncio.run(run())


#: The one test-side builder of controller requests (cluster/crafted.py); same fields, same order.
PartitionSpec = crafted.PartitionSpec


def leader_and_isr_request(
    schema: type[Any],
    parts: list[PartitionSpec],
    *,
    controller_epoch: int = 1,
    broker_epoch: int = -1,
    leaders: list[tuple[int, str, int]] = (),  # type: ignore[assignment]
    correlation_controller_id: int = 99,
) -> Any:
    """A LeaderAndIsr request at ``schema``'s version for `parts` (built by cluster/crafted.py)."""
    return crafted.leader_and_isr_request(
        parts,
        controller_id=correlation_controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        live_leaders=leaders,
        version=int(schema.__version__),
    )


def leader_and_isr(
    address: tuple[str, int],
    parts: list[PartitionSpec],
    *,
    controller_epoch: int = 1,
    broker_epoch: int = -1,
    leaders: list[tuple[int, str, int]] = (),  # type: ignore[assignment]
    correlation_controller_id: int = 99,
) -> Any:
    request = crafted.leader_and_isr_request(
        parts,
        controller_id=correlation_controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        live_leaders=leaders,
    )
    return crafted.send(address, request)


def update_metadata(
    address: tuple[str, int],
    brokers: Mapping[int, tuple[str, int]],
    parts: list[PartitionSpec],
    *,
    controller_id: int,
    controller_epoch: int = 1,
    broker_epoch: int = -1,
) -> Any:
    live = [
        crafted.BrokerSpec(b, (("PLAINTEXT", host, port),)) for b, (host, port) in sorted(brokers.items())
    ]
    request = crafted.update_metadata_request(
        parts, live, controller_id=controller_id, controller_epoch=controller_epoch, broker_epoch=broker_epoch
    )
    return crafted.send(address, request)


def stop_replica(
    address: tuple[str, int],
    partitions: list[tuple[str, int]],
    *,
    delete: bool,
    controller_epoch: int = 1,
    broker_epoch: int = -1,
) -> Any:
    request = crafted.stop_replica_request(
        partitions,
        delete=delete,
        controller_id=99,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
    )
    return crafted.send(address, request)


@pytest.fixture
def node_factory(tmp_path: Path, zk_connect: str) -> Iterator[NodeFactory]:
    """The one node-process factory fixture (the node and controller-integration conftests use it):
    every node it starts is killed at the end of the test."""
    factory = NodeFactory(tmp_path, zk_connect)
    try:
        yield factory
    finally:
        factory.close()
