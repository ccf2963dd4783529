"""Unit tests of the node's pure parts: placement, log layout, metadata cache, fencing, frames."""

from __future__ import annotations

import asyncio
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema

from kafkawire.framing import build, read_frame
from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition
from reference_controller.config import KafkaConfig
from reference_controller.node.apis import SUPPORTED_VERSIONS
from reference_controller.node.log_manager import LogDirError, LogManager
from reference_controller.node.metadata_cache import BrokerEndpoints, MetadataCache, PartitionState
from reference_controller.node.placement import PlacementError, assign_replicas_to_brokers
from reference_controller.node.protocol import KafkaProtocolServer, RequestContext
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.wire import KafkaClient

pytestmark = pytest.mark.unit


# ---- placement --------------------------------------------------------------------------------
def test_placement_matches_kafkas_worked_table() -> None:
    got = assign_replicas_to_brokers([3, 1, 2], 4, 2, random.Random(0), fixed_start_index=0)
    assert got == {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]}


def test_placement_structure_for_any_seed() -> None:
    for seed in range(50):
        brokers = [1, 2, 3, 4, 5]
        got = assign_replicas_to_brokers(brokers, 10, 3, random.Random(seed))
        assert sorted(got) == list(range(10))
        assert all(len(set(r)) == 3 and set(r) <= set(brokers) for r in got.values())
        firsts = [got[p][0] for p in range(5)]
        assert sorted(firsts) == brokers  # leaders rotate over every broker


def test_placement_continues_partition_ids_for_create_partitions() -> None:
    got = assign_replicas_to_brokers(
        [1, 2, 3], 2, 2, random.Random(1), fixed_start_index=0, start_partition_id=3
    )
    assert got == {3: [1, 3], 4: [2, 1]}


@pytest.mark.parametrize(("n", "rf", "code"), [(0, 1, 37), (1, 0, 38), (1, 4, 38)])
def test_placement_rejects_invalid_requests(n: int, rf: int, code: int) -> None:
    with pytest.raises(PlacementError) as info:
        assign_replicas_to_brokers([1, 2, 3], n, rf, random.Random(0))
    assert info.value.error_code == code


# ---- log manager ------------------------------------------------------------------------------
def test_log_manager_layout_and_least_loaded_dir(tmp_path: Path) -> None:
    dirs = (tmp_path / "a", tmp_path / "b")
    lm = LogManager(dirs, 1, 0)
    lm.startup("cid")
    assert "broker.id=1\ncluster.id=cid\n" in (dirs[0] / "meta.properties").read_text()
    first, second = lm.get_or_create_log(TopicPartition("t", 0)), lm.get_or_create_log(TopicPartition("t", 1))
    assert {first.dir.parent, second.dir.parent} == set(dirs)
    assert sorted(p.name for p in first.dir.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
        "leader-epoch-checkpoint",
    ]  # fmt: skip
    assert (first.dir / "leader-epoch-checkpoint").read_text() == ""
    lm.assign_leader_epoch(TopicPartition("t", 0), 4)
    assert (first.dir / "leader-epoch-checkpoint").read_text() == "0\n1\n4 0\n"
    lm.checkpoint()
    assert (dirs[0] / "replication-offset-checkpoint").read_text() == "0\n1\nt 0 0\n"
    renamed = lm.async_delete(TopicPartition("t", 0))
    assert renamed is not None
    assert renamed.name.startswith("t-0.")
    assert renamed.name.endswith("-delete")
    lm.delete_due()
    assert not renamed.exists()
    lm.shutdown()
    reloaded = LogManager(dirs, 1, 0)
    reloaded.startup("cid")
    assert set(reloaded.logs) == {("t", 1)}


def test_log_manager_refuses_another_clusters_dir(tmp_path: Path) -> None:
    LogManager((tmp_path,), 1, 0).startup("one")
    with pytest.raises(LogDirError, match="doesn't match stored clusterId"):
        LogManager((tmp_path,), 1, 0).startup("two")


# ---- metadata cache ---------------------------------------------------------------------------
def _state(leader: int, epoch: int = 0) -> PartitionState:
    return PartitionState(1, leader, epoch, (1, 2), 0, (1, 2), ())


def test_metadata_cache_leader_during_delete_removes_the_partition() -> None:
    cache = MetadataCache()
    brokers = [BrokerEndpoints(1, {"PLAINTEXT": ("h", 1)})]
    cache.update(1, brokers, [(TopicPartition("t", 0), _state(1)), (TopicPartition("t", 1), _state(2))])
    assert cache.has_leaders("t", [0, 1])
    assert cache.update(1, brokers, [(TopicPartition("t", 0), _state(-2))]) == [TopicPartition("t", 0)]
    assert cache.contains("t")
    cache.update(1, brokers, [(TopicPartition("t", 1), _state(-2))])
    assert not cache.contains("t")


# ---- replica manager fencing ------------------------------------------------------------------
class _NoFetcher:
    def __init__(self) -> None:
        self.added: dict[TopicPartition, tuple[int, int]] = {}

    def add_partitions(
        self, partitions: dict[TopicPartition, tuple[int, int]], hints: list[LiveLeader]
    ) -> None:
        self.added.update(partitions)

    def remove_partitions(self, partitions: Any) -> None:
        for tp in partitions:
            self.added.pop(tp, None)


def _las(epoch: int, leader: int = 1, replicas: tuple[int, ...] = (1, 2)) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState("t", 0, 1, leader, epoch, replicas, 0, replicas)


def test_replica_manager_fences_stale_epochs(tmp_path: Path) -> None:
    lm = LogManager((tmp_path,), 1, 0)
    lm.startup("c")
    fetcher = _NoFetcher()
    rm = ReplicaManager(1, lm, MetadataCache(), fetcher, clock_ms=lambda: 0.0)
    assert rm.become_leader_or_follower(1, 9, 2, [_las(0)], []) == (0, {("t", 0): 0})
    assert rm.become_leader_or_follower(2, 9, 1, [_las(5)], []) == (11, {("t", 0): 11})
    assert rm.become_leader_or_follower(3, 9, 2, [_las(0)], []) == (0, {("t", 0): 11})
    assert rm.become_leader_or_follower(4, 9, 2, [_las(1, leader=2)], []) == (0, {("t", 0): 0})
    assert fetcher.added == {("t", 0): (2, 1)}
    assert rm.become_leader_or_follower(5, 9, 2, [_las(2, replicas=(2, 3))], []) == (0, {("t", 0): 3})
    assert rm.stop_replicas(1, True, [TopicPartition("t", 0)]) == (11, {})
    rm.broker_epoch = 100
    assert rm.is_stale_broker_epoch(99)
    assert not rm.is_stale_broker_epoch(-1)
    assert not rm.is_stale_broker_epoch(100)


# ---- protocol server in-process ---------------------------------------------------------------
async def _echo_metadata_server() -> KafkaProtocolServer:
    async def handler(ctx: RequestContext, request: Any) -> Any:
        schema = load_request_schema(18, ctx.api_version)
        del schema
        from kio.index import load_response_schema  # noqa: PLC0415

        resp = load_response_schema(ctx.api_key, ctx.api_version)
        return build(resp, error_code=0, api_keys=(), throttle_time=0)

    server = KafkaProtocolServer("PLAINTEXT", "127.0.0.1", 0, supported=SUPPORTED_VERSIONS, handler=handler)
    await server.start()
    return server


def test_oversized_frame_closes_only_that_connection() -> None:
    async def scenario() -> tuple[bytes | None, int]:
        server = await _echo_metadata_server()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
            writer.write(struct.pack(">i", 104857601))
            await writer.drain()
            closed = await read_frame(reader)
            writer.close()
            client = KafkaClient("127.0.0.1", server.bound_port, "t")
            schema = load_request_schema(18, 3)
            resp = await client.request(
                schema, build(schema, client_software_name="a", client_software_version="1"), 5
            )
            await client.close()
            return closed, int(resp.error_code)
        finally:
            await server.stop()

    assert asyncio.run(scenario()) == (None, 0)


def test_config_port_zero_listener_is_accepted() -> None:
    config = KafkaConfig.from_properties(
        {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/x", "listeners": "PLAINTEXT://127.0.0.1:0"}
    )
    assert config.listeners[0].port == 0
    assert config.advertised_listeners[0].port == 0
