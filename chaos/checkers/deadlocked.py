"""Deletions and reassignments that Kafka 2.5.1 leaves waiting for each other (decisions ring, pure).

A topic whose partition is being reassigned is deleted at once on its *first* deletion request:
``processTopicDeletion`` (KafkaController.scala@2.5.1 L1496-1525) calls
``markTopicIneligibleForDeletion`` (L1510-1516) before ``enqueueTopicsForDeletion`` (L1518), and
the former only halts topics already queued (``topicsToBeDeleted & topics``,
TopicDeletionManager.scala@2.5.1 L170-177); the enqueue's ``resumeDeletions`` (L121-126,
L320-360) finds the topic eligible (L221-225) and ``onTopicDeletion`` → ``onPartitionDeletion``
(L259-318) moves the live replicas Offline → ReplicaDeletionStarted: the leader's OfflineReplica
writes leader -1 (the last ISR member stays), dead replicas become ReplicaDeletionIneligible. From
then on the partition has no leader, and none is ever elected: the partition state machine skips
topics queued for deletion (``triggerOnlineStateChangeForPartitions``,
PartitionStateMachine.scala@2.5.1 L66-76; likewise ``onReplicasBecomeOffline``, controlled
shutdown and the preferred elections). Its reassignment completes only when every target replica
is in the ISR (``isReassignmentComplete``, KafkaController L804-814) — which a leaderless ISR
never becomes.

Later controller events halt the deletion for "topic reassignment in progress" while the topic is
queued: any later ``TopicDeletion`` event — a child of ``/admin/delete_topics`` created or deleted,
for this topic or another (L1510-1516, now that the topic is in ``topicsToBeDeleted``), a resumed
reassignment (``onPartitionReassignment`` L555-557, from ``onBrokerStartup`` →
``maybeResumeReassignments`` L367-369, L382-388, which never looks at the deletion queue) and a
failover (``fetchTopicDeletionsInProgress`` L784-795, then ``initializePartitionReassignments``
L775-782). Only ``resumeDeletionForTopics`` (TopicDeletionManager L134-142) lifts the halt: when
a broker hosting one of the topic's replicas registers (``onBrokerStartup`` L370-378, after its
``maybeResumeReassignments``) or when one of its reassignments completes (L588), which cannot
happen. A halted topic is not deleted again (``resumeDeletions`` retries only eligible topics),
unless every replica is already ReplicaDeletionSuccessful (completion is checked first). So once a
replica deletion is left undone — e.g. a replica's broker was down when the deletion started
(ReplicaDeletionIneligible) and its registration moved the replica to OnlineReplica
(``onBrokerStartup`` L361-362) — and a halt came after the last such registration, the topic is
never deleted, its reassignment never completes and its ``/admin/reassign_partitions`` entry
stays (only completion removes it, L918-928; a new controller skips and removes it: L645-674).
In the meantime an ``onPartitionReassignment`` resumed by a registration asks for invalid
transitions (A2: an adding replica in ReplicaDeletionStarted → NewReplica), which
``doHandleStateChanges`` only logs and skips (ReplicaStateMachine.scala@2.5.1 L158-161, L428-440).

Seen in the chaos ``partition`` scenario, seed 2651: t0-1 [1, 2] → [3, 1] (adding 3, removing 2);
t0's deletion started at once (leader 2 → -1, ISR [2]; replica 1's broker down → Ineligible);
broker 1 registered again (replica 1 → OnlineReplica, the reassignment resumed, the halt lifted
while broker 3's replicas were still ReplicaDeletionStarted); t4's deletion request then halted t0
("topic reassignment in progress"), broker 3's StopReplica answers came after, and nothing lifted
the halt.

:func:`deadlocked_reassignments` decides from the transaction log and the request journals. A
topic is *held* when, while its deletion request exists and one of its partitions is mid-
reassignment in its topic znode (``adding_replicas``/``removing_replicas``: in
``partitionsBeingReassigned``), either a controller is elected, or a child of
``/admin/delete_topics`` is created or deleted after the controller had queued the topic —
evidence: a broker's journal shows an UpdateMetadata with leader -2 (``LeaderDuringDelete``) for
the topic sent after the request's creation and before that change (wall clocks of one host). A
registration of a broker hosting one of its replicas, a rewrite of its topic znode without a
reassignment (completion), the topic znode's deletion or the request's deletion releases it. At
the end, every partition of a held topic that is still mid-reassignment must be stuck: no live
leader, its targets (replicas − removing) not all in its ISR, and no state write since the
deletion request that had them all in the ISR (Kafka would have completed it then). Watch events
are taken in zxid order, as the controller queues them; a ``TopicDeletion`` event queued before
a registration and still unprocessed at the next child change would make Kafka halt before the
release instead of after it — the reference processes an event in milliseconds, so this needs
three ZooKeeper changes inside one controller event, and is not modelled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from chaos.checkers.final_state import FinalState, ReceivedRequest
from chaos.checkers.missed import LEADER_DURING_DELETE
from chaos.checkers.replay import CONTROLLER_EPOCH, applied_ops, creates, deletes, topic_or_none, writes_data
from chaos.checkers.stranded import REASSIGN_PARTITIONS
from probes.errors import MalformedZnode
from probes.txnrecords import TxnRecord
from probes.znode_types import TopicPartition, TopicZNode, decode_partition_state

__all__ = ["Deadlock", "deadlocked_reassignments"]

_BROKER = re.compile(r"^/brokers/ids/(?P<id>\d+)$")
_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")
_STATE = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)/partitions/(?P<p>\d+)/state$")
_REQUEST = re.compile(r"^/admin/delete_topics/(?P<topic>[^/]+)$")


@dataclass(frozen=True)
class Deadlock:
    """What Kafka 2.5.1 leaves waiting: ``partitions`` still mid-reassignment whose topics' deletions
    are held, and ``entries`` of ``/admin/reassign_partitions`` it keeps for them (the znode was
    created before the deletion request and no controller was elected since)."""

    partitions: frozenset[TopicPartition] = frozenset()
    entries: frozenset[TopicPartition] = frozenset()

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(tp.topic for tp in self.partitions)


@dataclass
class _Request:
    zxid: int
    time_s: float
    queued: bool = False  # a controller elected since the request queued the topic at failover
    held: bool = False
    elected_since: bool = False


@dataclass
class _Walk:
    told: Mapping[str, Sequence[float]]  # topic → send times of UpdateMetadata(leader -2), sorted
    topics: dict[str, TopicZNode | None] = field(default_factory=dict)
    czxids: dict[str, int] = field(default_factory=dict)
    requests: dict[str, _Request] = field(default_factory=dict)
    complete_isr_since: dict[str, set[int]] = field(default_factory=dict)  # topic → partitions
    reassign_created: int | None = None

    def reassigning(self, topic: str) -> frozenset[int]:
        t = self.topics.get(topic)
        if t is None:
            return frozenset()
        return frozenset(p for p in t.partitions if t.adding_replicas.get(p) or t.removing_replicas.get(p))

    def queued(self, topic: str, request: _Request, at_s: float) -> bool:
        return request.queued or any(request.time_s <= s < at_s for s in self.told.get(topic, ()))

    def election(self) -> None:
        for topic, request in self.requests.items():
            request.queued = request.elected_since = True
            request.held = bool(self.reassigning(topic))

    def registered(self, broker: int) -> None:
        for topic, request in self.requests.items():
            t = self.topics.get(topic)
            if t is not None and any(broker in rs for rs in t.partitions.values()):
                request.held = False  # onBrokerStartup → resumeDeletionForTopics

    def deletion_requests_changed(self, zxid: int, at_s: float) -> None:
        for topic, request in self.requests.items():
            if request.zxid < zxid and self.reassigning(topic) and self.queued(topic, request, at_s):
                request.held = True  # processTopicDeletion: "topic reassignment in progress"

    def topic_written(self, zxid: int, topic: str, created: bool, data: bytes | None, path: str) -> None:
        if created:
            self.czxids[topic] = zxid
        self.topics[topic] = topic_or_none(path, data)
        if topic in self.requests and not self.reassigning(topic):
            self.requests[topic].held = False  # reassignment completed → resumeDeletionForTopics

    def topic_deleted(self, topic: str) -> None:
        self.topics.pop(topic, None)
        self.czxids.pop(topic, None)
        if topic in self.requests:
            self.requests[topic].held = False

    def state_written(self, topic: str, partition: int, data: bytes | None, path: str) -> None:
        t = self.topics.get(topic)
        if topic not in self.requests or t is None or partition not in t.partitions:
            return
        try:
            isr = set(decode_partition_state(path, data).isr)
        except MalformedZnode:
            return
        targets = set(t.partitions[partition]) - set(t.removing_replicas.get(partition, ()))
        if targets <= isr:
            self.complete_isr_since.setdefault(topic, set()).add(partition)


def _told_of_deletion(journals: Mapping[int, Sequence[ReceivedRequest]]) -> dict[str, list[float]]:
    """Topic → times at which an UpdateMetadata marking it deleted (leader -2) went to a broker."""
    told: dict[str, list[float]] = {}
    for requests in journals.values():
        for r in requests:
            at = r.sent_s if r.sent_s is not None else r.answered_s
            if r.kind != "UpdateMetadata" or at is None:
                continue
            for topic in {p.topic for p in r.partitions if p.leader == LEADER_DURING_DELETE}:
                told.setdefault(topic, []).append(at)
    return {t: sorted(times) for t, times in told.items()}


def _walk(records: Iterable[TxnRecord], journals: Mapping[int, Sequence[ReceivedRequest]]) -> _Walk:
    walk = _Walk(_told_of_deletion(journals))
    for record in sorted(records, key=lambda r: r.zxid):
        at_s = record.time_ms / 1000
        for op in applied_ops(record):
            path, kind = op.path, op.op
            if kind == "closeSession" or path is None or kind == "check":
                continue
            created = creates(kind)
            written = writes_data(kind)
            deleted = deletes(kind)
            if path == CONTROLLER_EPOCH and written:
                walk.election()
            elif (m := _BROKER.match(path)) and created:
                walk.registered(int(m["id"]))
            elif m := _REQUEST.match(path):
                topic = m["topic"]
                if created and topic not in walk.requests:
                    walk.requests[topic] = _Request(record.zxid, at_s)
                    walk.complete_isr_since.pop(topic, None)
                elif deleted:
                    walk.requests.pop(topic, None)
                if created or deleted:
                    walk.deletion_requests_changed(record.zxid, at_s)
            elif m := _TOPIC.match(path):
                if written:
                    walk.topic_written(record.zxid, m["topic"], created, op.data, path)
                elif deleted:
                    walk.topic_deleted(m["topic"])
            elif (m := _STATE.match(path)) and written:
                walk.state_written(m["topic"], int(m["p"]), op.data, path)
            elif path == REASSIGN_PARTITIONS and created:
                walk.reassign_created = record.zxid
    return walk


def _stuck(final: FinalState, tp: TopicPartition) -> bool:
    """No live leader, and the targets not all in the ISR: ``isReassignmentComplete`` stays false."""
    t, state = final.topics[tp.topic], final.partition_states.get(tp)
    if state is None or state.leader in final.live_brokers:
        return False
    targets = set(t.replicas.get(tp.partition, ())) - set(t.removing.get(tp.partition, ()))
    return not targets <= set(state.isr)


def deadlocked_reassignments(records: Sequence[TxnRecord], final: FinalState) -> Deadlock:
    """The reassignments and deletions Kafka 2.5.1 leaves waiting for each other (module text)."""
    walk = _walk(records, final.journals)
    partitions: set[TopicPartition] = set()
    entries: set[TopicPartition] = set()
    for topic, request in walk.requests.items():
        t = final.topics.get(topic)
        if not request.held or topic not in final.delete_topics or t is None:
            continue
        if walk.czxids.get(topic) != t.czxid:
            continue
        pending = [TopicPartition(topic, p) for p in sorted(t.replicas) if t.being_reassigned(p)]
        done = walk.complete_isr_since.get(topic, set())
        if not pending or any(tp.partition in done or not _stuck(final, tp) for tp in pending):
            continue
        partitions.update(pending)
        kept = walk.reassign_created is not None and walk.reassign_created < request.zxid
        if kept and not request.elected_since:
            entries.update(pending)
    return Deadlock(frozenset(partitions), frozenset(entries))
