"""What the admin-API ops imply, and the checkers that hold the cluster to it (decisions ring, pure).

Spec §13: an API reassignment is recorded only in the topic znode — ``/admin/reassign_partitions``
is never created by a controller (§13.1.5) — and its completion is judged, like any other, from
the topic znode and the partition states (:func:`chaos.checkers.liveness.reassignments_completed`);
a cancellation reverts the partition to its original replicas (§13.1.6); ListPartitionReassignments
answers from the controller's memory, which equals the topic znode after every write (§13.2); an
unclean ElectLeaders may elect a replica outside the ISR (§13.3.4), as may a controller whose topic
config enables unclean election (§6.11).

Times: an op's completion carries ``started_ms``/``ended_ms`` (wall clock); a transaction record
carries ZooKeeper's ``time_ms`` on the same host's clock. :data:`SLACK_MS` widens every window
(clock reads and millisecond truncation on both sides).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from chaos.checkers.cancellation import acked_partitions, cancelled_reassignment
from chaos.checkers.findings import Finding, Findings, Item, RunInputs, tp_name
from chaos.checkers.judge import checker
from chaos.checkers.liveness import NO_FINAL, assignment_changed_after, znode_evidence
from chaos.checkers.quirks import cancellation as cancellation_quirk
from chaos.checkers.timeline import ReassignmentZnode, StateWritten, Timeline, TopicDeleted, TopicWritten
from chaos.checkers.verdict import op_evidence, record_evidence
from chaos.history import OpPair, pairs
from probes.znode_types import TopicPartition, TopicZNode

__all__ = [
    "CANCEL_NOT_REVERTED",
    "LISTING_DISAGREES",
    "SLACK_MS",
    "cancellations_reverted",
    "listings_agree_with_topic_znode",
    "reassign_znode_created_by_admin",
    "unclean_allowance",
]

SLACK_MS = 250
NO_LOG = "no transaction log of the run"
#: An acknowledged cancellation whose partition did not end on its original replicas (``t-p``).
CANCEL_NOT_REVERTED = cancellation_quirk.CANCEL_NOT_REVERTED
#: A listed reassignment no state of the topic znode during the request shows (``t-p``).
LISTING_DISAGREES = "listing disagrees with the topic znode"
UNCLEAN_CONFIG = "unclean.leader.election.enable"


def _window(q: OpPair) -> tuple[float, float]:
    """Wall-clock bounds (ms) within which the op's effect can have applied: from its start to its
    answer for ``ok``, unbounded after for ``info`` (the controller may still act on it)."""
    value: Mapping[str, Any] = q.completion.value if q.completion is not None else {}
    lo = value.get("started_ms")
    hi = value.get("ended_ms") if q.outcome == "ok" else None
    return (
        -math.inf if not isinstance(lo, int) else lo - SLACK_MS,
        math.inf if not isinstance(hi, int) else hi + SLACK_MS,
    )


def _named(q: OpPair) -> set[TopicPartition]:
    return {
        TopicPartition(str(p["topic"]), int(p["partition"]))
        for p in q.invoke.value.get("partitions") or ()
        if isinstance(p, Mapping) and isinstance(p.get("topic"), str)
    }


# ---- /admin/reassign_partitions: only an admin creates it ----------------------------------------


@checker("safety")
def reassign_znode_created_by_admin(run: RunInputs) -> Finding:
    """``/admin/reassign_partitions`` is created only by an admin — never by a controller's session,
    and never more often than the history's ``reassign`` ops may have created it: an API
    reassignment never creates it (spec §13.1.5, KAFKA-8345)."""
    if run.timeline is None:
        return Finding(unknown=NO_LOG)
    controllers = set(run.timeline.epoch_owner.values())
    asked = sum(1 for q in pairs(run.history) if q.invoke.f == "reassign" and q.outcome != "fail")
    created = [e for e in run.timeline.of_type(ReassignmentZnode) if e.change == "created"]
    found = Findings()
    for e in created:
        if e.session in controllers:
            found.violation(
                Item("reassign_partitions created", f"0x{e.zxid:x}"),
                f"/admin/reassign_partitions created at zxid 0x{e.zxid:x} by controller session "
                f"0x{e.session:x}",
                record_evidence(e.record, "a controller created the admin znode"),
            )
    if len(created) > asked:
        found.violation(
            Item("reassign_partitions created", f"{len(created)} times"),
            f"/admin/reassign_partitions created {len(created)} time(s), but only {asked} znode "
            "reassignment(s) may have created it",
            *(record_evidence(e.record, "creation") for e in created[asked:]),
        )
    return found.done(f"{len(created)} creation(s), {asked} znode reassignment(s) asked")


# ---- cancellations -------------------------------------------------------------------------------


@checker("liveness")
def cancellations_reverted(run: RunInputs) -> Finding:
    """An acknowledged cancellation leaves its partition on the replicas it had before the
    cancelled reassignment started, with no adding or removing replicas — unless a later op
    changed the topic's assignment (the latest request wins)."""
    f = run.final_state
    if f is None:
        return Finding(unknown=NO_FINAL)
    all_pairs = pairs(run.history)
    acked = [q for q in all_pairs if q.invoke.f == "cancel_reassignment" and q.outcome == "ok"]
    found = Findings()
    judged = 0
    for q in acked:
        for tp in acked_partitions(q):
            final = f.topics.get(tp.topic)
            if (
                final is None
                or tp.topic in f.delete_topics
                or assignment_changed_after(all_pairs, q, tp.topic)
            ):
                continue
            judged += 1
            item = Item(CANCEL_NOT_REVERTED, tp_name(tp))
            if run.timeline is None:
                found.gap(item, f"{tp_name(tp)}: {NO_LOG}, so the original replicas are unknown")
                continue
            cancelled = cancelled_reassignment(run.timeline, tp, final.czxid)
            if cancelled is None:
                found.gap(item, f"{tp_name(tp)}: the topic znode never shows the cancelled reassignment")
                continue
            ends = final.replicas.get(tp.partition, ())
            if ends != cancelled.original or final.being_reassigned(tp.partition):
                found.violation(
                    item,
                    f"{tp_name(tp)} ends on {list(ends)} (adding {list(final.adding.get(tp.partition, ()))}, "
                    f"removing {list(final.removing.get(tp.partition, ()))}), not its original "
                    f"replicas {list(cancelled.original)}",
                    op_evidence(q.invoke, "cancellation acknowledged"),
                    record_evidence(cancelled.last.record, "last state of the cancelled reassignment"),
                    znode_evidence(f"/brokers/topics/{tp.topic}", "final assignment", replicas=list(ends)),
                )
    return found.done(
        f"{len(acked)} acknowledged cancellation(s); {judged} partition(s) judged (the others superseded, "
        "deleted or recreated since), all reverted"
    )


# ---- listings -------------------------------------------------------------------------------------


def _topic_states(timeline: Timeline) -> dict[str, list[tuple[int, TopicZNode | None]]]:
    """topic → (time_ms, znode; None: absent or malformed) of each write, in log order."""
    out: dict[str, list[tuple[int, TopicZNode | None]]] = {}
    for e in timeline.events:
        if isinstance(e, TopicWritten):
            out.setdefault(e.topic, []).append((e.record.time_ms, e.znode))
        elif isinstance(e, TopicDeleted):
            out.setdefault(e.topic, []).append((e.record.time_ms, None))
    return out


def _candidates(
    states: list[tuple[int, TopicZNode | None]], lo: float, hi: float
) -> Iterator[TopicZNode | None]:
    """The znode states that held at some moment of [lo, hi]: the last one before lo, and every
    one written within."""
    before: TopicZNode | None = None
    for t, znode in states:
        if t < lo:
            before = znode
        elif t <= hi:
            yield znode
    yield before


def _listing_entries(
    q: OpPair,
) -> list[tuple[TopicPartition, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    value = q.completion.value if q.completion is not None else {}
    return [
        (
            TopicPartition(str(e["topic"]), int(e["partition"])),
            tuple(e["replicas"]),
            tuple(e["adding"]),
            tuple(e["removing"]),
        )
        for e in value.get("reassigning") or ()
    ]


@checker("safety")
def listings_agree_with_topic_znode(run: RunInputs) -> Finding:
    """Every reassignment a ListPartitionReassignments answer lists is one the topic znode held
    during the request — same replicas, adding and removing replicas, in order — and is a real
    reassignment (adding or removing non-empty), for a partition the request named."""
    if run.timeline is None:
        return Finding(unknown=NO_LOG)
    states = _topic_states(run.timeline)
    found = Findings()
    judged = 0
    for q in pairs(run.history):
        if q.invoke.f != "list_reassignments" or q.outcome != "ok":
            continue
        value = q.completion.value if q.completion is not None else {}
        if not isinstance(value.get("started_ms"), int) or not isinstance(value.get("ended_ms"), int):
            continue  # the answer cannot be placed against the log
        judged += 1
        named = None if q.invoke.value.get("partitions") is None else _named(q)
        lo, hi = value["started_ms"] - SLACK_MS, value["ended_ms"] + SLACK_MS
        for tp, replicas, adding, removing in _listing_entries(q):
            shown = (replicas, adding, removing)
            held = [
                (
                    z.partitions.get(tp.partition, ()),
                    z.adding_replicas.get(tp.partition, ()),
                    z.removing_replicas.get(tp.partition, ()),
                )
                for z in _candidates(states.get(tp.topic, []), lo, hi)
                if z is not None
            ]
            problem = None
            if named is not None and tp not in named:
                problem = "listed a partition the request did not name"
            elif not adding and not removing:
                problem = "listed with no adding and no removing replicas"
            elif shown not in held:
                problem = f"the topic znode held (replicas, adding, removing) {_plain(held)}"
            if problem:
                found.violation(
                    Item(LISTING_DISAGREES, f"{tp_name(tp)} at op {q.invoke.index}"),
                    f"{tp_name(tp)} listed as replicas {list(replicas)}, adding {list(adding)}, "
                    f"removing {list(removing)}: {problem}",
                    op_evidence(q.completion or q.invoke, "the listing"),
                )
    return found.done(f"{judged} listing(s) agree with the topic znode")


def _plain(held: Sequence[Sequence[Sequence[int]]]) -> list[list[list[int]]]:
    return [[list(part) for part in h] for h in held]


# ---- unclean leaders -----------------------------------------------------------------------------


def unclean_allowance(run: RunInputs) -> Callable[[StateWritten], str | None]:
    """Why a controller's state write may elect a leader from outside the previous ISR, or None:
    an unclean ElectLeaders naming the partition that may have applied then (``ok`` within its
    window, ``info`` from its start on), or ``unclean.leader.election.enable=true`` in force at any
    point since the partition's previous state write (the controller reads the config when it
    elects, §6.11): in the topic's config, or in the writing controller's dynamic broker config —
    its own ``/config/brokers/<id>`` when that sets the key, else ``/config/brokers/<default>``
    (DynamicBrokerConfig's order; a controller whose session registered no broker in the log is
    given the benefit of any broker's)."""
    asks: dict[TopicPartition, list[tuple[float, float, int]]] = {}
    for q in pairs(run.history):
        if (
            q.invoke.f == "elect_leaders"
            and q.invoke.value.get("election_type") == "UNCLEAN"
            and q.outcome != "fail"
        ):
            lo, hi = _window(q)
            for tp in _named(q):
                asks.setdefault(tp, []).append((lo, hi, q.invoke.index))
    timeline = run.timeline
    since: dict[int, int] = {}  # id of a state write → zxid of the partition's previous one
    last: dict[TopicPartition, int] = {}
    for w in timeline.state_writes if timeline is not None else ():
        tp = TopicPartition(w.topic, w.partition)
        if tp in last:
            since[id(w)] = last[tp]
        last[tp] = w.zxid

    def allowed(w: StateWritten) -> str | None:
        tp = TopicPartition(w.topic, w.partition)
        for lo, hi, index in asks.get(tp, ()):
            if lo <= w.record.time_ms <= hi:
                return f"unclean ElectLeaders op {index} asked for it"
        configs = timeline.topic_configs.get(w.topic, []) if timeline else []
        start = since.get(id(w), 0)
        if any(c is not None and c.get(UNCLEAN_CONFIG) == "true" for c in _in_force(configs, start, w.zxid)):
            return f"{UNCLEAN_CONFIG}=true in /config/topics/{w.topic}"
        if timeline is not None and timeline.broker_configs:
            writer = timeline.broker_sessions.get(w.record.session_id)
            layered = {int(e) for e in timeline.broker_configs if e.isdigit()}
            anyone = [*sorted(timeline.registered_brokers | layered), None]
            brokers: list[int | None] = [writer] if writer is not None else anyone
            for broker in brokers:
                if _dynamic_unclean(timeline.broker_configs, broker, start, w.zxid):
                    return f"{UNCLEAN_CONFIG}=true in broker {broker}'s dynamic config"
        return None

    return allowed


def _in_force(
    writes: list[tuple[int, dict[str, str] | None]], start: int, end: int
) -> list[dict[str, str] | None]:
    """The config in force at ``start`` (the last write at or before it) and every one written
    after it up to ``end``."""
    return [c for z, c in writes if z <= start][-1:] + [c for z, c in writes if start < z <= end]


def _dynamic_unclean(
    layers: dict[str, list[tuple[int, dict[str, str] | None]]], broker: int | None, start: int, end: int
) -> bool:
    """Whether ``broker``'s effective dynamic ``unclean.leader.election.enable`` (its own layer when
    it sets the key, else the cluster default's; None: the default's alone) was true at ``start``
    or after any layer's write up to ``end``."""
    own = layers.get(str(broker), []) if broker is not None else []
    default = layers.get("<default>", [])
    points = [start, *sorted({z for z, _ in own + default if start < z <= end})]

    def at(writes: list[tuple[int, dict[str, str] | None]], zxid: int) -> str | None:
        config = ([c for z, c in writes if z <= zxid][-1:] or [None])[0]
        return None if config is None else config.get(UNCLEAN_CONFIG)

    for point in points:
        value = at(own, point)
        value = at(default, point) if value is None else value
        if value is not None and value.strip().lower() == "true":
            return True
    return False
