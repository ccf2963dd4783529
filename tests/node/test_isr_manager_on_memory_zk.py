"""A leader's ISR maintenance end to end on the in-memory ZooKeeper and a hand-set clock: the
seam a deterministic simulator drives (ring: unit tests — no server, no sleep).

The real `ReplicaManager` (log manager on a temp dir) makes broker 1 leader of t-0 with ISR
[1, 2]; the clock moves past `replica.lag.time.max.ms` without a fetch from 2, the ISR shrinks
through `NodeZkPort`, and the change is propagated as `/isr_change_notification/isr_change_<seq>`
exactly when Kafka's blackout and interval say so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition
from reference_controller import zkdata
from reference_controller.node.isr import IsrManager, isr_change_propagation_due
from reference_controller.node.log_manager import LogManager
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.zk_port import create_if_absent
from reference_controller.testing.memory_zk import MemoryZkClient, MemoryZooKeeper

pytestmark = pytest.mark.unit
LAG_MS, BLACKOUT_MS, INTERVAL_MS = 10_000, 5_000, 60_000
T0 = TopicPartition("t", 0)


class NoFetcher:
    def add_partitions(
        self, partitions: dict[TopicPartition, tuple[int, int]], hints: list[LiveLeader]
    ) -> None:
        pass

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


def _leader(tmp_path: Path, zk: MemoryZkClient, clock: Clock) -> tuple[ReplicaManager, IsrManager]:
    for path in zkdata.PERSISTENT_PATHS:
        create_if_absent(zk, path, None)
    state = LeaderAndIsrPartitionState("t", 0, 7, 1, 3, (1, 2), 0, (1, 2))
    create_if_absent(zk, zkdata.partition_state_path("t", 0), zkdata.encode_partition_state(
        zkdata.LeaderAndIsr(1, 3, (1, 2), 0), 7))  # fmt: skip
    lm = LogManager((tmp_path / "data",), 1, 0)
    lm.startup("cluster")
    rm = ReplicaManager(1, lm, MetadataCache(), NoFetcher(), clock_ms=clock)
    assert rm.become_leader_or_follower(1, 9, 7, [state], []) == (0, {T0: 0})
    isr = IsrManager(zk, rm, LAG_MS, BLACKOUT_MS, INTERVAL_MS, wall_clock_ms=clock)
    return rm, isr


def _notifications(server: MemoryZooKeeper) -> list[list[TopicPartition]]:
    notified = []
    for name in server.children(zkdata.ISR_CHANGE_NOTIFICATION) or []:
        found = server.get(zkdata.isr_change_path(name))
        assert found is not None
        notified.append(zkdata.decode_isr_change(found[0], name))
    return notified


def test_a_lagging_follower_leaves_the_isr_and_the_change_is_propagated_after_the_blackout(
    tmp_path: Path,
) -> None:
    server, clock = MemoryZooKeeper(), Clock()
    rm, isr = _leader(tmp_path, server.client(), clock)

    async def scenario() -> None:
        partition = rm.partitions[T0]
        clock.ms += LAG_MS  # not yet out of sync: the lag must be exceeded
        await isr.maybe_shrink_isr(partition)
        assert partition.isr == (1, 2)
        clock.ms += 1
        await isr.maybe_shrink_isr(partition)
        assert [*partition.isr, partition.zk_version] == [1, 1]
        found = server.get(zkdata.partition_state_path("t", 0))
        assert found is not None
        assert zkdata.decode_partition_state(found[0], found[1].version, "state") == (
            zkdata.LeaderIsrAndControllerEpoch(zkdata.LeaderAndIsr(1, 3, (1,), 1), 7)
        )
        clock.ms += BLACKOUT_MS  # the change is not older than the blackout yet
        await isr.maybe_propagate_isr_changes()
        assert _notifications(server) == []
        clock.ms += 1
        await isr.maybe_propagate_isr_changes()
        assert _notifications(server) == [[T0]]
        assert isr.isr_change_set == set()

    asyncio.run(scenario())


def test_changes_that_keep_coming_are_propagated_once_per_interval(tmp_path: Path) -> None:
    server, clock = MemoryZooKeeper(), Clock()
    _, isr = _leader(tmp_path, server.client(), clock)

    async def scenario() -> None:
        start = clock.ms
        while clock.ms - start <= INTERVAL_MS:
            isr.record_isr_change(T0)  # a change every second: the blackout never passes
            clock.ms += 1000
            await isr.maybe_propagate_isr_changes()
            assert len(_notifications(server)) == (1 if clock.ms - start > INTERVAL_MS else 0)

    asyncio.run(scenario())


TIMES = st.integers(0, 200_000)


@given(
    st.booleans(), st.tuples(TIMES, TIMES, TIMES), st.tuples(st.integers(0, 10_000), st.integers(0, 100_000))
)
def test_propagation_is_due_as_kafkas_maybe_propagate_isr_changes_says(
    pending: bool, times: tuple[int, int, int], limits: tuple[int, int]
) -> None:
    """A dumb version agrees: Kafka's condition as written in ReplicaManager@2.5.1."""
    now, last_change, last_propagation = times
    blackout, interval = limits
    kafka = pending and (last_change + blackout < now or last_propagation + interval < now)
    assert isr_change_propagation_due(
        pending=pending, now_ms=now, last_change_ms=last_change, last_propagation_ms=last_propagation,
        blackout_ms=blackout, interval_ms=interval,
    ) == kafka  # fmt: skip
