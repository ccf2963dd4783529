"""What the differential suite normalises, and why Kafka 2.5.1 leaves it open (conformance ring, pure data).

:data:`RULES` is the one list of normalisation rules: :mod:`conformance.diff.normalise`,
:mod:`conformance.diff.relative`, :mod:`conformance.diff.views` and the runner apply them, and
``conformance/README.md`` prints the same table (a test keeps the two equal). Each rule names what
is not compared as observed, why Kafka leaves it open, and the Kafka 2.5.1 source that makes it so.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RULES", "Rule"]


@dataclass(frozen=True)
class Rule:
    name: str
    what: str
    why: str
    source: str


RULES: tuple[Rule, ...] = (
    Rule(
        "timestamps",
        "`timestamp` of /controller and /brokers/ids/<id>, the `id` of /cluster/id",
        "wall-clock milliseconds and a random UUID",
        "ZkData.scala@2.5.1 L52-60 (ControllerZNode), L105-150 (BrokerIdZNode), L699-711 (ClusterIdZNode)",
    ),
    Rule(
        "ports",
        "the port of every endpoint in /brokers/ids/<id>, UpdateMetadata and Metadata answers",
        "listeners bind port 0 and register the port the OS chose",
        "KafkaServer.createBrokerInfo@2.5.1 (advertised port 0 replaced by the bound port)",
    ),
    Rule(
        "broker epochs",
        "a broker epoch (the czxid of its registration) is written as <id>#<n>: its n-th registration"
        " in the scenario",
        "zxids depend on every write of the ZooKeeper server, other scenarios' included",
        "KafkaZkClient.registerBroker@2.5.1 L93-98 (broker epoch = czxid)",
    ),
    Rule(
        "sessions",
        "ZooKeeper session ids are replaced by the node (or the harness) that owns them",
        "session ids are assigned by the server",
        "ZooKeeper SessionTrackerImpl.initializeNextSessionId@release-3.8.0 (seeded from the clock)",
    ),
    Rule(
        "ISR as a set",
        "every ISR (state znodes, LeaderAndIsr, UpdateMetadata, Metadata) and every offline-replica"
        " list is compared sorted",
        "Kafka keeps the ISR in a Set[Int]; its written order is the set's iteration order"
        " (insertion order up to 4 members, hash order above) and followers join in the order their"
        " fetches catch up; elections iterate the assignment, never the ISR",
        "Partition.scala@2.5.1 L212 (inSyncReplicaIds = Set.empty[Int]), L1180-1190 (expandIsr/shrinkIsr"
        " take a Set); Election.scala@2.5.1 (the leader is assignment.find(...))",
    ),
    Rule(
        "ISR joins",
        "a run of consecutive ISR expansions one leader writes to one state znode (same leader and"
        " leader epoch) is compared by its number of writes and its final value",
        "which of two followers that start fetching together joins first is decided by fetch timing",
        "Partition.scala@2.5.1 L679 maybeExpandIsr (one write per follower, on the fetch that catches up)",
    ),
    Rule(
        "ISR-change notifications",
        "the /isr_change_notification/isr_change_<seq> znodes are compared as the union of the"
        " partitions each broker notified in the step (their number, sequence numbers and batching"
        " are not compared); their deletion by the controller is compared by its form",
        "a leader propagates pending ISR changes every 2500 ms, after a 5000 ms blackout or a 60 s"
        " interval, so the grouping of changes into notifications is timing",
        "ReplicaManager.maybePropagateIsrChanges@2.5.1 L272-283",
    ),
    Rule(
        "UpdateMetadata runs",
        "consecutive UpdateMetadata entries for one partition at one broker (no LeaderAndIsr or"
        " StopReplica for it in between) are compared by the last one",
        "how many ISR-change notifications a change is split into (above) decides how many"
        " UpdateMetadata requests carry its intermediate states; the last one is what the broker keeps",
        "KafkaController.processIsrChangeNotification@2.5.1 L1665-1684",
    ),
    Rule(
        "requests to a paused broker",
        "controller requests sent to a broker while it is paused are compared in the step that resumes"
        " it (in the order they were sent); those of a controller that is gone by then, or was"
        " re-elected since (a higher controller epoch on the same node), are not compared",
        "the controller sends a broker one request at a time and waits for its answer, so only the first"
        " request reaches a paused broker and the others wait in the controller's queue: which one is"
        " first, and in which step the others arrive, is timing; a controller that dies loses its queue",
        "ControllerChannelManager.scala@2.5.1 L212-260 (RequestSendThread.doWork: take, sendAndReceive)",
    ),
    Rule(
        "requests to a broker shutting down",
        "in the step of a broker's controlled shutdown, the controller requests sent to that broker are"
        " not compared (the elections, ISR writes, its answer and every request to the others are)",
        "the broker stops serving requests once its ControlledShutdown is answered, and the controller"
        " sends it one request at a time, each after the previous one's answer: how many of the requests"
        " queued for it get through before it stops is timing",
        "KafkaServer.scala@2.5.1 L597-617 (shutdown: controlledShutdown, then stopProcessingRequests)",
    ),
    Rule(
        "requests of a controller shutting down",
        "in the step of the controller's own controlled shutdown, the controller requests it sent are"
        " not compared (its successor's requests, every ZooKeeper write and the metadata are)",
        "after its ControlledShutdown is answered the node stops its controller last, closing the"
        " channels to the brokers: how many of the requests it queued get out, and whether their"
        " answers reach it, is timing",
        "KafkaServer.scala@2.5.1 L646-647 (kafkaController.shutdown); KafkaController.scala@2.5.1"
        " L170-173 (shutdown: onControllerResignation closes the channel manager)",
    ),
    Rule(
        "answers after a controller shutting down",
        "in the step of the controller's own controlled shutdown, its successor's LeaderAndIsr answers"
        " for a partition whose state the departing controller wrote in that step are compared as"
        " '0 or 11', not as one of them (the requests themselves, and every other answer, are)",
        "the departing controller's own LeaderAndIsr for that state (rule above) may or may not have"
        " reached the broker; if it did, the successor's request carries a leader epoch the broker"
        " already holds and is answered STALE_CONTROLLER_EPOCH (11) for the partition, else 0",
        "ReplicaManager.scala@2.5.1 L1162-1236 (becomeLeaderOrFollower: a leader epoch not above the"
        " current one is answered Errors.STALE_CONTROLLER_EPOCH)",
    ),
    Rule(
        "live-broker lists",
        "the live-broker list of UpdateMetadata requests is compared as the sequence of its changes"
        " at each broker (a request that repeats the list last told adds nothing)",
        "every UpdateMetadata carries the full list, and how many UpdateMetadata an ISR change"
        " causes is timing (above)",
        "ControllerChannelManager.scala@2.5.1 L406-438 (addUpdateMetadataRequestForBrokers)",
    ),
    Rule(
        "relative zkVersions",
        "a partition state znode's data version (its writes, the tree, the zk_version of controller"
        " requests) is compared as the number of its writes since the step began",
        "the absolute value counts the writes of earlier steps, compared there one by one; a resumed"
        " leader's ISR race (below) may add two of them",
        "ReplicationUtils.scala@2.5.1 (conditional updates at the cached zkVersion)",
    ),
    Rule(
        "a resumed leader's ISR race",
        "in the step that resumes a paused node, a partition it led when the step began, whose"
        " leader, leader epoch and controller epoch the step leaves unchanged, which only that node"
        " wrote (ISR changes) and on which the controller did not act, is compared by its end state:"
        " its ISR writes count as their net effect (none when the ISR ends as it began, else one"
        " write of the end state) and the step's UpdateMetadata entries for it are not compared (a"
        " LeaderAndIsr that repeats its leader and leader epoch, a new controller's, is)",
        "after the pause the node's ISR-expiry timer and the followers' queued fetches are served in"
        " either order: the ISR may first shrink to the leader alone and re-expand one follower at a"
        " time, or only gain the followers that caught up; how many notifications and UpdateMetadata"
        " that makes is timing too",
        "ReplicaManager.scala@2.5.1 (isr-expiration every replica.lag.time.max.ms / 2);"
        " Partition.scala@2.5.1 L679 maybeExpandIsr",
    ),
    Rule(
        "a resumed broker's queued requests",
        "in the step that resumes a paused broker, the partition-state zk_version of a request to that"
        " broker that is not above the step's start (relative version 0 or less: built before the"
        " step) is compared only as 'built before the step'",
        "the controller builds a request from its cached state when it acts and the request waits for"
        " the paused broker; the cache takes a running leader's ISR writes only as it processes their"
        " ISR-change notifications, so how many of them a request built before the step had seen is"
        " timing (its leader, leader epoch, ISR and answer are still compared)",
        "ControllerChannelManager.scala@2.5.1 L369-386 (addLeaderAndIsrRequestForBrokers: the cached"
        " zkVersion); KafkaController.scala@2.5.1 L1665-1677 (processIsrChangeNotification →"
        " updateLeaderAndIsrCache)",
    ),
    Rule(
        "a departed controller's request to a resumed broker",
        "in the step that resumes a paused broker, the current controller's LeaderAndIsr answers for"
        " a partition to which a departed controller (or the same node's former incarnation) had"
        " sent the same leader epoch while the broker was paused are compared as '0 or 11'",
        "the departed controller's request waits in the paused broker's socket beside the new"
        " controller's, on another connection: which one the broker reads first is timing; if the"
        " departed one is first, the new request carries a leader epoch the broker already holds and"
        " is answered STALE_CONTROLLER_EPOCH (11) for the partition, else 0 (and the departed one is"
        " refused for its controller epoch)",
        "ReplicaManager.scala@2.5.1 L1162-1236 (becomeLeaderOrFollower: a leader epoch not above the"
        " current one is answered Errors.STALE_CONTROLLER_EPOCH); SocketServer.scala@2.5.1"
        " (a Processor per connection)",
    ),
    Rule(
        "a resumed leader's stale ISR write",
        "in the step that resumes a paused node (or ends its session's expiry), that node's failed"
        " conditional writes (BADVERSION) are not compared; its successful writes are",
        "a leader paused while the controller moved its partitions may write an ISR change at the"
        " zkVersion it cached before it reads the LeaderAndIsr that demotes it, or after: whether its"
        " ISR-expiry timer or that request is served first after the pause is timing, and ZooKeeper"
        " refuses the stale write either way",
        "Partition.scala@2.5.1 L1180-1202 (expandIsr / shrinkIsr at the cached zkVersion;"
        " maybeUpdateIsrAndVersion: a failed update leaves the ISR as it was)",
    ),
    Rule(
        "request batching",
        "controller requests are compared per destination broker and partition, in arrival order;"
        " which partitions share one request, their order inside it and the live-leader list are not"
        " compared (whether the partition's own leader is listed is)",
        "a batch holds what one controller event changed (timing decides which events coincide) and"
        " iterates Scala maps and sets in hash order",
        "ControllerChannelManager.scala@2.5.1 L573-595 (AbstractControllerBrokerRequestBatch)",
    ),
    Rule(
        "reassignment completion order",
        "the controller's rewrites of /admin/reassign_partitions, each dropping the partitions"
        " whose reassignment completed, are compared by the number of entries each leaves (their"
        " op, form and version are compared, and the entries left at the end of the step in the"
        " tree); in a topic znode's history, a run of consecutive controller rewrites that each"
        " complete one partition's reassignment (its target replicas set, its adding and removing"
        " entries gone, nothing else changed) is compared as one write: the set of partitions"
        " completed and the znode and version the last one leaves",
        "partitions reassigned together complete when their new replicas have caught up, in the"
        " order their fetches do, and each completion rewrites both znodes without its partition",
        "KafkaController.scala@2.5.1 L918-928 removePartitionFromReassigningPartitions,"
        " L850-858 updateReplicaAssignmentForPartition, L1630-1640"
        " processPartitionReassignmentIsrChange; Partition.scala@2.5.1 L679 maybeExpandIsr",
    ),
    Rule(
        "write order across znodes",
        "ZooKeeper writes are compared per znode path, in order; the interleaving of writes to"
        " different paths is not compared",
        "partitions of one event are iterated in hash order, and events that concern different"
        " partitions (StopReplica answers of several brokers, completions of several reassignments)"
        " are processed in the order their triggers arrive",
        "TopicDeletionManager.scala@2.5.1 L239-360; KafkaController.scala@2.5.1 L1207-1227",
    ),
    Rule(
        "null data",
        "null and empty znode data are the same",
        "the spec accepts either for data-less znodes (kazoo cannot send null in a multi)",
        "spec §11 'Null data'",
    ),
    Rule(
        "automatic placement",
        "a topic created with automatic placement is checked against the rack-unaware rule (some order"
        " of the live brokers and some replica shift reproduce its assignment exactly), then deleted in"
        " the same step; every broker id of its partitions is replaced by the replica's position in"
        " the partition's assignment, the broker-epoch label of a request about them by its"
        " destination's position alone (not which registration of that broker it named), the"
        " requests to brokers outside a partition's assignment are pooled as 'other', and the ISR"
        " changes of its deletion are compared without which position left first (op, version and"
        " epochs of each; leader and ISR size of the last)",
        "the start index and the replica shift are random (so which broker, with how many"
        " registrations behind it, holds a position is too), the broker order is the metadata"
        " cache's LongMap iteration order, and a deletion takes the replicas offline one broker id"
        " after another",
        "AdminUtils.scala@2.5.1 L125-146 (rand.nextInt); AdminManager.scala@2.5.1 L90;"
        " MetadataCache.scala@2.5.1 L190-191; ReplicaStateMachine.scala@2.5.1 L106-111"
        " (handleStateChanges: replicas.groupBy(_.replica), one broker after another)",
    ),
    Rule(
        "exit codes",
        "the exit code of a node stopped with SIGTERM is not compared (only that it exited)",
        "a JVM stopped by SIGTERM ends with 143 once its shutdown hook ran, a Python node with 0",
        "Kafka.scala@2.5.1 L80 (the kafka-shutdown-hook)",
    ),
)
