"""Controller election, resignation and session events (ring: core).

KafkaController.scala@2.5.1: `processStartup`, `elect`, `maybeResign`, `triggerControllerMove`,
`processReelect`, `processExpire` (L1229-1359, L1789-1806), plus `ZkReconnected`, which is not
Kafka: kazoo drops server-side watches on a reconnect, so every registered path is re-read
(re-arming its watch) and its handler's idempotent logic is run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_controller import zkdata as zd
from reference_controller.controller import brokers, failover, leader_elections, notifications, topics
from reference_controller.controller import reassignment as reassign
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import CONTROLLER_CHANGE_HANDLER
from reference_controller.controller.events import ElectionTrigger, ElectionType, ReplicaLeaderElection
from reference_controller.controller.ports import ControllerMovedError

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
    """Re-read every registered path (re-arming its one-shot watch) and run its handler's logic."""
    process_reelect(ctl)
    if not ctl.is_active:
        return
    brokers.process_broker_change(ctl)
    for broker_id in sorted(ctl.context.live_or_shutting_down_broker_ids):
        brokers.process_broker_modifications(ctl, broker_id)
    topics.process_topic_change(ctl)
    for path in sorted(ctl.node_handlers):
        if path.startswith(zd.BROKER_TOPICS + "/") and path.count("/") == 3:
            topics.process_partition_modifications(ctl, path.rsplit("/", 1)[1])
    topics.process_topic_deletion(ctl)
    notifications.process_isr_change_notification(ctl)
    notifications.process_log_dir_event_notification(ctl)
    reassign.process_zk_partition_reassignment(ctl)
    for tp in sorted(ctl.context.partitions_being_reassigned):
        ctl.zk.get_data([zd.partition_state_path(*tp)])
        reassign.process_partition_reassignment_isr_change(ctl, tp)
    leader_elections.process_replica_leader_election(
        ctl, ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED)
    )
