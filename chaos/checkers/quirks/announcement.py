"""Recogniser of a new partition Kafka 2.5.1 never announces because the reply to its state
znode's creation was lost with the controller's ZooKeeper connection (decisions ring, pure). See
:mod:`chaos.checkers.quirks.registry` for the why.

The evidence, all of it from the transaction log and the brokers' request journals:

- a controller's fenced create of the partition's state znode, with no election after it (a
  failover reads the state znode and announces the partition);
- the same session's next record in the log is a failed op answered NODEEXISTS, made on a **new
  connection**: its cxid is below the create's. ZooKeeper logs a failed op with its error codes
  only, so the path it tried is not in the log; a client that restarts its request counter on a
  reconnect (kazoo, the reference's) shows the reconnect this way. A client that keeps counting
  (Kafka's Java client) leaves no such evidence, and its run stays judged by the naive check;
- no broker's journal names the partition in any request (every live broker has a journal,
  otherwise the items are undecided).
"""

from __future__ import annotations

import bisect

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


def _lost_reply_partitions(timeline: Timeline) -> set[TopicPartition]:
    """Partitions whose state znode a controller created just before its session, on a new
    connection, failed a create with NODEEXISTS, with no election since."""
    last_election = max((e.record.zxid for e in timeline.elections), default=-1)
    sessions = _by_session(timeline)
    zxids = {session: [r.zxid for r in records] for session, records in sessions.items()}
    out: set[TopicPartition] = set()
    for w in timeline.of_type(StateWritten):
        if not (w.created and w.fenced) or w.record.zxid < last_election:
            continue
        mine = sessions.get(w.record.session_id, [])
        at = bisect.bisect_right(zxids.get(w.record.session_id, []), w.record.zxid)
        nxt = mine[at] if at < len(mine) else None
        if nxt is not None and nxt.failed and NODE_EXISTS in nxt.error_codes and nxt.cxid < w.record.cxid:
            out.add(TopicPartition(w.topic, w.partition))
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
