"""Hand-made transaction logs, histories and final states for the checker tests (test helper).

:class:`Log` writes records the way ZooKeeper 3.8 logs a 2.5 controller's writes (compare the
real capture in ``data/failover/txn-records.jsonl``): an election is
``multi[create /controller; setData /controller_epoch]``, a controller write is
``multi[check /controller_epoch version=v; op]``, a leader's ISR change a plain ``setData``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checkers import (
    FinalState,
    MetadataPartition,
    PartitionState,
    ReceivedRequest,
    RequestPartition,
    TopicState,
    check_all,
)
from chaos.checkers.verdict import Verdict
from chaos.history import History, Op, OpType
from chaos.run.judged import load_judged_run
from probes import TopicPartition, TxnOp, TxnRecord

SESSION_A = 0x1000_0000_0000_0A
SESSION_B = 0x1000_0000_0000_0B
SESSION_C = 0x1000_0000_0000_0C
ADMIN = 0x1000_0000_0000_AD


def state_data(leader: int, leader_epoch: int, isr: Sequence[int], controller_epoch: int = 1) -> bytes:
    body = {
        "controller_epoch": controller_epoch,
        "leader": leader,
        "version": 1,
        "leader_epoch": leader_epoch,
    }
    return json.dumps({**body, "isr": list(isr)}, separators=(",", ":")).encode()


def topic_data(
    assignment: Mapping[int, Sequence[int]],
    adding: Mapping[int, Sequence[int]] = {},
    removing: Mapping[int, Sequence[int]] = {},
) -> bytes:
    body = {
        "version": 2,
        "partitions": {str(p): list(r) for p, r in assignment.items()},
        "adding_replicas": {str(p): list(r) for p, r in adding.items()},
        "removing_replicas": {str(p): list(r) for p, r in removing.items()},
    }
    return json.dumps(body, separators=(",", ":")).encode()


def create(path: str, data: bytes | None = None, ephemeral: bool = False) -> TxnOp:
    return TxnOp("create", path, data, ephemeral=ephemeral)


def set_data(path: str, data: bytes, version: int) -> TxnOp:
    return TxnOp("setData", path, data, version=version)


def delete(path: str) -> TxnOp:
    return TxnOp("delete", path)


def state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


@dataclass
class Log:
    """A growing transaction log of one chroot; every method appends one record and returns it."""

    records: list[TxnRecord] = field(default_factory=list)
    epoch: int = 0
    epoch_version: int = -1
    versions: dict[str, int] = field(default_factory=dict)
    time_ms: int = 1_700_000_000_000  # ZooKeeper's time of the next record (tests move it on)

    def add(self, session: int, txn: TxnOp) -> TxnRecord:
        record = TxnRecord(0x100 + len(self.records), session, len(self.records), self.time_ms, txn)
        self.records.append(record)
        return record

    def write(self, session: int, op: TxnOp) -> TxnRecord:
        return self.add(session, op)

    def multi(self, session: int, *ops: TxnOp) -> TxnRecord:
        return self.add(session, TxnOp("multi", ops=ops))

    def elect(self, session: int, broker: int, epoch: int | None = None) -> TxnRecord:
        """``/controller_epoch`` created at 0 if needed, then the election multi."""
        if self.epoch_version < 0:
            self.add(session, create("/controller_epoch", b"0"))
            self.epoch_version = 0
        self.epoch = self.epoch + 1 if epoch is None else epoch
        self.epoch_version += 1
        controller = json.dumps({"version": 1, "brokerid": broker, "timestamp": "1"}).encode()
        return self.multi(
            session,
            create("/controller", controller, ephemeral=True),
            set_data("/controller_epoch", str(self.epoch).encode(), self.epoch_version),
        )

    def fenced(self, session: int, *ops: TxnOp, version: int | None = None) -> TxnRecord:
        check = TxnOp(
            "check", "/controller_epoch", version=self.epoch_version if version is None else version
        )
        return self.multi(session, check, *ops)

    def next_version(self, path: str) -> int:
        self.versions[path] = self.versions.get(path, -1) + 1
        return self.versions[path]

    def create_topic(self, session: int, topic: str, assignment: Mapping[int, Sequence[int]]) -> TxnRecord:
        self.versions[f"/brokers/topics/{topic}"] = 0
        return self.write(session, create(f"/brokers/topics/{topic}", topic_data(assignment)))

    def set_state(
        self, session: int, topic: str, partition: int, data: bytes, *, fenced: bool = True
    ) -> TxnRecord:
        path = state_path(topic, partition)
        version = self.next_version(path)
        op = create(path, data) if version == 0 else set_data(path, data, version)
        return self.fenced(session, op) if fenced else self.write(session, op)

    def failed_multi(self, session: int) -> TxnRecord:
        return self.multi(session, TxnOp("error", error=-103), TxnOp("error", error=-2))


def final_state(
    topics: Mapping[str, Mapping[int, Sequence[int]]] = {},
    states: Mapping[tuple[str, int], tuple[int, int, Sequence[int]]] = {},
    *,
    live: Sequence[int] = (1, 2, 3),
    controller: int | None = 1,
    metadata: Mapping[int, Any] | None = None,
    **overrides: Any,
) -> FinalState:
    """A final state; by default every live broker's Metadata view agrees with ZooKeeper."""
    topic_states = {
        name: TopicState(0x40 + i, {p: tuple(r) for p, r in a.items()})
        for i, (name, a) in enumerate(topics.items())
    }
    partition_states = {
        TopicPartition(t, p): PartitionState(leader, epoch, tuple(isr), 1, epoch)
        for (t, p), (leader, epoch, isr) in states.items()
    }
    if metadata is None:
        view: dict[str, dict[int, MetadataPartition]] = {tp.topic: {} for tp in partition_states}
        for tp, s in partition_states.items():
            view[tp.topic][tp.partition] = MetadataPartition(
                s.leader, topic_states[tp.topic].replicas[tp.partition], s.isr
            )
        metadata = dict.fromkeys(live, view)
    fields: dict[str, Any] = {
        "controller": controller,
        "controller_epoch": 1,
        "controller_epoch_version": 1,
        "topics": topic_states,
        "partition_states": partition_states,
        "reassign_partitions": None,
        "preferred_replica_election": None,
        "delete_topics": frozenset(),
        "live_brokers": frozenset(live),
        "metadata": metadata,
        "journals": {},
        **overrides,
    }
    return FinalState(**fields)


def request(
    seq: int,
    kind: str,
    controller_epoch: int,
    partitions: Sequence[tuple[str, int, int, int]] = (),
    *,
    source: int = 1,
    error: int | None = 0,
    broker_epoch: int = 0x30,
    delete: bool | None = None,
) -> ReceivedRequest:
    """``partitions``: (topic, partition, leader_epoch, per-partition error code)."""
    parts = tuple(RequestPartition(t, p, 1, e, err) for t, p, e, err in partitions)
    return ReceivedRequest(seq, source, kind, controller_epoch, broker_epoch, error, parts, delete)


def load_capture(directory: Path) -> tuple[tuple[Op, ...], list[TxnRecord], FinalState]:
    """A checked-in capture (a run directory under ``data/``), verified against its manifest."""
    run = load_judged_run(directory)
    assert run.txn_records is not None, directory
    assert run.final_state is not None, directory
    return run.history, run.txn_records, run.final_state


def verdict_of(run: Path, checker: str, records: Sequence[TxnRecord], state: FinalState) -> Verdict:
    """``checker``'s verdict on kept run ``run`` (its history) with ``records`` and ``state`` in
    place of its own: how a test shows what the verdict would be had the evidence differed."""
    history = History.load(run / "history.jsonl")
    (verdict,) = [v for v in check_all(history, records, state) if v.checker == checker]
    return verdict


def history_of(*ops: tuple[str, str, Mapping[str, Any], OpType]) -> History:
    """Sequential ops: each ``(process, f, value, outcome)`` invoked then completed."""
    h = History(clock=iter(range(0, 10**9, 1000)).__next__)
    for process, f, value, outcome in ops:
        h.complete(h.invoke(process, f, value), outcome)
    return h
