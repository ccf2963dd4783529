"""TopicDeletionManager (ring: core).

Mirrors TopicDeletionManager.scala@2.5.1. A topic queued for deletion (`/admin/delete_topics/<t>`)
goes through:
  1. partitions → OfflinePartition → NonExistentPartition (once, `topicsWithDeletionStarted`);
     UpdateMetadata with leader -2 to every broker;
  2. dead replicas → ReplicaDeletionIneligible (topic ineligible: "offline replicas");
     live replicas not yet deleted → OfflineReplica → ReplicaDeletionStarted (StopReplica delete=true);
  3. StopReplica responses: errors → ReplicaDeletionIneligible, success → ReplicaDeletionSuccessful;
  4. all replicas ReplicaDeletionSuccessful → `completeDeleteTopic`: NonExistentReplica, delete
     `/brokers/topics/<t>` (recursively), `/config/topics/<t>`, `/admin/delete_topics/<t>`.
Ineligible topics are retried (Ineligible → OfflineReplica) when nothing is DeletionStarted and
resumed by `resume_deletion_for_topics` (broker startup, reassignment completion).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from kafkawire.states import TopicPartition
from reference_controller.controller.context import ControllerContext, PartitionAndReplica
from reference_controller.controller.decisions import deletion
from reference_controller.controller.decisions.states import PartitionState, ReplicaState
from reference_controller.controller.partition_state_machine import PartitionStateMachine
from reference_controller.controller.replica_state_machine import ReplicaStateMachine

R = ReplicaState


class DeletionClient(Protocol):
    def delete_topic(self, topic: str) -> None: ...
    def delete_topic_deletions(self, topics: list[str]) -> None: ...
    def mute_partition_modifications(self, topic: str) -> None: ...
    def send_metadata_update(self, partitions: list[TopicPartition]) -> None: ...


def _csv(items: Iterable[object]) -> str:
    return ",".join(str(i) for i in items)


class TopicDeletionManager:
    def __init__(  # noqa: PLR0917 - the collaborators, as in Kafka
        self,
        broker_id: int,
        delete_topic_enable: bool,
        context: ControllerContext,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        client: DeletionClient,
    ) -> None:
        self.is_delete_topic_enabled = delete_topic_enable
        self.context = context
        self.rsm = replica_state_machine
        self.psm = partition_state_machine
        self.client = client
        self.log = logging.getLogger("kafka.controller.TopicDeletionManager")
        self.prefix = f"[Topic Deletion Manager {broker_id}] "

    def _info(self, message: str) -> None:
        self.log.info(self.prefix + message)

    def init(self, topics_to_be_deleted: set[str], ineligible: set[str]) -> None:
        self._info(
            f"Initializing manager with initial deletions: {sorted(topics_to_be_deleted)}, "
            f"initial ineligible deletions: {sorted(ineligible)}"
        )
        if self.is_delete_topic_enabled:
            self.context.queue_topic_deletion(topics_to_be_deleted)
            self.context.topics_ineligible_for_deletion |= ineligible & self.context.topics_to_be_deleted
        else:
            self._info(f"Removing {sorted(topics_to_be_deleted)} since delete topic is disabled")
            self.client.delete_topic_deletions(sorted(topics_to_be_deleted))

    def try_topic_deletion(self) -> None:
        if self.is_delete_topic_enabled:
            self.resume_deletions()

    def enqueue_topics_for_deletion(self, topics: set[str]) -> None:
        if self.is_delete_topic_enabled:
            self.context.queue_topic_deletion(topics)
            self.resume_deletions()

    def resume_deletion_for_topics(self, topics: Iterable[str]) -> None:
        if self.is_delete_topic_enabled:
            to_resume = set(topics) & self.context.topics_to_be_deleted
            if to_resume:
                self.context.topics_ineligible_for_deletion -= to_resume
                self.resume_deletions()

    def fail_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        if not self.is_delete_topic_enabled:
            return
        failed = sorted(r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic))
        if failed:
            topics = {r.topic for r in failed}
            self.log.debug(
                "%sDeletion failed for replicas %s. Halting deletion for topics %s",
                self.prefix,
                _csv(failed),
                sorted(topics),
            )
            self.rsm.handle_state_changes(failed, R.ReplicaDeletionIneligible)
            self.mark_topic_ineligible_for_deletion(topics, "replica deletion failure")
            self.resume_deletions()

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str], reason: str) -> None:
        if self.is_delete_topic_enabled:
            halted = self.context.topics_to_be_deleted & set(topics)
            self.context.topics_ineligible_for_deletion |= halted
            if halted:
                self._info(f"Halted deletion of topics {_csv(sorted(halted))} due to {reason}")

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self.is_delete_topic_enabled and self.context.is_topic_queued_up_for_deletion(topic)

    def complete_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        deleted = sorted(r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic))
        self.rsm.handle_state_changes(deleted, R.ReplicaDeletionSuccessful)
        self.resume_deletions()

    # ---- internals ------------------------------------------------------------------------
    def _retry_deletion_for_ineligible_replicas(self, topics: set[str]) -> None:
        failed = [
            r for t in sorted(topics) for r in self.context.replicas_in_state(t, R.ReplicaDeletionIneligible)
        ]
        self.rsm.handle_state_changes(failed, R.OfflineReplica)

    def _complete_delete_topic(self, topic: str) -> None:
        self.client.mute_partition_modifications(topic)
        replicas = self.context.replicas_in_state(topic, R.ReplicaDeletionSuccessful)
        self.rsm.handle_state_changes(replicas, R.NonExistentReplica)
        self.context.topics_to_be_deleted.discard(topic)
        self.context.topics_with_deletion_started.discard(topic)
        self.client.delete_topic(topic)
        self.context.remove_topic(topic)

    def _on_topic_deletion(self, topics: set[str]) -> None:
        unseen = sorted(topics - self.context.topics_with_deletion_started)
        if unseen:
            partitions = [tp for t in unseen for tp in self.context.partitions_for_topic(t)]
            self.psm.handle_state_changes(partitions, PartitionState.OfflinePartition)
            self.psm.handle_state_changes(partitions, PartitionState.NonExistentPartition)
            self.context.begin_topic_deletion(unseen)
        self.client.send_metadata_update(
            [tp for t in sorted(topics) for tp in self.context.partitions_for_topic(t)]
        )
        self._on_partition_deletion(topics)

    def _on_partition_deletion(self, topics: set[str]) -> None:
        ctx = self.context
        dead: list[PartitionAndReplica] = []
        retry: list[PartitionAndReplica] = []
        ineligible: set[str] = set()
        for topic in sorted(topics):
            plan = deletion.replica_deletion_plan(
                ctx.replicas_for_topic(topic),
                lambda r: ctx.is_replica_online(r.replica, r.topic_partition),
                set(ctx.replicas_in_state(topic, R.ReplicaDeletionSuccessful)),
            )
            retry += plan.retry
            dead += plan.dead
            if plan.topic_ineligible:
                ineligible.add(topic)
        self.rsm.handle_state_changes(dead, R.ReplicaDeletionIneligible)
        self.rsm.handle_state_changes(retry, R.OfflineReplica)
        self.rsm.handle_state_changes(retry, R.ReplicaDeletionStarted)
        if ineligible:
            self.mark_topic_ineligible_for_deletion(ineligible, "offline replicas")

    def resume_deletions(self) -> None:
        queued = sorted(self.context.topics_to_be_deleted)
        retry: set[str] = set()
        eligible: set[str] = set()
        if queued:
            self._info(f"Handling deletion for topics {_csv(queued)}")
        for topic in queued:
            step = deletion.deletion_step(
                [self.context.replica_state(r) for r in self.context.replicas_for_topic(topic)],
                topic in self.context.topics_ineligible_for_deletion,
                self.is_delete_topic_enabled,
            )
            if step.complete:
                self._complete_delete_topic(topic)
                self._info(f"Deletion of topic {topic} successfully completed")
            elif step.retry:
                retry.add(topic)
            if step.start:
                self._info(f"Deletion of topic {topic} (re)started")
                eligible.add(topic)
        if retry:
            self._retry_deletion_for_ineligible_replicas(retry)
        if eligible:
            self._on_topic_deletion(eligible)
