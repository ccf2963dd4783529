"""Recognisers of Kafka 2.5.1's cancellation quirks (decisions ring, pure).

A cancelled reassignment goes back to its original replicas as a set, in the order they have in
the reassignment's RS (``RS − adding``), not the order they had before (spec §13.1.6): the
naive "cancellation restores the original replicas" sees a reordering.

A cancellation (or a new target replacing a pending one, §13.1.7) writes the topic znode first
(U1) and only then takes the adding replicas it drops out of the ISR, one state write each (U3,
``OfflineReplica``): until the last of them the ISR holds replicas the topic znode no longer
lists, and a one-member ISR is kept as it is (leader -1), so an ISR of dropped replicas only
stays outside the replicas.
"""

from __future__ import annotations

from chaos.checkers.cancellation import acked_partitions, cancelled_reassignment
from chaos.checkers.findings import FINAL_ISR_OUTSIDE_REPLICAS, Item, RunInputs, tp_name
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import StateWritten, TopicWritten
from chaos.history import pairs
from probes.znode_types import TopicPartition

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


def _removal_of_dropped(w: StateWritten, topic: TopicWritten | None) -> bool:
    """``w`` is a controller's write taking one replica out of the ISR (``removeReplicasFromIsr``:
    leader -1 if it led, a one-member ISR kept, leader epoch + 1), that replica being an adding
    replica the topic znode's last write dropped, and the ISR outside the replicas only by such."""
    s, prev = w.state, w.previous
    if (
        not w.fenced
        or s is None
        or prev is None
        or topic is None
        or topic.previous is None
        or topic.znode is None
    ):
        return False
    p = w.partition
    replicas = topic.znode.partitions.get(p, ())
    dropped = set(topic.previous.adding_replicas.get(p, ())) - set(replicas)
    for r in dropped & set(prev.isr):
        isr = prev.isr if len(prev.isr) == 1 else tuple(x for x in prev.isr if x != r)
        leader = -1 if prev.leader == r else prev.leader
        if (s.leader, s.isr, s.leader_epoch) == (leader, isr, prev.leader_epoch + 1):
            return set(s.isr) - set(replicas) <= dropped
    return False


def stopped_adding_replicas(run: RunInputs) -> Recognition:
    """State writes that take a dropped adding replica out of the ISR after the topic znode
    stopped listing it, and final states left as the last such write left them."""
    timeline = run.timeline
    if timeline is None:
        return Recognition()
    topics: dict[str, TopicWritten] = {}
    left: dict[TopicPartition, StateWritten] = {}
    items = set()
    for e in timeline.events:
        if isinstance(e, TopicWritten):
            topics[e.topic] = e
        elif isinstance(e, StateWritten):
            tp = TopicPartition(e.topic, e.partition)
            if _removal_of_dropped(e, topics.get(e.topic)):
                items.add(Item("state write", f"{tp_name(tp)} at 0x{e.zxid:x}"))
                left[tp] = e
            else:
                left.pop(tp, None)
    finals = run.final_state.partition_states if run.final_state is not None else {}
    for tp, w in left.items():
        final = finals.get(tp)
        if (
            final is not None
            and w.state is not None
            and (final.leader, final.isr) == (w.state.leader, w.state.isr)
        ):
            items.add(Item(FINAL_ISR_OUTSIDE_REPLICAS, tp_name(tp)))
    return Recognition(frozenset(items))
