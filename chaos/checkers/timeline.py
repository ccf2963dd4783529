"""One replay of a chroot's transaction log into a typed timeline (decisions ring, pure).

Input: the records of the run's chroot in zxid order, paths chroot-relative (what
``ChrootView(chroot).filter(...)`` returns). Only successful writes change state: a failed
standalone op is an ``error`` record, a failed multi has ``error`` sub-ops, and neither applied
anything. Each op's path is classified once (:func:`chaos.checkers.paths.classify`) and becomes
at most one event; every checker and every quirk reads these events, never the records.

How controller writes look in a real log (ZooKeeper 3.8, see ``tests/chaos/checkers/data/``)::

    create /controller_epoch data=b'0'                                    (first election only)
    multi[create /controller {"brokerid":1,…} ephemeral; setData /controller_epoch b'1' version=1]
    multi[check /controller_epoch version=1; create /brokers/topics/t1/partitions data=null]
    multi[check /controller_epoch version=1; setData …/partitions/0/state {…} version=2]
    setData …/partitions/1/state {…"leader":2,"leader_epoch":0,"isr":[2,3]} version=1   (leader's ISR write)

- an :class:`Election` is a write of ``/controller_epoch``: the new value and the data version
  it produced (the controller's ``epoch_zk_version``);
- a :class:`ControllerWrite` is a record a controller made: the election itself, a *fenced*
  multi (its sub-ops include ``check /controller_epoch``; ZooKeeper logs the version the znode
  had when the multi applied — also for a check that asked for any version, -1), or an
  *unfenced* write only a controller makes (:data:`chaos.checkers.paths.CONTROLLER_ONLY`);
- a leader's ISR write (a ``setData`` of a state keeping leader and leader epoch) and an admin's
  ``setData`` of a topic znode are not controller writes.

:meth:`Timeline.extend` takes the records that follow the ones already replayed, so a caller that
polls a growing log (the runner's quiescence wait) replays each record once.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from chaos.checkers.events import (
    AdminZnode,
    BrokerDeregistered,
    BrokerRegistered,
    Change,
    ControllerWrite,
    DeletionRequested,
    DeletionRequestRemoved,
    Election,
    Event,
    PartitionsZnode,
    ReassignmentZnode,
    StateDeleted,
    StateWritten,
    TopicDeleted,
    TopicWritten,
)
from chaos.checkers.paths import CONTROLLER_ONLY, Kind, ZPath, classify
from probes.errors import MalformedZnode
from probes.txnrecords import TxnOp, TxnRecord
from probes.znode_types import (
    PartitionStateZNode,
    TopicPartition,
    TopicZNode,
    decode_partition_state,
    decode_reassign_partitions,
    decode_topic,
)

__all__ = [
    "AdminZnode",
    "BrokerDeregistered",
    "BrokerRegistered",
    "ControllerWrite",
    "DeletionRequestRemoved",
    "DeletionRequested",
    "Election",
    "Event",
    "PartitionsZnode",
    "ReassignmentZnode",
    "StateDeleted",
    "StateWritten",
    "Timeline",
    "TimelineOrderError",
    "TopicDeleted",
    "TopicWritten",
    "follow",
    "is_fenced",
]


class TimelineOrderError(ValueError):
    """Records handed to :meth:`Timeline.extend` that do not follow the ones replayed."""


_E = TypeVar("_E", bound=Event)


@dataclass
class Timeline:
    """The events of a log in zxid order, with the indexes the checkers read."""

    events: list[Event] = field(default_factory=list)
    elections: list[Election] = field(default_factory=list)
    state_writes: list[StateWritten] = field(default_factory=list)
    controller_writes: list[ControllerWrite] = field(default_factory=list)
    registered_brokers: set[int] = field(default_factory=set)  # ever registered in the log
    epoch_owner: dict[int, int] = field(default_factory=dict)  # epoch zk version → session
    #: topic → its ``/config/topics/<t>`` writes in zxid order: (zxid, config; None: deleted or
    #: malformed)
    topic_configs: dict[str, list[tuple[int, dict[str, str] | None]]] = field(default_factory=dict)
    #: entity (``<default>`` or a broker id) → its ``/config/brokers/<entity>`` writes, as above
    broker_configs: dict[str, list[tuple[int, dict[str, str] | None]]] = field(default_factory=dict)
    #: ZooKeeper session → the broker that registered with it (a broker's controller writes with
    #: the session it registered with: one ZooKeeper client per broker)
    broker_sessions: dict[int, int] = field(default_factory=dict)
    #: records that applied nothing (a failed op or multi), in zxid order: only their header and
    #: error codes are logged, never the paths they tried
    failed: list[TxnRecord] = field(default_factory=list)
    record_count: int = 0
    last_zxid: int | None = None
    _data: dict[str, bytes | None] = field(default_factory=dict, repr=False)
    _version: dict[str, int] = field(default_factory=dict, repr=False)
    _topics: dict[str, TopicZNode | None] = field(default_factory=dict, repr=False)
    _incarnation: dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, records: Iterable[TxnRecord]) -> Timeline:
        timeline = cls()
        timeline.extend(records)
        return timeline

    @property
    def epoch_zk_version(self) -> int | None:
        """The data version of ``/controller_epoch`` now (None: absent)."""
        return self._version.get("/controller_epoch")

    def of_type(self, kind: type[_E]) -> Iterator[_E]:
        return (e for e in self.events if isinstance(e, kind))

    def extend(self, records: Iterable[TxnRecord]) -> None:
        """Replay ``records`` (sorted by zxid here), which must all follow the last one replayed."""
        batch = sorted(records, key=lambda r: r.zxid)
        if batch and self.last_zxid is not None and batch[0].zxid <= self.last_zxid:
            raise TimelineOrderError(f"zxid 0x{batch[0].zxid:x} is not after 0x{self.last_zxid:x}")
        for record in batch:
            self._step(record)
        self.record_count += len(batch)
        if batch:
            self.last_zxid = batch[-1].zxid

    # ---- one record -------------------------------------------------------------------------

    def _step(self, record: TxnRecord) -> None:
        ops = _applied_ops(record)
        if not ops:
            if record.failed:
                self.failed.append(record)
            return
        before = self.epoch_zk_version
        checked = _epoch_check_version(record)
        role = self._role(ops, checked)
        for op in ops:
            self._apply(record, op, fenced=checked is not None)
        if role is not None:
            self._add(ControllerWrite(record, role, ops, checked, before))

    def _role(
        self, ops: tuple[TxnOp, ...], checked: int | None
    ) -> Literal["election", "fenced", "unfenced"] | None:
        if any(op.path == "/controller_epoch" and _writes_data(op.op) for op in ops):
            return "election"
        if checked is not None:
            return "fenced"
        if any(self._controller_only(op) for op in ops):
            return "unfenced"
        return None

    def _controller_only(self, op: TxnOp) -> bool:
        if op.path is None or op.op not in CONTROLLER_ONLY.get(classify(op.path).kind, ()):
            return False
        if op.op == "setData" and classify(op.path).kind == Kind.PARTITION_STATE:
            return not self._isr_only(op.path, op.data)
        return True

    def _isr_only(self, path: str, data: bytes | None) -> bool:
        before, after = _state_or_none(path, self._data.get(path)), _state_or_none(path, data)
        if before is None or after is None:
            return False
        return (before.leader, before.leader_epoch) == (after.leader, after.leader_epoch)

    def _apply(self, record: TxnRecord, op: TxnOp, *, fenced: bool) -> None:
        if op.op == "closeSession":
            for closed in op.closed_paths or ():
                self._data.pop(closed, None)
                if (z := classify(closed)).kind == Kind.BROKER and z.broker is not None:
                    self._add(BrokerDeregistered(record, z.broker, session_closed=True))
            return
        if op.path is None or op.op == "check":
            return
        z = classify(op.path)
        if _creates(op.op):
            self._write(record, z, op.data, 0, created=True)
        elif op.op == "setData":
            self._write(record, z, op.data, op.version if op.version is not None else 0, created=False)
        elif _deletes(op.op):
            self._delete(record, z, fenced=fenced)

    def _write(self, record: TxnRecord, z: ZPath, data: bytes | None, version: int, *, created: bool) -> None:
        previous = self._data.get(z.path)
        self._data[z.path], self._version[z.path] = data, version
        change: Change = "created" if created else "updated"
        if z.kind == Kind.TOPIC_CONFIG:
            self.topic_configs.setdefault(_topic(z), []).append((record.zxid, _config_or_none(data)))
        elif z.kind == Kind.BROKER_CONFIG:
            self.broker_configs.setdefault(_entity(z), []).append((record.zxid, _config_or_none(data)))
        match z.kind:
            case Kind.CONTROLLER_EPOCH:
                self.epoch_owner[version] = record.session_id
                self._add(Election(record, _int_or_none(data), version))
            case Kind.BROKER if created and z.broker is not None:
                self.registered_brokers.add(z.broker)
                self.broker_sessions[record.session_id] = z.broker
                self._add(BrokerRegistered(record, z.broker))
            case Kind.TOPIC:
                self._topic_written(record, z, data, created=created)
            case Kind.PARTITION_STATE:
                self._state_written(record, z, previous, data, created=created, version=version)
            case Kind.PARTITIONS | Kind.PARTITION if created:
                self._add(PartitionsZnode(record, _topic(z), z.partition, created=True))
            case Kind.DELETE_TOPIC_REQUEST if created:
                self._add(DeletionRequested(record, _topic(z)))
            case Kind.REASSIGN_PARTITIONS:
                self._add(ReassignmentZnode(record, _reassign_entries(data), change))
            case k if k in _ADMIN:
                self._add(AdminZnode(record, z.kind, z.path, change))

    def _delete(self, record: TxnRecord, z: ZPath, *, fenced: bool) -> None:
        self._data.pop(z.path, None)
        self._version.pop(z.path, None)
        match z.kind:
            case Kind.TOPIC:
                topic = _topic(z)
                self._add(
                    TopicDeleted(
                        record, topic, self._topics.pop(topic, None), self._incarnation.pop(topic, None)
                    )
                )
            case Kind.PARTITION_STATE:
                self._add(StateDeleted(record, _topic(z), _partition(z)))
            case Kind.PARTITIONS | Kind.PARTITION:
                self._add(PartitionsZnode(record, _topic(z), z.partition, created=False))
            case Kind.DELETE_TOPIC_REQUEST:
                self._add(DeletionRequestRemoved(record, _topic(z), fenced))
            case Kind.REASSIGN_PARTITIONS:
                self._add(ReassignmentZnode(record, {}, "deleted"))
            case Kind.TOPIC_CONFIG:
                self.topic_configs.setdefault(_topic(z), []).append((record.zxid, None))
                self._add(AdminZnode(record, z.kind, z.path, "deleted"))
            case Kind.BROKER_CONFIG:
                self.broker_configs.setdefault(_entity(z), []).append((record.zxid, None))
            case Kind.BROKER if z.broker is not None:
                self._add(BrokerDeregistered(record, z.broker, session_closed=False))
            case k if k in _ADMIN:
                self._add(AdminZnode(record, z.kind, z.path, "deleted"))

    def _topic_written(self, record: TxnRecord, z: ZPath, data: bytes | None, *, created: bool) -> None:
        topic = _topic(z)
        if created:
            self._incarnation[topic] = record.zxid
        previous, znode = self._topics.get(topic), _topic_or_none(z.path, data)
        self._topics[topic] = znode
        self._add(TopicWritten(record, topic, created, znode, previous, self._incarnation.get(topic)))

    def _state_written(
        self,
        record: TxnRecord,
        z: ZPath,
        previous: bytes | None,
        data: bytes | None,
        *,
        created: bool,
        version: int,
    ) -> None:
        topic, partition = _topic(z), _partition(z)
        malformed = None
        try:
            state: PartitionStateZNode | None = decode_partition_state(z.path, data)
        except MalformedZnode as exc:
            state, malformed = None, str(exc)
        znode = self._topics.get(topic)
        replicas = None if znode is None else znode.partitions.get(partition)
        write = StateWritten(
            record,
            topic,
            partition,
            self._incarnation.get(topic),
            state,
            _state_or_none(z.path, previous),
            replicas,
            malformed,
            _epoch_check_version(record) is not None,
            created,
            version,
        )
        self._add(write)

    def _add(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, Election):
            self.elections.append(event)
        elif isinstance(event, StateWritten):
            self.state_writes.append(event)
        elif isinstance(event, ControllerWrite):
            self.controller_writes.append(event)


def follow(timeline: Timeline | None, records: Sequence[TxnRecord]) -> Timeline:
    """``timeline`` extended with the records of a growing log it has not replayed yet; a fresh
    replay when ``records`` is not an extension of what it replayed (the log was re-read)."""
    if timeline is not None and len(records) >= timeline.record_count:
        done = timeline.record_count
        if done == 0 or records[done - 1].zxid == timeline.last_zxid:
            with contextlib.suppress(Exception):  # half-extended: replay afresh (a bug raises again)
                timeline.extend(records[done:])
                return timeline
    return Timeline.of(records)


_ADMIN = frozenset(
    {
        Kind.PREFERRED_REPLICA_ELECTION,
        Kind.TOPIC_CONFIG,
        Kind.ISR_CHANGE_NOTIFICATION,
        Kind.LOG_DIR_EVENT_NOTIFICATION,
    }
)


def _topic(z: ZPath) -> str:
    assert z.topic is not None, z
    return z.topic


def _partition(z: ZPath) -> int:
    assert z.partition is not None, z
    return z.partition


def _creates(kind: str) -> bool:
    return kind.startswith("create")


def _writes_data(kind: str) -> bool:
    return _creates(kind) or kind == "setData"


def _deletes(kind: str) -> bool:
    return kind in ("delete", "deleteContainer")


def _applied_ops(record: TxnRecord) -> tuple[TxnOp, ...]:
    """The ops a record applied: none if it failed, a multi's sub-ops, else the op itself."""
    if record.failed:
        return ()
    return record.ops if record.op == "multi" else (record.txn,)


def is_fenced(record: TxnRecord) -> bool:
    """A successful multi that checks ``/controller_epoch``: a controller's fenced write."""
    return _epoch_check_version(record) is not None


def _epoch_check_version(record: TxnRecord) -> int | None:
    """The ``/controller_epoch`` version a successful multi's check saw (None: not fenced)."""
    if record.op != "multi" or record.failed:
        return None
    return next(
        (op.version for op in record.ops if op.op == "check" and op.path == "/controller_epoch"), None
    )


def _topic_or_none(path: str, data: bytes | None) -> TopicZNode | None:
    try:
        return decode_topic(path, data)
    except MalformedZnode:
        return None


def _reassign_entries(data: bytes | None) -> dict[TopicPartition, tuple[int, ...]]:
    try:
        return dict(decode_reassign_partitions("/admin/reassign_partitions", data).as_mapping())
    except MalformedZnode:
        return {}  # Kafka decodes a malformed znode as empty (spec §12)


def _state_or_none(path: str, data: bytes | None) -> PartitionStateZNode | None:
    try:
        return decode_partition_state(path, data)
    except MalformedZnode:
        return None


def _entity(z: ZPath) -> str:
    return z.path.rsplit("/", 1)[1]


def _config_or_none(data: bytes | None) -> dict[str, str] | None:
    """The ``config`` object of a ``/config/topics/<t>`` or ``/config/brokers/<e>`` znode (None:
    malformed)."""
    try:
        body = json.loads(data or b"")
    except ValueError:
        return None
    config = body.get("config") if isinstance(body, dict) else None
    if not isinstance(config, dict):
        return None
    return {str(k): str(v) for k, v in config.items()}


def _int_or_none(data: bytes | None) -> int | None:
    try:
        value = json.loads(data or b"")
    except ValueError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
