"""Entries Kafka 2.5.1 leaves in ``/admin/reassign_partitions`` after deleting their topic
(decisions ring, pure).

Kafka 2.5.1 deletes a topic while one of its partitions is still being reassigned in two ways:

- the *first* deletion request is not halted at all: ``processTopicDeletion``
  (KafkaController.scala@2.5.1 L1510-1518) calls ``markTopicIneligibleForDeletion`` before
  ``enqueueTopicsForDeletion``, and the former only halts topics already queued
  (``topicsToBeDeleted & topics``, TopicDeletionManager.scala@2.5.1 L170-177), so the enqueue's
  ``resumeDeletions`` finds the topic eligible (L121-126, L221-225) and starts deleting it;
- a halt set later ("topic reassignment in progress" from ``onPartitionReassignment`` L557, or
  "offline replicas") is lifted whatever its reason when a broker hosting a replica (re)registers:
  ``onBrokerStartup`` (L370-378) calls ``resumeDeletionForTopics`` (TopicDeletionManager L134-142).

Either way the deletion runs to ``completeDeleteTopic`` (L240-250). Neither that nor
``ControllerContext.removeTopic`` (@2.5.1 L276-283) touches ``partitionsBeingReassigned`` or the
znode; only reassignment completion (``removePartitionFromReassigningPartitions``,
KafkaController L918-928) removes an entry, and it never comes for a deleted partition. The
entry therefore stays — also when the name is created again, larger or smaller — until a new
controller's failover re-reads the znode (``initializePartitionReassignments`` L775-782 →
``processZkPartitionReassignment`` L1527-1551: an unknown partition is removed with
``UNKNOWN_TOPIC_OR_PARTITION``, an existing one is reassigned and then removed on completion).
The znode's handler reacts to creation only, so no other event looks at it again (spec §2.3).

:func:`stranded_reassignments` replays a chroot's transaction log and names exactly those
entries: listed in the znode when the topic znode was deleted, with that partition still being
reassigned in the deleted topic znode (``adding_replicas``/``removing_replicas``: the controller
had started it, ``updateCurrentReassignment`` U1), and no controller election since.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from chaos.checkers.replay import CONTROLLER_EPOCH, applied_ops, deletes, topic_or_none, writes_data
from probes.errors import MalformedZnode
from probes.txnrecords import TxnOp, TxnRecord
from probes.znode_types import (
    TopicPartition,
    TopicZNode,
    decode_reassign_partitions,
)

__all__ = ["REASSIGN_PARTITIONS", "stranded_reassignments"]

REASSIGN_PARTITIONS = "/admin/reassign_partitions"
_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")


def _reassign_entries(data: bytes | None) -> dict[TopicPartition, tuple[int, ...]]:
    try:
        return decode_reassign_partitions(REASSIGN_PARTITIONS, data).as_mapping()
    except MalformedZnode:
        return {}  # Kafka decodes a malformed znode as empty (spec §12)


def _reassigning(topic: TopicZNode | None, partition: int) -> bool:
    if topic is None:
        return False
    return bool(topic.adding_replicas.get(partition) or topic.removing_replicas.get(partition))


class _Walk:
    """The znode's entries, the topic znodes and the stranded entries, record by record."""

    def __init__(self) -> None:
        self.entries: dict[TopicPartition, tuple[int, ...]] = {}
        self.topics: dict[str, TopicZNode | None] = {}
        self.stranded: dict[TopicPartition, int] = {}

    def apply(self, zxid: int, op: TxnOp) -> None:
        path, kind = op.path, op.op
        if path is None or kind == "check":
            return
        written = writes_data(kind)
        deleted = deletes(kind)
        if path == CONTROLLER_EPOCH and written:
            self.stranded.clear()  # a new controller's failover re-reads the znode
        elif path == REASSIGN_PARTITIONS:
            self.entries = _reassign_entries(op.data) if written else {}
            self.stranded = {tp: z for tp, z in self.stranded.items() if tp in self.entries}
        elif m := _TOPIC.match(path):
            if written:
                self.topics[m["topic"]] = topic_or_none(path, op.data)
            elif deleted:
                self._topic_deleted(zxid, m["topic"])

    def _topic_deleted(self, zxid: int, topic: str) -> None:
        znode = self.topics.pop(topic, None)
        for tp in self.entries:
            if tp.topic == topic and _reassigning(znode, tp.partition):
                self.stranded.setdefault(tp, zxid)


def stranded_reassignments(records: Sequence[TxnRecord]) -> Mapping[TopicPartition, int]:
    """Entries of ``/admin/reassign_partitions`` that Kafka 2.5.1 leaves in place at the end of
    the log, each with the zxid of the topic deletion that stranded it (see the module text)."""
    walk = _Walk()
    for record in sorted(records, key=lambda r: r.zxid):
        for op in applied_ops(record):
            walk.apply(record.zxid, op)
    return dict(walk.stranded)
