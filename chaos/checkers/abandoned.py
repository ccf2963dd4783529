"""Reassignments Kafka 2.5.1 gives up after writing them into the topic znode (decisions ring, pure).

``onPartitionReassignment`` (KafkaController.scala@2.5.1 L630-690) first writes the new full
assignment — RS, ``adding_replicas``, ``removing_replicas`` — into the topic znode
(``updateCurrentReassignment``, U1), then bumps the leader epoch (A1, ``updateLeaderEpoch``,
L1047-1080), which throws ``IllegalStateException`` ("Cannot update leader epoch … leaderAndIsr
path is empty") when the partition has no state znode yet — e.g. a new topic whose only replica
was offline, so ``onNewPartitionCreation`` could not elect a leader. ``maybeTriggerPartitionReassignment``
(L1015-1045) turns that into UNKNOWN_SERVER_ERROR and ``processZkPartitionReassignment``
(L1527-1551) removes failed partitions from ``/admin/reassign_partitions``. The partition stays in
``partitionsBeingReassigned`` (added by ``updateCurrentReassignment``, L607-629) and the topic znode
keeps saying it is being reassigned, but nothing looks at it again until a broker among its
targets registers (``onBrokerStartup`` → ``maybeResumeReassignments``, L360-370) or a new
controller fails over. Seen in the chaos ``process`` scenario, seed 2307 (t0-2's only replica,
broker 1, was down when t0 was created; its reassignment to [2, 3] was given up, the topic znode
kept adding [2, 3] / removing [1]).

Its adding replicas never went through NewReplica (A2 never ran). When such a reassignment is
resumed and found complete, B1 moves them NonExistentReplica → OnlineReplica, an invalid
transition, so they stay NonExistentReplica; deleting the topic later needs them in
ReplicaDeletionStarted — invalid again — and the deletion never completes until a failover (chaos
``process`` seed 2542). :func:`poisoned_topics` names the topics with such a reassignment since
the last controller election.

:func:`abandoned_reassignments` replays a chroot's transaction log and names exactly those: a
partition whose entry left ``/admin/reassign_partitions`` while its topic znode still showed it
mid-reassignment (a completed reassignment clears the topic znode first, B6, and only then the
entry), with no controller election since, no registration of one of its target brokers since,
and the topic znode not rewritten without it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from chaos.checkers.replay import CONTROLLER_EPOCH, applied_ops, creates, topic_or_none, writes_data
from chaos.checkers.stranded import REASSIGN_PARTITIONS
from probes.errors import MalformedZnode
from probes.txnrecords import TxnRecord
from probes.znode_types import TopicPartition, TopicZNode, decode_reassign_partitions

__all__ = ["abandoned_reassignments", "poisoned_topics"]

_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")
_BROKER = re.compile(r"^/brokers/ids/(?P<id>\d+)$")


def _entries(data: bytes | None) -> set[TopicPartition]:
    try:
        return set(decode_reassign_partitions(REASSIGN_PARTITIONS, data).as_mapping())
    except MalformedZnode:
        return set()


def _mid_reassignment(topic: TopicZNode | None, partition: int) -> bool:
    return topic is not None and bool(
        topic.adding_replicas.get(partition) or topic.removing_replicas.get(partition)
    )


def abandoned_reassignments(records: Sequence[TxnRecord]) -> Mapping[TopicPartition, int]:
    """Partition → zxid at which Kafka 2.5.1 gave up its reassignment (see the module text)."""
    return _walk(records)[0]


def poisoned_topics(records: Sequence[TxnRecord]) -> frozenset[str]:
    """Topics with a given-up reassignment since the last election (see the module text)."""
    return frozenset(_walk(records)[1])


def _walk(records: Sequence[TxnRecord]) -> tuple[dict[TopicPartition, int], set[str]]:
    entries: set[TopicPartition] = set()
    topics: dict[str, TopicZNode | None] = {}
    abandoned: dict[TopicPartition, int] = {}
    poisoned: set[str] = set()
    for record in sorted(records, key=lambda r: r.zxid):
        for op in applied_ops(record):
            path, kind = op.path, op.op
            if path is None or kind == "check":
                continue
            written = writes_data(kind)
            if path == CONTROLLER_EPOCH and written:
                abandoned.clear()  # the new controller resumes them from the topic znodes
                poisoned.clear()
            elif (m := _BROKER.match(path)) and creates(kind):
                broker = int(m["id"])
                for tp in list(abandoned):
                    topic = topics.get(tp.topic)
                    if topic is not None and broker in topic.adding_replicas.get(tp.partition, ()):
                        del abandoned[tp]  # onBrokerStartup resumes it
            elif path == REASSIGN_PARTITIONS:
                now = _entries(op.data) if written else set()
                for tp in entries - now:
                    if _mid_reassignment(topics.get(tp.topic), tp.partition):
                        abandoned[tp] = record.zxid
                        poisoned.add(tp.topic)
                entries = now
            elif m := _TOPIC.match(path):
                name = m["topic"]
                topics[name] = topic_or_none(path, op.data) if written else None
                if not written:
                    poisoned.discard(name)
                for tp in [tp for tp in abandoned if tp.topic == name]:
                    if not _mid_reassignment(topics[name], tp.partition):
                        del abandoned[tp]
    return abandoned, poisoned
