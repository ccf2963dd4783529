"""Deleted topics that Kafka 2.5.1 leaves in a broker's metadata cache because the broker was
not registered while the topic was deleted (decisions ring, pure).

A deletion reaches the brokers' metadata caches only as an UpdateMetadata whose partitions carry
leader -2 (``LeaderDuringDelete``), sent by ``onTopicDeletion`` to the brokers live at that moment.
``MetadataCache.updateMetadata`` (MetadataCache.scala@2.5.1 L295-320) starts from a copy of the old
cache and removes a partition only on such an entry, and ``onBrokerStartup`` (KafkaController.scala
@2.5.1 L352-360) sends a returning broker the states of the partitions that exist — none for the
deleted topic. So a broker whose ZooKeeper session expired (or that was otherwise unregistered)
while a topic was deleted, and that re-registered without restarting, shows the topic until it
restarts. Seen in the chaos ``zk-session`` scenario, seed 2018 (broker 1's session closed at zxid
0x887, t2 deleted at 0x892-0x89b, broker 1 registered again at 0x89d).

:func:`absent_during_deletion` replays a chroot's transaction log: for each deleted topic znode
(the last deletion of each name), the brokers whose ``/brokers/ids/<id>`` was missing (deleted,
or gone with its closed or expired session) or was created anew at any point from the deletion
request (``/admin/delete_topics/<t>``) to the topic znode's deletion. The checker excuses a
broker only if it is in that set *and* its request journal (when there is one) shows no applied
UpdateMetadata that told it of the deletion.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from chaos.checkers.replay import applied_ops, creates, deletes
from probes.txnrecords import TxnRecord

__all__ = ["LEADER_DURING_DELETE", "absent_during_deletion"]

LEADER_DURING_DELETE = -2

_BROKER = re.compile(r"^/brokers/ids/(?P<id>\d+)$")
_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")
_REQUEST = re.compile(r"^/admin/delete_topics/(?P<topic>[^/]+)$")


def absent_during_deletion(records: Sequence[TxnRecord]) -> Mapping[str, frozenset[int]]:
    """Topic → brokers not continuously registered from its deletion request to its deletion."""
    registered: set[int] = set()
    seen: set[int] = set()
    watching: dict[str, set[int]] = {}  # topic with a pending deletion request → brokers absent since
    out: dict[str, frozenset[int]] = {}
    for record in sorted(records, key=lambda r: r.zxid):
        for op in applied_ops(record):
            path, kind = op.path, op.op
            if kind == "closeSession":  # a closed or expired session's ephemerals go with it
                for closed in op.closed_paths or ():
                    if m := _BROKER.match(closed):
                        registered.discard(int(m["id"]))
                        for absent in watching.values():
                            absent.add(int(m["id"]))
                continue
            if path is None or kind == "check":
                continue
            created = creates(kind)
            deleted = deletes(kind)
            if m := _BROKER.match(path):
                broker = int(m["id"])
                if created:
                    registered.add(broker)
                    seen.add(broker)
                    for absent in watching.values():
                        absent.add(broker)  # (re)registered meanwhile: may have missed the news
                elif deleted:
                    registered.discard(broker)
                    for absent in watching.values():
                        absent.add(broker)
            elif (m := _REQUEST.match(path)) and created:
                watching.setdefault(m["topic"], seen - registered)
            elif (m := _TOPIC.match(path)) and deleted:
                out[m["topic"]] = frozenset(watching.pop(m["topic"], set()) | (seen - registered))
    return out
