"""Recogniser of Kafka 2.5.1's stuck preferred-election znode (decisions ring, pure).

A ZooKeeper-triggered preferred election reads each partition's leader from the controller's
``partitionLeadershipInfo``, a ``mutable.Map`` read with ``apply``: a partition that has no
leadership yet (its topic was created while every replica of it was offline, so it has no state
znode) throws before ``onReplicaElection``, whose ``finally`` is what deletes
``/admin/preferred_replica_election``. The znode then stays until a controller failover.

A partition gets into that state a second way: its topic is deleted while the partition is being
reassigned. The deletion clears neither ``partitionsBeingReassigned`` nor the partition's ISR-change
handler; an ISR change written during the deletion and handled after it finds an empty assignment
(no adding or removing replicas: "complete"), whose phase B stores that empty assignment (B2) before
it throws on the missing leadership (B3) — from then on the controller lists the partition, without
leadership.
"""

from __future__ import annotations

from chaos.checkers.findings import Item, RunInputs
from chaos.checkers.paths import Kind
from chaos.checkers.quirks.reassignment import mid_reassignment
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import AdminZnode, Election, StateDeleted, StateWritten, Timeline, TopicDeleted
from chaos.history import pairs
from probes.znode_types import TopicPartition

__all__ = ["PREFERRED", "stuck_election"]

PREFERRED = "/admin/preferred_replica_election"


def _stateless_at_last_creation(timeline: Timeline, partitions: tuple[TopicPartition, ...]) -> bool:
    """The znode's last creation came after every election and named a partition with no state
    znode then."""
    with_state: set[TopicPartition] = set()
    stateless_at_creation = False
    for e in timeline.events:
        if isinstance(e, StateWritten):
            with_state.add(TopicPartition(e.topic, e.partition))
        elif isinstance(e, StateDeleted):
            with_state.discard(TopicPartition(e.topic, e.partition))
        elif isinstance(e, TopicDeleted):
            with_state = {tp for tp in with_state if tp.topic != e.topic}
        elif isinstance(e, Election):
            stateless_at_creation = False  # a failover resumes (or drops) the pending election
        elif (
            isinstance(e, AdminZnode) and e.kind == Kind.PREFERRED_REPLICA_ELECTION and e.change == "created"
        ):
            stateless_at_creation = any(tp not in with_state for tp in partitions)
    return stateless_at_creation


def _deleted_while_reassigned(timeline: Timeline, partitions: tuple[TopicPartition, ...]) -> bool:
    """One of ``partitions`` belongs to a topic deleted while that partition was mid-reassignment,
    with no election since the deletion nor since the znode's last creation: the controller keeps
    the partition among its reassignments, an ISR change of it during the deletion completes that
    reassignment on an empty assignment (B2 inserts it, B3 then throws for the missing leadership),
    and the partition is known again with no leadership."""
    deleted_mid: set[TopicPartition] = set()
    created_since_election = False
    for e in timeline.events:
        if isinstance(e, Election):
            deleted_mid.clear()
            created_since_election = False
        elif isinstance(e, TopicDeleted) and e.last is not None:
            deleted_mid |= {
                TopicPartition(e.topic, p) for p in e.last.partitions if mid_reassignment(e.last, p)
            }
        elif (
            isinstance(e, AdminZnode) and e.kind == Kind.PREFERRED_REPLICA_ELECTION and e.change == "created"
        ):
            created_since_election = True
    return created_since_election and any(tp in deleted_mid for tp in partitions)


def stuck_election(run: RunInputs) -> Recognition:
    """``/admin/preferred_replica_election`` left after heal, created (last, after every
    election) while one of the partitions it still names had no state znode."""
    f = run.final_state
    if f is None or f.preferred_replica_election is None:
        return Recognition()
    item = Item("admin znode", PREFERRED)
    if run.timeline is None:
        asked = {
            TopicPartition(str(p.get("topic")), int(p.get("partition", -1)))
            for q in pairs(run.history)
            if q.invoke.f == "preferred_election"
            for p in q.invoke.value.get("partitions") or ()
        }
        if not asked & set(f.preferred_replica_election):
            return Recognition()  # no election of the run named them: the quirk cannot apply
        return Recognition(
            undecided=frozenset({item}), why_undecided="no transaction log to tell which partitions had state"
        )
    names = f.preferred_replica_election
    # a partition deleted mid-reassignment may have a state again at the end (its topic created
    # anew): the election event that threw ran before, and nothing creates the znode again
    if _stateless_at_last_creation(run.timeline, names) or _deleted_while_reassigned(run.timeline, names):
        return Recognition(frozenset({item}))
    return Recognition()
