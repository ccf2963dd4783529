"""Follower replica fetchers: Kafka Fetch requests to each leader (ring: drivers, asyncio).

Like ReplicaFetcherManager/ReplicaFetcherThread@2.5.1 with `num.replica.fetchers=1`: one fetcher
per source broker, fetching all partitions this broker follows from it, with the Fetch version
of `inter.broker.protocol.version` (11 at 2.5), `replica.fetch.wait.max.ms`, min bytes 1 and
`replica.fetch.backoff.ms` after an error. The leader's address is its endpoint on THIS broker's
`inter.broker.listener.name` from the metadata cache (UpdateMetadata), else the LeaderAndIsr
LiveLeaders entry. Logs are empty, so every fetch asks for offset 0; the point is that the leader
sees the follower fetch (ISR) and that a cut link stops it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from kio.index import load_request_schema

from kafkawire.framing import FrameError, build
from kafkawire.states import LiveLeader, TopicPartition
from reference_controller.config import InterBrokerProtocolVersion, KafkaConfig
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.wire import KafkaClient, nested

log = logging.getLogger("kafka.server.ReplicaFetcherThread")


def fetch_request_version(ibp: InterBrokerProtocolVersion) -> int:
    """ReplicaFetcherThread.fetchRequestVersion@2.5.1."""
    table = (
        (11, "2.3-IV1"),
        (10, "2.1-IV2"),
        (8, "2.0-IV1"),
        (7, "1.1-IV0"),
        (5, "0.11.0-IV1"),
        (4, "0.11.0-IV0"),
        (3, "0.10.1-IV1"),
        (2, "0.10.0-IV0"),
        (1, "0.9.0"),
    )
    return next((v for v, since in table if ibp.at_least(since)), 0)


class ReplicaFetcherManager:
    def __init__(self, config: KafkaConfig, metadata_cache: MetadataCache) -> None:
        self.config = config
        self.metadata_cache = metadata_cache
        self.version = fetch_request_version(config.inter_broker_protocol_version)
        self.partitions: dict[TopicPartition, tuple[int, int]] = {}
        self.hints: dict[int, LiveLeader] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.fetch_count: dict[int, int] = {}
        self._every_task: set[asyncio.Task[None]] = set()

    # -- FetcherPort ---------------------------------------------------------------------------
    def add_partitions(
        self, partitions: dict[TopicPartition, tuple[int, int]], hints: list[LiveLeader]
    ) -> None:
        self.hints.update({h.broker_id: h for h in hints})
        self.partitions.update(partitions)
        for leader, _ in partitions.values():
            task = self.tasks.get(leader)
            if task is None or task.done():
                task = asyncio.get_running_loop().create_task(
                    self._run(leader), name=f"ReplicaFetcherThread-0-{leader}"
                )
                self.tasks[leader] = task
                self._every_task.add(task)
                task.add_done_callback(self._every_task.discard)

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.partitions.pop(tp, None)

    async def shutdown(self) -> None:
        self.partitions.clear()
        tasks = list(self._every_task)  # also those still closing their connection
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.tasks.clear()

    # -- the fetcher ---------------------------------------------------------------------------
    def _address(self, leader: int) -> tuple[str, int] | None:
        ep = self.metadata_cache.endpoint(leader, self.config.inter_broker_listener_name)
        if ep is not None:
            return ep
        hint = self.hints.get(leader)
        return (hint.host, hint.port) if hint else None

    def _mine(self, leader: int) -> dict[TopicPartition, int]:
        return {tp: epoch for tp, (lid, epoch) in self.partitions.items() if lid == leader}

    async def _run(self, leader: int) -> None:
        backoff_s = self.config.replica_fetch_backoff_ms / 1000
        client: KafkaClient | None = None
        address: tuple[str, int] | None = None
        try:
            while self._mine(leader):
                wanted = self._address(leader)
                if wanted is None:
                    await asyncio.sleep(backoff_s)
                    continue
                if client is None or wanted != address:
                    if client is not None:
                        await client.close()
                    address = wanted
                    client = KafkaClient(wanted[0], wanted[1], f"broker-{self.config.broker_id}-fetcher-0")
                try:
                    await self._fetch_once(client, self._mine(leader))
                    self.fetch_count[leader] = self.fetch_count.get(leader, 0) + 1
                except (OSError, TimeoutError, asyncio.IncompleteReadError, FrameError, ValueError) as exc:
                    log.info(
                        f"[ReplicaFetcher replicaId={self.config.broker_id}, leaderId={leader}, fetcherId=0] "
                        f"Error sending fetch request to node {leader} at {address}: {exc!r}"
                    )
                    await client.close()
                    client = None
                    await asyncio.sleep(backoff_s)
        finally:
            # Leave the manager's table before the first await of the way out: from here on a
            # partition added for this leader starts a new fetcher. (Removed only after closing,
            # a partition added meanwhile found this fetcher "running" and was never fetched.)
            if self.tasks.get(leader) is asyncio.current_task():
                del self.tasks[leader]
            if client is not None:
                await client.close()

    async def _fetch_once(self, client: KafkaClient, partitions: dict[TopicPartition, int]) -> None:
        schema = load_request_schema(1, self.version)
        topic_cls, part_cls = nested(schema, "FetchTopic"), nested(schema, "FetchPartition")
        by_topic: dict[str, list[object]] = {}
        for (topic, p), epoch in sorted(partitions.items()):
            by_topic.setdefault(topic, []).append(
                build(
                    part_cls,
                    partition=p,
                    current_leader_epoch=epoch,
                    fetch_offset=0,
                    log_start_offset=0,
                    partition_max_bytes=1048576,
                )
            )
        request = build(
            schema,
            replica_id=self.config.broker_id,
            max_wait=self.config.replica_fetch_wait_max_ms,
            min_bytes=1,
            max_bytes=10485760,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=tuple(build(topic_cls, topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
            forgotten_topics_data=(),
            rack_id="",
        )
        timeout_s = (self.config.replica_fetch_wait_max_ms + self.config.request_timeout_ms) / 1000
        response = await client.request(schema, request, timeout_s)
        for topic in response.responses:
            for part in topic.partitions:
                if int(part.error_code) != 0:
                    log.debug(
                        f"Error {int(part.error_code)} for partition {topic.topic}-{part.partition_index}"
                    )
