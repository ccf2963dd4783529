"""Recogniser of the deletion and the reassignment Kafka 2.5.1 leaves waiting for each other
(decisions ring, pure).

A topic is *held* when, while its deletion request exists and one of its partitions is mid-
reassignment in its topic znode (``adding_replicas``/``removing_replicas``: in
``partitionsBeingReassigned``), either a controller is elected, or a child of
``/admin/delete_topics`` is created or deleted after the controller had queued the topic —
evidence: a broker's journal shows an UpdateMetadata with leader -2 (``LeaderDuringDelete``) for
the topic sent after the request's creation and before that change (wall clocks of one host). A
registration of a broker hosting one of its replicas, a rewrite of its topic znode without a
reassignment (completion), the topic znode's deletion or the request's deletion releases it. At
the end, every partition of a held topic that is still mid-reassignment must be stuck: no live
leader, its targets (replicas − removing) not all in its ISR, and no state write since the
deletion request that had them all in the ISR (Kafka would have completed it then) — unless the
next write of that state was the controller's own, taking a target out again: the controller may
have handled that change (a controlled shutdown, a broker failure) before the ISR change's
notification, and then reads an ISR that is no longer complete (links seed 282, simulated: a
ControlledShutdown beside a delayed ZooKeeper link). Watch events
are taken in zxid order, as the controller queues them; a ``TopicDeletion`` event queued before
a registration and still unprocessed at the next child change would make Kafka halt before the
release instead of after it — the reference processes an event in milliseconds, so this needs
three ZooKeeper changes inside one controller event, and is not modelled. Why Kafka does this,
with its source lines: the ``reassignment_deadlocked_by_deletion`` entry of the registry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from chaos.checkers.final_state import FinalState
from chaos.checkers.findings import (
    DELETION_NOT_DONE,
    DELETION_REQUEST_LEFT,
    REASSIGN_ENTRY_LEFT,
    REASSIGNING,
    Item,
    RunInputs,
    tp_name,
)
from chaos.checkers.journal import deletion_notice_times
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import (
    BrokerRegistered,
    DeletionRequested,
    DeletionRequestRemoved,
    Election,
    ReassignmentZnode,
    StateWritten,
    Timeline,
    TopicDeleted,
    TopicWritten,
)
from probes.znode_types import TopicPartition, TopicZNode

__all__ = ["Deadlock", "deadlocked", "deadlocked_reassignments"]


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
    #: topic → partitions whose last state write had every target in the ISR, not yet counted
    complete_pending: dict[str, set[int]] = field(default_factory=dict)
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

    def topic_written(self, e: TopicWritten) -> None:
        if e.created:
            self.czxids[e.topic] = e.zxid
        self.topics[e.topic] = e.znode
        if e.topic in self.requests and not self.reassigning(e.topic):
            self.requests[e.topic].held = False  # reassignment completed → resumeDeletionForTopics

    def topic_deleted(self, topic: str) -> None:
        self.topics.pop(topic, None)
        self.czxids.pop(topic, None)
        if topic in self.requests:
            self.requests[topic].held = False

    def state_written(self, e: StateWritten) -> None:
        t = self.topics.get(e.topic)
        if e.topic not in self.requests or t is None or e.partition not in t.partitions or e.state is None:
            return
        targets = set(t.partitions[e.partition]) - set(t.removing_replicas.get(e.partition, ()))
        complete = targets <= set(e.state.isr)
        pending = self.complete_pending.setdefault(e.topic, set())
        if e.partition in pending:
            pending.discard(e.partition)
            if complete or not e.fenced:
                self.complete_isr_since.setdefault(e.topic, set()).add(e.partition)
        if complete:
            pending.add(e.partition)

    def completed_isr(self, topic: str) -> set[int]:
        """The partitions of ``topic`` whose targets were all in the ISR since its deletion request
        in a way Kafka must have seen (see the module text)."""
        return self.complete_isr_since.get(topic, set()) | self.complete_pending.get(topic, set())

    def step(self, e: object) -> None:
        if isinstance(e, Election):
            self.election()
        elif isinstance(e, BrokerRegistered):
            self.registered(e.broker)
        elif isinstance(e, DeletionRequested | DeletionRequestRemoved):
            if isinstance(e, DeletionRequested) and e.topic not in self.requests:
                self.requests[e.topic] = _Request(e.zxid, e.time_s)
                self.complete_isr_since.pop(e.topic, None)
                self.complete_pending.pop(e.topic, None)
            elif isinstance(e, DeletionRequestRemoved):
                self.requests.pop(e.topic, None)
            self.deletion_requests_changed(e.zxid, e.time_s)
        elif isinstance(e, TopicWritten):
            self.topic_written(e)
        elif isinstance(e, TopicDeleted):
            self.topic_deleted(e.topic)
        elif isinstance(e, StateWritten):
            self.state_written(e)
        elif isinstance(e, ReassignmentZnode) and e.change == "created":
            self.reassign_created = e.zxid


def _stuck(final: FinalState, tp: TopicPartition) -> bool:
    """No live leader, and the targets not all in the ISR: ``isReassignmentComplete`` stays false."""
    t, state = final.topics[tp.topic], final.partition_states.get(tp)
    if state is None or state.leader in final.live_brokers:
        return False
    targets = set(t.replicas.get(tp.partition, ())) - set(t.removing.get(tp.partition, ()))
    return not targets <= set(state.isr)


def deadlocked_reassignments(timeline: Timeline, final: FinalState) -> Deadlock:
    """The reassignments and deletions Kafka 2.5.1 leaves waiting for each other (module text)."""
    walk = _Walk(deletion_notice_times(final.journals))
    for e in timeline.events:
        walk.step(e)
    partitions: set[TopicPartition] = set()
    entries: set[TopicPartition] = set()
    for topic, request in walk.requests.items():
        t = final.topics.get(topic)
        if not request.held or topic not in final.delete_topics or t is None:
            continue
        if walk.czxids.get(topic) != t.czxid:
            continue
        pending = [TopicPartition(topic, p) for p in sorted(t.replicas) if t.being_reassigned(p)]
        done = walk.completed_isr(topic)
        if not pending or any(tp.partition in done or not _stuck(final, tp) for tp in pending):
            continue
        partitions.update(pending)
        kept = walk.reassign_created is not None and walk.reassign_created < request.zxid
        if kept and not request.elected_since:
            entries.update(pending)
    return Deadlock(frozenset(partitions), frozenset(entries))


def deadlocked(run: RunInputs) -> Recognition:
    """The held topics' pending partitions, their deletions, and the entries Kafka keeps."""
    if run.timeline is None or run.final_state is None:
        return Recognition()
    found = deadlocked_reassignments(run.timeline, run.final_state)
    items = {Item(REASSIGNING, tp_name(tp)) for tp in found.partitions}
    items |= {Item(kind, t) for t in found.topics for kind in (DELETION_NOT_DONE, DELETION_REQUEST_LEFT)}
    items |= {Item(REASSIGN_ENTRY_LEFT, tp_name(tp)) for tp in found.entries}
    return Recognition(frozenset(items))
