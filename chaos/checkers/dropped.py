"""Deletion requests Kafka 2.5.1 drops for a topic its controller has not learned of yet
(decisions ring, pure).

``processTopicDeletion`` (KafkaController.scala@2.5.1 L1496-1505) reads the children of
``/admin/delete_topics`` when the event is *processed*, subtracts ``controllerContext.allTopics``
and deletes the requests for the rest ("Ignoring request to delete non-existing topics"). The
controller learns of a new topic only when it processes the TopicChange event
(``processTopicChange``: ``setAllTopics`` and, in the same event, ``onNewPartitionCreation``, which
creates ``/brokers/topics/<t>/partitions``). So when a TopicDeletion event is already queued (an
earlier deletion request fired the child watch) and then a client creates topic ``t`` and asks to
delete it, the queued TopicDeletion event runs first, sees ``t``'s request, does not know ``t``,
and removes the request: the acknowledged deletion is lost and ``t`` lives on. Seen in the chaos
``process`` scenario, seed 2062 (t3 created at zxid 0x1f4b, its deletion requested at 0x1f4e and
dropped by the controller at 0x1f53, the topic's partitions created at 0x1f59).

:func:`dropped_deletions` replays a chroot's transaction log and names exactly those: a controller
write (a multi checking ``/controller_epoch``) that deleted ``/admin/delete_topics/<t>`` while the
topic znode ``/brokers/topics/<t>`` existed and its ``partitions`` child did not yet — the only
state in which Kafka drops a request without deleting the topic (a completed deletion removes the
topic znode first, ``completeDeleteTopic``). Each maps to the czxid of the topic incarnation that
survived it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from chaos.checkers.replay import applied_ops, creates, deletes, epoch_check_version
from probes.txnrecords import TxnRecord

__all__ = ["dropped_deletions"]

_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")
_PARTITIONS = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)/partitions$")
_REQUEST = re.compile(r"^/admin/delete_topics/(?P<topic>[^/]+)$")


def dropped_deletions(records: Sequence[TxnRecord]) -> Mapping[str, int]:
    """Topic → czxid of the incarnation whose deletion request a controller dropped unprocessed
    (see the module text); a later drop of the same name replaces an earlier one."""
    topics: dict[str, int] = {}  # live topic znode → czxid
    known: set[str] = set()  # topics whose partitions znode exists (a controller processed them)
    dropped: dict[str, int] = {}
    for record in sorted(records, key=lambda r: r.zxid):
        fenced = epoch_check_version(record) is not None
        for op in applied_ops(record):
            path, kind = op.path, op.op
            if path is None or kind == "check":
                continue
            created = creates(kind)
            deleted = deletes(kind)
            if m := _TOPIC.match(path):
                if created:
                    topics[m["topic"]] = record.zxid
                elif deleted:
                    topics.pop(m["topic"], None)
                    known.discard(m["topic"])
            elif m := _PARTITIONS.match(path):
                if created:
                    known.add(m["topic"])
                elif deleted:
                    known.discard(m["topic"])
            elif (m := _REQUEST.match(path)) and deleted and fenced:
                topic = m["topic"]
                if topic in topics and topic not in known:
                    dropped[topic] = topics[topic]
    return dropped
