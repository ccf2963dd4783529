"""Liveness checkers: what must be true once every fault is healed and the cluster went quiet
(decisions ring, pure).

They judge the :class:`~chaos.checkers.final_state.FinalState` the runner took after its final
phase (heal, then wait for quiescence up to the scenario's bound): no final state means the
cluster never healed, and the verdict is unknown. Brokers that never registered (in the log or
at the end) excuse what cannot finish without them — a reassignment to them, or a deletion of a
topic with a replica on them: Kafka 2.5 keeps both pending until the broker appears (spec §4.2).
What cannot finish because a broker is down after heal is not judged (a gap: unknown). Each
checker is naive about Kafka 2.5.1's quirks; :mod:`chaos.checkers.quirks` explains what it
must not count. The cleanup and agreement checkers are in :mod:`chaos.checkers.cleanup`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chaos.checkers.final_state import FinalState
from chaos.checkers.findings import (
    DELETION_NOT_DONE,
    LEADERLESS,
    REASSIGNING,
    TARGET_NOT_REACHED,
    Finding,
    Findings,
    Item,
    RunInputs,
    tp_name,
)
from chaos.checkers.judge import checker
from chaos.checkers.verdict import op_evidence
from chaos.history import Op, OpPair, pairs
from probes.znode_types import TopicPartition

__all__ = [
    "NO_FINAL",
    "blocked_deletion",
    "controller_elected",
    "deletions_completed",
    "partitions_have_leaders",
    "reassign_targets",
    "reassignments_completed",
    "replica_brokers",
    "znode_evidence",
]

NO_FINAL = "no final state (the cluster never healed)"
#: Ops after which a topic's final assignment may legitimately differ from a reassignment target.
_ASSIGNMENT_CHANGERS = ("reassign", "delete_topic", "create_topic", "create_topic_admin", "add_partitions")


def znode_evidence(path: str, note: str, **values: Any) -> dict[str, Any]:
    return {"kind": "znode", "path": path, **values, "note": note}


@checker("liveness")
def controller_elected(run: RunInputs) -> Finding:
    """After heal, ``/controller`` names a live broker and ``/controller_epoch`` exists."""
    f = run.final_state
    if f is None:
        return Finding(unknown=NO_FINAL)
    found = Findings()
    if f.controller is None or f.controller not in f.live_brokers or f.controller_epoch is None:
        found.violation(
            Item("controller", "/controller"),
            f"controller {f.controller}, epoch {f.controller_epoch}, live brokers {sorted(f.live_brokers)}",
            znode_evidence("/controller", "no live controller after heal", broker=f.controller),
        )
    return found.done(f"broker {f.controller} is controller with epoch {f.controller_epoch}")


@checker("liveness")
def partitions_have_leaders(run: RunInputs) -> Finding:
    """Every partition with a live replica in its ISR has a live leader; every partition with a
    live replica has a state znode (topics queued for deletion excepted). Only an ISR member that
    is also a replica counts: no 2.5 election strategy chooses anything else."""
    f = run.final_state
    if f is None:
        return Finding(unknown=NO_FINAL)
    found = Findings()
    for topic, t in sorted(f.topics.items()):
        if topic in f.delete_topics:
            continue
        for p, replicas in sorted(t.replicas.items()):
            tp = TopicPartition(topic, p)
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            state = f.partition_states.get(tp)
            if state is None:
                if live := sorted(set(replicas) & f.live_brokers):
                    found.violation(
                        Item("partition without state", tp_name(tp)),
                        f"{topic}-{p} has live replicas {live} but no state",
                        znode_evidence(path, "absent", replicas=list(replicas)),
                    )
                continue
            electable = set(state.isr) & set(replicas) & f.live_brokers
            if electable and state.leader not in f.live_brokers:
                found.violation(
                    Item(LEADERLESS, tp_name(tp)),
                    f"{topic}-{p} leader {state.leader} with live ISR members {sorted(electable)}",
                    znode_evidence(path, "no live leader", leader=state.leader, isr=list(state.isr)),
                )
    return found.done(f"{len(f.partition_states)} partition state(s) led")


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


@checker("liveness")
def reassignments_completed(run: RunInputs) -> Finding:
    """No partition is still being reassigned, and every acknowledged reassignment reached its
    target (unless a later op on the topic superseded it, it targets a broker that never
    registered, or its topic is queued for deletion: ``maybeTriggerPartitionReassignment``
    skips those, UNKNOWN_TOPIC_OR_PARTITION)."""
    f = run.final_state
    if f is None:
        return Finding(unknown=NO_FINAL)
    registered = run.registered_brokers
    found = Findings()
    for topic, t in sorted(f.topics.items()):
        for p in sorted(set(t.adding) | set(t.removing)):
            if not t.being_reassigned(p) or not set(t.adding.get(p, ())) <= registered:
                continue
            item = Item(REASSIGNING, f"{topic}-{p}")
            if down := _reassignment_needs_down_broker(f, topic, p):
                found.gap(item, f"{topic}-{p} still reassigning: {down}")
                continue
            found.violation(
                item,
                f"{topic}-{p} still reassigning (adding {list(t.adding.get(p, ()))}, "
                f"removing {list(t.removing.get(p, ()))})",
                znode_evidence(
                    f"/brokers/topics/{topic}", "reassignment pending", replicas=list(t.replicas[p])
                ),
            )
    all_pairs = pairs(run.history)
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
            final = f.topics.get(tp.topic)
            if tp.topic in f.delete_topics or final is None or tp.partition not in final.replicas:
                continue
            if final.replicas[tp.partition] != target:
                found.violation(
                    Item(TARGET_NOT_REACHED, tp_name(tp)),
                    f"{tp.topic}-{tp.partition} ends on {list(final.replicas[tp.partition])}, "
                    f"not target {list(target)}",
                    op_evidence(op.invoke, f"target of {tp.topic}-{tp.partition} not reached"),
                )
    return found.done(f"{len(acked)} acknowledged reassignment(s) complete")


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


def replica_brokers(f: FinalState, topic: str) -> set[int]:
    t = f.topics.get(topic)
    return set() if t is None else {r for rs in t.replicas.values() for r in rs}


def blocked_deletion(f: FinalState, topic: str, registered: Iterable[int]) -> str | None:
    """Why Kafka cannot finish deleting ``topic`` (a replica on a never-registered broker)."""
    never = replica_brokers(f, topic) - set(registered)
    return f"replicas on never-registered brokers {sorted(never)}" if never else None


@checker("liveness")
def deletions_completed(run: RunInputs) -> Finding:
    """Every acknowledged deletion removed its topic, unless the name was created again later,
    or a replica is on a broker that never registered (then Kafka waits for it)."""
    f = run.final_state
    if f is None:
        return Finding(unknown=NO_FINAL)
    registered = run.registered_brokers
    all_pairs = pairs(run.history)
    found = Findings()
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
        if any(_overlaps_or_follows(c, op) for c in creates) or blocked_deletion(f, topic, registered):
            continue
        if down := replica_brokers(f, topic) - f.live_brokers:
            found.gap(
                Item(DELETION_NOT_DONE, topic),
                f"{topic}: replicas on brokers {sorted(down)} not live after heal",
            )
            continue
        found.violation(
            Item(DELETION_NOT_DONE, topic),
            f"topic {topic!r} still exists after its deletion was acknowledged",
            op_evidence(op.invoke, "deletion acknowledged; topic still present"),
        )
    return found.done(f"{len(acked)} acknowledged deletion(s) complete")
