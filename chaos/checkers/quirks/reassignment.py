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
    Election,
    ReassignmentZnode,
    StateDeleted,
    StateWritten,
    Timeline,
    TopicDeleted,
    TopicWritten,
)
from chaos.history import pairs
from probes.znode_types import TopicPartition, TopicZNode

__all__ = [
    "abandoned",
    "given_up_reassignments",
    "leaderless",
    "leaderless_after_reassignment",
    "orphaned",
    "poisoned",
    "stranded",
    "stranded_blocks_deletion",
    "stranded_entries",
]


def _mid_reassignment(topic: TopicZNode | None, partition: int) -> bool:
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
                if tp.topic == e.topic and _mid_reassignment(e.last, tp.partition):
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


def given_up_reassignments(timeline: Timeline) -> tuple[dict[TopicPartition, int], set[str]]:
    """(partition → zxid at which its reassignment was given up, topics with such a partition
    since the last election), as at the end of the log."""
    entries: set[TopicPartition] = set()
    topics: dict[str, TopicZNode | None] = {}
    given_up: dict[TopicPartition, int] = {}
    poisoned_topics: set[str] = set()
    for e in timeline.events:
        if isinstance(e, Election):
            given_up.clear()  # the new controller resumes them from the topic znodes
            poisoned_topics.clear()
        elif isinstance(e, BrokerRegistered):
            for tp in list(given_up):
                topic = topics.get(tp.topic)
                if topic is not None and e.broker in topic.adding_replicas.get(tp.partition, ()):
                    del given_up[tp]  # onBrokerStartup resumes it
        elif isinstance(e, ReassignmentZnode):
            now = set(e.entries)
            for tp in entries - now:
                if _mid_reassignment(topics.get(tp.topic), tp.partition):
                    given_up[tp] = e.zxid
                    poisoned_topics.add(tp.topic)
            entries = now
        elif isinstance(e, TopicWritten | TopicDeleted):
            znode = e.znode if isinstance(e, TopicWritten) else None
            topics[e.topic] = znode
            if isinstance(e, TopicDeleted):
                poisoned_topics.discard(e.topic)
            for tp in [tp for tp in given_up if tp.topic == e.topic]:
                if not _mid_reassignment(znode, tp.partition):
                    del given_up[tp]
    return given_up, poisoned_topics


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
