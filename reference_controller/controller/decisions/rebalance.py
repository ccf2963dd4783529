"""Auto leader rebalance decisions (ring: decisions — pure).

`checkAndTriggerAutoLeaderRebalance` (KafkaController.scala@2.5.1 L1042-1074): group partitions by
their preferred replica (`assignment.head`); for broker b,
`ratio = |{p : leader(p) known and ≠ b}| / |{p : preferred(p) = b}|`; if `ratio > pct / 100`
the imbalanced partitions are candidates for a preferred election (subject to the caller's checks).

Worked example: broker 1 prefers p0, p1, p2, p3; leaders are 1, 2, 2, unknown ⇒ ratio 2/4 = 0.5;
with the default 10 % the candidates are p1 and p2.

Of those, `auto_rebalance_candidates` keeps the partitions whose preferred replica is online,
whose topic exists and is not queued for deletion — and none at all while any partition is being
reassigned (Kafka 2.5 checks `partitionsBeingReassigned.isEmpty` per partition).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from kafkawire.states import TopicPartition


def preferred_replicas_by_broker(
    assignments: Mapping[TopicPartition, Sequence[int]],
) -> dict[int, list[TopicPartition]]:
    grouped: dict[int, list[TopicPartition]] = {}
    for tp, replicas in assignments.items():
        if replicas:
            grouped.setdefault(replicas[0], []).append(tp)
    return grouped


def imbalance(
    broker: int, preferred: Sequence[TopicPartition], leaders: Mapping[TopicPartition, int]
) -> tuple[float, list[TopicPartition]]:
    """(imbalance ratio, partitions whose known leader is not `broker`)."""
    not_preferred = [tp for tp in preferred if tp in leaders and leaders[tp] != broker]
    return (len(not_preferred) / len(preferred) if preferred else 0.0), not_preferred


def imbalanced_partitions(
    assignments: Mapping[TopicPartition, Sequence[int]],
    leaders: Mapping[TopicPartition, int],
    percentage: int,
) -> dict[int, list[TopicPartition]]:
    """Per preferred broker whose ratio exceeds `percentage`/100: its imbalanced partitions."""
    result: dict[int, list[TopicPartition]] = {}
    for broker, preferred in sorted(preferred_replicas_by_broker(assignments).items()):
        ratio, not_preferred = imbalance(broker, preferred, leaders)
        if ratio > percentage / 100:
            result[broker] = not_preferred
    return result


def auto_rebalance_candidates(
    imbalanced: Mapping[int, Sequence[TopicPartition]],
    replica_online: Callable[[int, TopicPartition], bool],
    reassigning: bool,
    deleting: Callable[[str], bool],
    topics: Collection[str],
) -> dict[int, list[TopicPartition]]:
    """Per imbalanced broker (in the same order), the partitions to move back to it."""
    return {
        broker: [
            tp
            for tp in not_preferred
            if replica_online(broker, tp)
            and not reassigning
            and not deleting(tp.topic)
            and tp.topic in topics
        ]
        for broker, not_preferred in imbalanced.items()
    }
