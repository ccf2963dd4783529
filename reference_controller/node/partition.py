"""Partition state held by a broker and the normalised controller requests (ring: drivers, pure data).

`LeaderAndIsr`/`StopReplica` arrive in five and three wire versions; they are normalised here into
version-free records so `ReplicaManager` is written once. `Partition` mirrors the fields of
Kafka's `kafka.cluster.Partition` that the controller can observe: leader epoch, zkVersion, the
controller epoch of the LeaderAndIsr that made this broker leader, assignment, ISR, and on the
leader each follower's fetch state (`Replica.lastCaughtUpTimeMs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition


def leader_and_isr_states(request: Any) -> list[LeaderAndIsrPartitionState]:
    """Partition states of a LeaderAndIsr request of any version 0-4 (grouped by topic from v2)."""
    if hasattr(request, "topic_states"):
        raw = [(t.topic_name, p) for t in request.topic_states for p in t.partition_states]
    else:
        raw = [(p.topic_name, p) for p in request.ungrouped_partition_states]
    return [
        LeaderAndIsrPartitionState(
            topic=str(topic),
            partition=int(p.partition_index),
            controller_epoch=int(p.controller_epoch),
            leader=int(p.leader),
            leader_epoch=int(p.leader_epoch),
            isr=tuple(int(r) for r in p.isr),
            zk_version=int(p.partition_epoch),
            replicas=tuple(int(r) for r in p.replicas),
            adding_replicas=tuple(int(r) for r in getattr(p, "adding_replicas", ()) or ()),
            removing_replicas=tuple(int(r) for r in getattr(p, "removing_replicas", ()) or ()),
            is_new=bool(getattr(p, "is_new", False)),
        )
        for topic, p in raw
    ]


def live_leaders(request: Any) -> list[LiveLeader]:
    return [LiveLeader(int(b.broker_id), str(b.host_name), int(b.port)) for b in request.live_leaders]


def stop_replica_partitions(request: Any) -> list[TopicPartition]:
    """Partitions of a StopReplica request of any version 0-2 (grouped by topic from v1)."""
    if hasattr(request, "topics"):
        return [TopicPartition(str(t.name), int(p)) for t in request.topics for p in t.partition_indexes]
    return [TopicPartition(str(p.topic_name), int(p.partition_index)) for p in request.ungrouped_partitions]


@dataclass
class FollowerState:
    """Kafka's remote `Replica` on the leader (times in ms, monotonic clock)."""

    broker_id: int
    last_caught_up_time_ms: float = 0.0
    last_fetch_time_ms: float = 0.0
    log_end_offset: int = -1


@dataclass
class Partition:
    tp: TopicPartition
    local_broker_id: int
    leader: int = -1
    leader_epoch: int = -1
    zk_version: int = 0
    controller_epoch: int = 0
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    followers: dict[int, FollowerState] = field(default_factory=dict)

    @property
    def is_leader(self) -> bool:
        return self.leader == self.local_broker_id
