"""Topic creation, partition expansion and topic deletion events (ring: core).

KafkaController.scala@2.5.1: `processTopicChange`, `onNewPartitionCreation` (NewPartition,
NewReplica, OnlinePartition — which creates `partitions`, `partitions/<p>`, `state` — then
OnlineReplica), `processPartitionModifications` (restores the znode of a topic being deleted),
`processTopicDeletion`, `processTopicDeletionStopReplicaResponseReceived`, and the deletion
client the TopicDeletionManager writes through (spec §5.2, §6.9).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import (
    csv,
    live_or_shutting_down,
    register_partition_modifications_handlers,
    send_update_metadata_request,
    tps,
    unregister_partition_modifications_handlers,
)
from reference_controller.controller.context import replica_of
from reference_controller.controller.decisions import deletion
from reference_controller.controller.decisions import elections as el
from reference_controller.controller.decisions.states import PartitionState, ReplicaState
from reference_controller.controller.events import TopicDeletionStopReplicaResponseReceived
from reference_controller.controller.handler_ports import DeletionClientPort, TopicPort
from reference_controller.zkdata import ReplicaAssignment


def process_topic_change(ctl: TopicPort) -> None:
    if not ctl.is_active:
        return
    ctx = ctl.context
    current = zkc.get_all_topics(ctl.zk)
    new_topics = current - ctx.all_topics
    deleted_topics = ctx.all_topics - current
    ctx.all_topics = set(current)
    register_partition_modifications_handlers(ctl, sorted(new_topics))
    added = zkc.get_full_replica_assignment_for_topics(ctl.zk, new_topics)
    for topic in sorted(deleted_topics):
        ctx.remove_topic(topic)
        ctx.all_topics.discard(topic)
    for tp, assignment in added.items():
        ctx.update_partition_full_replica_assignment(tp, assignment)
    ctl.log.info(
        "New topics: [%s], deleted topics: [%s], new partition replica assignment [%s]",
        sorted(new_topics),
        sorted(deleted_topics),
        {f"{t}-{p}": a for (t, p), a in added.items()},
    )
    if added:
        on_new_partition_creation(ctl, list(added))


def on_new_partition_creation(ctl: TopicPort, partitions: Sequence[TopicPartition]) -> None:
    ctl.log.info("New partition creation callback for %s", tps(partitions))
    psm, rsm = ctl.partition_state_machine, ctl.replica_state_machine
    replicas = ctl.context.replicas_for_partition(partitions)
    psm.handle_state_changes(partitions, PartitionState.NewPartition)
    rsm.handle_state_changes(replicas, ReplicaState.NewReplica)
    psm.handle_state_changes(
        partitions,
        PartitionState.OnlinePartition,
        el.OfflinePartitionLeaderElectionStrategy(allow_unclean=False),
    )
    rsm.handle_state_changes(replicas, ReplicaState.OnlineReplica)


def process_partition_modifications(ctl: TopicPort, topic: str) -> None:
    if not ctl.is_active:
        return
    ctx = ctl.context
    assignment = zkc.get_full_replica_assignment_for_topics(ctl.zk, {topic})
    to_add = {tp: a for tp, a in assignment.items() if not ctx.partition_replica_assignment(tp)}
    if ctl.topic_deletion_manager.is_topic_queued_up_for_deletion(topic):
        if to_add:
            ctl.log.warning(
                "Skipping adding partitions %s for topic %s since it is currently being deleted",
                csv(p for _, p in to_add),
                topic,
            )
            _restore_partition_replica_assignment(ctl, topic, assignment)
        else:
            ctl.log.info("Ignoring partition change during topic deletion as no new partitions are added")
    elif to_add:
        ctl.log.info("New partitions to be added %s", {f"{t}-{p}": a for (t, p), a in to_add.items()})
        for tp, replica_assignment in to_add.items():
            ctx.update_partition_full_replica_assignment(tp, replica_assignment)
        on_new_partition_creation(ctl, list(to_add))


def _restore_partition_replica_assignment(
    ctl: TopicPort, topic: str, assignment: Mapping[TopicPartition, ReplicaAssignment]
) -> None:
    ctl.log.info("Restoring the partition replica assignment for topic %s", topic)
    existing = set(ctl.zk.get_children(zd.topic_partitions_path(topic)) or [])
    restored = {
        tp.partition: ctl.context.partition_full_replica_assignment(tp)
        for tp in assignment
        if str(tp.partition) in existing
    }
    result = zkc.set_topic_assignment_raw(ctl.zk, topic, restored, ctl.context.epoch_zk_version)
    if not result.ok:
        raise zkc.ZkOperationError(zd.topic_path(topic), result.code)


def process_topic_deletion(ctl: TopicPort) -> None:
    if not ctl.is_active:
        return
    ctx = ctl.context
    requested = set(zkc.get_topic_deletions(ctl.zk))
    ctl.log.debug("Delete topics listener fired for topics %s to be deleted", csv(sorted(requested)))
    requests = deletion.topic_deletion_requests(requested, ctx.all_topics, ctx.partitions_being_reassigned)
    if requests.non_existent:
        ctl.log.warning("Ignoring request to delete non-existing topics %s", csv(requests.non_existent))
        _delete_topic_deletions(ctl, requests.non_existent)
    to_delete = set(requests.to_delete)
    if ctl.config.delete_topic_enable:
        if to_delete:
            ctl.log.info("Starting topic deletion for topics %s", csv(sorted(to_delete)))
            for topic in requests.reassigning:
                ctl.topic_deletion_manager.mark_topic_ineligible_for_deletion(
                    {topic}, "topic reassignment in progress"
                )
            ctl.topic_deletion_manager.enqueue_topics_for_deletion(to_delete)
    else:
        ctl.log.info("Removing %s since delete topic is disabled", sorted(to_delete))
        _delete_topic_deletions(ctl, sorted(to_delete))


def _delete_topic_deletions(ctl: DeletionClientPort, topics: Sequence[str]) -> None:
    zkc.delete_paths(ctl.zk, [zd.delete_topic_path(t) for t in topics], ctl.context.epoch_zk_version)


def process_topic_deletion_stop_replica_response(
    ctl: TopicPort, event: TopicDeletionStopReplicaResponseReceived
) -> None:
    if not ctl.is_active:
        return
    # The channel manager only reports partitions of topics whose deletion is in progress.
    errors = {
        tp: code for tp, code in event.partition_errors if ctl.context.is_topic_deletion_in_progress(tp[0])
    }
    if not errors:
        return
    ctl.log.debug(
        "Delete topic callback invoked on StopReplica response received from broker %d: request error = %d, "
        "partition errors = %s",
        event.broker_id,
        event.error_code,
        errors,
    )
    failed, deleted = deletion.stop_replica_deletion_outcome(errors, event.error_code)
    tdm = ctl.topic_deletion_manager
    tdm.fail_replica_deletion([replica_of(tp, event.broker_id) for tp in failed])
    if deleted:
        tdm.complete_replica_deletion([replica_of(tp, event.broker_id) for tp in deleted])


class ControllerDeletionClient:
    """Kafka's `ControllerDeletionClient`: the writes and requests of topic deletion."""

    def __init__(self, ctl: DeletionClientPort) -> None:
        self.ctl = ctl

    def delete_topic(self, topic: str) -> None:
        ezv = self.ctl.context.epoch_zk_version
        zkc.delete_recursive(self.ctl.zk, zd.topic_path(topic), ezv)
        zkc.delete_paths(self.ctl.zk, [zd.config_topic_path(topic)], ezv)
        zkc.delete_paths(self.ctl.zk, [zd.delete_topic_path(topic)], ezv)

    def delete_topic_deletions(self, topics: list[str]) -> None:
        _delete_topic_deletions(self.ctl, topics)

    def mute_partition_modifications(self, topic: str) -> None:
        unregister_partition_modifications_handlers(self.ctl, [topic])

    def send_metadata_update(self, partitions: list[TopicPartition]) -> None:
        send_update_metadata_request(self.ctl, live_or_shutting_down(self.ctl), partitions)
