"""Preferred / unclean / automatic leader elections (ring: core).

KafkaController.scala@2.5.1: `processReplicaLeaderElection` (ZK-triggered via creation of
`/admin/preferred_replica_election`, deleted afterwards even when nothing was elected, then the
event is re-enqueued to re-arm the watch), `onReplicaElection`,
`fetchPendingPreferredReplicaElections`, `checkAndTriggerAutoLeaderRebalance` (spec §6.6, §6.7),
and the unclean-leader-election-enable events (§6.11). API replies carry Kafka error codes per
partition (0 = elected).
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.common import PREFERRED_REPLICA_ELECTION_HANDLER, tps
from reference_controller.controller.context import tp_str
from reference_controller.controller.decisions import admin as admin_decisions
from reference_controller.controller.decisions import elections as el
from reference_controller.controller.decisions import rebalance
from reference_controller.controller.decisions.admin import PARTITION_DOES_NOT_EXIST
from reference_controller.controller.decisions.states import PartitionState
from reference_controller.controller.effects import ScheduleEvent
from reference_controller.controller.events import (
    AutoPreferredReplicaLeaderElection,
    ElectionResults,
    ElectionTrigger,
    ElectionType,
    ReplicaLeaderElection,
)
from reference_controller.controller.handler_ports import LeaderElectionPort
from reference_controller.controller.ports import ControllerMovedError
from reference_controller.controller.state_change_log import StateChangeFailedException
from reference_controller.zkdata import LeaderAndIsr

Outcome = LeaderAndIsr | Exception


def process_replica_leader_election(ctl: LeaderElectionPort, event: ReplicaLeaderElection) -> None:
    if not ctl.is_active:
        if event.reply is not None:
            event.reply(dict.fromkeys(event.partitions or (), ApiError(Errors.NOT_CONTROLLER, None)))
        return
    admin = event.trigger == ElectionTrigger.ADMIN_CLIENT_TRIGGERED
    if not (admin or ctl.register_node_handler(PREFERRED_REPLICA_ELECTION_HANDLER, check_exists=True)):
        return  # Kafka calls back only when it elects (a ZK-triggered event has no caller waiting)
    partitions = (
        event.partitions if event.partitions is not None else zkc.get_preferred_replica_election(ctl.zk)
    )
    results = _elect(ctl, list(partitions), event.election_type, event.trigger)
    if event.reply is not None:
        event.reply(results)


def _elect(
    ctl: LeaderElectionPort, partitions: list[TopicPartition], kind: ElectionType, trigger: ElectionTrigger
) -> ElectionResults:
    ctx = ctl.context
    known_set = set(ctx.all_partitions())
    known = [tp for tp in partitions if tp in known_set]
    unknown = [tp for tp in partitions if tp not in known_set]
    for tp in unknown:
        ctl.log.info(
            "Skipping replica leader election (%s) for partition %s by %s since it doesn't exist.",
            kind.value,
            tp_str(tp),
            trigger.value,
        )
    deleting = [tp for tp in known if ctl.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0])]
    if deleting:
        ctl.log.warning(
            "Skipping replica leader election (%s) for partitions %s by %s since the respective "
            "topics are being "
            "deleted",
            kind.value,
            tps(deleting),
            trigger.value,
        )
    live = [tp for tp in known if tp not in deleting]
    electable = [tp for tp in live if _needs_election(ctl, tp, kind)]
    results: ElectionResults = {}
    for tp, outcome in on_replica_election(ctl, electable, kind, trigger).items():
        results[tp] = _election_result(outcome, kind)
    not_needed = ApiError.of(Errors.ELECTION_NOT_NEEDED)
    results.update(dict.fromkeys((tp for tp in live if tp not in electable), not_needed))
    being_deleted = ApiError(Errors.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
    results.update(dict.fromkeys(deleting, being_deleted))
    missing = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, PARTITION_DOES_NOT_EXIST)
    results.update(dict.fromkeys(unknown, missing))
    return results


def _election_result(outcome: Outcome, kind: ElectionType) -> ApiError | int:
    """Kafka's mapping of `onReplicaElection`'s outcome (L1761-1774): the new leader; a failed state
    change is PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE with its message; any
    other exception `ApiError.fromThrowable` (UNKNOWN_SERVER_ERROR here)."""
    if isinstance(outcome, LeaderAndIsr):
        return outcome.leader
    if isinstance(outcome, StateChangeFailedException):
        error = (
            Errors.PREFERRED_LEADER_NOT_AVAILABLE
            if kind == ElectionType.PREFERRED
            else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
        )
        return ApiError(error, str(outcome))
    return ApiError.from_exception(Errors.UNKNOWN_SERVER_ERROR, str(outcome) or None)


def _needs_election(ctl: LeaderElectionPort, tp: TopicPartition, kind: ElectionType) -> bool:
    """`partitionLeadershipInfo(partition)` is a Map.apply in Kafka: a partition with an assignment
    but no leadership (never a state znode) throws, and the whole event fails unanswered (§13.3.6)."""
    leader = ctl.context.partition_leadership_info[tp].leader_and_isr.leader
    if kind == ElectionType.PREFERRED:
        return admin_decisions.needs_preferred_election(leader, ctl.context.partition_replica_assignment(tp))
    return admin_decisions.needs_unclean_election(leader, ctl.context.live_broker_ids)


def on_replica_election(
    ctl: LeaderElectionPort,
    partitions: Iterable[TopicPartition],
    kind: ElectionType,
    trigger: ElectionTrigger,
) -> dict[TopicPartition, Outcome]:
    partitions = list(partitions)
    ctl.log.info(
        "Starting replica leader election (%s) for partitions %s triggered by %s",
        kind.value,
        tps(partitions),
        trigger.value,
    )
    admin = trigger == ElectionTrigger.ADMIN_CLIENT_TRIGGERED
    try:
        strategy: el.PartitionLeaderElectionStrategy = (
            el.PreferredReplicaPartitionLeaderElectionStrategy()
            if kind == ElectionType.PREFERRED
            else el.OfflinePartitionLeaderElectionStrategy(allow_unclean=admin)
        )
        results = ctl.partition_state_machine.handle_state_changes(
            partitions, PartitionState.OnlinePartition, strategy
        )
        if not admin:
            for tp, outcome in results.items():
                if isinstance(outcome, ControllerMovedError):
                    raise outcome
                if isinstance(outcome, Exception):
                    ctl.log.error(
                        "Error completing replica leader election (%s) for partition %s: %s",
                        kind.value,
                        tp_str(tp),
                        outcome,
                    )
        return results
    finally:
        if not admin:
            remove_partitions_from_preferred_replica_election(
                ctl, partitions, trigger == ElectionTrigger.AUTO_TRIGGERED
            )


def remove_partitions_from_preferred_replica_election(
    ctl: LeaderElectionPort, partitions: list[TopicPartition], auto: bool
) -> None:
    ctx = ctl.context
    for tp in partitions:
        info = ctx.partition_leadership_info.get(tp)
        replicas = ctx.partition_replica_assignment(tp)
        if info is None or not replicas:
            continue
        leader, preferred = info.leader_and_isr.leader, replicas[0]
        if leader == preferred:
            ctl.log.info(
                "Partition %s completed preferred replica leader election. New leader is %d",
                tp_str(tp),
                preferred,
            )
        else:
            ctl.log.warning(
                "Partition %s failed to complete preferred replica leader election to %d. Leader is still %d",
                tp_str(tp),
                preferred,
                leader,
            )
    if not auto:
        zkc.delete_recursive(ctl.zk, zd.PREFERRED_REPLICA_ELECTION, ctx.epoch_zk_version)
        ctl.enqueue(ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED))


def fetch_pending_preferred_replica_elections(ctl: LeaderElectionPort) -> list[TopicPartition]:
    ctx = ctl.context
    undergoing = zkc.get_preferred_replica_election(ctl.zk)
    completed: list[TopicPartition] = []
    for tp in undergoing:
        replicas = ctx.partition_replica_assignment(tp)
        info = ctx.partition_leadership_info.get(tp)
        if not replicas or (info is not None and info.leader_and_isr.leader == replicas[0]):
            completed.append(tp)
    pending_ignoring_deletion = [tp for tp in undergoing if tp not in completed]
    skipped = [
        tp
        for tp in pending_ignoring_deletion
        if ctl.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0])
    ]
    pending = [tp for tp in pending_ignoring_deletion if tp not in skipped]
    ctl.log.info("Partitions undergoing preferred replica election: %s", tps(undergoing))
    ctl.log.info("Partitions that completed preferred replica election: %s", tps(completed))
    ctl.log.info("Skipping preferred replica election for partitions due to topic deletion: %s", tps(skipped))
    ctl.log.info("Resuming preferred replica election for partitions: %s", tps(pending))
    return pending


# ---- auto rebalance ---------------------------------------------------------------------------
def process_auto_preferred_replica_leader_election(ctl: LeaderElectionPort) -> None:
    if not ctl.is_active:
        return
    try:
        ctl.log.info("Processing automatic preferred replica leader election")
        check_and_trigger_auto_leader_rebalance(ctl)
    finally:
        ctl.emit(
            [
                ScheduleEvent(
                    "auto-leader-rebalance-task",
                    ctl.config.leader_imbalance_check_interval_seconds * 1000,
                    AutoPreferredReplicaLeaderElection(),
                )
            ]
        )


def check_and_trigger_auto_leader_rebalance(ctl: LeaderElectionPort) -> None:
    ctx = ctl.context
    tdm = ctl.topic_deletion_manager
    assignments = {
        tp: ctx.partition_replica_assignment(tp)
        for tp in ctx.all_partitions()
        if not tdm.is_topic_queued_up_for_deletion(tp[0])
    }
    leaders = {tp: info.leader_and_isr.leader for tp, info in ctx.partition_leadership_info.items()}
    imbalanced = rebalance.imbalanced_partitions(
        assignments, leaders, ctl.config.leader_imbalance_per_broker_percentage
    )
    candidates = rebalance.auto_rebalance_candidates(
        imbalanced,
        ctx.is_replica_online,
        bool(ctx.partitions_being_reassigned),
        tdm.is_topic_queued_up_for_deletion,
        ctx.all_topics,
    )
    for partitions in candidates.values():
        on_replica_election(ctl, partitions, ElectionType.PREFERRED, ElectionTrigger.AUTO_TRIGGERED)


# ---- unclean leader election enable ------------------------------------------------------------
def process_unclean_leader_election_enable(ctl: LeaderElectionPort) -> None:
    if not ctl.is_active:
        return
    ctl.log.info("Unclean leader election has been enabled by default")
    ctl.partition_state_machine.trigger_online_partition_state_change()


def process_topic_unclean_leader_election_enable(ctl: LeaderElectionPort, topic: str) -> None:
    if not ctl.is_active:
        return
    ctl.log.info("Unclean leader election has been enabled for topic %s", topic)
    ctl.partition_state_machine.trigger_online_partition_state_change(topic)
