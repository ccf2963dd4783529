"""The reference node's replica fetchers (``ReplicaFetcherManager``) against a real TCP leader
that speaks the Kafka protocol: a partition added for a leader is fetched as long as it is
followed, whatever the leader's previous fetcher was doing at that moment.

Found by chaos (admin-api seed 3035, 2026-11-28): a follower whose only partition from leader 3
was deleted was told to follow another partition from leader 3 while its idle fetcher was still
closing its connection. The manager saw that fetcher as running and started none; the fetcher
then ended, the new partition was never fetched, the leader never added the follower to the ISR
and the reassignment that needed it never completed. Kafka's fetcher threads do not end while
the manager still counts them (ReplicaFetcherManager/AbstractFetcherManager@2.5.1: a thread is
removed only by shutdownIdleFetcherThreads, under the manager's lock).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kio.index import load_response_schema

from kafkawire.framing import build, decode_request, encode_response, read_frame
from kafkawire.states import LiveLeader, TopicPartition
from reference_controller.config import KafkaConfig
from reference_controller.node.fetcher import ReplicaFetcherManager
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.wire import KafkaClient

pytestmark = pytest.mark.unit

FETCH = 1


class _Leader:
    """A TCP server answering every Fetch with an empty FetchResponse after ``delay_s``, keeping
    the partitions each fetch asked for."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.fetched: list[set[tuple[str, int]]] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (body := await read_frame(reader)) is not None:
                header, request = decode_request(body)
                assert int(header.request_api_key) == FETCH
                self.fetched.append(
                    {(t.topic, int(p.partition)) for t in request.topics for p in t.partitions}
                )
                await asyncio.sleep(self.delay_s)
                schema = load_response_schema(FETCH, int(header.request_api_version))
                response = build(schema, throttle_time=0, error_code=0, session_id=0, responses=())
                writer.write(encode_response(schema, int(header.correlation_id), response))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def wait_for_fetch_of(self, tp: tuple[str, int], after: int, timeout_s: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while asyncio.get_running_loop().time() < deadline:
            if any(tp in seen for seen in self.fetched[after:]):
                return True
            await asyncio.sleep(0.01)
        return False


def _manager() -> ReplicaFetcherManager:
    config = KafkaConfig.from_properties(
        {
            "broker.id": "2",
            "zookeeper.connect": "127.0.0.1:2181/x",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "replica.fetch.backoff.ms": "50",
        }
    )
    return ReplicaFetcherManager(config, MetadataCache())


def test_a_partition_added_while_the_idle_fetcher_closes_is_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The follower stops following t3-2 (its last partition from leader 3) and, while that
    fetcher is closing its connection, starts following t0-0 from leader 3: t0-0 is fetched."""
    original_close = KafkaClient.close

    async def slow_close(self: Any) -> None:  # widens the closing window the race needs
        await asyncio.sleep(0.3)
        await original_close(self)

    monkeypatch.setattr(KafkaClient, "close", slow_close)  # the class the fetcher connects with

    async def scenario() -> tuple[bool, bool]:
        leader = _Leader(delay_s=0.02)
        port = await leader.start()
        manager = _manager()
        hint = [LiveLeader(3, "127.0.0.1", port)]
        try:
            manager.add_partitions({TopicPartition("t3", 2): (3, 2)}, hint)
            first = await leader.wait_for_fetch_of(("t3", 2), 0, 5.0)
            manager.remove_partitions([TopicPartition("t3", 2)])
            await asyncio.sleep(0.1)  # the fetch in flight has returned: the fetcher is closing
            seen = len(leader.fetched)
            manager.add_partitions({TopicPartition("t0", 0): (3, 1)}, hint)
            second = await leader.wait_for_fetch_of(("t0", 0), seen, 5.0)
            return first, second
        finally:
            await manager.shutdown()
            await leader.stop()

    assert asyncio.run(scenario()) == (True, True)


def test_fetching_follows_every_add_and_remove(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fifty rounds of follow, stop following, follow again at varying moments: every follow is
    fetched, and once nothing is followed no fetch is sent."""

    async def scenario() -> list[int]:
        leader = _Leader(delay_s=0.01)
        port = await leader.start()
        manager = _manager()
        hint = [LiveLeader(3, "127.0.0.1", port)]
        missed: list[int] = []
        try:
            for i in range(50):
                seen = len(leader.fetched)
                manager.add_partitions({TopicPartition("t", i): (3, 0)}, hint)
                if not await leader.wait_for_fetch_of(("t", i), seen, 5.0):
                    missed.append(i)
                manager.remove_partitions([TopicPartition("t", i)])
                await asyncio.sleep((i % 5) * 0.004)
            await asyncio.sleep(0.2)
            quiet_from = len(leader.fetched)
            await asyncio.sleep(0.2)
            assert len(leader.fetched) == quiet_from, "fetches went on with nothing followed"
            return missed
        finally:
            await manager.shutdown()
            await leader.stop()

    assert asyncio.run(scenario()) == []
