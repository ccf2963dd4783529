"""Recognisers of Kafka 2.5.1's topic-deletion quirks over the timeline (decisions ring, pure).

See :mod:`chaos.checkers.quirks.registry` for what each quirk is, its Kafka source lines and the
run that showed it.
"""

from __future__ import annotations

from collections.abc import Iterable

from chaos.checkers.findings import DELETION_NOT_DONE, DELETION_REQUEST_LEFT, Item, RunInputs
from chaos.checkers.quirks.reassignment import mid_reassignment
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import (
    BrokerDeregistered,
    BrokerRegistered,
    DeletionRequested,
    DeletionRequestRemoved,
    Election,
    PartitionsZnode,
    Timeline,
    TopicDeleted,
    TopicWritten,
    is_fenced,
)
from kafkawire.errors import Errors
from probes.znode_types import TopicPartition, TopicZNode

__all__ = ["dropped", "dropped_requests", "failed_replica_deletion", "held", "held_deletions"]


def _topics(names: Iterable[str], *kinds: str) -> Recognition:
    return Recognition(frozenset(Item(kind, t) for t in names for kind in kinds))


# ---- a deletion request dropped before the controller knew the topic -------------------------


def dropped_requests(timeline: Timeline) -> dict[str, int]:
    """Topic → czxid of the incarnation whose deletion request a controller's fenced write
    removed while the topic znode existed and its ``partitions`` znode did not yet."""
    topics: dict[str, int] = {}  # live topic znode → czxid
    known: set[str] = set()  # topics whose partitions znode exists (a controller processed them)
    out: dict[str, int] = {}
    for e in timeline.events:
        if isinstance(e, TopicWritten) and e.created:
            topics[e.topic] = e.zxid
        elif isinstance(e, TopicDeleted):
            topics.pop(e.topic, None)
            known.discard(e.topic)
        elif isinstance(e, PartitionsZnode) and e.partition is None:
            (known.add if e.created else known.discard)(e.topic)
        elif (
            isinstance(e, DeletionRequestRemoved) and e.fenced and e.topic in topics and e.topic not in known
        ):
            out[e.topic] = topics[e.topic]
    return out


def dropped(run: RunInputs) -> Recognition:
    """Topics whose surviving incarnation (the final czxid) had its deletion request dropped."""
    f = run.final_state
    if run.timeline is None or f is None:
        return Recognition()
    found = {
        t
        for t, czxid in dropped_requests(run.timeline).items()
        if t in f.topics and f.topics[t].czxid == czxid
    }
    return _topics(found, DELETION_NOT_DONE)


# ---- a deletion halt left behind by an earlier topic of the same name -------------------------


class _HeldWalk:
    """A name's deletion halt that outlives its topic (``topicsIneligibleForDeletion`` is not
    cleared by ``completeDeleteTopic``). Two halts are followed: a replica's broker that went away
    while the topic was being deleted (``onReplicasBecomeOffline``), and a change under
    ``/admin/delete_topics`` while the topic was queued with a partition in the controller's
    ``partitionsBeingReassigned`` (``processTopicDeletion``: "topic reassignment in progress").
    That set is not cleared by a topic's deletion either: a partition whose reassignment was under
    way when its topic was deleted stays in it until a failover, and halts the deletion of every
    later topic of that name again at each such change."""

    def __init__(self) -> None:
        self.registered: set[int] = set()
        self.topics: dict[str, tuple[int, frozenset[int]]] = {}  # name → (czxid, replica brokers)
        self.znodes: dict[str, TopicZNode | None] = {}
        self.requested: dict[str, int] = {}  # name → zxid of its deletion request
        self.gone: dict[str, set[int]] = {}  # being deleted → replica brokers unregistered meanwhile
        self.reassign_halted: set[str] = set()  # being deleted, halted for a reassignment
        self.reassigning: set[TopicPartition] = set()  # the controller's partitionsBeingReassigned
        self.stale: set[str] = set()  # names with entries left by a deleted topic
        self.halted: set[str] = set()

    def unregistered(self, broker: int) -> None:
        self.registered.discard(broker)
        for name in set(self.requested) & set(self.topics):
            if broker in self.topics[name][1]:
                self.gone.setdefault(name, set()).add(broker)

    def registered_again(self, broker: int) -> None:
        self.registered.add(broker)
        for gone in self.gone.values():
            gone.discard(broker)  # onBrokerStartup resumes the deletion (clears the halt)
        for name in list(self.halted | self.reassign_halted):
            if name in self.requested and name in self.topics and broker in self.topics[name][1]:
                self.halted.discard(name)
                self.reassign_halted.discard(name)

    def election(self) -> None:
        self.gone.clear()
        self.halted.clear()
        self.reassign_halted.clear()
        self.stale.clear()
        self.reassigning = {
            TopicPartition(name, p)
            for name, z in self.znodes.items()
            if z is not None
            for p in z.partitions
            if mid_reassignment(z, p)
        }

    def requests_changed(self, zxid: int) -> None:
        """``processTopicDeletion`` for a child change: queued topics with a partition being
        reassigned are halted (the topic was queued by an earlier request's event)."""
        for name, since in self.requested.items():
            if since >= zxid or name not in self.topics:
                continue
            if not any(tp.topic == name for tp in self.reassigning):
                continue
            if name in self.stale:
                self.halted.add(name)  # entries of an earlier topic of that name
            else:
                self.reassign_halted.add(name)

    def topic_written(self, e: TopicWritten) -> None:
        parts = () if e.znode is None else e.znode.partitions.values()
        replicas = frozenset(r for rs in parts for r in rs)
        czxid = e.zxid if e.created or e.topic not in self.topics else self.topics[e.topic][0]
        self.topics[e.topic] = (czxid, replicas)
        before, self.znodes[e.topic] = self.znodes.get(e.topic), e.znode
        if e.znode is None or not is_fenced(e.record):
            return
        for p in e.znode.partitions:
            tp = TopicPartition(e.topic, p)
            if mid_reassignment(e.znode, p):
                self.reassigning.add(tp)  # U1
            elif mid_reassignment(before, p):
                self.reassigning.discard(tp)  # completed or cancelled

    def topic_deleted(self, name: str) -> None:
        self.topics.pop(name, None)
        self.znodes[name] = None
        if self.gone.pop(name, set()) or name in self.reassign_halted:
            self.halted.add(name)
        self.reassign_halted.discard(name)
        if any(tp.topic == name for tp in self.reassigning):
            self.stale.add(name)

    def walk(self, timeline: Timeline) -> dict[str, int]:
        for e in timeline.events:
            if isinstance(e, BrokerDeregistered):
                self.unregistered(e.broker)
            elif isinstance(e, Election):
                self.election()
            elif isinstance(e, BrokerRegistered):
                self.registered_again(e.broker)
            elif isinstance(e, TopicWritten):
                self.topic_written(e)
            elif isinstance(e, TopicDeleted):
                self.topic_deleted(e.topic)
            elif isinstance(e, DeletionRequested):
                self.requested.setdefault(e.topic, e.zxid)
                self.requests_changed(e.zxid)
            elif isinstance(e, DeletionRequestRemoved):
                self.requested.pop(e.topic, None)
                self.requests_changed(e.zxid)
        return {name: self.topics[name][0] for name in self.halted if name in self.topics}


def held_deletions(timeline: Timeline) -> dict[str, int]:
    """Topic name → czxid of its current topic znode, for the names still halted at the end."""
    return _HeldWalk().walk(timeline)


def held(run: RunInputs) -> Recognition:
    """Names still halted at the end whose current topic (the final czxid) is the held one."""
    f = run.final_state
    if run.timeline is None or f is None:
        return Recognition()
    halted = held_deletions(run.timeline)
    found = {t for t, czxid in halted.items() if t in f.topics and f.topics[t].czxid == czxid}
    return _topics(found, DELETION_NOT_DONE, DELETION_REQUEST_LEFT)


# ---- a deletion halted by a failed replica deletion --------------------------------------------


def failed_replica_deletion(run: RunInputs) -> Recognition:
    """Topics with a StopReplica(delete) answered with an error (journals: the last such answer
    time) and, after it (the log's ``time_ms``, the same host's clock), no registration of a
    broker hosting one of their replicas that the controller read after handling the failure, and
    no controller election.

    A STALE_BROKER_EPOCH answer means the broker had registered anew before the request arrived:
    the broker change that replaced the registration the request was addressed to was queued
    before the answer and is handled first, and every registration that change reads (up to the
    broker epoch the controller next addresses that broker with) has had its ``onBrokerStartup``
    before the failure halted the deletion: those do not lift the halt."""
    f = run.final_state
    if run.timeline is None or f is None or not f.journals:
        return Recognition()
    failed: dict[str, float] = {}
    read_before: dict[str, int] = {}  # topic → registrations up to this czxid were handled first
    for requests in f.journals.values():
        for i, r in enumerate(requests):
            at = r.answered_s if r.answered_s is not None else r.sent_s
            if r.kind != "StopReplica" or not r.delete_partitions or at is None:
                continue
            for p in r.partitions:
                error = p.error_code if r.error_code in (0, None) else r.error_code
                if error in (0, None):
                    continue
                failed[p.topic] = max(failed.get(p.topic, 0.0), at)
                if error == Errors.STALE_BROKER_EPOCH:
                    next_epoch = next(
                        (q.broker_epoch for q in requests[i + 1 :] if q.broker_epoch != r.broker_epoch), None
                    )
                    if next_epoch is not None:
                        read_before[p.topic] = max(read_before.get(p.topic, 0), next_epoch)
    replicas: dict[str, frozenset[int]] = {}
    resumed: set[str] = set()
    for e in run.timeline.events if failed else ():
        if isinstance(e, TopicWritten) and e.znode is not None:
            replicas[e.topic] = frozenset(r for rs in e.znode.partitions.values() for r in rs)
        elif isinstance(e, Election):
            resumed |= {t for t, when in failed.items() if e.time_s >= when}
        elif isinstance(e, BrokerRegistered):
            resumed |= {
                t
                for t, when in failed.items()
                if e.time_s >= when
                and e.broker in replicas.get(t, frozenset())
                and e.zxid > read_before.get(t, 0)
            }
    return _topics(set(failed) - resumed, DELETION_NOT_DONE, DELETION_REQUEST_LEFT)
