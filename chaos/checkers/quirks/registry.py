"""The quirk registry: what Kafka 2.5.1 itself does that breaks a naive invariant, as data
(decisions ring, pure).

Each :class:`Quirk` names the behaviour, the Kafka 2.5.1 source lines that make it so, the chaos
run that showed it, the checkers it applies to and a pure recogniser over the run's timeline and
final state that returns the items it explains. :mod:`chaos.checkers.judge` subtracts them from
the naive findings in one place; verdicts report them under ``excused``. The chaos README's
table is generated from this list (``python -m chaos quirks --markdown``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chaos.checkers.findings import RunInputs
from chaos.checkers.quirks import (
    announcement,
    brokers,
    cancellation,
    deadlock,
    deletion,
    failover_loop,
    preferred,
    reassignment,
    stale_leader,
    stalled,
)
from chaos.checkers.quirks.recognition import Recognition

__all__ = ["QUIRKS", "Quirk", "Recognition", "markdown_table"]


@dataclass(frozen=True)
class Quirk:
    name: str
    behaviour: str
    kafka_source: tuple[str, ...]
    seen_in: str
    checkers: tuple[str, ...]
    recognise: Callable[[RunInputs], Recognition]


KC = "KafkaController.scala@2.5.1"
TDM = "TopicDeletionManager.scala@2.5.1"
RSM = "ReplicaStateMachine.scala@2.5.1"
PSM = "PartitionStateMachine.scala@2.5.1"
DELETION_CHECKERS = ("deletions_completed", "admin_znodes_cleaned")
LIVENESS_CHECKERS = (
    "controller_elected",
    "partitions_have_leaders",
    "reassignments_completed",
    "cancellations_reverted",
    "deletions_completed",
    "admin_znodes_cleaned",
    "metadata_agrees_with_zookeeper",
    "dead_brokers_leave_the_isr",
)

#: Every quirk, in the order the judge applies them (the first that explains an item claims it).
QUIRKS: tuple[Quirk, ...] = (
    Quirk(
        "reassignment_stranded_by_deletion",
        "A topic deleted while one of its partitions is being reassigned leaves that partition's "
        "`/admin/reassign_partitions` entry until the next controller failover: the first deletion "
        "request is not halted, a later halt is lifted when a replica's broker registers, and nothing "
        "but completion or a failover removes an entry.",
        (
            f"{KC} L1510-1518 processTopicDeletion",
            f"{TDM} L170-177 markTopicIneligibleForDeletion, L121-126, L221-225",
            f"{KC} L370-378 onBrokerStartup; {TDM} L134-142 resumeDeletionForTopics",
            f"{TDM} L240-250 completeDeleteTopic; ControllerContext.scala@2.5.1 L276-283",
            f"{KC} L918-928 removePartitionFromReassigningPartitions",
            f"{KC} L775-782, L1527-1551 (failover)",
        ),
        "partition seed 2001 (campaign 2000); zk-session seed 2013",
        ("admin_znodes_cleaned",),
        reassignment.stranded,
    ),
    Quirk(
        "stranded_reassignment_halts_deleting_the_name_again",
        "Such a stranded entry's partition also stays among the controller's reassignments, which "
        "the topic's deletion does not clear: a topic created again under that name and deleted "
        'is marked ineligible for deletion ("topic reassignment in progress") until the next '
        "controller failover.",
        (
            f"{KC} L1507-1515 processTopicDeletion (partitionsBeingReassigned.map(_.topic))",
            f"{TDM} L240-250 completeDeleteTopic; ControllerContext.scala@2.5.1 L276-283 removeTopic",
        ),
        "partition seed 2684 (simulated, +sim3)",
        DELETION_CHECKERS,
        reassignment.stranded_blocks_deletion,
    ),
    Quirk(
        "deletion_request_dropped_before_topic_known",
        "A deletion request for a topic whose creation the controller has not processed yet is "
        'dropped ("Ignoring request to delete non-existing topics"): a TopicDeletion event already '
        "queued runs before the TopicChange event, and the topic lives on.",
        (f"{KC} L1496-1505 processTopicDeletion", f"{KC} processTopicChange (setAllTopics)"),
        "process seed 2062",
        ("deletions_completed",),
        deletion.dropped,
    ),
    Quirk(
        "deleted_topic_kept_by_absent_broker",
        "A broker unregistered while a topic was deleted (its session expired and it registered "
        "again without a restart) keeps the topic in its metadata cache: the deletion's "
        "UpdateMetadata (leader -2) went only to live brokers, and a returning broker is sent the "
        "states of existing partitions only. The same when the broker was registered during the "
        "deletion but the notice still waited in the controller's queue for it (a cut link) when "
        "its session ended: the controller drops a departed broker's queue.",
        (
            "MetadataCache.scala@2.5.1 L295-320 updateMetadata",
            f"{KC} L352-360 onBrokerStartup",
            f"{KC} L1383-1385 processBrokerChange (removeBroker); "
            "ControllerChannelManager.scala@2.5.1 L184-196 removeExistingBroker (messageQueue.clear)",
        ),
        "zk-session seed 2018; partition seed 4001",
        ("metadata_agrees_with_zookeeper",),
        brokers.missed_deletion,
    ),
    Quirk(
        "deleted_topic_kept_when_its_notice_died_with_the_controller",
        "A broker the controller could not reach in time (a cut or slow link) while a topic was "
        "deleted keeps the topic in its metadata cache when that controller is replaced first: the "
        "deletion's UpdateMetadata (leader -2) waits in the old controller's channel and dies with "
        "it, and the next controller's failover UpdateMetadata names existing partitions only. The "
        "cache drops a topic partition by partition: a later topic of the name and its deletion "
        "remove only the partitions it had.",
        (
            f"{TDM} L259-274 onTopicDeletion (client.sendMetadataUpdate)",
            f"{KC} L279-314 onControllerResignation (controllerChannelManager.shutdown)",
            f"{KC} L217-243 onControllerFailover (sendUpdateMetadataRequest, Set.empty)",
            "MetadataCache.scala@2.5.1 L295-320 updateMetadata",
        ),
        "partition seed 2606, admin-api seed 270 (simulated, +sim3); partition seed 18319 (format 4)",
        ("metadata_agrees_with_zookeeper",),
        brokers.deletion_notice_lost,
    ),
    Quirk(
        "new_partition_unannounced_after_a_lost_reply",
        "A new partition whose state znode the controller created just as its ZooKeeper connection "
        "dropped, so that the reply was lost, is never announced: the create is sent again once "
        "connected, answered NODEEXISTS, and any answer but OK counts as a failed NewPartition → "
        "OnlinePartition change (no LeaderAndIsr, no UpdateMetadata). Later broker changes try again "
        "and fail the same way; only a controller failover reads the state znode. Recognised only "
        "where the log shows the reconnect (the session's request counter restarted, as kazoo's does) "
        "and, for the last n records of the old connection, n creates failing with NODEEXISTS one "
        "after the other on the new one.",
        (
            f"{PSM} L273-318 initializeLeaderAndIsrForPartitions (L314 logFailedStateChange)",
            "KafkaZkClient.scala@2.5.1 L1691-1719 retryRequestsUntilConnected",
            f"{PSM} L56-59 triggerOnlinePartitionStateChange",
        ),
        "partition seed 3001 (100-run Spark cluster campaign, a worker killed); admin-api seed 3855"
        " (three creates in flight, the broker's own ISR write first on the new connection)",
        ("metadata_agrees_with_zookeeper",),
        announcement.unannounced_new_partitions,
    ),
    Quirk(
        "stale_replica_outlives_its_deleted_topic",
        "A reassignment resumed while its topic is being deleted (a target's broker started again) "
        "sends a LeaderAndIsr with a new leader epoch to every replica, re-creating one whose "
        "deletion had already succeeded; the deletion does not delete it again, and when a topic "
        "of that name is created anew that broker refuses its LeaderAndIsr (leader epochs restart "
        "below the stale one), so a reassignment of the new topic onto it never completes.",
        (
            f"{KC} L365-390 onBrokerStartup, maybeResumeReassignments (no deletion check)",
            f"{KC} L555 onPartitionReassignment, L873 updateLeaderEpochAndSendRequest",
            "ReplicaManager.scala@2.5.1 L1212-1229 becomeLeaderOrFollower (a leader epoch not above"
            " the current one: Errors.STALE_CONTROLLER_EPOCH)",
        ),
        "process seed 177 (simulated, +sim3)",
        ("reassignments_completed", "admin_znodes_cleaned"),
        brokers.stale_replica_of_deleted_topic,
    ),
    Quirk(
        "unanswered_stop_replica_may_have_deleted",
        "A StopReplica(delete) whose answer the request journal never saw (the sending controller's "
        "connection closed first) may have been applied: the broker then re-creates the partition "
        "for the next LeaderAndIsr, so one at the same leader epoch is not provably stale.",
        (
            "ReplicaManager.scala@2.5.1 L326-345 stopReplica(delete)",
            "ReplicaManager.scala@2.5.1 L1199-1236 becomeLeaderOrFollower",
        ),
        "links seed 2030",
        ("brokers_apply_requests_in_epoch_order",),
        brokers.unanswered_stop_replica,
    ),
    Quirk(
        "isr_orphaned_by_failed_reassignment_election",
        "A reassignment completed on a stale ISR read whose leader election then failed: removing "
        "the old replicas keeps a one-member ISR (leader -1) that the new replicas do not include, "
        "and the partition stays offline.",
        (f"{KC} L630-690 onPartitionReassignment (B3, B4, B6)", f"{RSM} L317-333 removeReplicasFromIsr"),
        "partition seed 2156",
        ("partition_states_valid",),
        reassignment.orphaned,
    ),
    Quirk(
        "leaderless_after_reassignment",
        "A reassignment completed while its target's election failed leaves the partition leaderless "
        "and still online in the controller, so a returning broker does not elect it; a broker "
        "failure or a failover does.",
        (
            f"{KC} L630-690 onPartitionReassignment",
            f"{KC} L464-475 onReplicasBecomeOffline",
            f"{PSM} triggerOnlinePartitionStateChange",
        ),
        "zk-session seed 2318",
        ("partitions_have_leaders",),
        reassignment.leaderless,
    ),
    Quirk(
        "reassignment_abandoned_without_state",
        "A reassignment given up after it was written into the topic znode (the partition had no "
        "state yet: updateLeaderEpoch throws; through the znode the entry is removed as failed, "
        "through AlterPartitionReassignments the answer is -1) stays mid-reassignment until a "
        "failover, or until a target broker registers once the partition can have a state (the "
        "resumption throws again while its topic is queued for deletion or the broker is not a "
        "replica).",
        (
            f"{KC} L607-629 updateCurrentReassignment, L630-690 (U1, A1)",
            f"{KC} L1047-1080 updateLeaderEpoch, L1015-1045 maybeTriggerPartitionReassignment",
            f"{KC} L1527-1551 processZkPartitionReassignment, L1553-1591 processApiPartitionReassignment",
            f"{KC} L347-388 onBrokerStartup, maybeResumeReassignments",
        ),
        "process seed 2307",
        ("reassignments_completed",),
        reassignment.abandoned,
    ),
    Quirk(
        "isr_keeps_a_replica_never_started",
        "The adding replicas of such a given-up reassignment are never started (A2 never ran; a "
        "broker's registration cannot move a NonExistentReplica online), yet they join the ISR "
        "when the partition is brought online with every live replica. A later reassignment that "
        "removes one asks for an invalid NonExistentReplica → OfflineReplica transition, which "
        "is only logged, so it stays in the ISR outside the replicas; a failover restarts the "
        "assigned replicas only, so one already dropped from the replicas stays for good.",
        (
            f"{KC} L630-690 onPartitionReassignment (A2 startNewReplicasForReassignedPartition; B4)",
            f"{RSM} L447-460 validPreviousStates, L428-433 logInvalidTransition",
            f"{RSM} L57-75 initializeReplicaState (a failover starts every replica)",
            f"{PSM} L273-300 initializeLeaderAndIsrForPartitions (ISR: the live replicas)",
        ),
        "admin-api seed 9773, 49931 (simulated, format 4)",
        ("partition_states_valid",),
        reassignment.never_started_kept_in_isr,
    ),
    Quirk(
        "deletion_stalled_by_abandoned_reassignment",
        "A topic with such a given-up reassignment cannot be deleted until a failover: its adding "
        "replicas never became NewReplica, so the deletion asks for invalid replica transitions, "
        "which are only logged.",
        (f"{KC} L630-690 (A2 never ran, B1)", f"{RSM} L158-161, L428-440 doHandleStateChanges"),
        "process seed 2542",
        DELETION_CHECKERS,
        reassignment.poisoned,
    ),
    Quirk(
        "deletion_resumption_lost_to_failed_startup",
        "A broker's registration should resume the deletions halted for its replicas, but "
        "onBrokerStartup first resumes the reassignments targeting it; one given up without a state "
        "throws again, the event ends there, and those deletions stay halted until another broker "
        "hosting one of their replicas registers or the controller fails over. A reassignment of a "
        "partition without state that moves nothing (a reorder, a cancellation, its own replicas) "
        "throws too, in phase B at B3, and stays among the reassignments the same way.",
        (
            f"{KC} L347-380 onBrokerStartup (L367-369 before L372-378)",
            f"{KC} L382-388 maybeResumeReassignments",
        ),
        "admin-api seed 918 (simulated); admin-api seed 43037, process seed 52676 (format 4)",
        DELETION_CHECKERS,
        reassignment.lost_resumption,
    ),
    Quirk(
        "deletion_halt_outlives_topic",
        "A topic name whose earlier topic's deletion was halted (a replica's broker died after "
        "answering, or a change under /admin/delete_topics found one of its partitions being "
        "reassigned) and still completed keeps the halt: the next topic of that name is not deleted "
        "until a broker hosting one of its replicas registers again or the controller fails over. A "
        "partition whose reassignment was under way when its topic was deleted stays in the "
        "controller's reassigning set, so every later change under /admin/delete_topics halts the "
        "new topic's deletion again.",
        (
            f"{TDM} L168-176 markTopicIneligibleForDeletion, L134-142, L240-250",
            f"{KC} L464-487 onReplicasBecomeOffline",
            f"{KC} L1495-1525 processTopicDeletion",
            "ControllerContext.scala@2.5.1 L86 partitionsBeingReassigned, L276-283 removeTopic",
        ),
        "partition seed 2261; partition seed 2534 (simulated, format 4)",
        DELETION_CHECKERS,
        deletion.held,
    ),
    Quirk(
        "deletion_halted_by_failed_replica_deletion",
        "A StopReplica(delete) answered with an error (e.g. STALE_BROKER_EPOCH before the controller "
        "saw the broker's new registration) halts the topic's deletion until a broker hosting one of "
        "its replicas registers again or the controller fails over. For STALE_BROKER_EPOCH the broker "
        "change that made the request stale was queued before the answer and is handled first: the "
        "registrations it reads have had their startup (its resumption found the deletion still under "
        "way) and lift nothing — the halt waits for a later one.",
        (
            f"{KC} L1207-1227 TopicDeletionStopReplicaResponseReceived",
            f"{TDM} L150-165 failReplicaDeletion",
            f"{KC} L1361-1400 processBrokerChange (bounced: onBrokerFailure, then onBrokerStartup)",
            f"{TDM} L320-359 resumeDeletions, L186-191 isTopicDeletionInProgress",
        ),
        "partition seed 2391; links seed 38082 (simulated, formats 4 and 5)",
        DELETION_CHECKERS,
        deletion.failed_replica_deletion,
    ),
    Quirk(
        "reassignment_deadlocked_by_deletion",
        "A topic deleted while one of its partitions is being reassigned: the first request is not "
        "halted, the deletion leaves the partition leaderless (a topic queued for deletion is never "
        'elected), a later change under `/admin/delete_topics` or a failover halts it for "topic '
        "reassignment in progress\", and only a replica's broker registering lifts that halt — after "
        "the last such registration the topic, the reassignment and (until a failover) its "
        "`/admin/reassign_partitions` entry stay.",
        (
            f"{KC} L1496-1525 processTopicDeletion",
            f"{TDM} L170-177, L121-126, L221-225, L259-318, L134-142",
            f"{PSM} L66-76 triggerOnlineStateChangeForPartitions",
            f"{KC} L804-814 isReassignmentComplete, L555-557, L784-795, L918-928, L645-674",
        ),
        "partition seed 2651 (campaign 2600); links seed 282 (simulated, format 4)",
        ("reassignments_completed", *DELETION_CHECKERS),
        deadlock.deadlocked,
    ),
    Quirk(
        "reassignment_waits_for_a_stalled_deletion",
        "A partition of a topic queued for deletion is never elected, so one that is mid-reassignment "
        "without a live leader cannot get its targets into the ISR: its reassignment (and its "
        "`/admin/reassign_partitions` entry) waits as long as the deletion does — here a deletion "
        "another quirk of this table explains (halted, its resumption lost, poisoned, deadlocked).",
        (
            f"{PSM} L56-75 triggerOnlinePartitionStateChange (topics queued for deletion skipped)",
            f"{TDM} L259-318 onTopicDeletion, onPartitionDeletion (replicas offline first)",
            f"{KC} L804-814 isReassignmentComplete",
        ),
        "admin-api seed 35885 (simulated, format 5)",
        ("reassignments_completed", "admin_znodes_cleaned"),
        stalled.waiting_for_stalled_deletion,
    ),
    Quirk(
        "cancellation_keeps_reassignment_order",
        "A cancelled reassignment (AlterPartitionReassignments with null replicas) goes back to the "
        "original replicas in the order they have in the reassignment's full replica list "
        "(`RS − adding`), not the order they had before: `[1,2]` → `[3,2]` (RS `[3,2,1]`) cancelled "
        "ends on `[2,1]`, so the preferred leader changes.",
        (
            f"{KC} L1617-1628 maybeBuildReassignment",
            "ControllerContext.scala@2.5.1 L44 originReplicas, L51-58 reassignTo",
            f"{KC} L596-602 updateCurrentReassignment (comment)",
        ),
        "the real run of tests/chaos/checkers/test_real_cancellation.py; Kafka's "
        "ReassignPartitionsClusterTest.shouldBeAbleToCancelThroughApi@2.5.1 L980-1002 compares sorted lists",
        ("cancellations_reverted",),
        cancellation.reordered,
    ),
    Quirk(
        "isr_keeps_replicas_a_cancellation_dropped",
        "A cancellation (or a new target replacing a pending reassignment) writes the topic znode "
        "with the remaining replicas first and only then takes each dropped adding replica out of "
        "the ISR, one state write each: meanwhile the ISR holds replicas the topic no longer lists "
        "(and the leader, which still counts a dropped replica among the replicas of its last "
        "LeaderAndIsr, may expand the ISR meanwhile: adding such a replica back when it has caught "
        "up, or another one while such a replica is still in it, just before the controller's removal), "
        "and a one-member ISR of a dropped replica is kept as it is (leader -1), outside the replicas, "
        "also through later writes that only bump its leader epoch (a later reassignment's A1). With "
        "none of that ISR a replica, nothing can be elected, so a reassignment still under way "
        "never completes and keeps its `/admin/reassign_partitions` entry. When the dropped replica "
        "led, the partition stays leaderless (still online to the controller) until a broker "
        "departure or a failover elects it, and a reassignment under way waits with it.",
        (
            f"{KC} L607-629 updateCurrentReassignment (U1 at L613-614 before U3 at L620-622)",
            f"{KC} L838-847 stopRemovedReplicasOfReassignedPartition",
            f"{RSM} L214-236 OfflineReplica, L317-335 doRemoveReplicasFromIsr",
            f"{KC} L1003-1040 updateLeaderEpoch (newEpochAndZkVersion: leader and ISR kept)",
            f"{KC} L464-487 onReplicasBecomeOffline (partitions without a live leader elected)",
            "Partition.scala@2.5.1 L647-662 updateAssignmentAndIsr, L679-700 maybeExpandIsr, "
            "L1180-1184 expandIsr (the leader's replicas until its next LeaderAndIsr)",
        ),
        "admin-api seed 4306 (campaign 4300, drawn before the admin-API ops moved to their own "
        "processes); composed seed 3160, partition seed 3727, process seed 19166 (simulated, format 4); "
        "admin-api seed 3843, zk-session seed 3991 (a leader's expansion between the two writes)",
        (
            "partition_states_valid",
            "partitions_have_leaders",
            "reassignments_completed",
            "admin_znodes_cleaned",
        ),
        cancellation.stopped_adding_replicas,
    ),
    Quirk(
        "preferred_election_stuck_on_partition_without_state",
        "A `/admin/preferred_replica_election` naming a partition that has no leader yet (its topic "
        "was created while the partition's replicas were offline, so it has no state znode) makes "
        "the election event throw before the `finally` that deletes the znode: it stays until a "
        "controller failover. A partition of a topic deleted while it was being reassigned ends so "
        "too: an ISR change handled after the deletion completes that reassignment on an empty "
        "assignment, which phase B stores (B2) before it throws on the missing leadership (B3).",
        (
            f"{KC} L1747-1759 processReplicaLeaderElection (partitionLeadershipInfo(partition))",
            "ControllerContext.scala@2.5.1 L85 partitionLeadershipInfo (mutable.Map.apply)",
            f"{KC} L683-723 onReplicaElection (finally)",
            f"{KC} L960-977 removePartitionsFromPreferredReplicaElection",
            f"{KC} L751-769 fetchPendingPreferredReplicaElections (failover)",
            f"{KC} L1630-1642 processPartitionReassignmentIsrChange, L804-814 isReassignmentComplete",
            f"{KC} L630-690 onPartitionReassignment (B2 before B3)",
            f"{KC} L816-840 moveReassignedPartitionLeaderIfRequired (partitionLeadershipInfo.apply)",
        ),
        "admin-api seed 4203 (campaign 4200, drawn before the admin-API ops moved to their own processes); "
        "admin-api seed 12521, 84653 (simulated, format 4)",
        ("admin_znodes_cleaned",),
        preferred.stuck_election,
    ),
    Quirk(
        "stale_leader_isr_write_lands_on_recreated_topic",
        "A partition leader writes its ISR changes to ZooKeeper itself, fenced only by the data "
        "version it cached. A broker that never learnt it lost a partition (cut off or expired when "
        "its replica was taken away: StopReplica goes to live brokers only, and a returning broker is "
        "told only of the partitions it is a replica of) keeps leading it in memory and shrinks its "
        "ISR; when the topic was deleted and created again, the new state znode starts at version 0 "
        "and a write that expected 0 lands: the new topic's state then names the old leader, its old "
        "leader and controller epochs and an ISR outside the replicas, until the next election.",
        (
            "Partition.scala@2.5.1 L836-870 maybeShrinkIsr, L1180-1190 expandIsr/shrinkIsr (cached version)",
            "Partition.scala@2.5.1 L52-86 ZkPartitionStateStore",
            "ReplicationUtils.scala@2.5.1 L27-36 updateLeaderAndIsr",
            "KafkaZkClient.scala@2.5.1 L733-760 conditionalUpdatePath (version only)",
            "ControllerChannelManager.scala@2.5.1 L81-92 sendRequest (offline broker: not sent)",
            f"{KC} L838-847 stopRemovedReplicasOfReassignedPartition; {KC} L350-362 onBrokerStartup",
        ),
        "composed seed 11807 (simulated, formats 4 and 5)",
        ("controller_writes_fenced", "no_write_after_epoch_superseded", "partition_states_valid"),
        stale_leader.stale_leader_isr_write,
    ),
    Quirk(
        "controller_failover_loops_on_stateless_reassignment",
        "A partition mid-reassignment in its topic znode without a state znode (such a given-up "
        "reassignment) makes every controller failover throw: the failover resumes it without "
        "error handling, updateLeaderEpoch finds no state, and the new controller resigns and "
        "deletes /controller. When the partition's topic is queued for deletion or none of its "
        "replicas is live, nothing changes that, so controllers are elected and resign for good "
        "and no liveness property can hold; the safety checkers still judge the run.",
        (
            f"{KC} L217-260 onControllerFailover (L250 initializePartitionReassignments)",
            f"{KC} L382-388 maybeResumeReassignments, L775-782 initializePartitionReassignments",
            f"{KC} L1003-1040 updateLeaderEpoch (L1035 IllegalStateException)",
            f"{KC} L1297-1321 triggerControllerMove, L1323-1359 elect (L1354-1357)",
            f"{PSM} L56-75 triggerOnlinePartitionStateChange (topics queued for deletion skipped)",
        ),
        "composed seed 52768 (simulated, format 4: 17,206 elections by the run's end, 35.5 s virtual)",
        LIVENESS_CHECKERS,
        failover_loop.failover_loop,
    ),
)


def markdown_table() -> str:
    """The README's quirk table, one row per quirk (the README must hold exactly this)."""
    rows = [
        "| quirk | Kafka 2.5.1 behaviour | Kafka source | seen in | checkers |",
        "|---|---|---|---|---|",
    ]
    for q in QUIRKS:
        source = "; ".join(q.kafka_source)
        checkers = ", ".join(f"`{c}`" for c in q.checkers)
        rows.append(f"| `{q.name}` | {q.behaviour} | {source} | {q.seen_in} | {checkers} |")
    return "\n".join(rows) + "\n"
