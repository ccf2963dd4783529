"""ReplicaManager.makeFollowers while shutting down, and illegal topic names (ring: tests, unit).

A recording fetcher port stands in for the fetcher threads (the thing checked is which fetchers the
replica manager asks for); the log manager is real, on a temp dir; the state-change lines are
captured from the `state.change.logger`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition
from reference_controller.logutil import STATE_CHANGE_LOGGER, TRACE
from reference_controller.node.log_manager import LogManager
from reference_controller.node.metadata_cache import BrokerEndpoints, MetadataCache
from reference_controller.node.replica_manager import ReplicaManager

pytestmark = pytest.mark.unit


class RecordingFetcher:
    def __init__(self) -> None:
        self.fetching: dict[TopicPartition, tuple[int, int]] = {}

    def add_partitions(
        self, partitions: dict[TopicPartition, tuple[int, int]], hints: list[LiveLeader]
    ) -> None:
        self.fetching.update(partitions)

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in list(partitions):
            self.fetching.pop(tp, None)


def state(topic: str, leader: int, epoch: int, partition: int = 0) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(topic, partition, 1, leader, epoch, (leader,), epoch, (1, 0))


@pytest.fixture
def rm(tmp_path: Path) -> tuple[ReplicaManager, RecordingFetcher, Path]:
    lm = LogManager((tmp_path / "data",), 1, 0)
    lm.startup("cluster")
    cache = MetadataCache()
    cache.update(9, [BrokerEndpoints(b, {"PLAINTEXT": ("127.0.0.1", 9000 + b)}) for b in (0, 1)], [])
    fetcher = RecordingFetcher()
    return ReplicaManager(1, lm, cache, fetcher, clock_ms=lambda: 0.0), fetcher, tmp_path


def test_shutting_down_removes_fetchers_adds_none_and_logs_kafkas_trace(
    rm: tuple[ReplicaManager, RecordingFetcher, Path], caplog: pytest.LogCaptureFixture
) -> None:
    manager, fetcher, _ = rm
    caplog.set_level(TRACE, logger=STATE_CHANGE_LOGGER)
    assert manager.become_leader_or_follower(1, 9, 1, [state("f", 0, 0)], []) == (0, {("f", 0): 0})
    assert fetcher.fetching == {("f", 0): (0, 0)}  # a running broker follows
    manager.is_shutting_down = True
    result = manager.become_leader_or_follower(7, 9, 1, [state("f", 0, 1), state("t", 0, 1)], [])
    assert result == (0, {("f", 0): 0, ("t", 0): 0})
    assert fetcher.fetching == {}  # f's fetcher removed, none added for t
    lines = [r.getMessage() for r in caplog.records if r.name == STATE_CHANGE_LOGGER]
    for p in ("f-0", "t-0"):
        assert (
            "[Broker id=1] Skipped the adding-fetcher step of the become-follower state change with "
            f"correlation id 7 from controller 9 epoch 1 for partition {p} with leader 0 since it is "
            "shutting down"
        ) in lines
    assert not [m for m in lines if "Started fetcher" in m and "correlation id 7" in m]


def test_illegal_topic_names_get_17_and_create_nothing(
    rm: tuple[ReplicaManager, RecordingFetcher, Path],
) -> None:
    manager, fetcher, root = rm
    before = sorted(p.name for p in root.rglob("*"))
    names = ["a/b", "../escape", "..", ".", "", "x" * 250]
    errors = manager.become_leader_or_follower(1, 9, 1, [state(n, 1, 0) for n in [*names, "ok"]], [])[1]
    assert errors == {**{(n, 0): 17 for n in names}, ("ok", 0): 0}
    after = sorted(p.name for p in root.rglob("*"))
    assert set(after) - set(before) == {
        "ok-0", "00000000000000000000.log", "00000000000000000000.index",
        "00000000000000000000.timeindex", "leader-epoch-checkpoint",
    }  # fmt: skip
    assert set(manager.partitions) == {("ok", 0)}
    assert fetcher.fetching == {}
