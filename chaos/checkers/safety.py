"""Safety checkers: properties that must hold at every moment of a run (decisions ring, pure).

Each takes ``(history, txn_records, final_state)`` — the run's ops, the transaction-log records of
its chroot (chroot-relative paths; None when the log could not be read) and the
:class:`~chaos.checkers.final_state.FinalState` (None when the cluster never healed) — and
returns a :class:`~chaos.checkers.verdict.Verdict`. The wall: nothing here imports the
implementation under test or does I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from chaos.checkers.final_state import FinalState
from chaos.checkers.orphaned import orphaned_isrs
from chaos.checkers.replay import StateWrite, epoch_check_version, replay
from chaos.checkers.verdict import Verdict, op_evidence, record_evidence
from chaos.history import Op, OpPair, pairs
from probes.txnrecords import TxnRecord

__all__ = [
    "acknowledged_creations_survive",
    "controller_epoch_increases",
    "controller_writes_fenced",
    "no_write_after_epoch_superseded",
    "one_controller_per_epoch",
    "partition_states_valid",
]

CREATE_FS = ("create_topic", "create_topic_admin")
NO_LOG = "no transaction log of the run"


def controller_epoch_increases(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """``/controller_epoch`` is written with a strictly larger integer each time."""
    name = "controller_epoch_increases"
    if txn_records is None:
        return Verdict.unknown(name, NO_LOG)
    elections = replay(txn_records).elections
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    for before, after in itertools.pairwise(elections):
        if after.value is None or before.value is None or after.value <= before.value:
            problems.append(f"/controller_epoch went from {before.value} to {after.value}")
            evidence += [
                record_evidence(before.record, "earlier write"),
                record_evidence(after.record, "later write"),
            ]
    if elections and elections[0].value is None:
        problems.append("/controller_epoch written with a non-integer")
        evidence.append(record_evidence(elections[0].record))
    if problems:
        return Verdict.invalid(name, problems, evidence)
    values = [e.value for e in elections]
    return Verdict.valid(name, f"{len(elections)} write(s) of /controller_epoch, values {values}")


def one_controller_per_epoch(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """One session acts per controller epoch: the sessions that set ``/controller_epoch`` to a
    value and the sessions whose fenced writes checked a version holding that value are one.

    An epoch whose election is not in the log is keyed by its data version instead.
    """
    name = "one_controller_per_epoch"
    if txn_records is None:
        return Verdict.unknown(name, NO_LOG)
    log = replay(txn_records)
    value_of = {e.version: e.value for e in log.elections if e.value is not None}
    actors: dict[str, dict[int, TxnRecord]] = {}  # epoch → session → its first record
    for e in log.elections:
        if e.value is not None and e.version > 0:  # version 0 is the initial create of "0"
            actors.setdefault(f"epoch {e.value}", {}).setdefault(e.record.session_id, e.record)
    for record, _ in log.writes_of("fenced"):
        version = _checked_version(record)
        key = f"epoch {value_of[version]}" if version in value_of else f"epoch version {version}"
        actors.setdefault(key, {}).setdefault(record.session_id, record)
    problems, evidence = [], []
    for key, sessions in actors.items():
        if len(sessions) > 1:
            problems.append(
                f"{len(sessions)} sessions acted under {key}: " + ", ".join(f"0x{s:x}" for s in sessions)
            )
            evidence += [record_evidence(r, f"session 0x{s:x} under {key}") for s, r in sessions.items()]
    if problems:
        return Verdict.invalid(name, problems, evidence)
    return Verdict.valid(name, f"{len(actors)} epoch(s), one acting session each")


def _checked_version(record: TxnRecord) -> int:
    version = epoch_check_version(record)
    assert version is not None
    return version


def no_write_after_epoch_superseded(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """No controller write lands once a newer election changed ``/controller_epoch``.

    A fenced multi must have checked the version current when it applied; a controller-only
    write outside a fenced multi must come from the session that owns the current epoch.
    Broker ISR writes and admin writes are not controller writes (see ``replay``).
    """
    name = "no_write_after_epoch_superseded"
    if txn_records is None:
        return Verdict.unknown(name, NO_LOG)
    log = replay(txn_records)
    problems, evidence = [], []
    for record, current in log.writes_of("fenced"):
        checked = _checked_version(record)
        if checked != current:
            problems.append(
                f"fenced write at zxid 0x{record.zxid:x} checked epoch version {checked}, current {current}"
            )
            evidence.append(
                record_evidence(record, f"applied while /controller_epoch was at version {current}")
            )
    for record, current in log.writes_of("unfenced-controller"):
        owner = None if current is None else log.epoch_owner.get(current)
        if owner != record.session_id:
            who = "no controller" if owner is None else f"session 0x{owner:x}"
            problems.append(
                f"unfenced controller write at zxid 0x{record.zxid:x} while {who} owned the epoch"
            )
            evidence.append(record_evidence(record, f"unfenced controller write; epoch version {current}"))
    if problems:
        return Verdict.invalid(name, problems, evidence)
    fenced = sum(1 for _ in log.writes_of("fenced"))
    return Verdict.valid(name, f"{fenced} fenced write(s), all under the epoch current when they applied")


def controller_writes_fenced(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """Every controller-only write is a multi that checks ``/controller_epoch`` (KAFKA-6082).

    An unfenced one is harmless only until its writer is deposed: this catches the missing
    fence even in runs where no fault happened to expose it. What counts as controller-only,
    and what does not (leaders' ISR writes, admin writes), is in :mod:`chaos.checkers.replay`.
    """
    name = "controller_writes_fenced"
    if txn_records is None:
        return Verdict.unknown(name, NO_LOG)
    log = replay(txn_records)
    unfenced = [record for record, _ in log.writes_of("unfenced-controller")]
    if unfenced:
        problems = [
            f"unfenced controller write at zxid 0x{r.zxid:x} by session 0x{r.session_id:x}" for r in unfenced
        ]
        return Verdict.invalid(
            name, problems, [record_evidence(r, "no /controller_epoch check") for r in unfenced]
        )
    fenced = sum(1 for _ in log.writes_of("fenced"))
    return Verdict.valid(name, f"{fenced} controller write(s), all fenced")


def partition_states_valid(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """Every state znode: leader ∈ ISR ∪ {-1}, ISR ⊆ replicas and non-empty, and the leader
    epoch never decreases within one topic incarnation (the topic znode's czxid).

    A final state whose ISR Kafka 2.5.1 itself left outside the replicas (a reassignment completed
    after its leader election failed: :mod:`chaos.checkers.orphaned`) is excused from ISR ⊆ replicas.

    Two rules of every 2.5 leader election go with them: a new leader comes with a new leader
    epoch — indeed every controller write of a state bumps it (``LeaderAndIsr.newLeaderAndIsr``,
    ``newEpoch``); only a leader's own ISR write keeps the epoch — and the new leader is a member
    of the ISR it replaces — every election strategy picks from the ISR while
    ``unclean.leader.election.enable`` is false (Kafka's default and the kit's profiles).
    """
    name = "partition_states_valid"
    if txn_records is None and final_state is None:
        return Verdict.unknown(name, "neither a transaction log nor a final state")
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    writes = replay(txn_records).state_writes if txn_records is not None else []
    for write in writes:
        for problem in _state_write_problems(write):
            problems.append(f"{write.topic}-{write.partition} at zxid 0x{write.record.zxid:x}: {problem}")
            evidence.append(record_evidence(write.record, problem))
    orphaned = orphaned_isrs(txn_records) if txn_records is not None else {}
    if final_state is not None:
        for tp, state in sorted(final_state.partition_states.items()):
            topic = final_state.topics.get(tp.topic)
            replicas = None if topic is None else topic.replicas.get(tp.partition)
            if orphaned.get(tp) == (state.leader, tuple(state.isr)):
                replicas = None  # Kafka 2.5.1 leaves this ISR outside the replicas (orphaned.py)
            for problem in _state_problems(state.leader, state.isr, replicas):
                problems.append(f"final {tp.topic}-{tp.partition}: {problem}")
                evidence.append(_final_state_evidence(tp.topic, tp.partition, state, replicas, problem))
    if problems:
        return Verdict.invalid(name, problems, evidence)
    if txn_records is None:
        return Verdict.unknown(name, f"final state fine but {NO_LOG}: intermediate states unchecked")
    return Verdict.valid(name, f"{len(writes)} state write(s) checked")


def _state_write_problems(write: StateWrite) -> list[str]:
    if write.state is None:
        return [f"malformed state znode ({write.malformed})"]
    s, prev = write.state, write.previous
    problems = _state_problems(s.leader, s.isr, write.replicas)
    if prev is None:
        return problems
    if s.leader_epoch < prev.leader_epoch:
        problems.append(f"leader_epoch went back from {prev.leader_epoch} to {s.leader_epoch}")
    if s.leader != prev.leader and s.leader_epoch == prev.leader_epoch:
        problems.append(f"leader changed from {prev.leader} to {s.leader} without a leader-epoch bump")
    elif write.fenced and s.leader_epoch == prev.leader_epoch:
        problems.append(f"controller rewrote the state keeping leader epoch {s.leader_epoch}")
    if s.leader not in (-1, prev.leader) and s.leader not in prev.isr:
        problems.append(f"leader {s.leader} elected from outside the previous ISR {list(prev.isr)}")
    return problems


def _state_problems(leader: int, isr: Sequence[int], replicas: Sequence[int] | None) -> list[str]:
    problems = []
    if not isr:
        problems.append("empty ISR")
    if leader != -1 and leader not in isr:
        problems.append(f"leader {leader} not in ISR {list(isr)}")
    if replicas is not None and not set(isr) <= set(replicas):
        problems.append(f"ISR {list(isr)} not within replicas {list(replicas)}")
    return problems


def _final_state_evidence(
    topic: str, partition: int, state: Any, replicas: Sequence[int] | None, note: str
) -> dict[str, Any]:
    return {
        "kind": "znode",
        "path": f"/brokers/topics/{topic}/partitions/{partition}/state",
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
        "replicas": None if replicas is None else list(replicas),
        "note": note,
    }


# ---- history -----------------------------------------------------------------------------------


def acknowledged_creations_survive(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """A topic creation acknowledged ``ok`` still exists at the end, unless a deletion of that
    name was invoked after the creation was invoked (or was still running then)."""
    name = "acknowledged_creations_survive"
    if final_state is None:
        return Verdict.unknown(name, "no final state")
    all_pairs = pairs(history)
    deletes = [p for p in all_pairs if p.invoke.f == "delete_topic"]
    problems, evidence = [], []
    acked = [p for p in all_pairs if p.invoke.f in CREATE_FS and p.outcome == "ok"]
    for create in acked:
        topic = create.invoke.value.get("topic")
        if not isinstance(topic, str) or topic in final_state.topics:
            continue
        if any(_may_follow(d, create) for d in deletes if d.invoke.value.get("topic") == topic):
            continue
        problems.append(f"topic {topic!r} was created (ok) but is gone and no deletion of it was asked")
        assert create.completion is not None
        evidence += [
            op_evidence(create.invoke),
            op_evidence(create.completion, "acknowledged; topic absent at the end"),
        ]
    if problems:
        return Verdict.invalid(name, problems, evidence)
    return Verdict.valid(name, f"{len(acked)} acknowledged creation(s) accounted for")


def _may_follow(delete: OpPair, create: OpPair) -> bool:
    """The deletion may have applied after the creation did."""
    if delete.invoke.index > create.invoke.index:
        return True
    return delete.completion is None or delete.completion.index > create.invoke.index
