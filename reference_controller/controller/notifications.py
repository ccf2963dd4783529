"""ISR change and log-dir event notifications, broker responses (ring: core).

KafkaController.scala@2.5.1: `processIsrChangeNotification` (refresh the leadership cache from
the state znodes, UpdateMetadata for exactly those partitions, then delete exactly the processed
children), `processLogDirEventNotification` / `onBrokerLogDirFailure`, and the LeaderAndIsr /
UpdateMetadata response handlers (KAFKA_STORAGE_ERROR marks replicas offline).
"""

from __future__ import annotations

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import brokers
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import (
    ERROR_NAMES,
    live_or_shutting_down,
    send_update_metadata_request,
    tps,
    update_leader_and_isr_cache,
)
from reference_controller.controller.context import replica_of
from reference_controller.controller.decisions import isr
from reference_controller.controller.decisions.states import ReplicaState
from reference_controller.controller.events import (
    LeaderAndIsrResponseReceived,
    UpdateMetadataResponseReceived,
)
from reference_controller.controller.handler_ports import NotificationPort
from reference_controller.errors import MalformedZnodeError


def _notification_names(ctl: NotificationPort, parent: str, prefix: str) -> list[str]:
    return isr.notification_names(ctl.zk.get_children(parent) or [], prefix)


def process_isr_change_notification(ctl: NotificationPort) -> None:
    if not ctl.is_active:
        return
    names = _notification_names(ctl, zd.ISR_CHANGE_NOTIFICATION, zd.ISR_CHANGE_PREFIX)
    try:
        notified: list[list[TopicPartition]] = []
        for data in zkc.read_notifications(ctl.zk, zd.ISR_CHANGE_NOTIFICATION, names):
            if data.stat is None:
                continue
            try:
                notified.append(zd.decode_isr_change(data.data, data.path))
            except MalformedZnodeError as exc:
                ctl.log.error(  # noqa: TRY400 - a value, not a crash
                    "Ignoring ISR change notification: %s", exc
                )
        partitions = isr.isr_change_partitions(notified)
        if partitions:
            update_leader_and_isr_cache(ctl, partitions)
            ctl.log.debug(
                "Sending MetadataRequest to Brokers: %s for TopicPartitions: %s",
                live_or_shutting_down(ctl),
                tps(partitions),
            )
            send_update_metadata_request(ctl, live_or_shutting_down(ctl), partitions)
    finally:
        zkc.delete_paths(ctl.zk, [zd.isr_change_path(n) for n in names], ctl.context.epoch_zk_version)


def process_log_dir_event_notification(ctl: NotificationPort) -> None:
    if not ctl.is_active:
        return
    names = _notification_names(ctl, zd.LOG_DIR_EVENT_NOTIFICATION, zd.LOG_DIR_EVENT_PREFIX)
    try:
        broker_ids: list[int] = []
        for data in zkc.read_notifications(ctl.zk, zd.LOG_DIR_EVENT_NOTIFICATION, names):
            if data.stat is None:
                continue
            try:
                broker_ids.append(zd.decode_log_dir_event(data.data, data.path))
            except MalformedZnodeError as exc:
                ctl.log.error(  # noqa: TRY400 - a value, not a crash
                    "Ignoring log dir event notification: %s", exc
                )
        on_broker_log_dir_failure(ctl, sorted(set(broker_ids)))
    finally:
        zkc.delete_paths(ctl.zk, [zd.log_dir_event_path(n) for n in names], ctl.context.epoch_zk_version)


def on_broker_log_dir_failure(ctl: NotificationPort, broker_ids: list[int]) -> None:
    """Probe every replica on the brokers with LeaderAndIsr (→ OnlineReplica)."""
    ctl.log.info("Handling log directory failure for brokers %s", ",".join(str(b) for b in broker_ids))
    replicas = ctl.context.replicas_on_brokers(broker_ids)
    ctl.replica_state_machine.handle_state_changes(replicas, ReplicaState.OnlineReplica)


def process_leader_and_isr_response(ctl: NotificationPort, event: LeaderAndIsrResponseReceived) -> None:
    if not ctl.is_active:
        return
    if event.error_code != 0:
        ctl.state_change_log.error(
            f"Received error {ERROR_NAMES.get(event.error_code, event.error_code)} in LeaderAndIsr response "
            f"from broker {event.broker_id}"
        )
        return
    previous = ctl.context.replicas_on_offline_dirs.get(event.broker_id, set())
    current, new_offline = isr.offline_replicas_after_response(previous, event.partition_errors)
    ctl.context.replicas_on_offline_dirs[event.broker_id] = current
    if new_offline:
        ctl.state_change_log.info(f"Mark replicas {tps(new_offline)} on broker {event.broker_id} as offline")
        brokers.on_replicas_become_offline(ctl, [replica_of(tp, event.broker_id) for tp in new_offline])


def process_update_metadata_response(ctl: NotificationPort, event: UpdateMetadataResponseReceived) -> None:
    if ctl.is_active and event.error_code != 0:
        ctl.state_change_log.error(
            f"Received error {ERROR_NAMES.get(event.error_code, event.error_code)} in "
            "UpdateMetadata response "
            f"from broker {event.broker_id}"
        )
