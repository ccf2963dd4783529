"""Recognisers of Kafka 2.5.1's topic-deletion quirks over the timeline (decisions ring, pure).

See :mod:`chaos.checkers.quirks.registry` for what each quirk is, its Kafka source lines and the
run that showed it.
"""

from __future__ import annotations

from collections.abc import Iterable

from chaos.checkers.findings import DELETION_NOT_DONE, DELETION_REQUEST_LEFT, Item, RunInputs
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
)

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
    def __init__(self) -> None:
        self.registered: set[int] = set()
        self.topics: dict[str, tuple[int, frozenset[int]]] = {}  # name → (czxid, replica brokers)
        self.requested: set[str] = set()
        self.gone: dict[str, set[int]] = {}  # being deleted → replica brokers unregistered meanwhile
        self.halted: set[str] = set()

    def unregistered(self, broker: int) -> None:
        self.registered.discard(broker)
        for name in self.requested & set(self.topics):
            if broker in self.topics[name][1]:
                self.gone.setdefault(name, set()).add(broker)

    def registered_again(self, broker: int) -> None:
        self.registered.add(broker)
        for gone in self.gone.values():
            gone.discard(broker)  # onBrokerStartup resumes the deletion (clears the halt)
        for name in list(self.halted):
            if name in self.requested and name in self.topics and broker in self.topics[name][1]:
                self.halted.discard(name)

    def topic_written(self, e: TopicWritten) -> None:
        parts = () if e.znode is None else e.znode.partitions.values()
        replicas = frozenset(r for rs in parts for r in rs)
        czxid = e.zxid if e.created or e.topic not in self.topics else self.topics[e.topic][0]
        self.topics[e.topic] = (czxid, replicas)

    def topic_deleted(self, name: str) -> None:
        self.topics.pop(name, None)
        if self.gone.pop(name, set()):
            self.halted.add(name)

    def walk(self, timeline: Timeline) -> dict[str, int]:
        for e in timeline.events:
            if isinstance(e, BrokerDeregistered):
                self.unregistered(e.broker)
            elif isinstance(e, Election):
                self.gone.clear()
                self.halted.clear()
            elif isinstance(e, BrokerRegistered):
                self.registered_again(e.broker)
            elif isinstance(e, TopicWritten):
                self.topic_written(e)
            elif isinstance(e, TopicDeleted):
                self.topic_deleted(e.topic)
            elif isinstance(e, DeletionRequested):
                self.requested.add(e.topic)
            elif isinstance(e, DeletionRequestRemoved):
                self.requested.discard(e.topic)
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
    broker hosting one of their replicas and no controller election."""
    f = run.final_state
    if run.timeline is None or f is None or not f.journals:
        return Recognition()
    failed: dict[str, float] = {}
    for requests in f.journals.values():
        for r in requests:
            at = r.answered_s if r.answered_s is not None else r.sent_s
            if r.kind != "StopReplica" or not r.delete_partitions or at is None:
                continue
            for p in r.partitions:
                error = p.error_code if r.error_code in (0, None) else r.error_code
                if error not in (0, None):
                    failed[p.topic] = max(failed.get(p.topic, 0.0), at)
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
                if e.time_s >= when and e.broker in replicas.get(t, frozenset())
            }
    return _topics(set(failed) - resumed, DELETION_NOT_DONE, DELETION_REQUEST_LEFT)
