"""Recognisers of Kafka 2.5.1's reassignment quirks over the timeline (decisions ring, pure).

Each function takes the run's :class:`~chaos.checkers.findings.RunInputs` and returns the items
the quirk explains (:class:`~chaos.checkers.quirks.registry.Recognition`); the registry says
which checkers they apply to and why Kafka does this, with its source lines.
"""

from __future__ import annotations

from collections.abc import Mapping

from chaos.checkers.findings import (
    DELETION_NOT_DONE,
    DELETION_REQUEST_LEFT,
    FINAL_ISR_OUTSIDE_REPLICAS,
    LEADERLESS,
    REASSIGN_ENTRY_LEFT,
    REASSIGN_ENTRY_UNREACHABLE,
    REASSIGNING,
    TARGET_NOT_REACHED,
    Item,
    RunInputs,
    tp_name,
)
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import (
    BrokerDeregistered,
    BrokerRegistered,
    DeletionRequested,
    DeletionRequestRemoved,
    Election,
    ReassignmentZnode,
    StateDeleted,
    StateWritten,
    Timeline,
    TopicDeleted,
    TopicWritten,
    is_fenced,
)
from chaos.history import pairs
from probes.znode_types import TopicPartition, TopicZNode

__all__ = [
    "abandoned",
    "given_up_reassignments",
    "leaderless",
    "leaderless_after_reassignment",
    "lost_deletion_resumptions",
    "lost_resumption",
    "mid_reassignment",
    "orphaned",
    "poisoned",
    "stranded",
    "stranded_blocks_deletion",
    "stranded_entries",
]


def mid_reassignment(topic: TopicZNode | None, partition: int) -> bool:
    """The topic znode shows ``partition`` with adding or removing replicas."""
    return topic is not None and bool(
        topic.adding_replicas.get(partition) or topic.removing_replicas.get(partition)
    )


# ---- an entry stranded by its topic's deletion ---------------------------------------------------


def stranded_entries(timeline: Timeline) -> dict[TopicPartition, int]:
    """Entry → zxid of the topic deletion that stranded it, as at the end of the log."""
    entries: Mapping[TopicPartition, tuple[int, ...]] = {}
    stranded: dict[TopicPartition, int] = {}
    for e in timeline.events:
        if isinstance(e, Election):
            stranded.clear()  # a new controller's failover re-reads the znode
        elif isinstance(e, ReassignmentZnode):
            entries = e.entries
            stranded = {tp: z for tp, z in stranded.items() if tp in entries}
        elif isinstance(e, TopicDeleted):
            for tp in entries:
                if tp.topic == e.topic and mid_reassignment(e.last, tp.partition):
                    stranded.setdefault(tp, e.zxid)
    return stranded


def stranded(run: RunInputs) -> Recognition:
    """Entries listed in ``/admin/reassign_partitions`` when their topic znode was deleted while
    that partition was mid-reassignment in it, with no controller election since. Without a log:
    undecided for the entries of topics the history deleted."""
    f = run.final_state
    if f is None or not f.reassign_partitions:
        return Recognition()
    if run.timeline is None:
        deleted = {q.invoke.value.get("topic") for q in pairs(run.history) if q.invoke.f == "delete_topic"}
        names = [tp_name(tp) for tp in f.reassign_partitions if tp.topic in deleted]
        return Recognition(
            undecided=frozenset(Item(REASSIGN_ENTRY_LEFT, n) for n in names),
            why_undecided="no transaction log to tell whether deleting its topic stranded it",
        )
    names = [tp_name(tp) for tp in stranded_entries(run.timeline)]
    return Recognition(
        frozenset(Item(kind, n) for n in names for kind in (REASSIGN_ENTRY_LEFT, REASSIGN_ENTRY_UNREACHABLE))
    )


def stranded_blocks_deletion(run: RunInputs) -> Recognition:
    """Topics named by an entry stranded by an earlier deletion (no election since): a later
    deletion of a topic of that name — the topic created again — is halted."""
    if run.timeline is None:
        return Recognition()
    names = {tp.topic for tp in stranded_entries(run.timeline)}
    return Recognition(
        frozenset(Item(kind, t) for t in names for kind in (DELETION_NOT_DONE, DELETION_REQUEST_LEFT))
    )


# ---- a reassignment given up after it was written into the topic znode ------------------------


def _target(topic: TopicZNode | None, partition: int) -> frozenset[int]:
    """Kafka's ``targetReplicas``: the partition's replicas without the ones being removed."""
    if topic is None:
        return frozenset()
    removing = set(topic.removing_replicas.get(partition, ()))
    return frozenset(r for r in topic.partitions.get(partition, ()) if r not in removing)


class _GivenUpWalk:
    """The walk behind :func:`given_up_reassignments` and :func:`lost_deletion_resumptions`.

    A reassignment is given up when ``onPartitionReassignment`` throws after its U1 write because
    the partition has no state znode (``updateLeaderEpoch``): through ``/admin/reassign_partitions``
    its entry is then removed as failed; through AlterPartitionReassignments the request is answered
    -1 (spec §13.1.5). Both leave the topic znode mid-reassignment. A registration of a target
    broker resumes it (``onBrokerStartup`` → ``maybeResumeReassignments``) — and throws again when
    the partition still has no state then: its topic is queued for deletion (never elected) or the
    broker is not one of its replicas. That throw ends ``onBrokerStartup`` before it resumes the
    deletions waiting for that broker."""

    def __init__(self) -> None:
        self.entries: set[TopicPartition] = set()
        self.topics: dict[str, TopicZNode | None] = {}
        self.states: set[TopicPartition] = set()
        self.queued: set[str] = set()  # /admin/delete_topics/<t> present
        self.given_up: dict[TopicPartition, int] = {}
        self.poisoned: set[str] = set()
        self.lost: dict[str, int] = {}  # topic → zxid of the registration whose startup threw
        #: replicas a given-up U1 added that no A2 started since (NonExistentReplica in Kafka)
        self.never_started: dict[TopicPartition, set[int]] = {}
        #: such replicas the partition's RS dropped while never started: no controller (a
        #: failover's replica state machine knows assigned replicas only) takes them out since
        self.dropped_unstarted: dict[TopicPartition, set[int]] = {}
        self.kept_in_isr: set[Item] = set()  # state writes whose ISR holds only such extras

    def unstarted(self, tp: TopicPartition) -> set[int]:
        return self.never_started.get(tp, set()) | self.dropped_unstarted.get(tp, set())

    def _stateless(self, tp: TopicPartition, broker: int) -> bool:
        """Still no state once ``onBrokerStartup``'s elections ran: nothing elects it."""
        if tp in self.states:
            return False
        topic = self.topics.get(tp.topic)
        replicas = topic.partitions.get(tp.partition, ()) if topic is not None else ()
        return tp.topic in self.queued or broker not in replicas

    def registered(self, zxid: int, broker: int) -> None:
        throws = False
        for tp in list(self.given_up):
            if broker not in _target(self.topics.get(tp.topic), tp.partition):
                continue
            if self._stateless(tp, broker):
                throws = True
            else:
                del self.given_up[tp]  # onBrokerStartup resumes it
        for name in [t for t in self.lost if self._hosts(t, broker)]:
            if not throws:
                del self.lost[name]  # this startup resumes the deletion
        if throws:
            for name in self.queued:
                if self._hosts(name, broker):
                    self.lost[name] = zxid

    def _hosts(self, name: str, broker: int) -> bool:
        topic = self.topics.get(name)
        return topic is not None and any(broker in rs for rs in topic.partitions.values())

    def topic_written(self, e: TopicWritten) -> None:
        before, znode = self.topics.get(e.topic), e.znode
        self.topics[e.topic] = znode
        if znode is not None and is_fenced(e.record):
            for p in znode.partitions:
                tp = TopicPartition(e.topic, p)
                gone = self.never_started.get(tp, set()) - set(znode.partitions.get(p, ()))
                if gone:
                    self.dropped_unstarted.setdefault(tp, set()).update(gone)
                started = mid_reassignment(znode, p) and (
                    not mid_reassignment(before, p)
                    or znode.adding_replicas.get(p) != (before.adding_replicas.get(p) if before else None)
                    or znode.removing_replicas.get(p) != (before.removing_replicas.get(p) if before else None)
                )
                adding = set(znode.adding_replicas.get(p, ()))
                # a controller's rewrite of the partition that starts nothing (a reorder, a
                # cancellation) goes to phase B at once, which throws at B3 without a state
                rewritten = before is not None and znode.partitions.get(p) != before.partitions.get(p)
                if started and tp not in self.states:  # U1 of a partition without state: A1 throws
                    self.given_up[tp] = e.zxid
                    self.poisoned.add(e.topic)
                    self.never_started.setdefault(tp, set()).update(adding)
                elif rewritten and not mid_reassignment(znode, p) and tp not in self.states:
                    self.given_up.setdefault(tp, e.zxid)
                elif started and tp in self.never_started:  # A2 makes them NewReplica
                    self.never_started[tp] -= adding
        for tp in [tp for tp in self.given_up if tp.topic == e.topic]:
            # a rewrite that ends the reassignment (its completion, a cancellation) completes it
            # only for a partition with a state: without one, phase B throws at B3
            # (partitionLeadershipInfo.apply) before B7, and it stays among the reassignments
            if not mid_reassignment(znode, tp.partition) and tp in self.states:
                del self.given_up[tp]

    def walk(self, timeline: Timeline) -> _GivenUpWalk:
        for e in timeline.events:
            if isinstance(e, Election):
                self.given_up.clear()  # the new controller resumes them from the topic znodes
                self.poisoned.clear()
                self.lost.clear()  # and resumes every deletion
                self.never_started.clear()  # and starts every replica (ReplicaStateMachine.startup)
            elif isinstance(e, BrokerRegistered):
                self.registered(e.zxid, e.broker)
            elif isinstance(e, ReassignmentZnode):
                now = set(e.entries)
                for tp in self.entries - now:
                    topic = self.topics.get(tp.topic)
                    if mid_reassignment(topic, tp.partition):
                        self.given_up[tp] = e.zxid
                        self.poisoned.add(tp.topic)
                    elif (
                        tp not in self.states
                        and tp.topic not in self.queued
                        and topic is not None
                        and tp.partition in topic.partitions
                    ):
                        # started on a partition without state and nothing to move (the target is
                        # its replicas): phase B throws at B3, the entry goes as failed, the
                        # partition stays among the controller's reassignments
                        self.given_up.setdefault(tp, e.zxid)
                self.entries = now
            elif isinstance(e, TopicWritten):
                self.topic_written(e)
            elif isinstance(e, TopicDeleted):
                self.topics[e.topic] = None
                self.poisoned.discard(e.topic)
                self.lost.pop(e.topic, None)
                self.states = {tp for tp in self.states if tp.topic != e.topic}
                for tp in [tp for tp in self.given_up if tp.topic == e.topic]:
                    del self.given_up[tp]
                for tp in [tp for tp in self.never_started if tp.topic == e.topic]:
                    del self.never_started[tp]
                for tp in [tp for tp in self.dropped_unstarted if tp.topic == e.topic]:
                    del self.dropped_unstarted[tp]
            elif isinstance(e, StateWritten):
                tp = TopicPartition(e.topic, e.partition)
                self.states.add(tp)
                if e.state is not None and e.replicas is not None:
                    extra = set(e.state.isr) - set(e.replicas)
                    if extra and extra <= self.unstarted(tp):
                        self.kept_in_isr.add(Item("state write", f"{tp_name(tp)} at 0x{e.zxid:x}"))
            elif isinstance(e, StateDeleted):
                self.states.discard(TopicPartition(e.topic, e.partition))
            elif isinstance(e, DeletionRequested):
                self.queued.add(e.topic)
            elif isinstance(e, DeletionRequestRemoved):
                self.queued.discard(e.topic)
        return self


def given_up_reassignments(timeline: Timeline) -> tuple[dict[TopicPartition, int], set[str]]:
    """(partition → zxid at which its reassignment was given up, topics with such a partition
    since the last election), as at the end of the log (:class:`_GivenUpWalk`)."""
    walked = _GivenUpWalk().walk(timeline)
    return walked.given_up, walked.poisoned


def lost_deletion_resumptions(timeline: Timeline) -> dict[str, int]:
    """Topic → zxid of the broker registration whose ``onBrokerStartup`` threw (resuming a
    given-up reassignment) before it resumed that topic's deletion, with no election and no
    registration of a broker hosting one of its replicas that resumed it since."""
    return dict(_GivenUpWalk().walk(timeline).lost)


def never_started_kept_in_isr(run: RunInputs) -> Recognition:
    """State writes and final states whose ISR is outside the replicas only by replicas a given-up
    reassignment added and nothing started since: a later reassignment removing them asks for an
    invalid NonExistentReplica → OfflineReplica transition, so they stay in the ISR."""
    if run.timeline is None:
        return Recognition()
    walked = _GivenUpWalk().walk(run.timeline)
    items = set(walked.kept_in_isr)
    f = run.final_state
    for tp, state in f.partition_states.items() if f is not None else ():
        topic = f.topics.get(tp.topic) if f is not None else None
        if topic is None or tp.partition not in topic.replicas:
            continue
        extra = set(state.isr) - set(topic.replicas[tp.partition])
        if extra and extra <= walked.unstarted(tp):
            items.add(Item(FINAL_ISR_OUTSIDE_REPLICAS, tp_name(tp)))
    return Recognition(frozenset(items))


def abandoned(run: RunInputs) -> Recognition:
    """Partitions whose entry left ``/admin/reassign_partitions`` while their topic znode still
    showed them mid-reassignment, with no election, no registration of a target broker and no
    rewrite of the topic znode without them since."""
    if run.timeline is None:
        return Recognition()
    timeline = run.timeline
    given_up, _ = run.memo("abandoned", lambda: given_up_reassignments(timeline))
    return Recognition(
        frozenset(Item(kind, tp_name(tp)) for tp in given_up for kind in (REASSIGNING, TARGET_NOT_REACHED))
    )


def lost_resumption(run: RunInputs) -> Recognition:
    """Topics whose deletion a broker's registration should have resumed, had its startup not
    thrown first (:func:`lost_deletion_resumptions`)."""
    if run.timeline is None:
        return Recognition()
    timeline = run.timeline
    lost = run.memo("lost_resumption", lambda: lost_deletion_resumptions(timeline))
    return Recognition(
        frozenset(Item(kind, t) for t in lost for kind in (DELETION_NOT_DONE, DELETION_REQUEST_LEFT))
    )


def poisoned(run: RunInputs) -> Recognition:
    """Topics with a given-up reassignment since the last election: their deletion never completes."""
    if run.timeline is None:
        return Recognition()
    timeline = run.timeline
    _, topics = run.memo("abandoned", lambda: given_up_reassignments(timeline))
    return Recognition(
        frozenset(Item(kind, t) for t in topics for kind in (DELETION_NOT_DONE, DELETION_REQUEST_LEFT))
    )


# ---- a reassignment completed while its partition's election failed ----------------------------

_State = tuple[int, tuple[int, ...]]


def leaderless_after_reassignment(
    timeline: Timeline,
) -> tuple[dict[TopicPartition, _State], dict[TopicPartition, _State]]:
    """(orphaned, leaderless): partitions whose reassignment a topic-znode write completed while
    their state had leader -1, with that (leader, ISR), as at the end of the log."""
    states: dict[TopicPartition, _State] = {}
    orphaned_isrs: dict[TopicPartition, _State] = {}
    leaderless_states: dict[TopicPartition, _State] = {}
    for e in timeline.events:
        if isinstance(e, BrokerDeregistered | Election):
            leaderless_states.clear()  # onReplicasBecomeOffline or a failover elects them
        elif isinstance(e, StateWritten | StateDeleted):
            tp = TopicPartition(e.topic, e.partition)
            orphaned_isrs.pop(tp, None)
            leaderless_states.pop(tp, None)
            if isinstance(e, StateWritten) and e.state is not None:
                states[tp] = (e.state.leader, e.state.isr)
            else:
                states.pop(tp, None)
        elif isinstance(e, TopicWritten):
            _completed(e, states, orphaned_isrs, leaderless_states)
        elif isinstance(e, TopicDeleted):
            for found in (orphaned_isrs, leaderless_states):
                for tp in [tp for tp in found if tp.topic == e.topic]:
                    del found[tp]
    return orphaned_isrs, leaderless_states


def _completed(
    e: TopicWritten,
    states: Mapping[TopicPartition, _State],
    orphaned_isrs: dict[TopicPartition, _State],
    leaderless_states: dict[TopicPartition, _State],
) -> None:
    """Partitions whose reassignment this topic-znode write completed while their state had leader
    -1: all of them are leaderless; those whose ISR is outside the new replicas, and only of
    replicas the reassignment removed, are orphaned too."""
    old, new = e.previous, e.znode
    if old is None or new is None:
        return
    for p, removing in old.removing_replicas.items():
        if not removing or new.removing_replicas.get(p):
            continue  # not being reassigned before, or still being reassigned
        tp = TopicPartition(e.topic, p)
        state = states.get(tp)
        if state is None or state[0] != -1:
            continue
        leaderless_states[tp] = state
        outside = set(state[1]) - set(new.partitions.get(p, ()))
        if outside and outside <= set(removing):
            orphaned_isrs[tp] = state


def _matching_final(run: RunInputs, found: Mapping[TopicPartition, _State], kind: str) -> Recognition:
    f = run.final_state
    if f is None:
        return Recognition()
    items = {
        Item(kind, tp_name(tp))
        for tp, state in found.items()
        if (s := f.partition_states.get(tp)) is not None and (s.leader, tuple(s.isr)) == state
    }
    return Recognition(frozenset(items))


def orphaned(run: RunInputs) -> Recognition:
    """Final states whose ISR Kafka left outside the replicas (leader -1, ISR of removed replicas)."""
    if run.timeline is None:
        return Recognition()
    timeline = run.timeline
    found, _ = run.memo("leaderless", lambda: leaderless_after_reassignment(timeline))
    return _matching_final(run, found, FINAL_ISR_OUTSIDE_REPLICAS)


def leaderless(run: RunInputs) -> Recognition:
    """Final states Kafka left leaderless after the reassignment, with no state write, broker
    deregistration or election since."""
    if run.timeline is None:
        return Recognition()
    timeline = run.timeline
    _, found = run.memo("leaderless", lambda: leaderless_after_reassignment(timeline))
    return _matching_final(run, found, LEADERLESS)
