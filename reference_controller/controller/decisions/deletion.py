"""Topic deletion choices (ring: decisions — pure).

What `TopicDeletionManager` and the deletion handlers of KafkaController.scala@2.5.1 decide, apart
from doing it:

1. `topic_deletion_requests` — `processTopicDeletion`: markers of topics that do not exist are
   deleted; a topic with a partition being reassigned is queued but ineligible.
2. `deletion_step` — one queued topic in `resumeDeletions`:

   | replica states of the topic | marked ineligible | step |
   |---|---|---|
   | all ReplicaDeletionSuccessful (or none left) | any | complete (`completeDeleteTopic`) |
   | none DeletionStarted, some DeletionIneligible | no | retry those, and (re)start |
   | none DeletionStarted, some DeletionIneligible | yes | retry those |
   | some DeletionStarted | any | wait for the StopReplica responses |
   | otherwise | no | (re)start (`onTopicDeletion`) |

   With `delete.topic.enable=false` nothing is ever (re)started.
3. `replica_deletion_plan` — `onPartitionDeletion` for one topic: replicas on dead brokers become
   ReplicaDeletionIneligible (and the topic ineligible); live ones not yet deleted are (re)sent
   StopReplica(delete=true).
4. `stop_replica_deletion_outcome` — `processTopicDeletionStopReplicaResponseReceived`: a request
   error fails every partition of the response, otherwise each partition's own code decides.
5. `ineligible_at_failover` — `fetchTopicDeletionsInProgress`: topics with a replica offline or a
   partition being reassigned.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kafkawire.states import TopicPartition
from reference_controller.controller.decisions.states import ReplicaState

Replica = TypeVar("Replica")


@dataclass(frozen=True)
class TopicDeletionRequests:
    non_existent: tuple[str, ...]  # sorted: their markers are deleted, nothing else
    to_delete: frozenset[str]  # every requested topic that exists
    reassigning: tuple[str, ...]  # sorted: of `to_delete`, those marked ineligible at once


def topic_deletion_requests(
    requested: Collection[str], all_topics: Collection[str], reassigning_partitions: Iterable[TopicPartition]
) -> TopicDeletionRequests:
    reassigning = {tp.topic for tp in reassigning_partitions}
    to_delete = frozenset(t for t in requested if t in all_topics)
    return TopicDeletionRequests(
        non_existent=tuple(sorted(t for t in set(requested) if t not in all_topics)),
        to_delete=to_delete,
        reassigning=tuple(sorted(to_delete & reassigning)),
    )


@dataclass(frozen=True)
class DeletionStep:
    complete: bool  # every replica deleted: `completeDeleteTopic`
    retry: bool  # nothing in flight but ineligible replicas: move them back to OfflineReplica
    start: bool  # eligible: (re)start the deletion (`onTopicDeletion`)


def deletion_step(states: Collection[ReplicaState], marked_ineligible: bool, enabled: bool) -> DeletionStep:
    """`resumeDeletions` for one queued topic, from the states of all its replicas (see the table)."""
    complete = all(s is ReplicaState.ReplicaDeletionSuccessful for s in states)
    started = any(s is ReplicaState.ReplicaDeletionStarted for s in states)
    ineligible_replica = any(s is ReplicaState.ReplicaDeletionIneligible for s in states)
    return DeletionStep(
        complete=complete,
        retry=not complete and not started and ineligible_replica,
        start=not complete and enabled and not started and not marked_ineligible,
    )


@dataclass(frozen=True)
class ReplicaDeletionPlan(Generic[Replica]):
    dead: tuple[Replica, ...]  # on dead brokers (or offline dirs): ReplicaDeletionIneligible
    retry: tuple[Replica, ...]  # live and not yet deleted: OfflineReplica, then ReplicaDeletionStarted

    @property
    def topic_ineligible(self) -> bool:
        return bool(self.dead)


def replica_deletion_plan(
    replicas: Sequence[Replica], online: Callable[[Replica], bool], deleted: Collection[Replica]
) -> ReplicaDeletionPlan[Replica]:
    """`onPartitionDeletion` for one topic's replicas, in their order."""
    dead = tuple(r for r in replicas if not online(r))
    return ReplicaDeletionPlan(dead, tuple(r for r in replicas if r not in dead and r not in deleted))


def stop_replica_deletion_outcome(
    partition_errors: Mapping[TopicPartition, int], request_error: int
) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """(failed, deleted), each sorted: a request error fails them all."""
    if request_error != 0:
        return sorted(partition_errors), []
    failed = sorted(tp for tp, code in partition_errors.items() if code != 0)
    return failed, sorted(tp for tp, code in partition_errors.items() if code == 0)


def ineligible_at_failover(
    topics_with_offline_replicas: Iterable[str], reassigning_partitions: Iterable[TopicPartition]
) -> set[str]:
    return set(topics_with_offline_replicas) | {tp.topic for tp in reassigning_partitions}
