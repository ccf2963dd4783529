"""onControllerFailover / onControllerResignation (ring: core).

The exact order of KafkaController.scala@2.5.1 L217-269 (spec §2.2):
  1. register the child handlers; 2. register the node handlers with an existence check;
  3. delete `/log_dir_event_notification` children; 4. delete `/isr_change_notification` children;
  5. initializeControllerContext (brokers + epochs, topics, partition-modification handlers,
     assignments, broker-modification handlers, leader/ISR cache, channel startup);
  6. fetchTopicDeletionsInProgress; 7. topicDeletionManager.init;
  8. UpdateMetadata (broker list only) to every live broker;
  9. replica state machine startup; 10. partition state machine startup;
  11. "Ready to serve as the new controller with epoch E";
  12. initializePartitionReassignments; 13. tryTopicDeletion;
  14. pending preferred elections (deletes the znode afterwards);
  15. auto-rebalance timer, first check 5 s later.
"""

from __future__ import annotations

from reference_controller import zkdata as zd
from reference_controller.controller import leader_elections
from reference_controller.controller import reassignment as reassign
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import (
    BROKER_CHANGE_HANDLER,
    CHILD_HANDLERS,
    ISR_CHANGE_NOTIFICATION_HANDLER,
    LOG_DIR_EVENT_NOTIFICATION_HANDLER,
    PARTITION_REASSIGNMENT_HANDLER,
    PREFERRED_REPLICA_ELECTION_HANDLER,
    TOPIC_CHANGE_HANDLER,
    TOPIC_DELETION_HANDLER,
    csv,
    live_or_shutting_down,
    register_broker_modifications_handlers,
    register_partition_modifications_handlers,
    send_update_metadata_request,
    update_leader_and_isr_cache,
)
from reference_controller.controller.decisions import deletion
from reference_controller.controller.effects import (
    AddBroker,
    BecameController,
    CancelScheduled,
    Resigned,
    ScheduleEvent,
)
from reference_controller.controller.events import (
    AutoPreferredReplicaLeaderElection,
    ElectionTrigger,
    ElectionType,
)
from reference_controller.controller.handler_ports import FailoverPort

AUTO_REBALANCE_TASK = "auto-leader-rebalance-task"
FIRST_AUTO_REBALANCE_DELAY_MS = 5000


def on_controller_failover(ctl: FailoverPort) -> None:
    ctx = ctl.context
    ctl.context.controllership.failover_started = True
    ctl.emit([BecameController(ctx.epoch, ctx.epoch_zk_version)])
    ctl.log.info("Registering handlers")
    for child_handler in CHILD_HANDLERS:
        ctl.register_child_handler(child_handler)
    for node_handler in (PREFERRED_REPLICA_ELECTION_HANDLER, PARTITION_REASSIGNMENT_HANDLER):
        ctl.register_node_handler(node_handler, check_exists=True)
    ctl.log.info("Deleting log dir event notifications")
    _delete_all_children(ctl, zd.LOG_DIR_EVENT_NOTIFICATION)
    ctl.log.info("Deleting isr change notifications")
    _delete_all_children(ctl, zd.ISR_CHANGE_NOTIFICATION)
    ctl.log.info("Initializing controller context")
    initialize_controller_context(ctl)
    ctl.log.info("Fetching topic deletions in progress")
    to_delete, ineligible = fetch_topic_deletions_in_progress(ctl)
    ctl.log.info("Initializing topic deletion manager")
    ctl.topic_deletion_manager.init(to_delete, ineligible)
    ctl.log.info("Sending update metadata request")
    send_update_metadata_request(ctl, live_or_shutting_down(ctl), [])
    ctl.replica_state_machine.startup()
    ctl.partition_state_machine.startup()
    ctl.log.info("Ready to serve as the new controller with epoch %d", ctx.epoch)
    reassign.initialize_partition_reassignments(ctl)
    ctl.topic_deletion_manager.try_topic_deletion()
    pending = leader_elections.fetch_pending_preferred_replica_elections(ctl)
    leader_elections.on_replica_election(ctl, pending, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED)
    ctl.log.info("Starting the controller scheduler")
    if ctl.config.auto_leader_rebalance_enable:
        ctl.emit(
            [
                ScheduleEvent(
                    AUTO_REBALANCE_TASK, FIRST_AUTO_REBALANCE_DELAY_MS, AutoPreferredReplicaLeaderElection()
                )
            ]
        )


def _delete_all_children(ctl: FailoverPort, parent: str) -> None:
    """`deleteLogDirEventNotifications` / `deleteIsrChangeNotifications` (getChildren arms the watch)."""
    children = zkc.get_sorted_children(ctl.zk, parent)
    zkc.delete_paths(ctl.zk, [f"{parent}/{c}" for c in children], ctl.context.epoch_zk_version)


def initialize_controller_context(ctl: FailoverPort) -> None:
    ctx = ctl.context
    ctx.set_live_broker_and_epochs(zkc.get_all_broker_and_epochs(ctl.zk))
    ctl.log.info("Initialized broker epochs cache: %s", dict(sorted(ctx.live_broker_epochs.items())))
    ctx.all_topics = zkc.get_all_topics(ctl.zk)
    register_partition_modifications_handlers(ctl, sorted(ctx.all_topics))
    for tp, assignment in zkc.get_full_replica_assignment_for_topics(ctl.zk, ctx.all_topics).items():
        ctx.update_partition_full_replica_assignment(tp, assignment)
        if assignment.is_being_reassigned:
            ctx.partitions_being_reassigned.add(tp)
    ctx.partition_leadership_info.clear()
    ctx.shutting_down_broker_ids = set()
    register_broker_modifications_handlers(ctl, ctx.live_or_shutting_down_broker_ids)
    update_leader_and_isr_cache(ctl)
    ctl.emit([AddBroker(info) for info in ctx.live_or_shutting_down_brokers()])
    ctl.log.info("Currently active brokers in the cluster: %s", sorted(ctx.live_broker_ids))
    ctl.log.info("Currently shutting brokers in the cluster: %s", sorted(ctx.shutting_down_broker_ids))
    ctl.log.info("Current list of topics in the cluster: %s", sorted(ctx.all_topics))


def fetch_topic_deletions_in_progress(ctl: FailoverPort) -> tuple[set[str], set[str]]:
    ctx = ctl.context
    to_delete = set(zkc.get_topic_deletions(ctl.zk))
    with_offline = (
        topic
        for topic in ctx.all_topics
        if any(not ctx.is_replica_online(r.replica, r.topic_partition) for r in ctx.replicas_for_topic(topic))
    )
    ineligible = deletion.ineligible_at_failover(with_offline, ctx.partitions_being_reassigned)
    ctl.log.info("List of topics to be deleted: %s", csv(sorted(to_delete)))
    ctl.log.info("List of topics ineligible for deletion: %s", csv(sorted(ineligible)))
    return to_delete, ineligible


def on_controller_resignation(ctl: FailoverPort) -> None:
    """Drop every controller handler, stop timers and channels, reset the context."""
    ctl.log.debug("Resigning")
    ctx = ctl.context
    for handler in (ISR_CHANGE_NOTIFICATION_HANDLER, LOG_DIR_EVENT_NOTIFICATION_HANDLER):
        ctl.unregister_child_handler(handler.path)
    ctl.unregister_node_handler(PARTITION_REASSIGNMENT_HANDLER.path)
    ctl.unregister_node_handler(PREFERRED_REPLICA_ELECTION_HANDLER.path)
    for path in [p for p in ctl.node_handlers if p != zd.CONTROLLER]:
        ctl.unregister_node_handler(path)  # broker/partition modifications, reassignment ISR handlers
    for handler in (TOPIC_CHANGE_HANDLER, TOPIC_DELETION_HANDLER, BROKER_CHANGE_HANDLER):
        ctl.unregister_child_handler(handler.path)
    ctl.replica_state_machine.shutdown()
    ctl.partition_state_machine.shutdown()
    ctl.batch.clear()
    ctx.reset_context()
    if ctl.context.controllership.failover_started:
        ctl.context.controllership.failover_started = False
        ctl.emit([CancelScheduled(None), Resigned()])
    ctl.log.info("Resigned")
