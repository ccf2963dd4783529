"""ISR-change and offline-replica choices (ring: decisions — pure).

1. `isr_after_removal` — `doRemoveReplicasFromIsr` (ReplicaStateMachine.scala@2.5.1) for one
   partition whose replica goes offline: a replica outside the ISR changes nothing; the leader
   leaving makes the partition leaderless (-1); the last ISR member is never removed (KAFKA-5083),
   so the ISR is never empty. Worked example, replica 2 goes offline:

   | before: leader, ISR | after: leader, ISR |
   |---|---|
   | 1, [1, 2, 3] | 1, [1, 3] |
   | 2, [2, 3] | -1, [3] |
   | 2, [2] | -1, [2] |
   | 1, [1, 3] | unchanged (not written) |

2. `isr_change_partitions` — `processIsrChangeNotification`: the partitions of every
   notification, each once, in the order they were first named.
3. `offline_replicas_after_response` — `onLeaderAndIsrResponse`: KAFKA_STORAGE_ERROR marks a
   replica offline, NONE (0) online again; other codes leave it as it was; the newly offline
   ones are handled as replicas going offline.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller.zkdata import NO_LEADER, LeaderAndIsr


def isr_after_removal(current: LeaderAndIsr, replica_id: int) -> LeaderAndIsr | None:
    """The new LeaderAndIsr (leader epoch + 1, same zkVersion), or None when `replica_id` is not
    in the ISR (nothing to write)."""
    if replica_id not in current.isr:
        return None
    leader = NO_LEADER if replica_id == current.leader else current.leader
    isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != replica_id)
    return current.new_leader_and_isr(leader, isr)


def notification_names(children: Iterable[str], prefix: str) -> list[str]:
    """The notification znodes to process, in sequence order (other children are ignored)."""
    return sorted(c for c in children if c.startswith(prefix))


def isr_change_partitions(notifications: Iterable[Iterable[TopicPartition]]) -> list[TopicPartition]:
    return list(dict.fromkeys(tp for partitions in notifications for tp in partitions))


def offline_replicas_after_response(
    previous: Collection[TopicPartition], partition_errors: Iterable[tuple[TopicPartition, int]]
) -> tuple[set[TopicPartition], list[TopicPartition]]:
    """(replicas of the broker on offline dirs now, those newly offline, sorted)."""
    errors = list(partition_errors)
    offline = {tp for tp, code in errors if code == Errors.KAFKA_STORAGE_ERROR}
    online = {tp for tp, code in errors if code == 0}
    current = (set(previous) - online) | offline
    return current, sorted(current - set(previous))
