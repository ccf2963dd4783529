"""The reassignment an acknowledged cancellation reverted, read from the topic znode's writes
(decisions ring, pure; shared by :mod:`chaos.checkers.admin_api` and the quirk registry).

Kafka 2.5.1 cancels by reassigning to ``ORS = RS − adding`` in RS order (``maybeBuildReassignment``,
KafkaController.scala@2.5.1 L1617-1628; ``ReplicaAssignment.originReplicas``,
ControllerContext.scala@2.5.1 L44): the original replicas as a set, not necessarily in their
original order (spec §13.1.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chaos.checkers.timeline import Timeline, TopicWritten
from chaos.history import OpPair
from probes.znode_types import TopicPartition, TopicZNode

__all__ = ["Cancelled", "acked_partitions", "cancelled_reassignment"]


@dataclass(frozen=True)
class Cancelled:
    """The reassignment a cancellation reverted, from the topic znode's writes: ``original``, the
    replicas before it started; ``kafka_original``, ``RS − adding`` in RS order of its last state
    (what 2.5.1 writes back, §13.1.6)."""

    original: tuple[int, ...]
    kafka_original: tuple[int, ...]
    last: TopicWritten


def _mid(znode: TopicZNode | None, p: int) -> bool:
    return znode is not None and bool(znode.adding_replicas.get(p) or znode.removing_replicas.get(p))


def cancelled_reassignment(timeline: Timeline, tp: TopicPartition, incarnation: int) -> Cancelled | None:
    """The last reassignment of ``tp`` the topic znode shows in that incarnation (None: none)."""
    writes = [
        e
        for e in timeline.of_type(TopicWritten)
        if e.topic == tp.topic and e.incarnation == incarnation and e.znode is not None
    ]
    last = next((i for i in range(len(writes) - 1, -1, -1) if _mid(writes[i].znode, tp.partition)), None)
    if last is None:
        return None
    first = last
    while first > 0 and _mid(writes[first - 1].znode, tp.partition):
        first -= 1
    before = writes[first - 1].znode if first > 0 else None
    state = writes[last].znode
    assert state is not None
    if before is None or tp.partition not in before.partitions:
        return None
    rs, adding = state.partitions.get(tp.partition, ()), state.adding_replicas.get(tp.partition, ())
    return Cancelled(before.partitions[tp.partition], tuple(r for r in rs if r not in adding), writes[last])


def acked_partitions(q: OpPair) -> list[TopicPartition]:
    value = q.completion.value if q.completion is not None else {}
    return [
        TopicPartition(str(r["topic"]), int(r["partition"]))
        for r in value.get("results") or ()
        if isinstance(r, Mapping) and r.get("error_code") == 0
    ]
