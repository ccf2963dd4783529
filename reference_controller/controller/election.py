"""Controller election, resignation and session events (ring: core).

KafkaController.scala@2.5.1: `processStartup`, `elect`, `maybeResign`, `triggerControllerMove`,
`processReelect`, `processExpire` (L1229-1359, L1789-1806), plus `ZkReconnected`, which is not
Kafka: kazoo drops server-side watches on a reconnect, so every registered path is re-read
(re-arming its watch) and the events its handler would have been told of are returned to the core
(`events_to_rerun_after_reconnect`), which dispatches them like any other event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import failover
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import (
    CONTROLLER_CHANGE_HANDLER,
    PARTITION_REASSIGNMENT_HANDLER,
    PREFERRED_REPLICA_ELECTION_HANDLER,
    TOPIC_DELETION_HANDLER,
)
from reference_controller.controller.events import (
    BrokerChange,
    BrokerModifications,
    ControllerChange,
    ControllerEvent,
    ElectionTrigger,
    ElectionType,
    IsrChangeNotification,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    Reelect,
    ReplicaLeaderElection,
    TopicChange,
    TopicDeletion,
    ZkPartitionReassignment,
)
from reference_controller.controller.handler_ports import ElectionPort
from reference_controller.controller.ports import ControllerMovedError, NodeHandler


def process_startup(ctl: ElectionPort) -> None:
    ctl.register_node_handler(CONTROLLER_CHANGE_HANDLER, check_exists=True)
    elect(ctl)


def elect(ctl: ElectionPort) -> None:
    """`elect()`: return if a controller exists; else the election multi, then failover."""
    ctl.context.controllership.active_controller_id = zkc.get_controller_id(ctl.zk)
    if ctl.context.controllership.active_controller_id != -1:
        ctl.log.debug(
            "Broker %d has been elected as the controller, so stopping the election process.",
            ctl.context.controllership.active_controller_id,
        )
        return
    try:
        epoch, epoch_zk_version = zkc.register_controller_and_increment_controller_epoch(
            ctl.zk, ctl.broker_id, ctl.clock.now_ms()
        )
        ctl.context.epoch = epoch
        ctl.context.epoch_zk_version = epoch_zk_version
        ctl.context.controllership.active_controller_id = ctl.broker_id
        ctl.log.info(
            "%d successfully elected as the controller. Epoch incremented to %d and epoch zk "
            "version is now %d",
            ctl.broker_id,
            epoch,
            epoch_zk_version,
        )
        failover.on_controller_failover(ctl)
    except ControllerMovedError:
        maybe_resign(ctl)
        if ctl.context.controllership.active_controller_id != -1:
            ctl.log.debug(
                "Broker %d was elected as controller instead of broker %d",
                ctl.context.controllership.active_controller_id,
                ctl.broker_id,
            )
        else:
            ctl.log.warning(
                "A controller has been elected but just resigned, this will result in another "
                "round of election"
            )
    except Exception:
        ctl.log.exception(
            "Error while electing or becoming controller on broker %d. Trigger controller "
            "movement immediately",
            ctl.broker_id,
        )
        trigger_controller_move(ctl)


def maybe_resign(ctl: ElectionPort) -> None:
    """Re-arm the `/controller` watch, re-read the id, resign iff we were active and no longer are."""
    was_active = ctl.is_active
    ctl.register_node_handler(CONTROLLER_CHANGE_HANDLER, check_exists=True)
    ctl.context.controllership.active_controller_id = zkc.get_controller_id(ctl.zk)
    if was_active and not ctl.is_active:
        failover.on_controller_resignation(ctl)


def trigger_controller_move(ctl: ElectionPort) -> None:
    ctl.context.controllership.active_controller_id = zkc.get_controller_id(ctl.zk)
    if not ctl.is_active:
        ctl.log.warning("Controller has already moved when trying to trigger controller movement")
        return
    try:
        expected = ctl.context.epoch_zk_version
        ctl.context.controllership.active_controller_id = -1
        failover.on_controller_resignation(ctl)
        zkc.delete_controller(ctl.zk, expected)
    except ControllerMovedError:
        ctl.log.warning("Controller has already moved when trying to trigger controller movement")


def process_reelect(ctl: ElectionPort) -> None:
    maybe_resign(ctl)
    elect(ctl)


def process_expire(ctl: ElectionPort) -> None:
    ctl.context.controllership.active_controller_id = -1
    failover.on_controller_resignation(ctl)


def process_shutdown(ctl: ElectionPort) -> None:
    """Node shutdown (`KafkaController.shutdown`): resign; the session close removes `/controller`."""
    ctl.context.controllership.active_controller_id = -1
    failover.on_controller_resignation(ctl)


@dataclass(frozen=True)
class ReconnectSnapshot:
    """What the reconnect reads before any event re-runs (so that one re-run cannot change the
    set of the later ones): the brokers, topics and reassignments watched at the reconnect, and
    whether each creation-only znode existed at its last check."""

    broker_ids: tuple[int, ...]
    topics: tuple[str, ...]
    partitions_being_reassigned: tuple[TopicPartition, ...]
    reassign_existed: bool
    preferred_existed: bool


def reconnect_snapshot(ctl: ElectionPort) -> ReconnectSnapshot:
    topics = tuple(
        path.rsplit("/", 1)[1]
        for path in sorted(ctl.node_handlers)
        if path.startswith(zd.BROKER_TOPICS + "/") and path.count("/") == 3
    )
    return ReconnectSnapshot(
        broker_ids=tuple(sorted(ctl.context.live_or_shutting_down_broker_ids)),
        topics=topics,
        partitions_being_reassigned=tuple(sorted(ctl.context.partitions_being_reassigned)),
        reassign_existed=ctl.existed_at_last_check.get(zd.REASSIGN_PARTITIONS, False),
        preferred_existed=ctl.existed_at_last_check.get(zd.PREFERRED_REPLICA_ELECTION, False),
    )


Reruns = Iterator[ControllerEvent]
ReconnectStep = Callable[[ElectionPort, ReconnectSnapshot], Reruns]


def _rerun_broker_change(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    yield BrokerChange()


def _rerun_broker_modifications(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    for broker_id in snap.broker_ids:
        yield BrokerModifications(broker_id)


def _rerun_topic_change(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    yield TopicChange()


def _rerun_partition_modifications(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    for topic in snap.topics:
        yield PartitionModifications(topic)


def _rerun_topic_deletion(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    """TopicDeletion fires on a child change: re-run it only if the children differ from the queue
    (the controller deletes a marker only when it also dequeues the topic).

    Java's client restores the watch on a reconnect and the server fires it at once when the
    children changed: one event, and no watch until that event's own read re-arms it, so a
    request created between the reconnect and that read adds no second event (a second
    ``processTopicDeletion`` is not harmless: it halts a queued topic with a partition being
    reassigned). So the comparison reads the children without arming the watch; only when
    nothing changed is the watch armed here, as Java's restored watch stays armed."""

    def changed() -> bool:
        ctl.unregister_child_handler(TOPIC_DELETION_HANDLER.path)
        try:
            return set(zkc.get_topic_deletions(ctl.zk)) != ctl.context.topics_to_be_deleted
        finally:
            ctl.register_child_handler(TOPIC_DELETION_HANDLER)

    if _guarded(ctl, "TopicDeletion", changed):
        yield TopicDeletion()
    else:
        _guarded(ctl, "TopicDeletion", lambda: zkc.get_topic_deletions(ctl.zk) is not None)  # re-arm


def _rerun_isr_change_notification(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    yield IsrChangeNotification()


def _rerun_log_dir_event_notification(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    yield LogDirEventNotification()


def _rerun_zk_partition_reassignment(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    if _creation_only(ctl, snap.reassign_existed, PARTITION_REASSIGNMENT_HANDLER):
        yield ZkPartitionReassignment()


def _rerun_partition_reassignment_isr_change(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    """The state znode's data watch: a deleted znode fires no data change."""
    for tp in snap.partitions_being_reassigned:
        if _guarded(ctl, f"PartitionReassignmentIsrChange({tp})", partial(_state_exists, ctl, tp)):
            yield PartitionReassignmentIsrChange(tp)


def _state_exists(ctl: ElectionPort, tp: TopicPartition) -> bool:
    return ctl.zk.get_data([zd.partition_state_path(*tp)])[0].stat is not None


def _rerun_replica_leader_election(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    if _creation_only(ctl, snap.preferred_existed, PREFERRED_REPLICA_ELECTION_HANDLER):
        yield ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED)


def _controllership_rerun(ctl: ElectionPort, snap: ReconnectSnapshot) -> Reruns:
    """`/controller`'s events: the reconnect's own re-election (`process_reelect`) covers them."""
    return iter(())


# Every event a watch can enqueue, with how a reconnect re-runs it, in the order they re-run.
RECONNECT_STEPS: dict[type[ControllerEvent], ReconnectStep] = {
    ControllerChange: _controllership_rerun,
    Reelect: _controllership_rerun,
    BrokerChange: _rerun_broker_change,
    BrokerModifications: _rerun_broker_modifications,
    TopicChange: _rerun_topic_change,
    PartitionModifications: _rerun_partition_modifications,
    TopicDeletion: _rerun_topic_deletion,
    IsrChangeNotification: _rerun_isr_change_notification,
    LogDirEventNotification: _rerun_log_dir_event_notification,
    ZkPartitionReassignment: _rerun_zk_partition_reassignment,
    PartitionReassignmentIsrChange: _rerun_partition_reassignment_isr_change,
    ReplicaLeaderElection: _rerun_replica_leader_election,
}


def events_to_rerun_after_reconnect(ctl: ElectionPort) -> Iterator[ControllerEvent]:
    """After `process_reelect`, the events to re-run on a reconnect, lazily: re-read every
    registered path (re-arming its one-shot watch) and re-run its handler's event — but only where
    Kafka's handler would have been told of a change, so that a reconnect with nothing changed
    writes nothing and sends nothing (Kafka's client re-arms its watches itself and only changed
    paths fire). The core dispatches each as it comes (a condition is read after the earlier
    events ran); every handler checks isActive itself."""
    if not ctl.is_active:
        return
    snap = reconnect_snapshot(ctl)
    for step in RECONNECT_STEPS.values():
        yield from step(ctl, snap)


def rerun_name(event: ControllerEvent) -> str:
    """How a failed re-run is named in the log."""
    match event:
        case BrokerModifications(broker_id=broker_id):
            return f"BrokerModifications({broker_id})"
        case PartitionModifications(topic=topic):
            return f"PartitionModifications({topic})"
        case PartitionReassignmentIsrChange(partition=tp):
            return f"PartitionReassignmentIsrChange({tp})"
        case _:
            return type(event).__name__


def _guarded(ctl: ElectionPort, name: str, condition: Callable[[], bool]) -> bool:
    """A re-run's condition fails as its event would: logged, and the other re-runs go on."""
    try:
        return condition()
    except ControllerMovedError:
        raise
    except Exception:
        ctl.log.exception("Error processing event %s after reconnecting", name)
        return False


def _creation_only(ctl: ElectionPort, existed: bool, handler: NodeHandler) -> bool:
    """`/admin/reassign_partitions` and `/admin/preferred_replica_election` act on creation only:
    re-run the handler iff the znode was absent at the last check (an exists watch was armed);
    otherwise only re-arm the watch."""
    if not existed:
        return True
    name = "ZkPartitionReassignment" if handler is PARTITION_REASSIGNMENT_HANDLER else "ReplicaLeaderElection"
    _guarded(ctl, name, lambda: ctl.register_node_handler(handler, check_exists=True))
    return False
