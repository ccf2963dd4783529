"""Safety checkers: properties that must hold at every moment of a run (decisions ring, pure).

Each reads the run's :class:`~chaos.checkers.findings.RunInputs` — the history, the timeline of
the chroot's transaction log (:mod:`chaos.checkers.timeline`; None when the log could not be
read) and the final state (None when the cluster never healed) — and returns a naive
:class:`~chaos.checkers.findings.Finding`; the quirk registry is applied afterwards
(:mod:`chaos.checkers.judge`). The wall: nothing here imports the implementation under test or
does I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from chaos.checkers.admin_api import unclean_allowance
from chaos.checkers.events import BrokerDeregistered, BrokerRegistered, ReassignmentZnode, TopicWritten
from chaos.checkers.final_state import PartitionState
from chaos.checkers.findings import FINAL_ISR_OUTSIDE_REPLICAS, Finding, Findings, Item, RunInputs, tp_name
from chaos.checkers.judge import checker
from chaos.checkers.timeline import ControllerWrite, StateWritten
from chaos.checkers.verdict import op_evidence, record_evidence
from chaos.history import OpPair, pairs
from probes.txnrecords import TxnOp, TxnRecord

__all__ = [
    "acknowledged_creations_survive",
    "controller_epoch_increases",
    "controller_writes_fenced",
    "elections_drop_the_old_leader",
    "no_write_after_epoch_superseded",
    "one_controller_per_epoch",
    "partition_states_valid",
]

CREATE_FS = ("create_topic", "create_topic_admin")
NO_LOG = "no transaction log of the run"


def _write(w: ControllerWrite) -> Item:
    return Item("controller write", f"0x{w.zxid:x}")


@checker("safety")
def controller_epoch_increases(run: RunInputs) -> Finding:
    """``/controller_epoch`` is written with a strictly larger integer each time."""
    if run.timeline is None:
        return Finding(unknown=NO_LOG)
    elections = run.timeline.elections
    found = Findings()
    for before, after in itertools.pairwise(elections):
        if after.epoch is None or before.epoch is None or after.epoch <= before.epoch:
            found.violation(
                Item("controller epoch write", f"0x{after.zxid:x}"),
                f"/controller_epoch went from {before.epoch} to {after.epoch}",
                record_evidence(before.record, "earlier write"),
                record_evidence(after.record, "later write"),
            )
    if elections and elections[0].epoch is None:
        first = elections[0]
        found.violation(
            Item("controller epoch write", f"0x{first.zxid:x}"),
            "/controller_epoch written with a non-integer",
            record_evidence(first.record),
        )
    values = [e.epoch for e in elections]
    return found.done(f"{len(elections)} write(s) of /controller_epoch, values {values}")


@checker("safety")
def one_controller_per_epoch(run: RunInputs) -> Finding:
    """One session acts per controller epoch: the sessions that set ``/controller_epoch`` to a
    value and the sessions whose fenced writes checked a version holding that value are one.

    An epoch whose election is not in the log is keyed by its data version instead.
    """
    if run.timeline is None:
        return Finding(unknown=NO_LOG)
    log = run.timeline
    value_of = {e.epoch_zk_version: e.epoch for e in log.elections if e.epoch is not None}
    actors: dict[str, dict[int, TxnRecord]] = {}  # epoch → session → its first record
    for e in log.elections:
        if e.epoch is not None and e.epoch_zk_version > 0:  # version 0 is the initial create of "0"
            actors.setdefault(f"epoch {e.epoch}", {}).setdefault(e.session, e.record)
    for w in log.controller_writes:
        if w.role != "fenced" or w.checked_epoch_zk_version is None:
            continue
        v = w.checked_epoch_zk_version
        key = f"epoch {value_of[v]}" if v in value_of else f"epoch version {v}"
        actors.setdefault(key, {}).setdefault(w.session, w.record)
    found = Findings()
    for key, sessions in actors.items():
        if len(sessions) > 1:
            found.violation(
                Item("controller epoch", key),
                f"{len(sessions)} sessions acted under {key}: " + ", ".join(f"0x{s:x}" for s in sessions),
                *(record_evidence(r, f"session 0x{s:x} under {key}") for s, r in sessions.items()),
            )
    return found.done(f"{len(actors)} epoch(s), one acting session each")


@checker("safety")
def no_write_after_epoch_superseded(run: RunInputs) -> Finding:
    """No controller write lands once a newer election changed ``/controller_epoch``.

    A fenced multi must have checked the version current when it applied; a controller-only
    write outside a fenced multi must come from the session that owns the current epoch.
    Broker ISR writes and admin writes are not controller writes (see the timeline).
    """
    if run.timeline is None:
        return Finding(unknown=NO_LOG)
    log = run.timeline
    found = Findings()
    fenced = 0
    for w in log.controller_writes:
        current = w.epoch_zk_version_before
        if w.role == "fenced":
            fenced += 1
            if w.checked_epoch_zk_version != current:
                found.violation(
                    _write(w),
                    f"fenced write at zxid 0x{w.zxid:x} checked epoch version "
                    f"{w.checked_epoch_zk_version}, current {current}",
                    record_evidence(w.record, f"applied while /controller_epoch was at version {current}"),
                )
        elif w.role == "unfenced":
            owner = None if current is None else log.epoch_owner.get(current)
            if owner != w.session:
                who = "no controller" if owner is None else f"session 0x{owner:x}"
                found.violation(
                    _write(w),
                    f"unfenced controller write at zxid 0x{w.zxid:x} while {who} owned the epoch",
                    record_evidence(w.record, f"unfenced controller write; epoch version {current}"),
                )
    return found.done(f"{fenced} fenced write(s), all under the epoch current when they applied")


@checker("safety")
def controller_writes_fenced(run: RunInputs) -> Finding:
    """Every controller-only write is a multi whose ``check /controller_epoch`` names the version
    its own controller's election wrote (KAFKA-6082; a fence that cannot fail is no fence).

    ZooKeeper logs the version ``/controller_epoch`` had when the multi applied (for a check that
    asked for any version, -1, too): a write checking another version than the one its session's
    latest election produced went through under someone else's epoch, which an exact check would
    have stopped. An unfenced controller write is harmless only until its writer is deposed: this
    catches the missing fence even in runs where no fault exposed it. What counts as
    controller-only, and what does not (leaders' ISR writes, admin writes), is in
    :mod:`chaos.checkers.paths`.
    """
    if run.timeline is None:
        return Finding(unknown=NO_LOG)
    log = run.timeline
    own: dict[int, int] = {}  # session → epoch zk version its latest election wrote
    found = Findings()
    fenced = 0
    for w in log.controller_writes:
        if w.role == "election":
            for op in w.ops:
                if (version := _epoch_version_written(op)) is not None:
                    own[w.session] = version
        elif w.role == "unfenced":
            found.violation(
                _write(w),
                f"unfenced controller write at zxid 0x{w.zxid:x} by session 0x{w.session:x}",
                record_evidence(w.record, "no /controller_epoch check"),
            )
        else:
            fenced += 1
            _judge_fence(w, own.get(w.session), log.epoch_owner, found)
    return found.done(f"{fenced} controller write(s), all fenced with their own controller's epoch version")


def _epoch_version_written(op: TxnOp) -> int | None:
    if op.path != "/controller_epoch":
        return None
    if op.op.startswith("create"):
        return 0
    return op.version if op.op == "setData" else None


def _judge_fence(w: ControllerWrite, expected: int | None, owner: dict[int, int], found: Findings) -> None:
    checked = w.checked_epoch_zk_version
    who = f"session 0x{w.session:x}"
    if expected is not None and checked == expected:
        return
    if expected is not None:
        found.violation(
            _write(w),
            f"write at zxid 0x{w.zxid:x} by {who} checked /controller_epoch version {checked}, "
            f"but its controller's election wrote version {expected}",
            record_evidence(w.record, f"fence names epoch version {checked}, not {expected}"),
        )
    elif checked in owner:
        found.violation(
            _write(w),
            f"write at zxid 0x{w.zxid:x} by {who}, which won no election, checked /controller_epoch "
            f"version {checked} written by session 0x{owner[checked]:x}",
            record_evidence(w.record, f"fence names another controller's epoch version {checked}"),
        )
    else:
        found.gap(
            _write(w),
            f"write at zxid 0x{w.zxid:x}: the election that wrote epoch version {checked} is not in "
            "the transaction log, so whose fence it is cannot be told",
        )


@checker("safety")
def partition_states_valid(run: RunInputs) -> Finding:
    """Every state znode: leader ∈ ISR ∪ {-1}, ISR ⊆ replicas and non-empty, and the leader
    epoch never decreases within one topic incarnation (the topic znode's czxid).

    Two rules of every 2.5 leader election go with them: a new leader comes with a new leader
    epoch — indeed every controller write of a state bumps it (``LeaderAndIsr.newLeaderAndIsr``,
    ``newEpoch``); only a leader's own ISR write keeps the epoch — and the new leader is a member
    of the ISR it replaces — every election strategy picks from the ISR while
    ``unclean.leader.election.enable`` is false (Kafka's default and the kit's profiles). A
    controller's write may elect from outside the ISR when it was asked to — an unclean
    ElectLeaders naming the partition that may have applied then — or when the topic's config
    enabled unclean election (:func:`chaos.checkers.admin_api.unclean_allowance`); an unclean
    leader nobody asked for and the config forbids is still a violation.
    """
    if run.timeline is None and run.final_state is None:
        return Finding(unknown="neither a transaction log nor a final state")
    found = Findings()
    writes = run.timeline.state_writes if run.timeline is not None else []
    unclean = unclean_allowance(run)
    for write in writes:
        for problem in _state_write_problems(write, unclean):
            item = Item("state write", f"{write.topic}-{write.partition} at 0x{write.zxid:x}")
            text = f"{write.topic}-{write.partition} at zxid 0x{write.zxid:x}: {problem}"
            found.violation(item, text, record_evidence(write.record, problem))
    f = run.final_state
    for tp, state in sorted(f.partition_states.items()) if f is not None else ():
        topic = f.topics.get(tp.topic) if f is not None else None
        replicas = None if topic is None else topic.replicas.get(tp.partition)
        for problem in _state_problems(state.leader, state.isr, None):
            evidence = _final_state_evidence(tp.topic, tp.partition, state, replicas, problem)
            found.violation(
                Item("final partition state", tp_name(tp)), f"final {tp_name(tp)}: {problem}", evidence
            )
        if replicas is not None and not set(state.isr) <= set(replicas):
            problem = f"ISR {list(state.isr)} not within replicas {list(replicas)}"
            evidence = _final_state_evidence(tp.topic, tp.partition, state, replicas, problem)
            found.violation(
                Item(FINAL_ISR_OUTSIDE_REPLICAS, tp_name(tp)), f"final {tp_name(tp)}: {problem}", evidence
            )
    if run.timeline is None:
        found.gap(
            Item("transaction log", "absent"), f"final state fine but {NO_LOG}: intermediate states unchecked"
        )
    return found.done(f"{len(writes)} state write(s) checked")


@checker("safety")
def elections_drop_the_old_leader(run: RunInputs) -> Finding:
    """A controller that moves a partition's leadership away from a broker keeps that broker in
    the ISR only in a preferred or a reassignment election.

    Kafka 2.5.1 has four elections (``Election.scala``). Two leave the ISR as it was: the preferred
    one (the new leader is the first replica) and a reassignment's (the partition is being
    reassigned, by ``/admin/reassign_partitions`` or the topic znode's adding/removing
    replicas), and either may run before the controller has seen the old leader's registration
    go. The other two drop the old leader: the offline election keeps the live part of the ISR
    (``leaderForOffline``: ``isr.filter(isReplicaOnline)``; unclean: the new leader alone), and
    the controlled-shutdown election drops the shutting-down brokers (``leaderForControlledShutdown``:
    ``isr.filter(!shuttingDownBrokerIds.contains)``). A move that keeps the old leader in the ISR
    in any other shape — a dead broker kept, or a shutting-down one — may later elect a broker
    without the data it missed. Judged from the transaction log; a broker whose registration the
    log saw go (and not come back) is named as dead.
    """
    if run.timeline is None:
        return Finding(unknown=NO_LOG)
    found = Findings()
    gone: set[int] = set()  # brokers whose registration the log saw go, and not come back yet
    by_znode: set[tuple[str, int]] = set()
    by_api: dict[str, set[int]] = {}
    judged = 0
    for e in run.timeline.events:
        if isinstance(e, BrokerRegistered):
            gone.discard(e.broker)
        elif isinstance(e, BrokerDeregistered):
            gone.add(e.broker)
        elif isinstance(e, ReassignmentZnode):
            by_znode = {(tp.topic, tp.partition) for tp in e.entries}
        elif isinstance(e, TopicWritten):
            z = e.znode
            by_api[e.topic] = (
                set()
                if z is None
                else {p for p in z.partitions if z.adding_replicas.get(p) or z.removing_replicas.get(p)}
            )
        elif isinstance(e, StateWritten) and e.fenced and e.state is not None and e.previous is not None:
            old, new = e.previous.leader, e.state.leader
            if old < 0 or new in (-1, old):
                continue
            judged += 1
            first = e.replicas[0] if e.replicas else None
            preferred = new == first and set(e.state.isr) == set(e.previous.isr)
            reassigning = (e.topic, e.partition) in by_znode or e.partition in by_api.get(e.topic, set())
            if old not in e.state.isr or preferred or reassigning:
                continue
            if old in gone:
                problem = (
                    f"leader moved from {old}, whose registration is gone, to {new} but the new ISR"
                    f" {list(e.state.isr)} keeps {old}"
                )
            else:
                problem = (
                    f"leader moved from {old} to {new} but the new ISR {list(e.state.isr)} keeps {old}"
                    f" (old ISR {list(e.previous.isr)}): not a preferred or a reassignment election,"
                    " the only ones that keep the old leader"
                )
            item = Item("election keeping the old leader", f"{e.topic}-{e.partition} at 0x{e.zxid:x}")
            found.violation(
                item,
                f"{e.topic}-{e.partition} at zxid 0x{e.zxid:x}: {problem}",
                record_evidence(e.record, problem),
            )
    return found.done(f"{judged} election(s) away from a leader checked")


def _state_write_problems(write: StateWritten, unclean: Callable[[StateWritten], str | None]) -> list[str]:
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
    if (
        s.leader not in (-1, prev.leader)
        and s.leader not in prev.isr
        and not (write.fenced and unclean(write))
    ):
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
    topic: str, partition: int, state: PartitionState, replicas: Sequence[int] | None, note: str
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


@checker("safety")
def acknowledged_creations_survive(run: RunInputs) -> Finding:
    """A topic creation acknowledged ``ok`` still exists at the end, unless a deletion of that
    name was invoked after the creation was invoked (or was still running then)."""
    if run.final_state is None:
        return Finding(unknown="no final state")
    all_pairs = pairs(run.history)
    deletes = [p for p in all_pairs if p.invoke.f == "delete_topic"]
    found = Findings()
    acked = [p for p in all_pairs if p.invoke.f in CREATE_FS and p.outcome == "ok"]
    for create in acked:
        topic = create.invoke.value.get("topic")
        if not isinstance(topic, str) or topic in run.final_state.topics:
            continue
        if any(_may_follow(d, create) for d in deletes if d.invoke.value.get("topic") == topic):
            continue
        assert create.completion is not None
        found.violation(
            Item("acknowledged creation", topic),
            f"topic {topic!r} was created (ok) but is gone and no deletion of it was asked",
            op_evidence(create.invoke),
            op_evidence(create.completion, "acknowledged; topic absent at the end"),
        )
    return found.done(f"{len(acked)} acknowledged creation(s) accounted for")


def _may_follow(delete: OpPair, create: OpPair) -> bool:
    """The deletion may have applied after the creation did."""
    if delete.invoke.index > create.invoke.index:
        return True
    return delete.completion is None or delete.completion.index > create.invoke.index
