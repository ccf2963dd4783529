"""Recognisers of Kafka 2.5.1's quirks seen on the brokers' side: a deleted topic left in a
broker's metadata cache, and a StopReplica(delete) that may have applied unanswered
(decisions ring, pure). See :mod:`chaos.checkers.quirks.registry` for the why."""

from __future__ import annotations

from collections.abc import Sequence

from chaos.checkers.final_state import ReceivedRequest
from chaos.checkers.findings import (
    REASSIGN_ENTRY_LEFT,
    REASSIGN_ENTRY_UNREACHABLE,
    REASSIGNING,
    TARGET_NOT_REACHED,
    Item,
    RunInputs,
    shown_item,
    stale_item,
    tp_name,
)
from chaos.checkers.journal import APPLIED_KINDS, life, stale_leader_epochs, told_of_deletion
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import (
    BrokerDeregistered,
    BrokerRegistered,
    DeletionRequested,
    Election,
    Timeline,
    TopicDeleted,
    TopicWritten,
)
from probes.znode_types import TopicPartition

__all__ = [
    "absent_during_deletion",
    "deletion_notice_lost",
    "missed_deletion",
    "stale_replica_of_deleted_topic",
    "unanswered_stop_replica",
]


def absent_during_deletion(timeline: Timeline) -> dict[str, frozenset[int]]:
    """Topic (its last deletion) → brokers whose registration was missing, or created anew, at any
    point from the deletion request to the topic znode's deletion, or that left later: a notice
    still waiting in the controller's queue for a broker dies when the controller sees the broker
    gone (``removeExistingBroker`` clears the queue), however long after the deletion that is."""
    registered: set[int] = set()
    seen: set[int] = set()
    watching: dict[str, set[int]] = {}  # topic with a pending deletion request → brokers absent since
    out: dict[str, set[int]] = {}
    for e in timeline.events:
        if isinstance(e, BrokerDeregistered | BrokerRegistered):
            if isinstance(e, BrokerRegistered):
                registered.add(e.broker)
                seen.add(e.broker)
            else:
                registered.discard(e.broker)
                for left in out.values():
                    left.add(e.broker)  # its queue, and any notice still in it, dropped
            for absent in watching.values():
                absent.add(e.broker)  # away, or (re)registered meanwhile: may have missed the news
        elif isinstance(e, DeletionRequested):
            watching.setdefault(e.topic, seen - registered)
        elif isinstance(e, TopicDeleted):
            out[e.topic] = watching.pop(e.topic, set()) | (seen - registered)
    return {topic: frozenset(brokers) for topic, brokers in out.items()}


def missed_deletion(run: RunInputs) -> Recognition:
    """(broker, topic) pairs: the broker was away during the topic's deletion and its journal
    (when there is one) shows no applied UpdateMetadata that told it of the deletion."""
    f = run.final_state
    if run.timeline is None or f is None:
        return Recognition()
    items = set()
    for topic, brokers in absent_during_deletion(run.timeline).items():
        for broker in brokers:
            journal = f.journals.get(broker)
            if journal is None or not told_of_deletion(journal, topic):
                items.add(shown_item(broker, topic))
    return Recognition(frozenset(items))


def _deletions(timeline: Timeline) -> dict[str, list[tuple[float, int]]]:
    """Topic → for each of its deletions, (time in seconds of the deletion request that led to it,
    the controller epoch current then)."""
    epoch: int | None = None
    pending: dict[str, tuple[float, int | None]] = {}
    out: dict[str, list[tuple[float, int]]] = {}
    for e in timeline.events:
        if isinstance(e, Election):
            epoch = e.epoch
        elif isinstance(e, DeletionRequested):
            pending.setdefault(e.topic, (e.record.time_ms / 1000, epoch))
        elif isinstance(e, TopicDeleted) and e.topic in pending:
            at, then = pending.pop(e.topic)
            if then is not None:
                out.setdefault(e.topic, []).append((at, then))
    return out


def deletion_notice_lost(run: RunInputs) -> Recognition:
    """(broker, topic) pairs: the controller in charge at one of the topic's deletion requests was
    replaced afterwards, and the broker's journal shows a partition of the topic it was never told
    of as deleted (an earlier topic of the name may have had partitions a later one lacks). The
    journal cannot tell a notice that died in the replaced controller's queue (a cut or slow link)
    from one never sent; a controller that never sends it is caught in the runs where it stays in
    charge (it resends until the notice gets through)."""
    f, timeline = run.final_state, run.timeline
    if timeline is None or f is None:
        return Recognition()
    elected = [(e.record.time_ms / 1000, e.epoch) for e in timeline.events if isinstance(e, Election)]
    items = set()
    for topic, deletions in _deletions(timeline).items():
        if not any(
            at >= since and later is not None and later > epoch
            for since, epoch in deletions
            for at, later in elected
        ):
            continue
        for broker, journal in f.journals.items():
            if not told_of_deletion(journal, topic):
                items.add(shown_item(broker, topic))
    return Recognition(frozenset(items))


def _maybe_deleted(request: ReceivedRequest) -> bool:
    return request.kind == "StopReplica" and bool(request.delete_partitions) and request.error_code is None


def unanswered_stop_replica(run: RunInputs) -> Recognition:
    """Stale LeaderAndIsr entries that are stale only because an unanswered StopReplica(delete) of
    their partition between the two is taken as not applied."""
    f = run.final_state
    if f is None:
        return Recognition()
    items = set()
    for broker, journal in f.journals.items():
        lives: dict[int | None, tuple[list[ReceivedRequest], list[ReceivedRequest]]] = {}
        for r in journal:
            applied, unanswered = lives.setdefault(life(r), ([], []))
            if r.kind in APPLIED_KINDS and r.error_code == 0:
                applied.append(r)
            elif _maybe_deleted(r):
                unanswered.append(r)
        for applied, unanswered in lives.values():
            if not unanswered:
                continue
            naive = {
                stale_item(broker, s.request.seq, s.topic, s.partition) for s in stale_leader_epochs(applied)
            }
            kept = {
                stale_item(broker, s.request.seq, s.topic, s.partition)
                for s in stale_leader_epochs(applied, forgets=unanswered)
            }
            items |= naive - kept
    return Recognition(frozenset(items))


def _recreated(timeline: Timeline) -> set[str]:
    """Topics whose znode was created again after a deletion."""
    deleted, out = set(), set()
    for e in timeline.events:
        if isinstance(e, TopicDeleted):
            deleted.add(e.topic)
        elif isinstance(e, TopicWritten) and e.created and e.topic in deleted:
            out.add(e.topic)
    return out


def _stale_holders(journal: Sequence[ReceivedRequest]) -> set[TopicPartition]:
    """Partitions this broker re-created after deleting them (an applied LeaderAndIsr after an
    applied StopReplica(delete), none since) and then refused a LeaderAndIsr for, answered 11 at a
    leader epoch not above the re-created one's."""
    deleted: set[TopicPartition] = set()
    held: dict[TopicPartition, int] = {}  # re-created after a delete → its leader epoch
    out: set[TopicPartition] = set()
    for r in journal:
        for p in r.partitions:
            tp = TopicPartition(p.topic, p.partition)
            code = p.error_code if p.error_code is not None else r.error_code
            if r.error_code != 0 or code not in (0, 11):
                continue
            if r.kind == "StopReplica" and r.delete_partitions and code == 0:
                deleted.add(tp)
                held.pop(tp, None)
            elif r.kind == "LeaderAndIsr" and code == 0 and tp in deleted and p.leader_epoch is not None:
                held[tp] = p.leader_epoch
                deleted.discard(tp)
            elif (
                r.kind == "LeaderAndIsr"
                and code == 11
                and tp in held
                and p.leader_epoch is not None
                and p.leader_epoch <= held[tp]
            ):
                out.add(tp)
    return out


def stale_replica_of_deleted_topic(run: RunInputs) -> Recognition:
    """Partitions of a topic created again after a deletion that a replica's broker still holds
    from the old topic: its journal shows the partition re-created after its StopReplica(delete)
    (a deletion retry's LeaderAndIsr) and the new topic's LeaderAndIsr refused with 11."""
    f, timeline = run.final_state, run.timeline
    if timeline is None or f is None:
        return Recognition()
    again = _recreated(timeline)
    tps = {tp for journal in f.journals.values() for tp in _stale_holders(journal) if tp.topic in again}
    kinds = (REASSIGNING, TARGET_NOT_REACHED, REASSIGN_ENTRY_LEFT, REASSIGN_ENTRY_UNREACHABLE)
    return Recognition(frozenset(Item(kind, tp_name(tp)) for tp in tps for kind in kinds))
