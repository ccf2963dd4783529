"""Admin actions the way Kafka 2.5's ``--zookeeper`` tools and a Kafka client perform them.

ZooKeeper writes (``AdminZkClient`` / ``kafka-topics|reassign-partitions|preferred-replica-election
--zookeeper``, spec §1.3, §5.1): topic creation writes ``/config/topics/<t>`` then
``/brokers/topics/<t>`` (v2); a reassignment creates ``/admin/reassign_partitions``; a preferred
election creates ``/admin/preferred_replica_election``; a deletion creates
``/admin/delete_topics/<t>`` with **null** data. :func:`admin_client` is a confluent-kafka
AdminClient on the cluster's ``CLIENT`` listeners.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka.admin import AdminClient

from cluster.cluster import Cluster, wait_for

__all__ = [
    "admin_client",
    "create_topic_zk",
    "delete_topic_zk",
    "encode",
    "preferred_election_zk",
    "reassign_zk",
    "topic_znode",
]


def encode(obj: Any) -> bytes:
    """Compact JSON, as Kafka's ``Json.encodeAsBytes``."""
    return json.dumps(obj, separators=(",", ":")).encode()


def topic_znode(assignment: Mapping[int, Iterable[int]]) -> bytes:
    return encode(
        {
            "version": 2,
            "partitions": {str(p): list(r) for p, r in sorted(assignment.items())},
            "adding_replicas": {},
            "removing_replicas": {},
        }
    )


def create_topic_zk(
    cluster: Cluster,
    topic: str,
    assignment: Mapping[int, Iterable[int]],
    config: Mapping[str, str] = {},
    *,
    with_config: bool = True,
) -> None:
    """``/config/topics/<t>`` then ``/brokers/topics/<t>`` (``with_config=False``: topic znode only)."""
    if with_config:
        cluster.zk.create(
            f"/config/topics/{topic}", encode({"version": 1, "config": dict(config)}), makepath=True
        )
    cluster.zk.create(f"/brokers/topics/{topic}", topic_znode(assignment), makepath=True)


def reassign_zk(cluster: Cluster, targets: Mapping[tuple[str, int], Iterable[int]]) -> None:
    partitions = [{"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in targets.items()]
    cluster.zk.create(
        "/admin/reassign_partitions", encode({"version": 1, "partitions": partitions}), makepath=True
    )


def preferred_election_zk(cluster: Cluster, partitions: Iterable[tuple[str, int]]) -> None:
    body = {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    cluster.zk.create("/admin/preferred_replica_election", encode(body), makepath=True)


def delete_topic_zk(cluster: Cluster, topic: str) -> None:
    cluster.zk.create(f"/admin/delete_topics/{topic}", None, makepath=True)


def admin_client(cluster: Cluster, *, ready_s: float = 20.0, **conf: Any) -> Any:
    """A confluent-kafka ``AdminClient`` on every registered broker's CLIENT listener.

    Waits (``ready_s``, scaled) until the client's Metadata names a registered controller: a Kafka
    broker answers controller -1 until the controller's first UpdateMetadata reaches it, and a
    CreateTopics issued before then times out in librdkafka.
    """
    client = AdminClient({"bootstrap.servers": cluster.bootstrap(), "socket.timeout.ms": 10000, **conf})

    def ready() -> bool:
        md = client.list_topics(timeout=5)
        return int(md.controller_id) >= 0 and int(md.controller_id) in {int(b) for b in md.brokers}

    wait_for(ready, cluster.deadline(ready_s), "client metadata to name a controller")
    return client
