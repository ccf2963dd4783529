"""Recogniser of a deposed partition leader's ISR write that lands on the state znode of a topic
created again under the same name (decisions ring, pure).

In Kafka 2.5.1 a partition leader writes its ISR changes to ZooKeeper itself, fenced by nothing
but the data version it cached (``Partition.shrinkIsr``/``expandIsr`` → ``ReplicationUtils.
updateLeaderAndIsr`` → ``conditionalUpdatePath``): not by the controller epoch, not by its broker
epoch. A broker that never heard that it lost the partition — it was cut off, or its session
expired, when the controller took its replica away, and a controller sends StopReplica to live
brokers only — still leads it in memory and goes on shrinking the ISR of its followers. Within one
incarnation of the state znode such a write fails (every controller write moves the version on);
but a topic deleted and created again starts its state znode at version 0, and when that equals
the version the old leader cached, its write lands: the new incarnation's state then names the old
leader, its old leader epoch and controller epoch, and an ISR of the old replicas.

Recognised from the transaction log alone: a setData of a partition state without the controller
epoch check, made by the session that registered the broker the data names as leader, whose
(leader, leader epoch, controller epoch) are those of a state that broker had in an earlier
incarnation of that znode, at the version the write expected. Such a write is what the safety
checkers report (an unfenced write that only a controller would make, a leader changed without an
epoch bump, an ISR outside the replicas); the final state is explained while it is still the one
that write left.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checkers.events import BrokerDeregistered, BrokerRegistered, StateWritten
from chaos.checkers.findings import FINAL_ISR_OUTSIDE_REPLICAS, Item, RunInputs, tp_name
from chaos.checkers.quirks.recognition import Recognition
from probes.znode_types import TopicPartition

__all__ = ["stale_leader_isr_write", "stale_leader_writes"]


@dataclass(frozen=True)
class StaleLeaderWrite:
    """One such write: the partition, the write and the incarnation of the state znode whose state
    it carried (1 the first the log shows)."""

    tp: TopicPartition
    write: StateWritten
    from_incarnation: int


def stale_leader_writes(run: RunInputs) -> list[StaleLeaderWrite]:
    """The writes of the module docstring, in log order."""
    if run.timeline is None:
        return []
    sessions: dict[int, int] = {}  # broker → the session of its current registration
    incarnation: dict[TopicPartition, int] = {}  # state znode → how many creations the log shows
    seen: dict[TopicPartition, list[tuple[int, int, tuple[int, int, int]]]] = {}
    found: list[StaleLeaderWrite] = []
    for e in run.timeline.events:
        if isinstance(e, BrokerRegistered):
            sessions[e.broker] = e.session
        elif isinstance(e, BrokerDeregistered):
            sessions.pop(e.broker, None)
        elif isinstance(e, StateWritten):
            tp = TopicPartition(e.topic, e.partition)
            if e.created:
                incarnation[tp] = incarnation.get(tp, 0) + 1
            now = incarnation.get(tp, 0)
            s = e.state
            if s is None:
                continue
            key = (s.leader, s.leader_epoch, s.controller_epoch)
            if (
                not e.created
                and not e.fenced
                and e.previous is not None
                and (e.previous.leader, e.previous.leader_epoch) != (s.leader, s.leader_epoch)
                and s.leader in s.isr
                and sessions.get(s.leader) == e.session
            ):
                earlier = [
                    inc
                    for inc, version, had in seen.get(tp, ())
                    if inc < now and had == key and version == e.zk_version - 1
                ]
                if earlier:
                    found.append(StaleLeaderWrite(tp, e, max(earlier)))
            seen.setdefault(tp, []).append((now, e.zk_version, key))
    return found


def stale_leader_isr_write(run: RunInputs) -> Recognition:
    """The items of such writes: the write itself under the safety checkers' names, and the final
    state's problems while that state is still the one the write left."""
    writes = stale_leader_writes(run)
    if not writes or run.timeline is None:
        return Recognition()
    last: dict[TopicPartition, StateWritten] = {}
    for w in run.timeline.state_writes:
        last[TopicPartition(w.topic, w.partition)] = w
    items: set[Item] = set()
    f = run.final_state
    for found in writes:
        w, name = found.write, tp_name(found.tp)
        items |= {
            Item("controller write", f"0x{w.zxid:x}"),
            Item("state write", f"{name} at 0x{w.zxid:x}"),
        }
        final = f.partition_states.get(found.tp) if f is not None else None
        if (
            last.get(found.tp) is w
            and w.state is not None
            and final is not None
            and (final.leader, final.leader_epoch, tuple(final.isr), final.version)
            == (w.state.leader, w.state.leader_epoch, w.state.isr, w.zk_version)
        ):
            items |= {Item(FINAL_ISR_OUTSIDE_REPLICAS, name), Item("final partition state", name)}
    return Recognition(frozenset(items))
