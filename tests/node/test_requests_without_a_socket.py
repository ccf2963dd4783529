"""A node's controller-request handling called without a socket, on the in-memory ZooKeeper (ring:
unit tests): `KafkaApis.handle` takes a `RequestContext` and a decoded kio request, as the protocol
server hands them over — the entry point a deterministic simulator calls.

Broker 1 registers (its broker epoch is the znode's czxid), a LeaderAndIsr makes it leader of t-0,
one carrying an older broker epoch is fenced with STALE_BROKER_EPOCH (77), and both are journalled.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema

from kafkawire.errors import Errors
from kafkawire.states import LiveLeader, TopicPartition
from reference_controller import zkdata
from reference_controller.config import KafkaConfig
from reference_controller.node.apis import LEADER_AND_ISR, KafkaApis
from reference_controller.node.context import NodeContext
from reference_controller.node.isr import IsrManager
from reference_controller.node.journal import ControllerRequestJournal
from reference_controller.node.log_manager import LogManager
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.protocol import RequestContext
from reference_controller.node.registration import register_broker
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.zk_port import create_if_absent
from reference_controller.testing.memory_zk import MemoryZooKeeper
from reference_controller.zkdata import BrokerInfo, EndPoint
from tests.node.helpers import PartitionSpec, leader_and_isr_request

pytestmark = pytest.mark.unit


class NoFetcher:
    def add_partitions(
        self, partitions: dict[TopicPartition, tuple[int, int]], hints: list[LiveLeader]
    ) -> None:
        pass

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        pass


def _node(tmp_path: Path) -> NodeContext:
    config = KafkaConfig.from_properties(
        {"broker.id": "1", "zookeeper.connect": "memory:2181", "log.dirs": str(tmp_path / "data")}
    )
    zk = MemoryZooKeeper().client()
    for path in zkdata.PERSISTENT_PATHS:
        create_if_absent(zk, path, None)
    lm = LogManager((tmp_path / "data",), 1, 0)
    lm.startup("cluster")
    rm = ReplicaManager(1, lm, MetadataCache(), NoFetcher())
    rm.broker_epoch = register_broker(zk, BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),)))
    isr = IsrManager(zk, rm, 10_000, 5_000, 60_000)
    return NodeContext(config, zk, "cluster", rm, rm.metadata_cache, isr, ControllerRequestJournal(tmp_path))


def _leader_and_isr(broker_epoch: int, correlation_id: int) -> tuple[RequestContext, Any]:
    spec = PartitionSpec("t", 0, leader=1, leader_epoch=0, isr=(1,), replicas=(1,))
    request = leader_and_isr_request(
        load_request_schema(LEADER_AND_ISR, 4), [spec], broker_epoch=broker_epoch
    )
    return RequestContext("PLAINTEXT", "simulated", LEADER_AND_ISR, 4, correlation_id, "controller"), request


def test_leader_and_isr_is_applied_and_an_older_broker_epoch_fenced(tmp_path: Path) -> None:
    node = _node(tmp_path)
    apis = KafkaApis(node)
    epoch = node.replica_manager.broker_epoch
    applied = asyncio.run(apis.handle(*_leader_and_isr(epoch, 1)))
    assert int(applied.error_code) == 0
    assert [
        (str(e.topic_name), int(e.partition_index), int(e.error_code)) for e in applied.partition_errors
    ] == [("t", 0, 0)]
    assert node.replica_manager.partitions[TopicPartition("t", 0)].is_leader
    fenced = asyncio.run(apis.handle(*_leader_and_isr(epoch - 1, 2)))
    assert int(fenced.error_code) == Errors.STALE_BROKER_EPOCH
    node.journal.close()
    lines = [json.loads(line) for line in (tmp_path / "controller-requests.jsonl").read_text().splitlines()]
    assert [(line["api"], line["broker_epoch"], line["error_code"]) for line in lines] == [
        ("LeaderAndIsr", epoch, 0),
        ("LeaderAndIsr", epoch - 1, Errors.STALE_BROKER_EPOCH),
    ]
