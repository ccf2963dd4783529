"""Liveness checkers of what a healed cluster leaves behind: admin znodes, and every broker's
view of the metadata (decisions ring, pure).

Like :mod:`chaos.checkers.liveness` they judge the final state naively (never-registered brokers
excuse what waits for them; a broker down after heal makes an item a gap); Kafka 2.5.1's quirks
are subtracted afterwards by :mod:`chaos.checkers.judge`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from chaos.checkers.final_state import FinalState, MetadataPartition
from chaos.checkers.findings import (
    DELETION_REQUEST_LEFT,
    REASSIGN_ENTRY_LEFT,
    REASSIGN_ENTRY_UNREACHABLE,
    Finding,
    Findings,
    Item,
    RunInputs,
    partition_view_item,
    shown_item,
    tp_name,
)
from chaos.checkers.judge import checker
from chaos.checkers.liveness import NO_FINAL, blocked_deletion, replica_brokers, znode_evidence
from probes.znode_types import TopicPartition

__all__ = ["admin_znodes_cleaned", "metadata_agrees_with_zookeeper"]

REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED = "/admin/preferred_replica_election"


@checker("liveness")
def admin_znodes_cleaned(run: RunInputs) -> Finding:
    """``/admin/reassign_partitions``, ``/admin/preferred_replica_election`` and the children of
    ``/admin/delete_topics`` are gone, except entries and requests that wait for never-registered
    brokers; what waits for a broker down after heal is not judged."""
    f = run.final_state
    if f is None:
        return Finding(unknown=NO_FINAL)
    registered = run.registered_brokers
    found = Findings()
    if f.reassign_partitions is not None and not f.reassign_partitions:
        found.violation(
            Item("admin znode", REASSIGN_PARTITIONS),
            f"{REASSIGN_PARTITIONS} left with []",
            znode_evidence(REASSIGN_PARTITIONS, "not cleaned", partitions=[]),
        )
    for tp, target in sorted((f.reassign_partitions or {}).items()):
        if not set(target) <= registered:
            continue
        if not set(target) <= f.live_brokers:
            found.gap(
                Item(REASSIGN_ENTRY_UNREACHABLE, tp_name(tp)),
                f"{REASSIGN_PARTITIONS}: {tp_name(tp)} targets a broker not live after heal",
            )
            continue
        found.violation(
            Item(REASSIGN_ENTRY_LEFT, tp_name(tp)),
            f"{REASSIGN_PARTITIONS} left with {tp_name(tp)}",
            znode_evidence(
                REASSIGN_PARTITIONS, "not cleaned", partitions=[tp_name(tp)], replicas=list(target)
            ),
        )
    if f.preferred_replica_election is not None:
        left = [tp_name(tp) for tp in sorted(f.preferred_replica_election)]
        found.violation(
            Item("admin znode", PREFERRED),
            f"{PREFERRED} left with {left}",
            znode_evidence(PREFERRED, "not cleaned", partitions=left),
        )
    for topic in sorted(f.delete_topics):
        if blocked_deletion(f, topic, registered) is not None:
            continue
        item = Item(DELETION_REQUEST_LEFT, topic)
        if down := replica_brokers(f, topic) - f.live_brokers:  # halted for offline replicas
            found.gap(
                item, f"/admin/delete_topics/{topic}: replicas on brokers {sorted(down)} not live after heal"
            )
            continue
        found.violation(
            item,
            f"/admin/delete_topics/{topic} left",
            znode_evidence(f"/admin/delete_topics/{topic}", "not cleaned"),
        )
    return found.done("no admin znode left")


@checker("liveness")
def metadata_agrees_with_zookeeper(run: RunInputs) -> Finding:
    """Every live broker's Metadata view shows ZooKeeper's topics (those queued for deletion
    aside), leaders, ISRs and replicas."""
    f = run.final_state
    if f is None:
        return Finding(unknown=NO_FINAL)
    expected = _expected_metadata(f)
    found = Findings()
    for broker in sorted(f.live_brokers):
        view = f.metadata.get(broker)
        if view is None:
            found.gap(Item("broker view", f"broker {broker}"), f"no metadata view of live broker {broker}")
            continue
        for item, problem in _view_problems(broker, expected, view, f.delete_topics):
            text = f"broker {broker}: {problem}"
            found.violation(item, text, {"kind": "metadata", "broker": broker, "note": problem})
    return found.done(f"{len(f.live_brokers)} broker view(s) agree with ZooKeeper")


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
    broker: int,
    expected: Mapping[str, Mapping[int, MetadataPartition]],
    view: Mapping[str, Mapping[int, MetadataPartition]],
    deleting: frozenset[str],
) -> Iterator[tuple[Item, str]]:
    for t in sorted(set(view) - set(expected) - deleting):
        if view[t]:
            yield shown_item(broker, t), f"shows topic {t!r} that ZooKeeper does not have"
    for topic, parts in sorted(expected.items()):
        shown = view.get(topic, {})
        for p, want in sorted(parts.items()):
            item = partition_view_item(broker, TopicPartition(topic, p))
            got = shown.get(p)
            if got is None:
                yield item, f"does not show {topic}-{p}"
            elif (got.leader, tuple(got.replicas), set(got.isr)) != (
                want.leader,
                tuple(want.replicas),
                set(want.isr),
            ):
                yield (
                    item,
                    f"{topic}-{p} leader {got.leader} replicas {list(got.replicas)} isr {list(got.isr)}; "
                    f"ZooKeeper leader {want.leader} replicas {list(want.replicas)} isr {list(want.isr)}",
                )
