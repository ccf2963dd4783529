"""Liveness checkers: what must be true once every fault is healed and the cluster went quiet
(decisions ring, pure).

They judge the :class:`~chaos.checkers.final_state.FinalState` the runner took after its final
phase (heal, then wait for quiescence up to the scenario's bound): no final state means the
cluster never healed, and the verdict is unknown. Brokers that never registered (in the log or
at the end) excuse what cannot finish without them — a reassignment to them, or a deletion of a
topic with a replica on them: Kafka 2.5 keeps both pending until the broker appears (spec §4.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chaos.checkers.abandoned import abandoned_reassignments, poisoned_topics
from chaos.checkers.deadlocked import Deadlock, deadlocked_reassignments
from chaos.checkers.dropped import dropped_deletions
from chaos.checkers.final_state import FinalState, MetadataPartition, ReceivedRequest
from chaos.checkers.halted import halted_by_failed_replica_deletion, held_deletions
from chaos.checkers.missed import LEADER_DURING_DELETE, absent_during_deletion
from chaos.checkers.orphaned import leaderless_after_reassignment
from chaos.checkers.replay import replay
from chaos.checkers.stranded import stranded_reassignments
from chaos.checkers.verdict import Verdict, op_evidence
from chaos.history import Op, OpPair, pairs
from probes.txnrecords import TxnRecord
from probes.znode_types import TopicPartition

__all__ = [
    "admin_znodes_cleaned",
    "controller_elected",
    "deletions_completed",
    "metadata_agrees_with_zookeeper",
    "partitions_have_leaders",
    "reassign_targets",
    "reassignments_completed",
]

NO_FINAL = "no final state (the cluster never healed)"
#: Ops after which a topic's final assignment may legitimately differ from a reassignment target.
_ASSIGNMENT_CHANGERS = ("reassign", "delete_topic", "create_topic", "create_topic_admin", "add_partitions")


def _registered(final: FinalState, txn_records: Sequence[TxnRecord] | None) -> set[int]:
    seen = set(final.live_brokers)
    if txn_records is not None:
        seen |= replay(txn_records).registered_brokers
    return seen


def _znode(path: str, note: str, **values: Any) -> dict[str, Any]:
    return {"kind": "znode", "path": path, **values, "note": note}


def _finish(
    name: str, problems: list[str], evidence: list[dict[str, Any]], gaps: list[str], ok: str
) -> Verdict:
    if problems:
        return Verdict.invalid(name, problems, evidence)
    if gaps:
        return Verdict.unknown(name, "; ".join(gaps[:5]))
    return Verdict.valid(name, ok)


def controller_elected(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """After heal, ``/controller`` names a live broker and ``/controller_epoch`` exists."""
    name = "controller_elected"
    if final_state is None:
        return Verdict.unknown(name, NO_FINAL)
    f = final_state
    if f.controller is None or f.controller not in f.live_brokers or f.controller_epoch is None:
        problem = (
            f"controller {f.controller}, epoch {f.controller_epoch}, live brokers {sorted(f.live_brokers)}"
        )
        return Verdict.invalid(
            name, [problem], [_znode("/controller", "no live controller after heal", broker=f.controller)]
        )
    return Verdict.valid(name, f"broker {f.controller} is controller with epoch {f.controller_epoch}")


def partitions_have_leaders(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """Every partition with a live replica in its ISR has a live leader; every partition with a
    live replica has a state znode (topics queued for deletion excepted). Only an ISR member that
    is also a replica counts: no 2.5 election strategy chooses anything else (an ISR Kafka left
    outside the replicas, :mod:`chaos.checkers.orphaned`, leaves the partition offline); and a
    partition Kafka leaves leaderless after a reassignment whose election failed is excused until
    a broker failure or a failover would elect it (same module)."""
    name = "partitions_have_leaders"
    if final_state is None:
        return Verdict.unknown(name, NO_FINAL)
    f = final_state
    leaderless = leaderless_after_reassignment(txn_records) if txn_records is not None else {}
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    for topic, t in sorted(f.topics.items()):
        if topic in f.delete_topics:
            continue
        for p, replicas in sorted(t.replicas.items()):
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            state = f.partition_states.get(TopicPartition(topic, p))
            if state is None:
                if set(replicas) & f.live_brokers:
                    problems.append(
                        f"{topic}-{p} has live replicas {sorted(set(replicas) & f.live_brokers)} but no state"
                    )
                    evidence.append(_znode(path, "absent", replicas=list(replicas)))
                continue
            electable = set(state.isr) & set(replicas) & f.live_brokers
            if leaderless.get(TopicPartition(topic, p)) == (state.leader, tuple(state.isr)):
                continue  # Kafka 2.5.1 leaves it leaderless after its reassignment (orphaned.py)
            if electable and state.leader not in f.live_brokers:
                problems.append(_leaderless(topic, p, state.leader, electable))
                evidence.append(_znode(path, "no live leader", leader=state.leader, isr=list(state.isr)))
    return _finish(name, problems, evidence, [], f"{len(f.partition_states)} partition state(s) led")


def _leaderless(topic: str, partition: int, leader: int, electable: set[int]) -> str:
    return f"{topic}-{partition} leader {leader} with live ISR members {sorted(electable)}"


def reassign_targets(value: Mapping[str, Any]) -> dict[TopicPartition, tuple[int, ...]]:
    """Targets of a ``reassign`` op: ``{"topic", "assignment": {"<p>": [...]}}`` or
    ``{"partitions": [{"topic", "partition", "replicas"}]}``; malformed entries are skipped."""
    out: dict[TopicPartition, tuple[int, ...]] = {}
    topic, assignment = value.get("topic"), value.get("assignment")
    if isinstance(topic, str) and isinstance(assignment, Mapping):
        for p, replicas in assignment.items():
            if str(p).isdigit() and isinstance(replicas, list | tuple):
                out[TopicPartition(topic, int(p))] = tuple(int(r) for r in replicas)
    for entry in value.get("partitions") or ():
        if (
            isinstance(entry, Mapping)
            and isinstance(entry.get("topic"), str)
            and isinstance(entry.get("replicas"), list | tuple)
        ):
            out[TopicPartition(entry["topic"], int(entry.get("partition", 0)))] = tuple(
                int(r) for r in entry["replicas"]
            )
    return out


def _topics_of(op: Op) -> set[str]:
    if op.f == "reassign":
        return {tp.topic for tp in reassign_targets(op.value)}
    topic = op.value.get("topic")
    return {topic} if isinstance(topic, str) else set()


def _overlaps_or_follows(other: OpPair, first: OpPair) -> bool:
    """``other`` was invoked after ``first`` was, or was still running when ``first`` started."""
    if other.invoke.index > first.invoke.index:
        return True
    return other.completion is None or other.completion.index > first.invoke.index


def reassignments_completed(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """No partition is still being reassigned, and every acknowledged reassignment reached its
    target (unless a later op on the topic superseded it, or it targets a broker that never
    registered, or Kafka 2.5.1 gave it up after writing the topic znode: :mod:`chaos.checkers.abandoned`)."""
    name = "reassignments_completed"
    if final_state is None:
        return Verdict.unknown(name, NO_FINAL)
    f, registered = final_state, _registered(final_state, txn_records)
    abandoned = abandoned_reassignments(txn_records) if txn_records is not None else {}
    deadlocked = _deadlock(txn_records, f).partitions
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    gaps: list[str] = []
    for topic, t in sorted(f.topics.items()):
        for p in sorted(set(t.adding) | set(t.removing)):
            if not t.being_reassigned(p) or not set(t.adding.get(p, ())) <= registered:
                continue
            if TopicPartition(topic, p) in abandoned:
                continue  # given up by Kafka 2.5.1, resumed only by a failover (abandoned.py)
            if TopicPartition(topic, p) in deadlocked:
                continue  # waits for its topic's held deletion, as in Kafka 2.5.1 (deadlocked.py)
            if down := _reassignment_needs_down_broker(f, topic, p):
                gaps.append(f"{topic}-{p} still reassigning: {down}")
                continue
            problems.append(
                f"{topic}-{p} still reassigning (adding {list(t.adding.get(p, ()))}, "
                f"removing {list(t.removing.get(p, ()))})"
            )
            evidence.append(
                _znode(f"/brokers/topics/{topic}", "reassignment pending", replicas=list(t.replicas[p]))
            )
    all_pairs = pairs(history)
    acked = [q for q in all_pairs if q.invoke.f == "reassign" and q.outcome == "ok"]
    for op in acked:
        later = [
            o
            for o in all_pairs
            if o is not op and o.invoke.f in _ASSIGNMENT_CHANGERS and _overlaps_or_follows(o, op)
        ]
        for tp, target in sorted(reassign_targets(op.invoke.value).items()):
            if any(tp.topic in _topics_of(o.invoke) for o in later) or not set(target) <= registered:
                continue
            if tp in abandoned or tp.topic in f.delete_topics:
                continue  # given up, or skipped: Kafka never reassigns a topic queued for deletion
            final = f.topics.get(tp.topic)
            if final is None or tp.partition not in final.replicas or final.replicas[tp.partition] == target:
                continue
            problems.append(
                f"{tp.topic}-{tp.partition} ends on {list(final.replicas[tp.partition])}, "
                f"not target {list(target)}"
            )
            evidence.append(op_evidence(op.invoke, f"target of {tp.topic}-{tp.partition} not reached"))
    ok = f"{len(acked)} acknowledged reassignment(s) complete"
    if deadlocked:
        ok += f" ({_tps(deadlocked)} wait for their topics' held deletions, as in Kafka 2.5.1)"
    return _finish(name, problems, evidence, gaps, ok)


def _reassignment_needs_down_broker(f: FinalState, topic: str, partition: int) -> str | None:
    """Why a pending reassignment cannot complete yet: it completes only when every target replica
    is in the ISR (``isReassignmentComplete``, KafkaController.scala@2.5.1 L804-814), which a broker
    that is down cannot join, and without a live leader nobody joins (a topic queued for deletion
    gets no new leader: ``triggerOnlineStateChangeForPartitions``, PartitionStateMachine.scala@2.5.1
    L66-71)."""
    t = f.topics[topic]
    removing = set(t.removing.get(partition, ()))
    target_down = {r for r in t.replicas.get(partition, ()) if r not in removing} - f.live_brokers
    if target_down:
        return f"target replicas on {sorted(target_down)} not live after heal"
    state = f.partition_states.get(TopicPartition(topic, partition))
    if state is not None and state.leader not in f.live_brokers:
        return f"no live leader after heal (leader {state.leader})"
    return None


def _deadlock(txn_records: Sequence[TxnRecord] | None, f: FinalState) -> Deadlock:
    """Reassignments and deletions Kafka 2.5.1 leaves waiting for each other (deadlocked.py)."""
    return Deadlock() if txn_records is None else deadlocked_reassignments(txn_records, f)


def _halted(txn_records: Sequence[TxnRecord] | None, f: FinalState) -> frozenset[str]:
    """Topics whose deletion Kafka 2.5.1 holds (halted.py, poisoned_topics of abandoned.py, and
    deadlocked.py)."""
    if txn_records is None:
        return frozenset()
    failed = halted_by_failed_replica_deletion(txn_records, f.journals) if f.journals else frozenset()
    return failed | poisoned_topics(txn_records) | _deadlock(txn_records, f).topics


def _blocked_deletion(f: FinalState, topic: str, registered: set[int]) -> str | None:
    """Why Kafka cannot finish deleting ``topic`` (a replica on a never-registered broker)."""
    t = f.topics.get(topic)
    replicas = set() if t is None else {r for rs in t.replicas.values() for r in rs}
    never = replicas - registered
    return f"replicas on never-registered brokers {sorted(never)}" if never else None


def deletions_completed(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """Every acknowledged deletion removed its topic (unless the name was created again later,
    or Kafka 2.5.1 dropped the request because its controller had not yet learned of the topic —
    :mod:`chaos.checkers.dropped` — or holds it halted by an earlier topic of the same name —
    :mod:`chaos.checkers.halted`)."""
    name = "deletions_completed"
    if final_state is None:
        return Verdict.unknown(name, NO_FINAL)
    f, registered = final_state, _registered(final_state, txn_records)
    dropped = dropped_deletions(txn_records) if txn_records is not None else {}
    held = held_deletions(txn_records) if txn_records is not None else {}
    halted = _halted(txn_records, f)
    all_pairs = pairs(history)
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    gaps: list[str] = []
    acked = [q for q in all_pairs if q.invoke.f == "delete_topic" and q.outcome == "ok"]
    for op in acked:
        topic = op.invoke.value.get("topic")
        if not isinstance(topic, str) or topic not in f.topics:
            continue
        creates = [
            c
            for c in all_pairs
            if c.invoke.f.startswith("create_topic") and c.invoke.value.get("topic") == topic
        ]
        if any(_overlaps_or_follows(c, op) for c in creates):
            continue
        if _blocked_deletion(f, topic, registered):
            continue
        if dropped.get(topic) == f.topics[topic].czxid:
            continue  # the request was dropped unprocessed, as Kafka 2.5.1 does (dropped.py)
        if held.get(topic) == f.topics[topic].czxid or topic in halted:
            continue  # Kafka 2.5.1 holds the deletion halted (halted.py)
        down = {r for rs in f.topics[topic].replicas.values() for r in rs} - f.live_brokers
        if down:
            gaps.append(f"{topic}: replicas on brokers {sorted(down)} not live after heal")
            continue
        problems.append(f"topic {topic!r} still exists after its deletion was acknowledged")
        evidence.append(op_evidence(op.invoke, "deletion acknowledged; topic still present"))
    return _finish(name, problems, evidence, gaps, f"{len(acked)} acknowledged deletion(s) complete")


def admin_znodes_cleaned(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """``/admin/reassign_partitions``, ``/admin/preferred_replica_election`` and the children of
    ``/admin/delete_topics`` are gone, except entries that wait for never-registered brokers and
    reassignment entries whose topic Kafka 2.5.1 deleted mid-reassignment (:mod:`chaos.checkers.stranded`:
    they stay until the next controller failover)."""
    name = "admin_znodes_cleaned"
    if final_state is None:
        return Verdict.unknown(name, NO_FINAL)
    f, registered = final_state, _registered(final_state, txn_records)
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    gaps: list[str] = []
    stranded: Mapping[TopicPartition, int] = {}
    kept_by_deadlock: frozenset[TopicPartition] = frozenset()
    if f.reassign_partitions is not None:
        waiting = {tp: r for tp, r in f.reassign_partitions.items() if not set(r) <= registered}
        if txn_records is not None:
            stranded = stranded_reassignments(txn_records)
        unreachable = {tp for tp, r in f.reassign_partitions.items() if not set(r) <= f.live_brokers}
        gaps += [
            f"/admin/reassign_partitions: {tp.topic}-{tp.partition} targets a broker not live after heal"
            for tp in sorted(unreachable - set(waiting) - set(stranded))
        ]
        kept_by_deadlock = _deadlock(txn_records, f).entries  # Kafka 2.5.1 keeps them (deadlocked.py)
        left = set(f.reassign_partitions) - set(waiting) - set(stranded) - unreachable - kept_by_deadlock
        deleted = {q.invoke.value.get("topic") for q in pairs(history) if q.invoke.f == "delete_topic"}
        if txn_records is None and left and all(tp.topic in deleted for tp in left):
            gaps.append(f"no transaction log to tell whether deletion stranded {_tps(left)}")
        elif left or not f.reassign_partitions:
            problems.append(f"/admin/reassign_partitions left with {_tps(f.reassign_partitions)}")
            evidence.append(
                _znode("/admin/reassign_partitions", "not cleaned", partitions=_tps(f.reassign_partitions))
            )
    if f.preferred_replica_election is not None:
        problems.append(f"/admin/preferred_replica_election left with {_tps(f.preferred_replica_election)}")
        evidence.append(
            _znode(
                "/admin/preferred_replica_election",
                "not cleaned",
                partitions=_tps(f.preferred_replica_election),
            )
        )
    held = held_deletions(txn_records) if txn_records is not None else {}
    halted = _halted(txn_records, f)
    for topic in sorted(f.delete_topics):
        if _blocked_deletion(f, topic, registered) is not None:
            continue
        if (topic in f.topics and held.get(topic) == f.topics[topic].czxid) or topic in halted:
            continue  # Kafka 2.5.1 holds the deletion halted (halted.py)
        t = f.topics.get(topic)
        down = set() if t is None else {r for rs in t.replicas.values() for r in rs} - f.live_brokers
        if down:  # halted for offline replicas (TopicDeletionManager.scala@2.5.1 L291-317)
            gaps.append(
                f"/admin/delete_topics/{topic}: replicas on brokers {sorted(down)} not live after heal"
            )
            continue
        problems.append(f"/admin/delete_topics/{topic} left")
        evidence.append(_znode(f"/admin/delete_topics/{topic}", "not cleaned"))
    kept = f" but {_tps(stranded)}, stranded by topic deletion as in Kafka 2.5.1" if stranded else ""
    if held_entries := set(f.reassign_partitions or {}) & kept_by_deadlock:
        joint = " and" if kept else " but"
        kept += f"{joint} {_tps(held_entries)}, waiting for a held deletion as in Kafka 2.5.1"
    return _finish(name, problems, evidence, gaps, f"no admin znode left{kept}")


def _tps(tps: Iterable[TopicPartition]) -> list[str]:
    return [f"{tp.topic}-{tp.partition}" for tp in sorted(tps)]


def metadata_agrees_with_zookeeper(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """Every live broker's Metadata view shows ZooKeeper's topics, leaders, ISRs and replicas —
    except a deleted topic still shown by a broker that was not registered while it was deleted
    and was never told (Kafka 2.5.1 keeps it in that broker's cache: :mod:`chaos.checkers.missed`)."""
    name = "metadata_agrees_with_zookeeper"
    if final_state is None:
        return Verdict.unknown(name, NO_FINAL)
    f = final_state
    expected = _expected_metadata(f)
    absent = absent_during_deletion(txn_records) if txn_records is not None else {}
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    gaps: list[str] = []
    for broker in sorted(f.live_brokers):
        view = f.metadata.get(broker)
        if view is None:
            gaps.append(f"no metadata view of live broker {broker}")
            continue
        journal = f.journals.get(broker)
        missed = frozenset(
            t
            for t, brokers in absent.items()
            if broker in brokers and (journal is None or not _told_of_deletion(journal, t))
        )
        for problem in _view_problems(expected, view, f.delete_topics | missed):
            problems.append(f"broker {broker}: {problem}")
            evidence.append({"kind": "metadata", "broker": broker, "note": problem})
    return _finish(
        name, problems, evidence, gaps, f"{len(f.live_brokers)} broker view(s) agree with ZooKeeper"
    )


def _told_of_deletion(journal: Sequence[ReceivedRequest], topic: str) -> bool:
    """The broker applied an UpdateMetadata marking ``topic`` deleted after the last request that
    gave it a live state of the topic."""
    told = False
    for request in journal:
        if request.error_code != 0 or request.kind not in ("UpdateMetadata", "LeaderAndIsr"):
            continue
        for p in request.partitions:
            if p.topic == topic:
                told = request.kind == "UpdateMetadata" and p.leader == LEADER_DURING_DELETE
    return told


def _expected_metadata(f: FinalState) -> dict[str, dict[int, MetadataPartition]]:
    out: dict[str, dict[int, MetadataPartition]] = {}
    for tp, s in f.partition_states.items():
        topic = f.topics.get(tp.topic)
        if topic is None or tp.topic in f.delete_topics:
            continue
        out.setdefault(tp.topic, {})[tp.partition] = MetadataPartition(
            s.leader, topic.replicas.get(tp.partition, ()), s.isr
        )
    return out


def _view_problems(
    expected: Mapping[str, Mapping[int, MetadataPartition]],
    view: Mapping[str, Mapping[int, MetadataPartition]],
    deleting: frozenset[str],
) -> list[str]:
    problems = [
        f"shows topic {t!r} that ZooKeeper does not have"
        for t in sorted(set(view) - set(expected) - deleting)
        if view[t]
    ]
    for topic, parts in sorted(expected.items()):
        shown = view.get(topic, {})
        for p, want in sorted(parts.items()):
            got = shown.get(p)
            if got is None:
                problems.append(f"does not show {topic}-{p}")
            elif (got.leader, tuple(got.replicas), set(got.isr)) != (
                want.leader,
                tuple(want.replicas),
                set(want.isr),
            ):
                problems.append(
                    f"{topic}-{p} leader {got.leader} replicas {list(got.replicas)} isr {list(got.isr)}; "
                    f"ZooKeeper leader {want.leader} replicas {list(want.replicas)} isr {list(want.isr)}"
                )
    return problems
