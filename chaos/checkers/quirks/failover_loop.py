"""Recogniser of Kafka 2.5.1's controller failover loop on a reassignment without a partition state
(decisions ring, pure).

A controller's failover resumes every reassignment its topic znodes show in progress
(``maybeResumeReassignments``, with no error handling); for a partition that has no state znode,
``updateLeaderEpoch`` throws, the exception leaves ``onControllerFailover``, and ``elect`` answers
any exception by resigning and deleting ``/controller``. Every broker then races to be elected, and
the winner's failover throws on the same partition. Nothing in the failover changes what makes it
throw when the partition's topic is queued for deletion (the partition state machine leaves such a
topic's new partitions alone) or none of the partition's replicas is live (it cannot be brought
online), so the cluster has no working controller for good and every liveness property fails.

The run shows it as: its elections end in a series (at least :data:`MIN_LOOP` long, the last one
possibly still in its failover when the state was taken) in which each elected controller deletes
``/controller`` itself, fenced by its own epoch version, before the next election; and in the final
state a partition whose topic znode has adding or removing replicas has no state znode, with its
topic queued for deletion or none of its replicas live. Then every item of the liveness checkers
is explained (:attr:`Recognition.every_item`); the safety checkers still judge the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checkers.final_state import FinalState
from chaos.checkers.findings import RunInputs
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import ControllerWrite, Election, Timeline
from probes.znode_types import TopicPartition

__all__ = ["MIN_LOOP", "Loop", "failover_loop", "looping"]

#: Consecutive self-resigning elections that make a loop (Kafka's loop never ends on its own).
MIN_LOOP = 3


@dataclass(frozen=True)
class Loop:
    """``resigned``: the trailing elections each followed by its own controller's deletion of
    ``/controller``; ``partitions``: the stateless partitions mid-reassignment that make each
    failover throw."""

    resigned: int
    partitions: tuple[TopicPartition, ...]


def _resigns(w: ControllerWrite, epoch_zk_version: int) -> bool:
    """A fenced multi of the controller elected at ``epoch_zk_version`` deleting ``/controller``."""
    return (
        w.role == "fenced"
        and w.checked_epoch_zk_version == epoch_zk_version
        and any(op.op == "delete" and op.path == "/controller" for op in w.ops)
    )


def trailing_self_resignations(timeline: Timeline) -> int:
    """How many of the last elections were each ended by their own controller's ``/controller``
    deletion before the next election (the very last election may still be in its failover)."""
    resigned_at: set[int] = set()  # epoch zk versions whose controller deleted /controller itself
    for w in timeline.controller_writes:
        if w.checked_epoch_zk_version is not None and _resigns(w, w.checked_epoch_zk_version):
            resigned_at.add(w.checked_epoch_zk_version)
    elections: list[Election] = timeline.elections
    count = 0
    for i, e in enumerate(reversed(elections)):
        if e.epoch_zk_version in resigned_at:
            count += 1
        elif i == 0:
            continue  # the last controller may be mid-failover when the state was taken
        else:
            break
    return count


def stuck_partitions(final: FinalState) -> tuple[TopicPartition, ...]:
    """Partitions a failover resumes and cannot: mid-reassignment in the topic znode, no state
    znode, and kept without one (topic queued for deletion, or no replica live)."""
    found = []
    for topic, t in sorted(final.topics.items()):
        for p, replicas in sorted(t.replicas.items()):
            tp = TopicPartition(topic, p)
            if not t.being_reassigned(p) or tp in final.partition_states:
                continue
            if topic in final.delete_topics or not set(replicas) & final.live_brokers:
                found.append(tp)
    return tuple(found)


def looping(run: RunInputs) -> Loop | None:
    if run.timeline is None or run.final_state is None:
        return None
    resigned = trailing_self_resignations(run.timeline)
    if resigned < MIN_LOOP:
        return None
    partitions = stuck_partitions(run.final_state)
    return Loop(resigned, partitions) if partitions else None


def failover_loop(run: RunInputs) -> Recognition:
    """Every item of the checkers it applies to, when the run ends in the loop (module text)."""
    return Recognition(every_item=looping(run) is not None)
