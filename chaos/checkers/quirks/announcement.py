"""Recogniser of a new partition Kafka 2.5.1 never announces because the reply to its state
znode's creation was lost with the controller's ZooKeeper connection (decisions ring, pure). See
:mod:`chaos.checkers.quirks.registry` for the why.

The evidence, all of it from the transaction log and the brokers' request journals:

- a controller's fenced create of the partition's state znode, with no election after it (a
  failover reads the state znode and announces the partition);
- the session then reconnected: a client that restarts its request counter on a reconnect
  (kazoo, the reference's) shows each new connection as a drop in the session's cxids. A client
  that keeps counting (Kafka's Java client) leaves no such evidence, and its run stays judged by
  the naive check;
- the create is one of the last ``n`` records of its connection (a reply is lost only with every
  reply after it: a connection delivers them in order), and the first ``n`` ops of the session
  that failed on the next connection all failed with NODEEXISTS, one right after the other
  (consecutive cxids) — the creates sent again (``KafkaZkClient.retryRequestsUntilConnected``
  resends every request answered CONNECTIONLOSS, together and in order). ZooKeeper logs a failed
  op with its error codes only, so the path it tried is not in the log. Successful ops of the
  same session may come before them (the broker side shares the controller's session and writes
  ISR changes on it);
- no broker's journal names the partition in any request (every live broker has a journal,
  otherwise the items are undecided).
"""

from __future__ import annotations

import bisect
import itertools

from chaos.checkers.findings import Item, RunInputs, partition_view_item
from chaos.checkers.quirks.recognition import Recognition
from chaos.checkers.timeline import StateWritten, Timeline
from probes.txnrecords import TxnRecord
from probes.znode_types import TopicPartition

__all__ = ["NODE_EXISTS", "unannounced_new_partitions"]

NODE_EXISTS = -110


def _by_session(timeline: Timeline) -> dict[int, list[TxnRecord]]:
    """Each session's records in zxid order, applied (from the events) and failed, once each."""
    seen: dict[int, TxnRecord] = {e.record.zxid: e.record for e in timeline.events}
    seen.update((r.zxid, r) for r in timeline.failed)
    out: dict[int, list[TxnRecord]] = {}
    for zxid in sorted(seen):
        out.setdefault(seen[zxid].session_id, []).append(seen[zxid])
    return out


def _connections(records: list[TxnRecord]) -> list[list[TxnRecord]]:
    """A session's records (zxid order) cut where its request counter restarts: one list per
    connection of a client that restarts it on a reconnect."""
    out: list[list[TxnRecord]] = []
    for r in records:
        if not out or r.cxid < out[-1][-1].cxid:
            out.append([])
        out[-1].append(r)
    return out


def _lost_reply_partitions(timeline: Timeline) -> set[TopicPartition]:
    """Partitions whose state znode a controller created among the last ``n`` records of one of
    its session's connections, when the first ``n`` ops that failed on the session's next
    connection all failed with NODEEXISTS, with no election since (module docstring)."""
    last_election = max((e.record.zxid for e in timeline.elections), default=-1)
    connections = {session: _connections(records) for session, records in _by_session(timeline).items()}
    out: set[TopicPartition] = set()
    for w in timeline.of_type(StateWritten):
        if not (w.created and w.fenced) or w.record.zxid < last_election:
            continue
        conns = connections.get(w.record.session_id, [])
        for k, conn in enumerate(conns[:-1]):
            zxids = [r.zxid for r in conn]
            at = bisect.bisect_left(zxids, w.record.zxid)
            if at == len(conn) or conn[at].zxid != w.record.zxid:
                continue
            n = len(conn) - at  # the create and every record after it on its connection
            retried = [r for r in conns[k + 1] if r.failed][:n]
            if (
                len(retried) == n
                and all(NODE_EXISTS in r.error_codes for r in retried)
                and all(b.cxid == a.cxid + 1 for a, b in itertools.pairwise(retried))
            ):
                out.add(TopicPartition(w.topic, w.partition))
            break
    return out


def unannounced_new_partitions(run: RunInputs) -> Recognition:
    """``partition shown differently`` items (every live broker) of such partitions that no broker
    was ever sent a request about."""
    timeline, f = run.timeline, run.final_state
    if timeline is None or f is None:
        return Recognition()
    candidates = {tp for tp in _lost_reply_partitions(timeline) if tp in f.partition_states}
    if not candidates:
        return Recognition()
    named = {
        TopicPartition(p.topic, p.partition)
        for journal in f.journals.values()
        for request in journal
        for p in request.partitions
    }
    unannounced = candidates - named
    items: set[Item] = {partition_view_item(b, tp) for tp in unannounced for b in f.live_brokers}
    without_journal = [b for b in sorted(f.live_brokers) if b not in f.journals]
    if without_journal:
        return Recognition(
            undecided=frozenset(items),
            why_undecided=f"no request journal of broker(s) {without_journal}: cannot tell whether "
            "the partition was announced",
        )
    return Recognition(frozenset(items))
