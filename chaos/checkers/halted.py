"""Topic names whose deletion Kafka 2.5.1 holds because an earlier topic of the same name left
its deletion halt behind (decisions ring, pure).

``markTopicIneligibleForDeletion`` (TopicDeletionManager.scala@2.5.1 L168-176) adds a topic to
``controllerContext.topicsIneligibleForDeletion``; only ``resumeDeletionForTopics`` (L134-142:
a broker hosting a replica registers, or a reassignment completes) and a new controller's context
remove it — ``completeDeleteTopic`` (L240-250) does not. A deletion can be halted and still
complete: when a broker whose replica had *already* answered its StopReplica(delete) dies while
the topic is still being deleted, ``onReplicasBecomeOffline`` (KafkaController.scala@2.5.1
L464-487) calls ``failReplicaDeletion`` for it — the transition ReplicaDeletionSuccessful →
ReplicaDeletionIneligible is invalid and logged, the replica stays successful, but the topic is
halted ("replica deletion failure") — and ``resumeDeletions`` completes the topic as soon as the
other replicas answer, because it checks completion before eligibility. The halt outlives the
topic: the next topic of that name is never eligible (``isTopicEligibleForDeletion``), so its
deletion request stays in ``/admin/delete_topics`` and the topic lives on, until a broker
hosting one of its replicas registers again or the controller fails over. Seen in the chaos
``partition`` scenario, seed 2261 (t1's first deletion: broker 1 bounced after answering, the
deletion completed; t1 was created again on broker 2, the controller itself, and its deletion
never started).

:func:`held_deletions` replays a chroot's transaction log: a name is *halted* when, while its
deletion was requested and its topic znode existed, a broker hosting one of its replicas lost
its registration and had not registered again when the topic znode was deleted. The halt ends
at the next controller election, or when a broker hosting a replica of the name's current topic
registers while that topic's deletion is requested. Each name still halted at the end maps to
the czxid of its current topic znode.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from chaos.checkers.final_state import ReceivedRequest
from chaos.checkers.replay import CONTROLLER_EPOCH, applied_ops, creates, deletes, writes_data
from probes.errors import MalformedZnode
from probes.txnrecords import TxnRecord
from probes.znode_types import decode_topic

__all__ = ["halted_by_failed_replica_deletion", "held_deletions"]

_BROKER = re.compile(r"^/brokers/ids/(?P<id>\d+)$")
_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")
_REQUEST = re.compile(r"^/admin/delete_topics/(?P<topic>[^/]+)$")


class _Walk:
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

    def topic_written(self, zxid: int, name: str, created: bool, data: bytes | None, path: str) -> None:
        try:
            replicas = frozenset(r for rs in decode_topic(path, data).partitions.values() for r in rs)
        except MalformedZnode:
            replicas = frozenset()
        czxid = zxid if created or name not in self.topics else self.topics[name][0]
        self.topics[name] = (czxid, replicas)

    def topic_deleted(self, name: str) -> None:
        self.topics.pop(name, None)
        if self.gone.pop(name, set()):
            self.halted.add(name)

    def election(self) -> None:
        self.gone.clear()
        self.halted.clear()


def held_deletions(records: Sequence[TxnRecord]) -> Mapping[str, int]:
    """Topic name → czxid of its current topic znode, for the names Kafka 2.5.1 still holds halted."""
    walk = _Walk()
    for record in sorted(records, key=lambda r: r.zxid):
        for op in applied_ops(record):
            path, kind = op.path, op.op
            if kind == "closeSession":
                for closed in op.closed_paths or ():
                    if m := _BROKER.match(closed):
                        walk.unregistered(int(m["id"]))
                continue
            if path is None or kind == "check":
                continue
            created = creates(kind)
            written = writes_data(kind)
            deleted = deletes(kind)
            if path == CONTROLLER_EPOCH and written:
                walk.election()
            elif m := _BROKER.match(path):
                if created:
                    walk.registered_again(int(m["id"]))
                elif deleted:
                    walk.unregistered(int(m["id"]))
            elif m := _TOPIC.match(path):
                if written:
                    walk.topic_written(record.zxid, m["topic"], created, op.data, path)
                elif deleted:
                    walk.topic_deleted(m["topic"])
            elif m := _REQUEST.match(path):
                if created:
                    walk.requested.add(m["topic"])
                elif deleted:
                    walk.requested.discard(m["topic"])
    return {name: walk.topics[name][0] for name in walk.halted if name in walk.topics}


def halted_by_failed_replica_deletion(
    records: Sequence[TxnRecord], journals: Mapping[int, Sequence[ReceivedRequest]]
) -> frozenset[str]:
    """Topics whose deletion Kafka 2.5.1 holds halted after a failed replica deletion.

    A StopReplica(delete=true) answered with an error (the request's, or a partition's — e.g.
    STALE_BROKER_EPOCH when the controller has not yet seen the broker's new registration) makes
    the controller call ``failReplicaDeletion`` (``TopicDeletionStopReplicaResponseReceived``,
    KafkaController.scala@2.5.1 L1207-1227), which halts the topic ("replica deletion failure",
    TopicDeletionManager.scala@2.5.1 L150-165). Only a broker hosting one of its replicas
    registering again (``onBrokerStartup`` → ``resumeDeletionForTopics``) or a new controller resumes
    it. Seen in the chaos ``partition`` scenario, seed 2391 (broker 3 bounced twice; answers 77 to
    StopReplica with its old broker epoch; no registration of a replica's broker after the last).

    From the journals: the last such error answer per topic (its answer time, wall clock); from
    the transaction log (``time_ms``, the same host's clock): no registration of a broker hosting
    a replica of the topic and no controller election after it.
    """
    failed: dict[str, float] = {}
    for requests in journals.values():
        for r in requests:
            if r.kind != "StopReplica" or not r.delete_partitions:
                continue
            at = r.answered_s if r.answered_s is not None else r.sent_s
            if at is None:
                continue
            for p in r.partitions:
                error = p.error_code if r.error_code in (0, None) else r.error_code
                if error not in (0, None):
                    failed[p.topic] = max(failed.get(p.topic, 0.0), at)
    if not failed:
        return frozenset()
    replicas: dict[str, frozenset[int]] = {}
    resumed: set[str] = set()
    for record in sorted(records, key=lambda r: r.zxid):
        at_s = record.time_ms / 1000
        for op in applied_ops(record):
            path, kind = op.path, op.op
            if path is None or kind == "check":
                continue
            created = creates(kind)
            if m := _TOPIC.match(path):
                if writes_data(kind):
                    try:
                        parts = decode_topic(path, op.data).partitions.values()
                        replicas[m["topic"]] = frozenset(r for rs in parts for r in rs)
                    except MalformedZnode:
                        pass
            elif path == CONTROLLER_EPOCH and writes_data(kind):
                resumed |= {t for t, when in failed.items() if at_s >= when}
            elif (m := _BROKER.match(path)) and created:
                broker = int(m["id"])
                resumed |= {
                    t for t, when in failed.items() if at_s >= when and broker in replicas.get(t, frozenset())
                }
    return frozenset(set(failed) - resumed)
