"""Shared steps and observations of the checks (conformance ring; black-box only).

Absence needs evidence: :func:`settle` is the barrier a check passes before asserting that
something did *not* happen (a controller processes its events in order, so once a topic written
after the trigger is created everywhere, the trigger has been handled). :func:`story` and
:func:`pinned` state and compare the exact (leader, leader_epoch, ISR, controller_epoch, zkVersion)
of every step and say what was wrong. :func:`kafka_shape_problems` checks invalid-transition
ERROR lines against Kafka's exact shape (spec §3.5).

Waiting: :func:`wait_state` polls a partition state znode until a predicate holds. Histories:
:func:`writes` flattens the chroot's transaction log into successful (record, op) pairs, so a
check can ask for the exact sequence of states a znode went through (:func:`state_history`) or
whether a write was fenced (:func:`fenced`). Requests: :func:`journal` skips the check when the
cluster has no recording proxy.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import pytest

from cluster import admin
from cluster.cluster import Cluster, wait_for
from probes.request_proxy import ControllerRequest, RequestJournal
from probes.state_change_log import LogEntry, invalid_transitions
from probes.txnrecords import TxnOp, TxnRecord

__all__ = [
    "VALID_PARTITION_PREVIOUS",
    "VALID_REPLICA_PREVIOUS",
    "State",
    "Step",
    "assert_invalid_transitions_in_kafka_shape",
    "create_topic",
    "fenced",
    "fmt",
    "journal",
    "kafka_shape_problems",
    "pinned",
    "requests_for",
    "settle",
    "state_history",
    "story",
    "wait_cluster_known",
    "wait_delivered",
    "wait_online",
    "wait_state",
    "wait_told_gone",
    "writes",
]

State = dict[str, Any]
CREATES = ("create", "create2")


def fmt(records: Sequence[TxnRecord], last: int = 120) -> str:
    return "\n".join(r.describe() for r in records[-last:])


def writes(records: Iterable[TxnRecord]) -> list[tuple[TxnRecord, TxnOp]]:
    """Every successful write op, multis flattened (check ops dropped), in zxid order."""
    out: list[tuple[TxnRecord, TxnOp]] = []
    for r in records:
        if r.failed:
            continue
        if r.op == "multi":
            out += [(r, o) for o in r.ops if o.op != "check"]
        elif r.op in (*CREATES, "setData", "delete"):
            out.append((r, r.txn))
    return out


def fenced(record: TxnRecord, epoch_version: int | None = None) -> bool:
    """A multi whose first op checks ``/controller_epoch`` (at ``epoch_version`` if given).

    ZooKeeper logs a check as ``CheckVersionTxn(path, checked version + 1)``; the transaction-log
    probe reports the checked version itself (``TxnOp.version``), which is what is compared here.
    """
    if record.op != "multi" or not record.ops or record.ops[0].op != "check":
        return False
    first = record.ops[0]
    return first.path == "/controller_epoch" and (epoch_version is None or first.version == epoch_version)


def state_history(cluster: Cluster, topic: str, partition: int) -> list[tuple[State, TxnRecord]]:
    """Every state a partition's state znode was written with, in order."""
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    return [
        (json.loads(op.data or b"{}"), r)
        for r, op in writes(cluster.history())
        if op.path == path and op.op in (*CREATES, "setData")
    ]


def wait_state(
    cluster: Cluster,
    topic: str,
    partition: int,
    pred: Callable[[State], bool],
    what: str,
    *,
    deadline_s: float = 20.0,
) -> State:
    def ok() -> State | None:
        st = cluster.partition_state(topic, partition)
        return st if st is not None and pred(st) else None

    return wait_for(
        ok,
        cluster.deadline(deadline_s),
        lambda: (
            f"{topic}-{partition} {what}; state={cluster.partition_state(topic, partition)}; "
            f"{cluster.summary()}"
        ),
    )


def wait_online(
    cluster: Cluster, topic: str, partitions: Iterable[int], deadline_s: float = 20.0
) -> dict[int, State]:
    return {
        p: wait_state(
            cluster, topic, p, lambda s: s["leader"] >= 0, "to have a leader", deadline_s=deadline_s
        )
        for p in partitions
    }


def create_topic(
    cluster: Cluster, topic: str, assignment: dict[int, list[int]], **kw: Any
) -> dict[int, State]:
    """Admin-write a topic (Kafka's ``--zookeeper`` way) and wait until it is online everywhere.

    "Everywhere": every state znode exists with a leader and, with a recording proxy, every live
    broker has answered an UpdateMetadata carrying each partition's current leader epoch — so a
    ``journal().mark()`` taken afterwards sees only requests caused by what the check does next.
    """
    admin.create_topic_zk(cluster, topic, assignment, **kw)
    states = wait_online(cluster, topic, assignment)
    wait_delivered(cluster, topic, states)
    return states


def wait_delivered(
    cluster: Cluster,
    topic: str,
    states: dict[int, State],
    deadline_s: float = 15.0,
    *,
    among: Iterable[int] | None = None,
) -> None:
    """Every registered broker (or each of ``among``) has answered an UpdateMetadata with
    ``states``' leader epochs."""
    if cluster.journal is None:
        return
    jr = cluster.journal
    wanted = {(topic, p, s["leader_epoch"]) for p, s in states.items()}
    only = None if among is None else set(among)

    def delivered() -> bool:
        live = [
            b
            for b in cluster.broker_ids
            if cluster.zk.exists(f"/brokers/ids/{b}") and (only is None or b in only)
        ]
        for dest in live:
            got = {
                (e.topic, e.partition, e.leader_epoch)
                for r in jr.requests(api="UpdateMetadata", dest=dest)
                if r.error_code is not None
                for e in r.partitions
            }
            if not wanted <= got:
                return False
        return True

    wait_for(
        delivered,
        cluster.deadline(deadline_s),
        lambda: f"UpdateMetadata for {sorted(wanted)} answered by every live broker:\n{jr.dump()}",
    )


def wait_cluster_known(cluster: Cluster, deadline_s: float = 20.0) -> int:
    """The controller is elected and every registered broker has answered an UpdateMetadata of
    this controller epoch listing all registered brokers (the controller knows them all and has
    armed its per-broker watches). Returns the controller id."""
    cid = cluster.wait_controller(deadline_s)
    if cluster.journal is None:
        return cid
    jr = cluster.journal

    def known() -> bool:
        epoch = (cluster.controller_epoch() or (0, 0))[0]
        live = tuple(b for b in cluster.broker_ids if cluster.zk.exists(f"/brokers/ids/{b}"))
        return all(
            any(
                r.controller_epoch == epoch and r.error_code is not None and r.live_brokers == live
                for r in jr.requests(api="UpdateMetadata", dest=dest)
            )
            for dest in live
        )

    wait_for(known, cluster.deadline(deadline_s), lambda: f"cluster metadata settled:\n{jr.dump()}")
    return cid


def journal(cluster: Cluster) -> RequestJournal:
    if cluster.journal is None:
        pytest.skip("this check needs the request-recording proxy (record_requests=False)")
    return cluster.journal


def requests_for(
    cluster: Cluster, api: str, *, dest: int | None = None, topic: str | None = None, since: int = 0
) -> list[ControllerRequest]:
    items = journal(cluster).requests(api=api, dest=dest, since=since)
    return [r for r in items if topic is None or any(p.topic == topic for p in r.partitions)]


# --- absence needs evidence ----------------------------------------------------------------------

_settle_ids = itertools.count()


def settle(cluster: Cluster, broker: int, *, among: Iterable[int] | None = None) -> str:
    """Barrier: every controller event triggered before this call has been processed.

    Kafka's controller handles its events one at a time in arrival order (one event thread), and
    ZooKeeper delivers a session's watch notifications in zxid order. A topic znode written *now*
    is therefore handled after every change already visible in ZooKeeper; once it is created and
    every live broker has answered its UpdateMetadata, whatever the earlier events did (writes,
    requests queued before it to the same broker) has happened. Creates ``settle-<n>`` with one
    replica on the live ``broker`` and returns its name; ``among``: only these brokers must have
    answered (a paused broker answers nothing).
    """
    name = f"settle-{next(_settle_ids)}"
    admin.create_topic_zk(cluster, name, {0: [broker]})
    wait_delivered(cluster, name, wait_online(cluster, name, [0]), among=among)
    return name


def wait_told_gone(cluster: Cluster, gone: int, since: int, deadline_s: float = 20.0) -> None:
    """``gone``'s znode is gone and the controller has told every live broker (an UpdateMetadata
    recorded after journal mark ``since`` whose live brokers exclude ``gone``): its failure
    handling has started."""
    cluster.wait_unregistered(gone, deadline_s)
    if cluster.journal is None:
        return
    jr = cluster.journal

    def told() -> bool:
        live = [b for b in cluster.broker_ids if cluster.zk.exists(f"/brokers/ids/{b}")]
        return all(
            any(
                gone not in r.live_brokers and r.error_code is not None
                for r in jr.requests(api="UpdateMetadata", dest=d, since=since)
            )
            for d in live
        )

    wait_for(
        told,
        cluster.deadline(deadline_s),
        lambda: f"every live broker told that {gone} is gone:\n{jr.dump(since)}",
    )


# --- stories: exact values at every step ---------------------------------------------------------


class Step(NamedTuple):
    """One pinned partition state: (leader, leader_epoch, ISR, controller_epoch, zkVersion)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int | None = None

    def __str__(self) -> str:
        zk = "" if self.zk_version is None else f" zkVersion={self.zk_version}"
        return (
            f"leader={self.leader} leader_epoch={self.leader_epoch} isr={list(self.isr)}"
            f" controller_epoch={self.controller_epoch}{zk}"
        )


def story(
    cluster: Cluster, topic: str, partition: int, *, without_leader_isr_writes: bool = False
) -> list[Step]:
    """Every state the partition's state znode was written with, in zxid order, with the zkVersion
    each write produced (creation 0, then +1 per setData).

    ``without_leader_isr_writes`` leaves out the partition leader's own ISR updates (a plain,
    unfenced setData keeping leader, leader epoch and controller epoch: ``Partition.maybeExpandIsr``
    / ``maybeShrinkIsr`` through ``updateLeaderAndIsr``), still counting their versions. A follower
    told to stop fetching (StopReplica) may have a fetch in flight that the leader answers by taking
    it back into the ISR, in Kafka as here; checks of the controller's own writes use this."""
    out: list[Step] = []
    version = -1
    for st, record in state_history(cluster, topic, partition):
        version += 1
        step = Step(st["leader"], st["leader_epoch"], tuple(st["isr"]), st["controller_epoch"], version)
        if without_leader_isr_writes and out and not fenced(record) and _same_leadership(out[-1], step):
            continue
        out.append(step)
    return out


def _same_leadership(before: Step, after: Step) -> bool:
    return (before.leader, before.leader_epoch, before.controller_epoch) == (
        after.leader,
        after.leader_epoch,
        after.controller_epoch,
    ) and after.leader in after.isr


def _epoch_diagnosis(seen: Sequence[Step], want: Sequence[Step]) -> str:
    got_epochs = [s.leader_epoch for s in seen]
    want_epochs = [s.leader_epoch for s in want]
    if got_epochs and len(set(got_epochs)) == 1 and len(set(want_epochs)) > 1:
        return f"the leader epoch was never incremented: saw {got_epochs[0]} at every step"
    if got_epochs and want_epochs and max(got_epochs) > max(want_epochs):
        return (
            f"the leader epoch went past {max(want_epochs)} (to {max(got_epochs)}): an extra"
            f" leader-epoch bump Kafka does not make"
        )
    if len(seen) < len(want):
        return f"{len(want) - len(seen)} expected state write(s) missing"
    if len(seen) > len(want):
        return f"{len(seen) - len(want)} state write(s) more than Kafka makes"
    first = next(i for i, (a, b) in enumerate(zip(seen, want, strict=True)) if a != b)
    return f"step {first} differs: wrote ({seen[first]}), Kafka writes ({want[first]})"


def pinned(
    cluster: Cluster,
    topic: str,
    partition: int,
    want: Sequence[Step],
    what: str,
    *,
    without_leader_isr_writes: bool = False,
) -> None:
    """Assert the partition's whole written history equals ``want`` (every step, exact; the
    leader's own ISR writes left out if asked, see ``story``)."""
    seen = story(cluster, topic, partition, without_leader_isr_writes=without_leader_isr_writes)
    if seen == list(want):
        return
    lines = "\n".join(f"  {i}: {s}" for i, s in enumerate(seen)) or "  (none)"
    expect = "\n".join(f"  {i}: {s}" for i, s in enumerate(want))
    raise AssertionError(
        f"{topic}-{partition} {what}: {_epoch_diagnosis(seen, want)}\n"
        f"written:\n{lines}\nKafka 2.5.1:\n{expect}"
    )


# --- invalid-transition lines in Kafka's exact shape (spec §3.5) ---------------------------------

#: validPreviousStates in declaration order (``mkString(",")`` of Kafka's ≤4-element Sets).
VALID_REPLICA_PREVIOUS: dict[str, tuple[str, ...]] = {
    "NewReplica": ("NonExistentReplica",),
    "OnlineReplica": ("NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"),
    "OfflineReplica": ("NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"),
    "ReplicaDeletionStarted": ("OfflineReplica",),
    "ReplicaDeletionSuccessful": ("ReplicaDeletionStarted",),
    "ReplicaDeletionIneligible": ("OfflineReplica", "ReplicaDeletionStarted"),
    "NonExistentReplica": ("ReplicaDeletionSuccessful",),
}
VALID_PARTITION_PREVIOUS: dict[str, tuple[str, ...]] = {
    "NewPartition": ("NonExistentPartition",),
    "OnlinePartition": ("NewPartition", "OnlinePartition", "OfflinePartition"),
    "OfflinePartition": ("NewPartition", "OnlinePartition", "OfflinePartition"),
    "NonExistentPartition": ("OfflinePartition",),
}


def kafka_shape_problems(entries: Sequence[LogEntry]) -> list[str]:
    """Every invalid-transition line of ``entries`` that is not in Kafka 2.5.1's exact shape.

    A header naming a transition that is *valid* (A in validPreviousStates(B)) is another failure
    with the same header (an election failure, a ZooKeeper error) and is not judged here.
    """
    problems: list[str] = []
    for t in invalid_transitions(list(entries)):
        e = t.entry
        table = VALID_REPLICA_PREVIOUS if t.kind == "replica" else VALID_PARTITION_PREVIOUS
        valid = table.get(t.to_state)
        if valid is None:
            problems.append(f"unknown target state {t.to_state!r}: {e.raw}")
            continue
        if t.from_state in valid:
            continue
        tp = f"{t.topic}-{t.partition}"
        cid, cepoch = e.controller_id, e.controller_epoch
        if t.kind == "replica":
            header = (
                f"Controller {cid} epoch {cepoch} initiated state change of replica {t.replica} for partition"
                f" {tp} from {t.from_state} to {t.to_state} failed"
            )
            cause = (
                f"java.lang.IllegalStateException: Replica [Topic={t.topic},Partition={t.partition},"
                f"Replica={t.replica}] should be in the {','.join(valid)} states before moving to"
                f" {t.to_state} state. Instead it is in {t.from_state} state"
            )
        else:
            header = (
                f"Controller {cid} epoch {cepoch} failed to change state for partition {tp} from"
                f" {t.from_state} to {t.to_state}"
            )
            cause = (
                f"java.lang.IllegalStateException: Partition {tp} should be in one of {','.join(valid)}"
                f" states before moving to {t.to_state} state. Instead it is in {t.from_state} state"
            )
        wrong = []
        if e.level != "ERROR":
            wrong.append(f"level {e.level}, Kafka logs ERROR")
        if cid is None:
            wrong.append("no [Controller id=<id> epoch=<e>] prefix")
        if e.message != header:
            wrong.append(f"message {e.message!r}, Kafka: {header!r}")
        if t.cause != cause:
            wrong.append(f"cause {t.cause!r}, Kafka: {cause!r}")
        if wrong:
            problems.append(f"line {e.line_no}: " + "; ".join(wrong))
    return problems


def assert_invalid_transitions_in_kafka_shape(cluster: Cluster, where: str) -> int:
    """RSM-2: every invalid-transition line in every node's state-change log has Kafka's exact
    shape; returns how many invalid-transition lines there were."""
    problems: list[str] = []
    count = 0
    for bid in cluster.broker_ids:
        entries = cluster.state_changes(bid)
        count += sum(
            1
            for t in invalid_transitions(entries)
            if t.from_state
            not in (VALID_REPLICA_PREVIOUS if t.kind == "replica" else VALID_PARTITION_PREVIOUS).get(
                t.to_state, ()
            )
        )
        problems += [f"node {bid} {p}" for p in kafka_shape_problems(entries)]
    assert not problems, f"RSM-2 ({where}): invalid-transition lines not in Kafka's shape:\n" + "\n".join(
        problems
    )
    return count
