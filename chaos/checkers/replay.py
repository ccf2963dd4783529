"""Replay of one chroot's transaction log into the facts the safety checkers judge (decisions ring).

Input: the records of the run's chroot in zxid order, paths chroot-relative (what
``ChrootView(chroot).filter(...)`` returns). Only successful writes change state: a failed
standalone op is an ``error`` record, a failed multi has ``error`` sub-ops, and neither applied
anything.

How controller writes look in a real log (captured from the reference controller on ZooKeeper
3.8, see ``tests/chaos/checkers/data/``)::

    create /controller_epoch data=b'0'                                    (first election only)
    multi[create /controller {"brokerid":1,…} ephemeral; setData /controller_epoch b'1' version=1]
    multi[check /controller_epoch version=1; create /brokers/topics/t1/partitions data=null]
    multi[check /controller_epoch version=1; setData …/partitions/0/state {…} version=2]
    setData …/partitions/1/state {…"leader":2,"leader_epoch":0,"isr":[2,3]} version=1   (leader's ISR write)

- an *election* writes ``/controller_epoch`` (the multi's ``setData`` carries the new value and
  the resulting data version); the session that wrote version ``v`` owns epoch version ``v``;
- a *fenced write* is a successful multi whose sub-ops include ``check /controller_epoch`` (the
  logged version is the one the znode had); a batching controller puts several writes after
  one check;
- an *unfenced controller write* is a write only a controller makes — a create, delete or
  leader/leader-epoch change under ``/brokers/topics/<t>/partitions``, deletion of a topic,
  its config, ``/admin/*`` znodes or notifications — outside a fenced multi;
- a *broker ISR write* is a ``setData`` of a state znode that keeps its leader and leader epoch
  (the partition leader's ISR expand/shrink): not a controller write. ``setData`` of a topic
  znode outside a multi is the admin's add-partitions, not a controller write either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from probes.errors import MalformedZnode
from probes.txnrecords import TxnOp, TxnRecord
from probes.znode_types import PartitionStateZNode, TopicZNode, decode_partition_state, decode_topic

__all__ = [
    "CONTROLLER_EPOCH",
    "Election",
    "Replay",
    "StateWrite",
    "WriteClass",
    "applied_ops",
    "creates",
    "deletes",
    "epoch_check_version",
    "replay",
    "writes_data",
]

CONTROLLER_EPOCH = "/controller_epoch"
_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")
_PARTITIONS = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)/partitions(?:/(?P<p>\d+)(?P<state>/state)?)?$")
_CONTROLLER_DELETES = re.compile(
    r"^(/brokers/topics/[^/]+|/config/topics/[^/]+|/admin/reassign_partitions|/admin/preferred_replica_election"
    r"|/admin/delete_topics/[^/]+|/isr_change_notification/[^/]+|/log_dir_event_notification/[^/]+)$"
)
_BROKER_ID = re.compile(r"^/brokers/ids/(?P<id>-?\d+)$")


def topic_or_none(path: str, data: bytes | None) -> TopicZNode | None:
    """The topic znode written at ``path``, or None when malformed (the checkers then know nothing
    about its partitions)."""
    try:
        return decode_topic(path, data)
    except MalformedZnode:
        return None


def creates(kind: str) -> bool:
    """A transaction op kind that creates a znode (create, create2, createContainer, createTTL)."""
    return kind.startswith("create")


def writes_data(kind: str) -> bool:
    """A transaction op kind that writes a znode's data (a create or a setData)."""
    return creates(kind) or kind == "setData"


def deletes(kind: str) -> bool:
    """A transaction op kind that deletes a znode."""
    return kind in ("delete", "deleteContainer")


def applied_ops(record: TxnRecord) -> tuple[TxnOp, ...]:
    """The ops a record applied: none if it failed, a multi's sub-ops, else the op itself."""
    if record.failed:
        return ()
    return record.ops if record.op == "multi" else (record.txn,)


def epoch_check_version(record: TxnRecord) -> int | None:
    """The ``/controller_epoch`` version a successful multi checked (None: not fenced)."""
    for op in applied_ops(record) if record.op == "multi" else ():
        if op.op == "check" and op.path == CONTROLLER_EPOCH:
            return op.version
    return None


@dataclass(frozen=True)
class Election:
    """A write of ``/controller_epoch``: ``value`` (None if not an integer) at data ``version``."""

    record: TxnRecord
    value: int | None
    version: int


@dataclass(frozen=True)
class StateWrite:
    """A create/setData of a partition state znode, with the context it was written in."""

    record: TxnRecord
    topic: str
    partition: int
    incarnation: int | None  # czxid of the topic znode (None: created before the log starts)
    state: PartitionStateZNode | None  # None: malformed (see ``malformed``)
    previous: PartitionStateZNode | None
    replicas: tuple[int, ...] | None  # the topic znode's RS for the partition at that zxid
    malformed: str | None = None
    fenced: bool = False  # written by a controller (a multi checking /controller_epoch)


#: How a successful record counts for fencing: election / fenced / unfenced controller write /
#: other (broker, admin, session bookkeeping).
WriteClass = str


@dataclass
class Replay:
    """Replays records once; exposes elections, state writes and write classes in log order."""

    records: list[TxnRecord]
    elections: list[Election] = field(default_factory=list)
    state_writes: list[StateWrite] = field(default_factory=list)
    #: (record, class, epoch version current at that zxid or None)
    classified: list[tuple[TxnRecord, WriteClass, int | None]] = field(default_factory=list)
    epoch_owner: dict[int, int] = field(default_factory=dict)  # epoch version → session
    registered_brokers: set[int] = field(default_factory=set)
    _data: dict[str, bytes | None] = field(default_factory=dict)
    _version: dict[str, int] = field(default_factory=dict)
    _topic_czxid: dict[str, int] = field(default_factory=dict)
    _replicas: dict[str, Mapping[int, tuple[int, ...]]] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[TxnRecord]) -> Replay:
        replay = cls(sorted(records, key=lambda r: r.zxid))
        for record in replay.records:
            replay._step(record)
        return replay

    @property
    def current_epoch_version(self) -> int | None:
        return self._version.get(CONTROLLER_EPOCH)

    def _step(self, record: TxnRecord) -> None:
        ops = applied_ops(record)
        if not ops:
            return
        epoch_before = self.current_epoch_version
        klass = self._classify(record, ops)
        for op in ops:
            self._apply(record, op)
        self.classified.append((record, klass, epoch_before))

    def _classify(self, record: TxnRecord, ops: tuple[TxnOp, ...]) -> WriteClass:
        if any(op.path == CONTROLLER_EPOCH and op.op in ("setData", "create") for op in ops):
            return "election"
        if epoch_check_version(record) is not None:
            return "fenced"
        if any(self._controller_only(op) for op in ops):
            return "unfenced-controller"
        return "other"

    def _controller_only(self, op: TxnOp) -> bool:
        path = op.path or ""
        if op.op == "delete" and _CONTROLLER_DELETES.match(path):
            return True
        if op.op == "setData" and path == "/admin/reassign_partitions":
            return True
        m = _PARTITIONS.match(path)
        if m is None or op.op == "check":
            return False
        if op.op == "setData" and m["state"]:
            return not self._isr_only(path, op.data)
        return True

    def _isr_only(self, path: str, data: bytes | None) -> bool:
        before, after = _state_or_none(path, self._data.get(path)), _state_or_none(path, data)
        if before is None or after is None:
            return False
        return (before.leader, before.leader_epoch) == (after.leader, after.leader_epoch)

    def _apply(self, record: TxnRecord, op: TxnOp) -> None:
        path = op.path
        if path is None or op.op == "check":
            return
        if creates(op.op):
            self._write(record, path, op.data, 0)
            if m := _BROKER_ID.match(path):
                self.registered_brokers.add(int(m["id"]))
        elif op.op == "setData":
            self._write(record, path, op.data, op.version if op.version is not None else 0)
        elif deletes(op.op):
            self._data.pop(path, None)
            self._version.pop(path, None)
            if m := _TOPIC.match(path):
                self._topic_czxid.pop(m["topic"], None)
                self._replicas.pop(m["topic"], None)

    def _write(self, record: TxnRecord, path: str, data: bytes | None, version: int) -> None:
        previous = self._data.get(path)
        self._data[path], self._version[path] = data, version
        if path == CONTROLLER_EPOCH:
            self.elections.append(Election(record, _int_or_none(data), version))
            self.epoch_owner[version] = record.session_id
        elif m := _TOPIC.match(path):
            if version == 0:
                self._topic_czxid[m["topic"]] = record.zxid
            try:
                self._replicas[m["topic"]] = decode_topic(path, data).partitions
            except MalformedZnode:
                self._replicas.pop(m["topic"], None)
        elif (m := _PARTITIONS.match(path)) and m["state"]:
            self._record_state(record, m, previous, data)

    def _record_state(
        self, record: TxnRecord, m: re.Match[str], previous: bytes | None, data: bytes | None
    ) -> None:
        path, topic, partition = m.string, m["topic"], int(m["p"])
        malformed = None
        try:
            state: PartitionStateZNode | None = decode_partition_state(path, data)
        except MalformedZnode as exc:
            state, malformed = None, str(exc)
        replicas = self._replicas.get(topic, {}).get(partition) if topic in self._replicas else None
        self.state_writes.append(
            StateWrite(
                record,
                topic,
                partition,
                self._topic_czxid.get(topic),
                state,
                _state_or_none(path, previous),
                replicas,
                malformed,
                epoch_check_version(record) is not None,
            )
        )

    def writes_of(self, klass: WriteClass) -> Iterator[tuple[TxnRecord, int | None]]:
        return ((r, v) for r, k, v in self.classified if k == klass)


_LAST: list[tuple[Sequence[TxnRecord], int, Replay]] = []


def replay(records: Sequence[TxnRecord]) -> Replay:
    """:meth:`Replay.of`, remembered for the last sequence replayed: ``check_all`` hands the
    same records to every checker, and a replay is the costly part (checkers only read it)."""
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is records and last[1] == len(records):
        return last[2]
    result = Replay.of(records)
    _LAST[:] = [(records, len(records), result)]
    return result


def _state_or_none(path: str, data: bytes | None) -> PartitionStateZNode | None:
    try:
        return decode_partition_state(path, data)
    except MalformedZnode:
        return None


def _int_or_none(data: bytes | None) -> int | None:
    try:
        value = json.loads(data or b"")
    except ValueError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
