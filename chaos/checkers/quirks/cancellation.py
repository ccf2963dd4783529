"""Recognisers of Kafka 2.5.1's cancellation quirks (decisions ring, pure).

A cancelled reassignment goes back to its original replicas as a set, in the order they have in
the reassignment's RS (``RS − adding``), not the order they had before (spec §13.1.6): the
naive "cancellation restores the original replicas" sees a reordering.

A cancellation (or a new target replacing a pending one, §13.1.7) writes the topic znode first
(U1) and only then takes the adding replicas it drops out of the ISR, one state write each (U3,
``OfflineReplica``): until the last of them the ISR holds replicas the topic znode no longer
lists, and a one-member ISR is kept as it is (leader -1), so an ISR of dropped replicas only
stays outside the replicas — also through later controller writes that only bump its leader
epoch (``updateLeaderEpoch``: a later reassignment's A1 copies leader and ISR as they are).
When none of that ISR is a replica any more, nothing can be elected, and a reassignment of the
partition still under way never completes. When the dropped replica was the leader, the partition
stays leaderless (the controller still holds it online) until a broker departure or a failover
elects it, and a reassignment under way waits with it.
"""

from __future__ import annotations

from chaos.checkers.cancellation import acked_partitions, cancelled_reassignment
from chaos.checkers.final_state import FinalState
from chaos.checkers.findings import (
    FINAL_ISR_OUTSIDE_REPLICAS,
    LEADERLESS,
    Item,
    RunInputs,
    stuck_reassignment_items,
    tp_name,
)
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import BrokerDeregistered, Election, StateWritten, TopicWritten
from chaos.history import pairs
from probes.znode_types import TopicPartition, TopicZNode

__all__ = ["CANCEL_NOT_REVERTED", "reordered", "stopped_adding_replicas"]

#: Same text as :data:`chaos.checkers.admin_api.CANCEL_NOT_REVERTED` (that module imports the judge).
CANCEL_NOT_REVERTED = "cancelled reassignment not reverted"


def reordered(run: RunInputs) -> Recognition:
    """Acknowledged cancellations whose partition ends, not being reassigned, exactly on Kafka's
    ``RS − adding`` of the cancelled reassignment's last state, a permutation of the replicas it
    had before that reassignment started."""
    f, timeline = run.final_state, run.timeline
    if f is None or timeline is None:
        return Recognition()
    items = set()
    for q in pairs(run.history):
        if q.invoke.f != "cancel_reassignment" or q.outcome != "ok":
            continue
        for tp in acked_partitions(q):
            final = f.topics.get(tp.topic)
            if final is None or final.being_reassigned(tp.partition):
                continue
            cancelled = cancelled_reassignment(timeline, tp, final.czxid)
            ends = final.replicas.get(tp.partition)
            if (
                cancelled is not None
                and ends == cancelled.kafka_original
                and sorted(ends) == sorted(cancelled.original)
            ):
                items.add(Item(CANCEL_NOT_REVERTED, tp_name(tp)))
    return Recognition(frozenset(items))


def _replicas_and_dropped(
    w: StateWritten, topic: TopicWritten | None
) -> tuple[frozenset[int], frozenset[int]] | None:
    """The partition's replicas as the topic znode's last change of it left them, and the adding
    replicas that change dropped; None when the log cannot tell."""
    if topic is None or topic.previous is None or topic.znode is None:
        return None
    replicas = frozenset(topic.znode.partitions.get(w.partition, ()))
    return replicas, frozenset(topic.previous.adding_replicas.get(w.partition, ())) - replicas


def _removal_of_dropped(w: StateWritten, topic: TopicWritten | None) -> frozenset[int] | None:
    """The dropped adding replicas ``w`` leaves in the ISR when it is a controller's write taking
    one replica out of the ISR (``removeReplicasFromIsr``: leader -1 if it led, a one-member ISR
    kept, leader epoch + 1), that replica being an adding replica the topic znode's last write
    dropped, and the ISR outside the replicas only by such; None when it is not."""
    s, prev, known = w.state, w.previous, _replicas_and_dropped(w, topic)
    if not w.fenced or s is None or prev is None or known is None:
        return None
    replicas, dropped = known
    for r in dropped & set(prev.isr):
        isr = prev.isr if len(prev.isr) == 1 else tuple(x for x in prev.isr if x != r)
        leader = -1 if prev.leader == r else prev.leader
        if (s.leader, s.isr, s.leader_epoch) == (leader, isr, prev.leader_epoch + 1):
            return dropped if set(s.isr) - replicas <= dropped else None
    return None


def _partitions_changed(e: TopicWritten) -> list[int]:
    """The partitions whose replicas or adding/removing replicas ``e`` changed (all of them for a
    creation): a write that only adds partitions leaves the others' last change where it was."""
    if e.znode is None:
        return []
    if e.previous is None:
        return list(e.znode.partitions)

    def of(z: TopicZNode, p: int) -> tuple[object, ...]:
        return (z.partitions.get(p), z.adding_replicas.get(p), z.removing_replicas.get(p))

    return [p for p in e.znode.partitions if of(e.znode, p) != of(e.previous, p)]


def _leader_expands_keeping_dropped(w: StateWritten, topic: TopicWritten | None) -> frozenset[int] | None:
    """The dropped adding replicas in the ISR when ``w`` is a leader's ISR expansion (not fenced:
    a broker's conditional update; leader and leader epoch kept; no member lost) after the topic
    znode's last write dropped them, the ISR outside the replicas by those only. The leader still
    counts the dropped replicas among the replicas of its last LeaderAndIsr
    (Partition.updateAssignmentAndIsr) and adds a caught-up follower of those to the ISR
    (maybeExpandIsr), keeping the members it has, until the controller's LeaderAndIsr without
    them arrives; None when it is not such a write."""
    s, prev, known = w.state, w.previous, _replicas_and_dropped(w, topic)
    if w.fenced or s is None or prev is None or known is None:
        return None
    if (s.leader, s.leader_epoch) != (prev.leader, prev.leader_epoch) or not set(prev.isr) < set(s.isr):
        return None
    replicas, dropped = known
    outside = set(s.isr) - replicas
    return frozenset(outside) if outside and outside <= dropped else None


def _carries_orphan(w: StateWritten, orphans: frozenset[int]) -> bool:
    """``w`` is a controller's write that only bumps the leader epoch of a leaderless state whose
    ISR such removals left outside the replicas (``updateLeaderEpoch``, a later reassignment's
    A1), and that ISR is still outside the replicas only by those dropped replicas."""
    s, prev = w.state, w.previous
    if not w.fenced or s is None or prev is None or w.replicas is None:
        return False
    return (
        (s.leader, s.isr, s.leader_epoch) == (prev.leader, prev.isr, prev.leader_epoch + 1)
        and s.leader == -1
        and set(s.isr) - set(w.replicas) <= orphans
    )


def stopped_adding_replicas(run: RunInputs) -> Recognition:
    """State writes that take a dropped adding replica out of the ISR after the topic znode
    stopped listing it, a leader's ISR expansion made meanwhile (adding such a replica back, or
    another one while such a replica was still in the ISR) when the controller's removal of those
    replicas came next, and final states left as the last such write left them."""
    timeline = run.timeline
    if timeline is None:
        return Recognition()
    topics: dict[TopicPartition, TopicWritten] = {}  # the topic znode's last write that changed it
    left: dict[TopicPartition, StateWritten] = {}
    orphans: dict[TopicPartition, frozenset[int]] = {}  # the dropped replicas each ISR still holds
    expanded: dict[TopicPartition, list[tuple[Item, frozenset[int]]]] = {}  # leaders' writes since
    items = set()
    elects_since = 0  # zxid of the last broker departure or election (either elects leaderless ones)
    for e in timeline.events:
        if isinstance(e, BrokerDeregistered | Election):
            elects_since = e.zxid
        elif isinstance(e, TopicWritten):
            for p in _partitions_changed(e):
                topics[TopicPartition(e.topic, p)] = e
        elif isinstance(e, StateWritten):
            tp = TopicPartition(e.topic, e.partition)
            dropped = _removal_of_dropped(e, topics.get(tp))
            kept = _leader_expands_keeping_dropped(e, topics.get(tp))
            if kept is not None:
                item = Item("state write", f"{tp_name(tp)} at 0x{e.zxid:x}")
                expanded.setdefault(tp, []).append((item, kept))
            else:
                for item, outside in expanded.pop(tp, []):
                    if dropped is not None and outside <= dropped:
                        items.add(item)  # the controller's removal of those replicas came next
            if dropped is None and tp in orphans and _carries_orphan(e, orphans[tp]):
                dropped = orphans[tp]
            if dropped is not None:
                items.add(Item("state write", f"{tp_name(tp)} at 0x{e.zxid:x}"))
                left[tp], orphans[tp] = e, dropped
            else:
                left.pop(tp, None)
                orphans.pop(tp, None)
    f = run.final_state
    finals = f.partition_states if f is not None else {}
    for tp, w in left.items():
        final = finals.get(tp)
        if (
            final is not None
            and w.state is not None
            and (final.leader, final.isr) == (w.state.leader, w.state.isr)
        ):
            items.add(Item(FINAL_ISR_OUTSIDE_REPLICAS, tp_name(tp)))
            if f is not None:
                items |= _stuck_behind_orphaned_isr(f, tp)
                if final.leader == -1 and w.zxid > elects_since:
                    items |= _left_without_leader(f, tp)
    return Recognition(frozenset(items))


def _left_without_leader(f: FinalState, tp: TopicPartition) -> set[Item]:
    """The dropped replica was the leader: its removal leaves leader -1, and nothing elects a
    partition the controller still holds online until a broker departure
    (``onReplicasBecomeOffline``) or a failover, so a reassignment still under way waits too."""
    items = {Item(LEADERLESS, tp_name(tp))}
    topic = f.topics.get(tp.topic)
    if topic is not None and topic.being_reassigned(tp.partition):
        items |= stuck_reassignment_items(f, tp)
    return items


def _stuck_behind_orphaned_isr(f: FinalState, tp: TopicPartition) -> set[Item]:
    """A partition left leaderless with an ISR of dropped replicas only, and still being
    reassigned: no replica can be elected (every strategy picks a live replica of the ISR, the
    ISR grows only through a leader), so its targets never join the ISR and the reassignment, with
    its ``/admin/reassign_partitions`` entry, stays."""
    topic, state = f.topics.get(tp.topic), f.partition_states.get(tp)
    if topic is None or state is None or state.leader != -1 or not topic.being_reassigned(tp.partition):
        return set()
    if set(state.isr) & set(topic.replicas.get(tp.partition, ())):
        return set()
    return stuck_reassignment_items(f, tp)
