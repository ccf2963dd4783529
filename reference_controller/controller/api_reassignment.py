"""Reassignment through the admin API: AlterPartitionReassignments and ListPartitionReassignments
(ring: core).

KafkaController.scala@2.5.1 `processApiPartitionReassignment` (L1553-1591) and
`processListPartitionReassignments` (L1644-1663), spec §13.1-13.2:

1. not active ⇒ one top-level NOT_CONTROLLER, nothing read or written;
2. each entry: a target is validated (`decisions.admin.validate_replicas`), then rebased on the
   original replicas when the partition is being reassigned (a cancellation targets them); a
   cancellation of a partition that is not being reassigned (or unknown) is
   NO_REASSIGNMENT_IN_PROGRESS;
3. every accepted partition is removed from `/admin/reassign_partitions` first ("the latest
   reassignment, API or znode, wins"; the znode is rewritten whenever it exists, §13.1.8);
4. the accepted entries run `onPartitionReassignment` (U1–U3, then A1/A2 or B1–B8) — the answer
   follows these writes, never the catch-up.

The reassignment itself is recorded only in the topic znode: this path never creates
`/admin/reassign_partitions`. A handler that throws never calls `reply` (the request is not
answered, as in Kafka: the event's error is logged by the core).
"""

from __future__ import annotations

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller.controller import reassignment as reassign
from reference_controller.controller.decisions import admin
from reference_controller.controller.decisions import reassignment as plan
from reference_controller.controller.events import ApiPartitionReassignment, ListPartitionReassignments
from reference_controller.controller.handler_ports import ApiReassignmentPort
from reference_controller.zkdata import ReplicaAssignment


def process_api_partition_reassignment(ctl: ApiReassignmentPort, event: ApiPartitionReassignment) -> None:
    if not ctl.is_active:
        event.reply(ApiError.of(Errors.NOT_CONTROLLER))
        return
    results: dict[TopicPartition, ApiError] = {}
    to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, target in event.reassignments:
        current = ctl.context.partition_full_replica_assignment(tp)
        live = ctl.context.live_broker_ids
        error = None if target is None else admin.validate_replicas(current, target, live)
        if error is not None:
            results[tp] = error
            continue
        built = plan.build_reassignment(current, target)
        if built is None:
            results[tp] = ApiError.of(Errors.NO_REASSIGNMENT_IN_PROGRESS)
        else:
            to_reassign[tp] = built
    reassign.maybe_remove_from_zk_reassignment(ctl, lambda tp, _replicas: tp in to_reassign)
    for tp, code in reassign.maybe_trigger_partition_reassignment(ctl, to_reassign).items():
        results[tp] = admin.reassignment_result(code)
    event.reply(results)


def process_list_partition_reassignments(ctl: ApiReassignmentPort, event: ListPartitionReassignments) -> None:
    if not ctl.is_active:
        event.reply(ApiError.of(Errors.NOT_CONTROLLER))
        return
    named = event.partitions
    wanted = sorted(ctl.context.partitions_being_reassigned if named is None else named)
    listed: dict[TopicPartition, ReplicaAssignment] = {}
    for tp in wanted:
        assignment = ctl.context.partition_full_replica_assignment(tp)
        if assignment.is_being_reassigned:
            listed[tp] = assignment
    event.reply(listed)
