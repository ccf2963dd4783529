"""Recogniser of a reassignment that waits for a stalled deletion of its topic (decisions ring,
pure).

Kafka 2.5.1 never elects a partition of a topic queued for deletion (the partition state machine
leaves such topics alone, and a deletion takes every replica offline first). A partition of such a
topic that is mid-reassignment with no live leader can therefore not get its targets into the ISR,
and its reassignment (with any ``/admin/reassign_partitions`` entry) waits for as long as the
deletion does. When another quirk of the registry explains why that deletion has not completed —
it is halted, its resumption was lost, it is poisoned or deadlocked — the waiting reassignment is
explained with it; a deletion that simply never ran explains nothing. The entry is kept only
while no controller was elected since the deletion request: a failover's
``processZkPartitionReassignment`` drops the entries of topics queued for deletion.
"""

from __future__ import annotations

from chaos.checkers.findings import (
    DELETION_NOT_DONE,
    DELETION_REQUEST_LEFT,
    Item,
    RunInputs,
    stuck_reassignment_items,
)
from chaos.checkers.quirks import deadlock, deletion, reassignment
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import DeletionRequested, DeletionRequestRemoved, Election
from probes.znode_types import TopicPartition

__all__ = ["waiting_for_stalled_deletion"]

#: The recognisers that explain a deletion which does not complete.
_STALLED_DELETIONS = (
    reassignment.stranded_blocks_deletion,
    reassignment.poisoned,
    reassignment.lost_resumption,
    deletion.held,
    deletion.failed_replica_deletion,
    deadlock.deadlocked,
)


def _stalled_topics(run: RunInputs) -> set[str]:
    topics: set[str] = set()
    for recognise in _STALLED_DELETIONS:
        for item in recognise(run).items:
            if item.kind in (DELETION_NOT_DONE, DELETION_REQUEST_LEFT):
                topics.add(item.name)
    return topics


def waiting_for_stalled_deletion(run: RunInputs) -> Recognition:
    """Partitions mid-reassignment, leaderless and short of their targets in the ISR, of topics
    still queued for deletion whose deletion another quirk explains."""
    f = run.final_state
    if f is None or run.timeline is None:
        return Recognition()
    stalled = _stalled_topics(run) & set(f.delete_topics)
    requested: dict[str, int] = {}  # topic → zxid of its (current) deletion request
    elected = 0
    for e in run.timeline.events:
        if isinstance(e, DeletionRequested):
            requested.setdefault(e.topic, e.zxid)
        elif isinstance(e, DeletionRequestRemoved):
            requested.pop(e.topic, None)
        elif isinstance(e, Election):
            elected = e.zxid
    items: set[Item] = set()
    for topic in sorted(stalled):
        t = f.topics.get(topic)
        if t is None:
            continue
        for p, replicas in sorted(t.replicas.items()):
            tp = TopicPartition(topic, p)
            state = f.partition_states.get(tp)
            if not t.being_reassigned(p) or (state is not None and state.leader in f.live_brokers):
                continue
            targets = set(replicas) - set(t.removing.get(p, ()))
            if state is not None and targets <= set(state.isr):
                continue
            # a failover since the request drops the entry of a topic queued for deletion
            kept = elected < requested.get(topic, elected + 1)
            items |= stuck_reassignment_items(f, tp, entry_kept=kept)
    return Recognition(frozenset(items))
