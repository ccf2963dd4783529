"""The events of a chaos run's transaction log, as the timeline replays them (decisions ring, pure data).

Each event keeps the record it came from (zxid, session, time); :mod:`chaos.checkers.timeline`
makes them, one per applied op whose path matters, in zxid order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from chaos.checkers.paths import Kind
from probes.txnrecords import TxnOp, TxnRecord
from probes.znode_types import PartitionStateZNode, TopicPartition, TopicZNode

__all__ = [
    "AdminZnode",
    "BrokerDeregistered",
    "BrokerRegistered",
    "Change",
    "ControllerWrite",
    "DeletionRequestRemoved",
    "DeletionRequested",
    "Election",
    "Event",
    "PartitionsZnode",
    "ReassignmentZnode",
    "StateDeleted",
    "StateWritten",
    "TopicDeleted",
    "TopicWritten",
]

Change = Literal["created", "updated", "deleted"]


@dataclass(frozen=True)
class Event:
    """Something the log shows, with the record it came from (zxid, session, time)."""

    record: TxnRecord

    @property
    def zxid(self) -> int:
        return self.record.zxid

    @property
    def session(self) -> int:
        return self.record.session_id

    @property
    def time_s(self) -> float:
        return self.record.time_ms / 1000


@dataclass(frozen=True)
class Election(Event):
    """``/controller_epoch`` written: ``epoch`` (None: not an integer) at ``epoch_zk_version``."""

    epoch: int | None
    epoch_zk_version: int


@dataclass(frozen=True)
class BrokerRegistered(Event):
    broker: int


@dataclass(frozen=True)
class BrokerDeregistered(Event):
    """``/brokers/ids/<id>`` deleted, or gone with its closed or expired session."""

    broker: int
    session_closed: bool


@dataclass(frozen=True)
class TopicWritten(Event):
    """``/brokers/topics/<t>`` created or set; ``incarnation`` is the znode's czxid (None: created
    before the log starts); a malformed znode is None."""

    topic: str
    created: bool
    znode: TopicZNode | None
    previous: TopicZNode | None
    incarnation: int | None


@dataclass(frozen=True)
class TopicDeleted(Event):
    topic: str
    last: TopicZNode | None
    incarnation: int | None


@dataclass(frozen=True)
class PartitionsZnode(Event):
    """``…/partitions`` (``partition`` None) or ``…/partitions/<p>`` created or deleted."""

    topic: str
    partition: int | None
    created: bool


@dataclass(frozen=True)
class StateWritten(Event):
    """A create/setData of a partition state znode, with the context it was written in."""

    topic: str
    partition: int
    incarnation: int | None  # czxid of the topic znode (None: created before the log starts)
    state: PartitionStateZNode | None  # None: malformed (see ``malformed``)
    previous: PartitionStateZNode | None
    replicas: tuple[int, ...] | None  # the topic znode's RS for the partition at that zxid
    malformed: str | None = None
    fenced: bool = False  # written by a controller (a multi checking /controller_epoch)
    created: bool = False  # a create of the znode (a new one, data version 0), not a setData
    zk_version: int = 0  # the znode's data version this write produced


@dataclass(frozen=True)
class StateDeleted(Event):
    topic: str
    partition: int


@dataclass(frozen=True)
class DeletionRequested(Event):
    """``/admin/delete_topics/<t>`` created."""

    topic: str


@dataclass(frozen=True)
class DeletionRequestRemoved(Event):
    """``/admin/delete_topics/<t>`` deleted; ``fenced``: by a controller's fenced multi."""

    topic: str
    fenced: bool


@dataclass(frozen=True)
class ReassignmentZnode(Event):
    """``/admin/reassign_partitions`` written (its entries; a malformed znode reads as empty, as
    Kafka decodes it) or deleted (no entries)."""

    entries: Mapping[TopicPartition, tuple[int, ...]]
    change: Change


@dataclass(frozen=True)
class AdminZnode(Event):
    """Another admin or notification znode (preferred election, topic config, notifications)."""

    kind: Kind
    path: str
    change: Change


@dataclass(frozen=True)
class ControllerWrite(Event):
    """A record a controller made, with its multi's sub-ops: ``role`` election, fenced or unfenced;
    ``checked_epoch_zk_version`` the version its ``check /controller_epoch`` saw (None: none);
    ``epoch_zk_version_before`` the version of ``/controller_epoch`` when it applied."""

    role: Literal["election", "fenced", "unfenced"]
    ops: tuple[TxnOp, ...]
    checked_epoch_zk_version: int | None
    epoch_zk_version_before: int | None
