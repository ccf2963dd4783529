"""Typed readers of every Kafka znode in spec §1 over a ZooKeeper client (drivers ring).

Each reader returns a :class:`Read` — the decoded value, the znode's :class:`ZnodeStat` and the
raw data exactly as read — or ``None`` when the znode does not exist (consistently: a missing
znode is never an error). Data that is not what Kafka writes raises :class:`MalformedZnode`
naming the path and the bytes. Paths are relative to the client's root, so a chrooted kazoo
client reads its chroot.

Null versus empty data: ZooKeeper sends null data as buffer length -1 and kazoo 2.11's
``get()`` returns ``None`` for it and ``b""`` for empty data (checked against 3.8.0), so
:attr:`Read.raw` tells them apart. ``stat.data_length`` is 0 for both and cannot. kazoo's
``create(path, None)`` sends null; its ``transaction().create`` refuses ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kazoo.exceptions import NoNodeError

from probes.errors import MalformedZnode
from probes.znode_types import (
    BrokerIdZNode,
    ClusterIdZNode,
    ControllerZNode,
    DeleteTopicZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    PartitionStateZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicConfigZNode,
    TopicZNode,
    decode_broker,
    decode_cluster_id,
    decode_controller,
    decode_controller_epoch,
    decode_delete_topic,
    decode_isr_change,
    decode_log_dir_event,
    decode_partition_state,
    decode_preferred_replica_election,
    decode_reassign_partitions,
    decode_topic,
    decode_topic_config,
)

T = TypeVar("T")

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
DELETE_TOPICS_PATH = "/admin/delete_topics"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
CONFIG_TOPICS_PATH = "/config/topics"
CLUSTER_ID_PATH = "/cluster/id"


class ZkReadClient(Protocol):
    """The two calls the readers need; a ``KazooClient`` satisfies it."""

    def get(self, path: str) -> tuple[bytes | None, Any]: ...

    def get_children(self, path: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    czxid: int
    mzxid: int
    pzxid: int
    ctime_ms: int
    mtime_ms: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int  # session id, 0 if persistent
    data_length: int  # 0 for both null and empty data
    num_children: int

    @classmethod
    def from_kazoo(cls, s: Any) -> ZnodeStat:
        return cls(
            s.czxid, s.mzxid, s.pzxid, s.ctime, s.mtime, s.version, s.cversion, s.aversion,
            s.ephemeralOwner, s.dataLength, s.numChildren,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Read(Generic[T]):
    """One znode read: the decoded ``data``, its ``stat``, and ``raw`` (None = null data)."""

    path: str
    data: T
    stat: ZnodeStat
    raw: bytes | None


def read_znode(zk: ZkReadClient, path: str, decode: Callable[[str, bytes | None], T]) -> Read[T] | None:
    """Read and decode one znode; None if it does not exist."""
    try:
        raw, stat = zk.get(path)
    except NoNodeError:
        return None
    return Read(path, decode(path, raw), ZnodeStat.from_kazoo(stat), raw)


def _children(zk: ZkReadClient, path: str) -> list[str]:
    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def _read_children(
    zk: ZkReadClient, parent: str, decode: Callable[[str, bytes | None], T]
) -> dict[str, Read[T]]:
    """Every child of ``parent`` that still exists when read (children may vanish meanwhile)."""
    found = {name: read_znode(zk, f"{parent}/{name}", decode) for name in _children(zk, parent)}
    return {name: r for name, r in found.items() if r is not None}


def read_controller(zk: ZkReadClient) -> Read[ControllerZNode] | None:
    return read_znode(zk, CONTROLLER_PATH, decode_controller)


def controller_id(zk: ZkReadClient) -> int | None:
    """The broker id in ``/controller``, or None when no controller is elected."""
    r = read_controller(zk)
    return None if r is None else r.data.broker_id


def read_controller_epoch(zk: ZkReadClient) -> Read[int] | None:
    return read_znode(zk, CONTROLLER_EPOCH_PATH, decode_controller_epoch)


def read_broker_ids(zk: ZkReadClient) -> list[int]:
    """Registered broker ids, sorted; a non-integer child raises ``MalformedZnode``."""
    names = _children(zk, BROKER_IDS_PATH)
    bad = [n for n in names if not n.lstrip("-").isdigit()]
    if bad:
        raise MalformedZnode(f"{BROKER_IDS_PATH}/{bad[0]}", None, "broker id is not an integer")
    return sorted(int(n) for n in names)


def read_broker(zk: ZkReadClient, broker_id: int) -> Read[BrokerIdZNode] | None:
    return read_znode(zk, f"{BROKER_IDS_PATH}/{broker_id}", decode_broker)


def read_brokers(zk: ZkReadClient) -> dict[int, Read[BrokerIdZNode]]:
    found = {b: read_broker(zk, b) for b in read_broker_ids(zk)}
    return {b: r for b, r in found.items() if r is not None}


def read_topic(zk: ZkReadClient, topic: str) -> Read[TopicZNode] | None:
    return read_znode(zk, f"{TOPICS_PATH}/{topic}", decode_topic)


def read_all_topics(zk: ZkReadClient) -> dict[str, Read[TopicZNode]]:
    return _read_children(zk, TOPICS_PATH, decode_topic)


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"


def read_partition_state(zk: ZkReadClient, topic: str, partition: int) -> Read[PartitionStateZNode] | None:
    return read_znode(zk, partition_state_path(topic, partition), decode_partition_state)


def read_partition_states(zk: ZkReadClient, topic: str) -> dict[int, Read[PartitionStateZNode]]:
    """``state`` of every partition znode of ``topic`` that has one."""
    names = _children(zk, f"{TOPICS_PATH}/{topic}/partitions")
    bad = [n for n in names if not n.isdigit()]
    if bad:
        path = f"{TOPICS_PATH}/{topic}/partitions/{bad[0]}"
        raise MalformedZnode(path, None, "partition id is not an integer")
    found = {int(n): read_partition_state(zk, topic, int(n)) for n in names}
    return {p: r for p, r in sorted(found.items()) if r is not None}


def read_reassign_partitions(zk: ZkReadClient) -> Read[ReassignPartitionsZNode] | None:
    return read_znode(zk, REASSIGN_PARTITIONS_PATH, decode_reassign_partitions)


def read_preferred_replica_election(zk: ZkReadClient) -> Read[PreferredReplicaElectionZNode] | None:
    return read_znode(zk, PREFERRED_REPLICA_ELECTION_PATH, decode_preferred_replica_election)


def read_delete_topics(zk: ZkReadClient) -> dict[str, Read[DeleteTopicZNode]]:
    """Topics queued for deletion (``/admin/delete_topics/<t>``, data null when Kafka wrote it)."""
    return _read_children(zk, DELETE_TOPICS_PATH, decode_delete_topic)


def read_isr_change_notifications(zk: ZkReadClient) -> list[Read[IsrChangeNotificationZNode]]:
    """Pending ``isr_change_<seq>`` notifications in sequence order."""
    found = _read_children(zk, ISR_CHANGE_NOTIFICATION_PATH, decode_isr_change)
    return sorted(found.values(), key=lambda r: r.data.sequence)


def read_log_dir_event_notifications(zk: ZkReadClient) -> list[Read[LogDirEventNotificationZNode]]:
    """Pending ``log_dir_event_<seq>`` notifications in sequence order."""
    found = _read_children(zk, LOG_DIR_EVENT_NOTIFICATION_PATH, decode_log_dir_event)
    return sorted(found.values(), key=lambda r: r.data.sequence)


def read_topic_config(zk: ZkReadClient, topic: str) -> Read[TopicConfigZNode] | None:
    return read_znode(zk, f"{CONFIG_TOPICS_PATH}/{topic}", decode_topic_config)


def read_cluster_id(zk: ZkReadClient) -> Read[ClusterIdZNode] | None:
    return read_znode(zk, CLUSTER_ID_PATH, decode_cluster_id)
