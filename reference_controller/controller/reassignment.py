"""Partition reassignment handlers (ring: core).

KafkaController.scala@2.5.1 L555-958, L1527-1642 (spec §4.2). The step labels (U1–U3, A1–A2,
B1–B8) and the worked table are in `decisions.reassignment`. Triggers: creation of
`/admin/reassign_partitions` (ZkPartitionReassignment), the data watch on the `state` znode of a
reassigning partition (PartitionReassignmentIsrChange), broker startup, controller failover.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import (
    PARTITION_REASSIGNMENT_HANDLER,
    csv,
    live_or_shutting_down,
    partition_reassignment_isr_change_handler,
    send_update_metadata_request,
)
from reference_controller.controller.context import replica_of, tp_str
from reference_controller.controller.decisions import elections as el
from reference_controller.controller.decisions import reassignment as plan
from reference_controller.controller.decisions.states import PartitionState, ReplicaState
from reference_controller.controller.events import ZkPartitionReassignment
from reference_controller.controller.handler_ports import ReassignmentPort
from reference_controller.controller.partition_state_machine import lai_str
from reference_controller.controller.ports import ControllerMovedError, ZkCode
from reference_controller.controller.state_change_log import IllegalStateException, StateChangeFailedException
from reference_controller.zkdata import LeaderIsrAndControllerEpoch, ReplicaAssignment


def _ra_str(a: ReplicaAssignment) -> str:
    return (
        f"ReplicaAssignment(replicas={csv(a.replicas)}, addingReplicas={csv(a.adding)}, "
        f"removingReplicas={csv(a.removing)})"
    )


def process_zk_partition_reassignment(ctl: ReassignmentPort) -> set[TopicPartition]:
    """Only when active and the znode exists (the exists call re-arms the creation watch)."""
    if not (ctl.is_active and ctl.register_node_handler(PARTITION_REASSIGNMENT_HANDLER, check_exists=True)):
        return set()
    results: dict[TopicPartition, int] = {}
    to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, target in zkc.get_partition_reassignment(ctl.zk).items():
        built = plan.build_reassignment(ctl.context.partition_full_replica_assignment(tp), target)
        if built is None:
            results[tp] = Errors.NO_REASSIGNMENT_IN_PROGRESS
        else:
            to_reassign[tp] = built
    results.update(maybe_trigger_partition_reassignment(ctl, to_reassign))
    failed = {tp: code for tp, code in results.items() if code != 0}
    if failed:
        ctl.log.warning(
            "Failed reassignment through zk with the following errors: %s",
            {tp_str(tp): c for tp, c in failed.items()},
        )
        maybe_remove_from_zk_reassignment(ctl, lambda tp, _replicas: tp in failed)
    return {tp for tp, code in results.items() if code == 0}


def maybe_trigger_partition_reassignment(
    ctl: ReassignmentPort, reassignments: Mapping[TopicPartition, ReplicaAssignment]
) -> dict[TopicPartition, int]:
    results: dict[TopicPartition, int] = {}
    for tp, reassignment in reassignments.items():
        if ctl.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0]):
            ctl.log.info("Skipping reassignment of %s since the topic is currently being deleted", tp_str(tp))
            results[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
        elif not ctl.context.partition_replica_assignment(tp):
            results[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
        else:
            try:
                on_partition_reassignment(ctl, tp, reassignment)
                results[tp] = 0
            except ControllerMovedError:
                ctl.log.info(
                    "Failed completing reassignment of partition %s because controller has moved "
                    "to another broker",
                    tp_str(tp),
                )
                raise
            except Exception:
                ctl.log.exception("Error completing reassignment of partition %s", tp_str(tp))
                results[tp] = Errors.UNKNOWN_SERVER_ERROR
    return results


def on_partition_reassignment(
    ctl: ReassignmentPort, tp: TopicPartition, reassignment: ReplicaAssignment
) -> None:
    """U1–U3, then Phase A (A1, A2) or Phase B (B1–B8); see `decisions.reassignment`."""
    ctl.topic_deletion_manager.mark_topic_ineligible_for_deletion({tp[0]}, "topic reassignment in progress")
    update_current_reassignment(ctl, tp, reassignment)
    if reassignment_phase(ctl, tp, reassignment) is plan.Phase.A:
        update_leader_epoch_and_send_request(ctl, tp, reassignment)  # A1
        for replica in reassignment.adding:  # A2
            ctl.replica_state_machine.handle_state_changes([replica_of(tp, replica)], ReplicaState.NewReplica)
        return
    rsm = ctl.replica_state_machine
    rsm.handle_state_changes(
        [replica_of(tp, r) for r in reassignment.adding], ReplicaState.OnlineReplica
    )  # B1
    completed = plan.completed(reassignment)
    ctl.context.update_partition_full_replica_assignment(tp, completed)  # B2
    move_reassigned_partition_leader_if_required(ctl, tp, completed)  # B3
    stop_removed_replicas_of_reassigned_partition(ctl, tp, reassignment.removing)  # B4, B5
    update_replica_assignment_for_partition(ctl, tp, completed)  # B6
    remove_partition_from_reassigning_partitions(ctl, tp, completed)  # B7
    send_update_metadata_request(ctl, live_or_shutting_down(ctl), [tp])  # B8
    ctl.topic_deletion_manager.resume_deletion_for_topics({tp[0]})


def update_current_reassignment(
    ctl: ReassignmentPort, tp: TopicPartition, reassignment: ReplicaAssignment
) -> None:
    current = ctl.context.partition_full_replica_assignment(tp)
    if current != reassignment:
        ctl.log.debug("Updating assignment of partition %s from %s to %s", tp_str(tp), current, reassignment)
        update_replica_assignment_for_partition(ctl, tp, reassignment)  # U1
        ctl.context.update_partition_full_replica_assignment(tp, reassignment)  # U2
        unneeded = plan.unneeded_replicas(current, reassignment)
        if unneeded:  # U3
            stop_removed_replicas_of_reassigned_partition(ctl, tp, unneeded)
    ctl.register_node_handler(partition_reassignment_isr_change_handler(tp))
    ctl.context.partitions_being_reassigned.add(tp)


def reassignment_phase(
    ctl: ReassignmentPort, tp: TopicPartition, assignment: ReplicaAssignment
) -> plan.Phase:
    """`isReassignmentComplete`: the ISR is read from the state znode only while reassigning."""
    if not assignment.is_being_reassigned:
        return plan.Phase.B
    state = zkc.get_topic_partition_states(ctl.zk, [tp]).get(tp)
    return plan.phase(assignment, None if state is None else state.leader_and_isr.isr)


def move_reassigned_partition_leader_if_required(
    ctl: ReassignmentPort, tp: TopicPartition, new_assignment: ReplicaAssignment
) -> None:
    replicas = new_assignment.replicas
    leader = ctl.context.partition_leadership_info[tp].leader_and_isr.leader
    move = plan.leader_move(replicas, leader, ctl.context.is_replica_online(leader, tp))
    if move is plan.LeaderMove.KEEP_AND_BUMP_EPOCH:
        ctl.log.info(
            "Leader %d for partition %s being reassigned, is already in the new list of replicas "
            "%s and is alive",
            leader,
            tp_str(tp),
            csv(replicas),
        )
        update_leader_epoch_and_send_request(ctl, tp, new_assignment)
        return
    if move is plan.LeaderMove.ELECT_NOT_IN_TARGET:
        ctl.log.info(
            "Leader %d for partition %s being reassigned, is not in the new list of replicas %s. "
            "Re-electing leader",
            leader,
            tp_str(tp),
            csv(replicas),
        )
    else:
        ctl.log.info(
            "Leader %d for partition %s being reassigned, is already in the new list of replicas "
            "%s but is dead",
            leader,
            tp_str(tp),
            csv(replicas),
        )
    ctl.partition_state_machine.handle_state_changes(
        [tp], PartitionState.OnlinePartition, el.ReassignPartitionLeaderElectionStrategy()
    )


def stop_removed_replicas_of_reassigned_partition(
    ctl: ReassignmentPort, tp: TopicPartition, removed: tuple[int, ...]
) -> None:
    replicas = [replica_of(tp, r) for r in removed]
    for target in plan.REMOVED_REPLICA_STATES:
        ctl.replica_state_machine.handle_state_changes(replicas, target)


def update_replica_assignment_for_partition(
    ctl: ReassignmentPort, tp: TopicPartition, assignment: ReplicaAssignment
) -> None:
    topic_assignment = ctl.context.partition_full_replica_assignment_for_topic(tp[0])
    topic_assignment[tp[1]] = assignment
    result = zkc.set_topic_assignment_raw(ctl.zk, tp[0], topic_assignment, ctl.context.epoch_zk_version)
    if result.ok:
        ctl.log.info("Successfully updated assignment of partition %s to %s", tp_str(tp), _ra_str(assignment))
    elif result.code == ZkCode.NONODE:
        raise zkc.ZkOperationError(zd.topic_path(tp[0]), result.code)
    else:
        raise zkc.ZkOperationError(zd.topic_path(tp[0]), result.code)


def update_leader_epoch_and_send_request(
    ctl: ReassignmentPort, tp: TopicPartition, assignment: ReplicaAssignment
) -> None:
    updated = update_leader_epoch(ctl, tp)
    if updated is None:
        ctl.state_change_log.error(
            "Failed to send LeaderAndIsr request with new replica assignment "
            f"{_ra_str(assignment)} to leader "
            f"for partition being reassigned {tp_str(tp)}"
        )
        return
    ctl.batch.new_batch()
    ctl.batch.add_leader_and_isr_request_for_brokers(
        assignment.replicas, tp, updated, assignment, is_new=False
    )
    ctl.emit(ctl.batch.send_requests_to_brokers(ctl.context.epoch))
    ctl.state_change_log.trace(
        f"Sent LeaderAndIsr request LeaderIsrAndControllerEpoch({lai_str(updated.leader_and_isr)}, "
        f"{updated.controller_epoch}) with new replica assignment {_ra_str(assignment)} to leader "
        f"{updated.leader_and_isr.leader} for partition being reassigned {tp_str(tp)}"
    )


def update_leader_epoch(ctl: ReassignmentPort, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
    """Re-read the state znode and write it back with leader_epoch + 1 (retry on BADVERSION)."""
    ctx = ctl.context
    while True:
        current = zkc.get_topic_partition_states(ctl.zk, [tp]).get(tp)
        if current is None:
            raise IllegalStateException(
                f"Cannot update leader epoch for partition {tp_str(tp)} as leaderAndIsr path is "
                "empty. This could "
                "mean we somehow tried to reassign a partition that doesn't exist"
            )
        if current.controller_epoch > ctx.epoch:
            raise StateChangeFailedException(
                "Leader and isr path written by another controller. This probably means the "
                "current controller with "
                f"epoch {ctx.epoch} went through a soft failure and another controller was "
                "elected with epoch "
                f"{current.controller_epoch}. Aborting state change by this controller"
            )
        finished, _retry = zkc.update_leader_and_isr(
            ctl.zk, {tp: current.leader_and_isr.new_epoch()}, ctx.epoch, ctx.epoch_zk_version
        )
        outcome = finished.get(tp)
        if isinstance(outcome, Exception):
            raise outcome
        if outcome is not None:
            info = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
            ctx.partition_leadership_info[tp] = info
            ctl.log.info("Updated leader epoch for partition %s to %d", tp_str(tp), outcome.leader_epoch)
            return info


def remove_partition_from_reassigning_partitions(
    ctl: ReassignmentPort, tp: TopicPartition, assignment: ReplicaAssignment
) -> None:
    if tp not in ctl.context.partitions_being_reassigned:
        raise StateChangeFailedException(
            "Cannot remove a reassigning partition because it is not present in memory"
        )
    ctl.unregister_node_handler(zd.partition_state_path(*tp))
    maybe_remove_from_zk_reassignment(
        ctl, lambda tp2, replicas: tp2 == tp and tuple(replicas) == assignment.replicas
    )
    ctl.context.partitions_being_reassigned.discard(tp)


def maybe_remove_from_zk_reassignment(
    ctl: ReassignmentPort, should_remove: Callable[[TopicPartition, list[int]], bool]
) -> None:
    """Rewrite `/admin/reassign_partitions` without the matching entries; delete it when empty and
    re-enqueue ZkPartitionReassignment to re-arm the creation watch."""
    if ctl.zk.exists(zd.REASSIGN_PARTITIONS) is None:
        return
    current = zkc.get_partition_reassignment(ctl.zk)
    removing = {tp: r for tp, r in current.items() if should_remove(tp, r)}
    remaining = {tp: r for tp, r in current.items() if tp not in removing}
    ctl.log.info(
        "Removing partitions %s from the list of reassigned partitions in zookeeper",
        {tp_str(tp): r for tp, r in removing.items()},
    )
    if not remaining:
        ctl.log.info("No more partitions need to be reassigned. Deleting zk path %s", zd.REASSIGN_PARTITIONS)
        zkc.delete_recursive(ctl.zk, zd.REASSIGN_PARTITIONS, ctl.context.epoch_zk_version)
        ctl.enqueue(ZkPartitionReassignment())
    else:
        zkc.set_or_create_partition_reassignment(ctl.zk, remaining, ctl.context.epoch_zk_version)


def maybe_resume_reassignments(
    ctl: ReassignmentPort, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]
) -> None:
    for tp in sorted(ctl.context.partitions_being_reassigned):
        assignment = ctl.context.partition_full_replica_assignment(tp)
        if should_resume(tp, assignment):
            on_partition_reassignment(ctl, tp, assignment)


def process_partition_reassignment_isr_change(ctl: ReassignmentPort, tp: TopicPartition) -> None:
    if not ctl.is_active or tp not in ctl.context.partitions_being_reassigned:
        return
    reassignment = ctl.context.partition_full_replica_assignment(tp)
    if reassignment_phase(ctl, tp, reassignment) is plan.Phase.B:
        ctl.log.info(
            "Target replicas %s have all caught up with the leader for reassigning partition %s",
            list(reassignment.target_replicas),
            tp_str(tp),
        )
        on_partition_reassignment(ctl, tp, reassignment)


def initialize_partition_reassignments(ctl: ReassignmentPort) -> None:
    """Failover: ZK reassignments first; then resume the rest (recovered from the topic znodes)."""
    resumed = process_zk_partition_reassignment(ctl)
    maybe_resume_reassignments(ctl, lambda tp, _a: tp not in resumed)
