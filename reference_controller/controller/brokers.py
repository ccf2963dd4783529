"""Broker membership: BrokerChange, BrokerModifications, startup and failure (ring: core).

KafkaController.scala@2.5.1 `processBrokerChange` (new / dead / bounced by czxid, KIP-380),
`onBrokerStartup`, `onBrokerFailure`, `onReplicasBecomeOffline`, `processBrokerModification`
(spec §6.1–§6.3).
"""

from __future__ import annotations

from collections.abc import Sequence

from reference_controller.controller import reassignment as reassign
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import (
    csv,
    live_or_shutting_down,
    register_broker_modifications_handlers,
    send_update_metadata_request,
    unregister_broker_modifications_handlers,
)
from reference_controller.controller.context import PartitionAndReplica
from reference_controller.controller.decisions import membership
from reference_controller.controller.decisions.states import PartitionState, ReplicaState
from reference_controller.controller.effects import AddBroker, RemoveBroker
from reference_controller.controller.handler_ports import BrokerPort


def process_broker_change(ctl: BrokerPort) -> None:
    if not ctl.is_active:
        return
    ctx = ctl.context
    current = zkc.get_all_broker_and_epochs(ctl.zk)
    changes = membership.broker_changes(
        {b: epoch for b, (_, epoch) in current.items()},
        ctx.live_or_shutting_down_broker_ids,
        ctx.live_broker_epochs,
    )
    new_ids, dead_ids, bounced_ids = changes.new, changes.dead, changes.bounced
    ctl.log.info(
        "Newly added brokers: %s, deleted brokers: %s, bounced brokers: %s, all live brokers: %s",
        csv(new_ids),
        csv(dead_ids),
        csv(bounced_ids),
        csv(sorted(current)),
    )
    ctl.emit([AddBroker(current[b][0]) for b in new_ids])
    ctl.emit([RemoveBroker(b) for b in bounced_ids])
    ctl.emit([AddBroker(current[b][0]) for b in bounced_ids])
    ctl.emit([RemoveBroker(b) for b in dead_ids])
    if new_ids:
        ctx.add_live_brokers_and_epochs({b: current[b] for b in new_ids})
        on_broker_startup(ctl, new_ids)
    if bounced_ids:
        ctx.remove_live_brokers(bounced_ids)
        on_broker_failure(ctl, bounced_ids)
        ctx.add_live_brokers_and_epochs({b: current[b] for b in bounced_ids})
        on_broker_startup(ctl, bounced_ids)
    if dead_ids:
        ctx.remove_live_brokers(dead_ids)
        on_broker_failure(ctl, dead_ids)
    if changes.any:
        ctl.log.info("Updated broker epochs cache: %s", dict(sorted(ctx.live_broker_epochs.items())))


def on_broker_startup(ctl: BrokerPort, new_brokers: Sequence[int]) -> None:
    ctx = ctl.context
    ctl.log.info("New broker startup callback for %s", csv(new_brokers))
    for b in new_brokers:
        ctx.replicas_on_offline_dirs.pop(b, None)
    new_set = set(new_brokers)
    send_update_metadata_request(ctl, sorted(ctx.live_or_shutting_down_broker_ids - new_set), [])
    send_update_metadata_request(ctl, list(new_brokers), list(ctx.partition_leadership_info))
    replicas_on_new = ctx.replicas_on_brokers(new_set)
    ctl.replica_state_machine.handle_state_changes(replicas_on_new, ReplicaState.OnlineReplica)
    ctl.partition_state_machine.trigger_online_partition_state_change()
    reassign.maybe_resume_reassignments(ctl, lambda _tp, a: any(r in new_set for r in a.target_replicas))
    tdm = ctl.topic_deletion_manager
    for_deletion = [r for r in replicas_on_new if tdm.is_topic_queued_up_for_deletion(r.topic)]
    if for_deletion:
        ctl.log.info(
            "Some replicas %s for topics scheduled for deletion %s are on the newly restarted brokers %s. "
            "Signaling restart of topic deletion for these topics",
            csv(for_deletion),
            csv(sorted(ctx.topics_to_be_deleted)),
            csv(new_brokers),
        )
        tdm.resume_deletion_for_topics({r.topic for r in for_deletion})
    register_broker_modifications_handlers(ctl, new_brokers)


def on_broker_failure(ctl: BrokerPort, dead_brokers: Sequence[int]) -> None:
    ctx = ctl.context
    ctl.log.info("Broker failure callback for %s", csv(dead_brokers))
    for b in dead_brokers:
        ctx.replicas_on_offline_dirs.pop(b, None)
    were_shutting_down = [b for b in dead_brokers if b in ctx.shutting_down_broker_ids]
    ctx.shutting_down_broker_ids -= set(were_shutting_down)
    if were_shutting_down:
        ctl.log.info("Removed %s from list of shutting down brokers.", csv(were_shutting_down))
    on_replicas_become_offline(ctl, ctx.replicas_on_brokers(dead_brokers))
    unregister_broker_modifications_handlers(ctl, dead_brokers)


def on_replicas_become_offline(ctl: BrokerPort, replicas: Sequence[PartitionAndReplica]) -> None:
    ctx = ctl.context
    tdm = ctl.topic_deletion_manager
    for_deletion = [r for r in replicas if tdm.is_topic_queued_up_for_deletion(r.topic)]
    not_for_deletion = [r for r in replicas if not tdm.is_topic_queued_up_for_deletion(r.topic)]
    without_leader = [
        tp
        for tp, info in ctx.partition_leadership_info.items()
        if not ctx.is_replica_online(info.leader_and_isr.leader, tp)
        and not tdm.is_topic_queued_up_for_deletion(tp[0])
    ]
    ctl.partition_state_machine.handle_state_changes(without_leader, PartitionState.OfflinePartition)
    ctl.partition_state_machine.trigger_online_partition_state_change()
    ctl.replica_state_machine.handle_state_changes(not_for_deletion, ReplicaState.OfflineReplica)
    if for_deletion:
        tdm.fail_replica_deletion(for_deletion)
    if not without_leader:
        send_update_metadata_request(ctl, live_or_shutting_down(ctl), [])


def process_broker_modifications(ctl: BrokerPort, broker_id: int) -> None:
    if not ctl.is_active:
        return
    new = zkc.get_broker(ctl.zk, broker_id)
    old = ctl.context.live_brokers.get(broker_id)
    if new is not None and old is not None and new.endpoints != old.endpoints:
        ctl.log.info("Updated broker metadata: %s -> %s", old, new)
        ctl.context.live_brokers[broker_id] = new
        ctl.log.info("Broker info update callback for %d", broker_id)
        send_update_metadata_request(ctl, live_or_shutting_down(ctl), [])
