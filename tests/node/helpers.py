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

from kafkawire.framing import build
from reference_controller import zkdata
from reference_controller.node.wire import KafkaClient, nested
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


@dataclass(frozen=True)
class PartitionSpec:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int = 0
    controller_epoch: int = 1
    is_new: bool = True


def leader_and_isr_request(
    schema: type[Any],
    parts: list[PartitionSpec],
    *,
    controller_epoch: int = 1,
    broker_epoch: int = -1,
    leaders: list[tuple[int, str, int]] = (),  # type: ignore[assignment]
    correlation_controller_id: int = 99,
) -> Any:
    """A LeaderAndIsr request (v2+ layout) for `parts`, built with kio's `schema`."""
    ps_cls, ts_cls = (
        nested(schema, "LeaderAndIsrPartitionState"),
        nested(schema, "LeaderAndIsrTopicState"),
    )
    ll_cls = nested(schema, "LeaderAndIsrLiveLeader")
    topics: dict[str, list[Any]] = {}
    for p in parts:
        topics.setdefault(p.topic, []).append(
            build(
                ps_cls,
                partition_index=p.partition,
                controller_epoch=p.controller_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.isr,
                partition_epoch=p.zk_version,
                replicas=p.replicas,
                adding_replicas=(),
                removing_replicas=(),
                is_new=p.is_new,
            )
        )
    return build(
        schema,
        controller_id=correlation_controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        topic_states=tuple(
            build(ts_cls, topic_name=t, partition_states=tuple(ps)) for t, ps in topics.items()
        ),
        live_leaders=tuple(build(ll_cls, broker_id=b, host_name=h, port=port) for b, h, port in leaders),
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
    def body(schema: type[Any]) -> Any:
        return leader_and_isr_request(
            schema,
            parts,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
            leaders=leaders,
            correlation_controller_id=correlation_controller_id,
        )

    return send(address, 4, 4, body)


def update_metadata(
    address: tuple[str, int],
    brokers: Mapping[int, tuple[str, int]],
    parts: list[PartitionSpec],
    *,
    controller_id: int,
    controller_epoch: int = 1,
    broker_epoch: int = -1,
) -> Any:
    def body(schema: type[Any]) -> Any:
        ps_cls, ts_cls = (
            nested(schema, "UpdateMetadataPartitionState"),
            nested(schema, "UpdateMetadataTopicState"),
        )
        b_cls, ep_cls = nested(schema, "UpdateMetadataBroker"), nested(schema, "UpdateMetadataEndpoint")
        topics: dict[str, list[Any]] = {}
        for p in parts:
            topics.setdefault(p.topic, []).append(
                build(
                    ps_cls,
                    partition_index=p.partition,
                    controller_epoch=p.controller_epoch,
                    leader=p.leader,
                    leader_epoch=p.leader_epoch,
                    isr=p.isr,
                    zk_version=p.zk_version,
                    replicas=p.replicas,
                    offline_replicas=(),
                )
            )
        live = tuple(
            build(
                b_cls,
                id_=bid,
                rack=None,
                endpoints=(build(ep_cls, port=port, host=host, listener="PLAINTEXT", security_protocol=0),),
            )
            for bid, (host, port) in sorted(brokers.items())
        )
        return build(
            schema,
            controller_id=controller_id,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
            topic_states=tuple(
                build(ts_cls, topic_name=t, partition_states=tuple(ps)) for t, ps in topics.items()
            ),
            live_brokers=live,
        )

    return send(address, 6, 6, body)


def stop_replica(
    address: tuple[str, int],
    partitions: list[tuple[str, int]],
    *,
    delete: bool,
    controller_epoch: int = 1,
    broker_epoch: int = -1,
) -> Any:
    def body(schema: type[Any]) -> Any:
        t_cls = nested(schema, "StopReplicaTopicV1")
        topics: dict[str, list[int]] = {}
        for t, p in partitions:
            topics.setdefault(t, []).append(p)
        return build(
            schema,
            controller_id=99,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
            delete_partitions=delete,
            topics=tuple(build(t_cls, name=t, partition_indexes=tuple(ps)) for t, ps in topics.items()),
        )

    return send(address, 5, 2, body)


@pytest.fixture
def node_factory(tmp_path: Path, zk_connect: str) -> Iterator[NodeFactory]:
    """The one node-process factory fixture (the node and controller-integration conftests use it):
    every node it starts is killed at the end of the test."""
    factory = NodeFactory(tmp_path, zk_connect)
    try:
        yield factory
    finally:
        factory.close()
