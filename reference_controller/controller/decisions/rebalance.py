"""Auto leader rebalance decisions (ring: decisions — pure).

`checkAndTriggerAutoLeaderRebalance` (KafkaController.scala@2.5.1 L1042-1074): group partitions by
their preferred replica (`assignment.head`); for broker b,
`ratio = |{p : leader(p) known and ≠ b}| / |{p : preferred(p) = b}|`; if `ratio > pct / 100`
the imbalanced partitions are candidates for a preferred election (subject to the caller's checks).

Worked example: broker 1 prefers p0, p1, p2, p3; leaders are 1, 2, 2, unknown ⇒ ratio 2/4 = 0.5;
with the default 10 % the candidates are p1 and p2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
