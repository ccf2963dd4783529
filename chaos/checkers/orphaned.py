"""Partitions Kafka 2.5.1 leaves with an ISR outside their replicas after completing a
reassignment whose leader election failed (decisions ring, pure).

``onPartitionReassignment`` (KafkaController.scala@2.5.1 L630-690) completes a reassignment once
``isReassignmentComplete`` read the target replicas in the ISR. Its steps do not depend on each
other's success: B3 ``moveReassignedPartitionLeaderIfRequired`` elects a leader among the target
replicas (``ReassignPartitionLeaderElectionStrategy``) and only logs when that fails ("Failed to
elect leader … under strategy ReassignPartitionLeaderElectionStrategy" — e.g. the leader shrank the
ISR after the completeness read); B4 moves the removed replicas to OfflineReplica, whose
``removeReplicasFromIsr`` (ReplicaStateMachine.scala@2.5.1 L317-333) sets the leader to -1 when it
removes the leader and *keeps an ISR of one member as it is*; B6 writes the topic znode with
RS = the target replicas. The partition is left with leader -1 and an ISR whose only member is
not a replica: no election strategy can choose it, so it stays offline. Seen in the chaos
``partition`` scenario, seed 2156 (t1-1 [2,3] → [1]: ISR [2,3,1] read as complete, the leader
shrank it to [2,3] before the election, the election failed, removals left ISR [3] with leader
-1, then RS became [1]).

:func:`orphaned_isrs` replays a chroot's transaction log and names exactly those partitions: a
topic znode write that ends partition p's reassignment (its ``removing_replicas`` entry goes) while
p's state has leader -1 and an ISR member that is neither in the new replicas nor anything but a
replica the reassignment removed — each with the state's (leader, ISR) at that moment. A later
state write of p, or the topic's deletion, takes p off the list.

The same path leaves a partition leaderless even when its ISR is inside the new replicas (seed
2318 of ``zk-session``: t3-0 → [2] completed while broker 2's session had expired, so the election
for [2] failed and the removals left leader -1, ISR [2]). The controller still holds the partition
as OnlinePartition, so ``triggerOnlinePartitionStateChange`` (which elects Offline and New
partitions) skips it when broker 2 returns; only a broker failure (``onReplicasBecomeOffline``
moves every partition whose leader is not online to OfflinePartition, KafkaController.scala@2.5.1
L464-475) or a new controller elects it. :func:`leaderless_after_reassignment` names those: a
reassignment completed while p's state had leader -1, with no state write of p, no broker
deregistration and no controller election since.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from chaos.checkers.replay import CONTROLLER_EPOCH, applied_ops, topic_or_none, writes_data
from probes.errors import MalformedZnode
from probes.txnrecords import TxnRecord
from probes.znode_types import TopicPartition, TopicZNode, decode_partition_state

__all__ = ["leaderless_after_reassignment", "orphaned_isrs"]

_TOPIC = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)$")
_STATE = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)/partitions/(?P<p>\d+)/state$")


def _state(path: str, data: bytes | None) -> tuple[int, tuple[int, ...]] | None:
    """(leader, ISR) of a state znode, or None when malformed."""
    try:
        state = decode_partition_state(path, data)
    except MalformedZnode:
        return None
    return state.leader, state.isr


_BROKER = re.compile(r"^/brokers/ids/\d+$")

_State = tuple[int, tuple[int, ...]]


def orphaned_isrs(records: Sequence[TxnRecord]) -> Mapping[TopicPartition, _State]:
    """Partition → (leader, ISR) of the states Kafka 2.5.1 leaves outside the replicas (module text)."""
    return _walk(records)[0]


def leaderless_after_reassignment(records: Sequence[TxnRecord]) -> Mapping[TopicPartition, _State]:
    """Partition → (leader -1, ISR) of the states Kafka 2.5.1 leaves leaderless (module text)."""
    return _walk(records)[1]


def _walk(records: Sequence[TxnRecord]) -> tuple[dict[TopicPartition, _State], dict[TopicPartition, _State]]:
    """One replay for both: reassignments completed while the partition's state had leader -1."""
    topics: dict[str, TopicZNode | None] = {}
    states: dict[TopicPartition, _State] = {}
    orphaned: dict[TopicPartition, _State] = {}
    leaderless: dict[TopicPartition, _State] = {}
    for record in sorted(records, key=lambda r: r.zxid):
        for op in applied_ops(record):
            path, kind = op.path, op.op
            if kind == "closeSession":
                if any(_BROKER.match(p) for p in op.closed_paths or ()):
                    leaderless.clear()  # onReplicasBecomeOffline elects every leaderless partition
                continue
            if path is None or kind == "check":
                continue
            written = writes_data(kind)
            if (path == CONTROLLER_EPOCH and written) or (_BROKER.match(path) and not written):
                leaderless.clear()
            elif m := _STATE.match(path):
                tp = TopicPartition(m["topic"], int(m["p"]))
                orphaned.pop(tp, None)
                leaderless.pop(tp, None)
                state = _state(path, op.data) if written else None
                if state is None:
                    states.pop(tp, None)
                else:
                    states[tp] = state
            elif m := _TOPIC.match(path):
                topic = m["topic"]
                new = topic_or_none(path, op.data) if written else None
                _completed(topics.get(topic), new, topic, states, orphaned=orphaned, leaderless=leaderless)
                if not written:
                    for found in (orphaned, leaderless):
                        for tp in [tp for tp in found if tp.topic == topic]:
                            del found[tp]
                topics[topic] = new
    return orphaned, leaderless


def _completed(
    old: TopicZNode | None,
    new: TopicZNode | None,
    topic: str,
    states: Mapping[TopicPartition, _State],
    *,
    orphaned: dict[TopicPartition, _State],
    leaderless: dict[TopicPartition, _State],
) -> None:
    """Partitions whose reassignment this topic-znode write completed while their state had leader
    -1: all of them are leaderless; those whose ISR is outside the new replicas, and only of
    replicas the reassignment removed, are orphaned too."""
    if old is None or new is None:
        return
    for p, removing in old.removing_replicas.items():
        if not removing or new.removing_replicas.get(p):
            continue  # not being reassigned before, or still being reassigned
        tp = TopicPartition(topic, p)
        state = states.get(tp)
        if state is None or state[0] != -1:
            continue
        leaderless[tp] = state
        outside = set(state[1]) - set(new.partitions.get(p, ()))
        if outside and outside <= set(removing):
            orphaned[tp] = state
