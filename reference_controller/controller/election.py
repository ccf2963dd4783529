"""Controller election, resignation and session events (ring: core).

KafkaController.scala@2.5.1: `processStartup`, `elect`, `maybeResign`, `triggerControllerMove`,
`processReelect`, `processExpire` (L1229-1359, L1789-1806), plus `ZkReconnected`, which is not
Kafka: kazoo drops server-side watches on a reconnect, so every registered path is re-read
(re-arming its watch) and its handler's idempotent logic is run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from reference_controller import zkdata as zd
from reference_controller.controller import brokers, failover, leader_elections, notifications, topics
from reference_controller.controller import reassignment as reassign
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import (
    CONTROLLER_CHANGE_HANDLER,
    PARTITION_REASSIGNMENT_HANDLER,
    PREFERRED_REPLICA_ELECTION_HANDLER,
)
from reference_controller.controller.events import ElectionTrigger, ElectionType, ReplicaLeaderElection
from reference_controller.controller.ports import ControllerMovedError, NodeHandler

if TYPE_CHECKING:
    from reference_controller.controller.core import KafkaController


def process_startup(ctl: KafkaController) -> None:
    ctl.register_node_handler(CONTROLLER_CHANGE_HANDLER, check_exists=True)
    elect(ctl)


def elect(ctl: KafkaController) -> None:
    """`elect()`: return if a controller exists; else the election multi, then failover."""
    ctl.active_controller_id = zkc.get_controller_id(ctl.zk)
    if ctl.active_controller_id != -1:
        ctl.log.debug(
            "Broker %d has been elected as the controller, so stopping the election process.",
            ctl.active_controller_id,
        )
        return
    try:
        epoch, epoch_zk_version = zkc.register_controller_and_increment_controller_epoch(
            ctl.zk, ctl.broker_id, ctl.clock.now_ms()
        )
        ctl.context.epoch = epoch
        ctl.context.epoch_zk_version = epoch_zk_version
        ctl.active_controller_id = ctl.broker_id
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
        if ctl.active_controller_id != -1:
            ctl.log.debug(
                "Broker %d was elected as controller instead of broker %d",
                ctl.active_controller_id,
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


def maybe_resign(ctl: KafkaController) -> None:
    """Re-arm the `/controller` watch, re-read the id, resign iff we were active and no longer are."""
    was_active = ctl.is_active
    ctl.register_node_handler(CONTROLLER_CHANGE_HANDLER, check_exists=True)
    ctl.active_controller_id = zkc.get_controller_id(ctl.zk)
    if was_active and not ctl.is_active:
        failover.on_controller_resignation(ctl)


def trigger_controller_move(ctl: KafkaController) -> None:
    ctl.active_controller_id = zkc.get_controller_id(ctl.zk)
    if not ctl.is_active:
        ctl.log.warning("Controller has already moved when trying to trigger controller movement")
        return
    try:
        expected = ctl.context.epoch_zk_version
        ctl.active_controller_id = -1
        failover.on_controller_resignation(ctl)
        zkc.delete_controller(ctl.zk, expected)
    except ControllerMovedError:
        ctl.log.warning("Controller has already moved when trying to trigger controller movement")


def process_reelect(ctl: KafkaController) -> None:
    maybe_resign(ctl)
    elect(ctl)


def process_expire(ctl: KafkaController) -> None:
    ctl.active_controller_id = -1
    failover.on_controller_resignation(ctl)


def process_shutdown(ctl: KafkaController) -> None:
    """Node shutdown (`KafkaController.shutdown`): resign; the session close removes `/controller`."""
    ctl.active_controller_id = -1
    failover.on_controller_resignation(ctl)


def process_zk_reconnected(ctl: KafkaController) -> None:
    """Re-read every registered path (re-arming its one-shot watch) and run its handler's logic —
    but only where Kafka's handler would have been told of a change, so that a reconnect with
    nothing changed writes nothing and sends nothing (Kafka's client re-arms its watches itself and
    only changed paths fire). Each handler runs as its own event would: one failing handler is
    logged and does not stop the others; ControllerMovedError still propagates."""
    process_reelect(ctl)
    if not ctl.is_active:
        return
    reassign_existed = ctl.existed_at_last_check.get(zd.REASSIGN_PARTITIONS, False)
    preferred_existed = ctl.existed_at_last_check.get(zd.PREFERRED_REPLICA_ELECTION, False)
    steps: list[tuple[str, Callable[[], object]]] = [
        ("BrokerChange", lambda: brokers.process_broker_change(ctl)),
    ]
    for broker_id in sorted(ctl.context.live_or_shutting_down_broker_ids):
        steps.append(
            (
                f"BrokerModifications({broker_id})",
                partial(brokers.process_broker_modifications, ctl, broker_id),
            )
        )
    steps.append(("TopicChange", lambda: topics.process_topic_change(ctl)))
    for path in sorted(ctl.node_handlers):
        if path.startswith(zd.BROKER_TOPICS + "/") and path.count("/") == 3:
            topic = path.rsplit("/", 1)[1]
            steps.append(
                (
                    f"PartitionModifications({topic})",
                    partial(topics.process_partition_modifications, ctl, topic),
                )
            )
    steps += [
        ("TopicDeletion", lambda: _reconnect_topic_deletion(ctl)),
        ("IsrChangeNotification", lambda: notifications.process_isr_change_notification(ctl)),
        ("LogDirEventNotification", lambda: notifications.process_log_dir_event_notification(ctl)),
        (
            "ZkPartitionReassignment",
            lambda: _reconnect_creation_only(ctl, reassign_existed, PARTITION_REASSIGNMENT_HANDLER),
        ),
    ]
    for tp in sorted(ctl.context.partitions_being_reassigned):
        steps.append((f"PartitionReassignmentIsrChange({tp})", partial(_reconnect_reassignment_isr, ctl, tp)))
    steps.append(
        (
            "ReplicaLeaderElection",
            lambda: _reconnect_creation_only(ctl, preferred_existed, PREFERRED_REPLICA_ELECTION_HANDLER),
        )
    )
    for name, step in steps:  # every handler checks isActive itself
        try:
            step()
        except ControllerMovedError:
            raise
        except Exception:
            ctl.log.exception("Error processing event %s after reconnecting", name)


def _reconnect_topic_deletion(ctl: KafkaController) -> None:
    """TopicDeletion fires on a child change: run it only if the children differ from the queue
    (the controller deletes a marker only when it also dequeues the topic)."""
    if set(zkc.get_topic_deletions(ctl.zk)) != ctl.context.topics_to_be_deleted:
        topics.process_topic_deletion(ctl)


def _reconnect_creation_only(ctl: KafkaController, existed: bool, handler: NodeHandler) -> None:
    """`/admin/reassign_partitions` and `/admin/preferred_replica_election` act on creation only:
    run the handler iff the znode was absent at the last check (an exists watch was armed);
    otherwise only re-arm the watch."""
    if existed:
        ctl.register_node_handler(handler, check_exists=True)
    elif handler is PARTITION_REASSIGNMENT_HANDLER:
        reassign.process_zk_partition_reassignment(ctl)
    else:
        leader_elections.process_replica_leader_election(
            ctl, ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED)
        )


def _reconnect_reassignment_isr(ctl: KafkaController, tp: tuple[str, int]) -> None:
    """The state znode's data watch: a deleted znode fires no data change."""
    if ctl.zk.get_data([zd.partition_state_path(*tp)])[0].stat is not None:
        reassign.process_partition_reassignment_isr_change(ctl, tp)
