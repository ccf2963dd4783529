"""The quiescence barrier after each step: the controller's work for the step is finished (conformance ring).

Never a bare sleep. A step is over when, on evidence:

1. **quiet** — no new transaction-log record, controller request or answer, or ZooKeeper request
   (pings aside) for a settle window (:func:`settle_window_s`: 0.5 s, longer when the machine is
   loaded), and then every outcome below holds on a fresh read;
2. **answered** — every controller request to a running node from a running node has its answer;
3. **controller** — ``/controller`` names the controller the step's choreography elected and every
   running or paused node is registered (down nodes are not, nor a paused node whose session the
   step closed: ``expired``, nor a running one whose registration the harness deleted);
4. **notifications** — while that controller runs: no ``/admin/preferred_replica_election``, no
   ``/isr_change_notification`` child, and every ISR change a running leader wrote has been put in
   a notification (Kafka propagates every change, ReplicaManager.maybePropagateIsrChanges);
5. **ISR converged** — for every partition whose leader runs and leads at the state's leader
   epoch (it accepted that LeaderAndIsr), the ISR is the leader plus exactly the running replicas
   that accepted a LeaderAndIsr from that leader at that epoch and got no StopReplica since:
   Kafka's leaders add a caught-up follower on its fetch and drop one that stopped fetching after
   ``replica.lag.time.max.ms`` (Partition.maybeExpandIsr / maybeShrinkIsr);
6. **first rebalance check** — if the controller has ``auto.leader.rebalance.enable``, 5 s have
   passed since it became controller (KafkaController.onControllerFailover schedules the first
   check at 5 s; the diff profile sets no later one).

If the deadline passes first, the barrier returns ``{"timeout": [what did not hold]}``, which is
part of the segment: a target whose controller never finishes diverges right there. A node the
scenario holds up whose process exits while the barrier waits is the target's error
(:class:`~conformance.diff.live.TargetStartError`), raised at once: none of the outcomes above
can hold without it, and waiting out the deadline on every later step made a scenario against
such a target take minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterable
from typing import Any

from kazoo.exceptions import NoNodeError

from conformance.diff.live import DiffCluster, TargetStartError
from probes.request_proxy import ControllerRequest
from probes.txnrecords import TxnRecord
from probes.zk_journal import ZkRecord, ZkReply, ZkRequest

__all__ = ["quiesce", "settle_window_s"]

STATE = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
FIRST_REBALANCE_S = 5.0
#: the first check is scheduled at the end of the failover, not at the election: allow for it
FAILOVER_S = 2.5
POLL_S = 0.1


def settle_window_s() -> float:
    """0.5 s, plus 0.05 s per unit of load average above the machine's cores (at most 1.5 s)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return min(1.5, 0.5 + max(0.0, load - (os.cpu_count() or 1)) * 0.05)


def _activity(dc: DiffCluster) -> tuple[int, ...]:
    journal = dc.cluster.journal
    answered = (
        sum(r.error_code is not None or r.decode_error is not None for r in journal.requests())
        if journal
        else 0
    )
    zk = tuple(sum(1 for r in j.records() if not _is_ping(r)) for j in dc.cluster.zk_journals.values())
    return (len(dc.cluster.history()), journal.mark() if journal else 0, answered, *zk)


def _is_ping(r: ZkRecord) -> bool:
    return (isinstance(r, ZkRequest) and r.opcode == 11) or (isinstance(r, ZkReply) and r.xid == -2)


def _unanswered(dc: DiffCluster) -> list[str]:
    """The controller's requests to the running brokers' current incarnations that wait for an
    answer (a request to an earlier registration, or from a former controller, may never get one:
    its connection was closed when the broker or the controller went away). A former controller
    may be the same node: one re-elected after its /controller was deleted sent its earlier
    requests at an older controller epoch, and its resignation closed their channels
    (KafkaController.onControllerResignation shuts the ControllerChannelManager down)."""
    journal = dc.cluster.journal
    if journal is None:
        return []
    epochs = {b: dc.cluster.broker_epoch(b) for b in dc.up()}
    try:
        current = int(dc.cluster.zk.get("/controller_epoch")[0])
    except (NoNodeError, ValueError):
        current = None
    return [
        f"{r.api} {r.source}->{r.dest}"
        for r in journal.requests()
        if r.error_code is None
        and r.decode_error is None
        and r.api != "ControlledShutdown"  # a broker's request to leave, not the controller's
        and r.source == dc.expected_controller
        and r.dest in epochs
        and r.broker_epoch in (epochs[r.dest], None)
        and (current is None or r.controller_epoch in (current, None))
    ]


def _controller(dc: DiffCluster) -> list[str]:
    problems = []
    stat = dc.controller_stat()
    if stat is None or stat[0] != dc.expected_controller:
        problems.append(f"/controller is {stat and stat[0]}, expected {dc.expected_controller}")
    for b, state in dc.state.items():
        registered = dc.cluster.zk.exists(f"/brokers/ids/{b}") is not None
        if registered != (state not in ("down", "expired") and b not in dc.unregistered):
            problems.append(f"broker {b} is {state} but {'' if registered else 'not '}registered")
    return problems


def _pending_isr_writes(records: Iterable[TxnRecord], dc: DiffCluster) -> set[str]:
    """Partitions a running node wrote an ISR for and has not notified yet (per live session)."""
    gone = ("down", "expired")  # no session of theirs lives
    live = {s for b, g in dc.gates.items() if dc.state[b] not in gone for s, _ in g.sessions[-1:]}
    pending: dict[int, set[str]] = {}
    for r in records:
        ops = [o for o in (r.ops if r.op == "multi" else (r.txn,)) if o.path]
        fenced = any(o.op == "check" for o in ops)
        for op in ops:
            m = STATE.match(op.path or "")
            if m and op.op == "setData" and not fenced and not r.failed:
                pending.setdefault(r.session_id, set()).add(f"{m.group(1)}-{m.group(2)}")
            elif (op.path or "").startswith("/isr_change_notification/isr_change_") and op.op.startswith(
                "create"
            ):
                body = json.loads(op.data or b"{}")
                pending.setdefault(r.session_id, set()).difference_update(
                    f"{x['topic']}-{x['partition']}" for x in body.get("partitions", [])
                )
    return {tp for s, tps in pending.items() if s in live for tp in tps}


def _election_stuck(zk: Any) -> bool:
    """``/admin/preferred_replica_election`` names a partition with no state znode: Kafka 2.5.1's
    election event throws on it before the ``finally`` that deletes the znode, which then stays
    until a controller failover (KafkaController.scala@2.5.1 L1747-1759 processReplicaLeaderElection,
    L683-723 onReplicaElection; the chaos quirk ``preferred_election_stuck_on_partition_without_state``)."""
    try:
        data = json.loads(zk.get("/admin/preferred_replica_election")[0] or b"null")
        named = [(str(e["topic"]), int(e["partition"])) for e in data["partitions"]]
    except (NoNodeError, ValueError, KeyError, TypeError):
        return False
    return any(zk.exists(f"/brokers/topics/{t}/partitions/{p}/state") is None for t, p in named)


def _notifications(dc: DiffCluster) -> list[str]:
    zk, problems = dc.cluster.zk, list[str]()
    if not dc.running(dc.expected_controller):
        return problems
    if zk.exists("/admin/preferred_replica_election") and not _election_stuck(zk):
        problems.append("/admin/preferred_replica_election not processed")
    try:
        if zk.get_children("/isr_change_notification"):
            problems.append("ISR-change notifications not processed")
    except NoNodeError:
        pass
    unnotified = _pending_isr_writes(dc.cluster.history(), dc)
    if unnotified:
        problems.append(f"ISR changes not yet notified: {sorted(unnotified)}")
    return problems


def _accepted(requests: list[ControllerRequest], dest: int, tp: tuple[str, int]) -> tuple[int, int] | None:
    """(leader, leader epoch) of the last LeaderAndIsr ``dest`` accepted for ``tp``, None after a
    StopReplica for it or when it accepted none.

    A partition answered STALE_CONTROLLER_EPOCH (11) in a LeaderAndIsr the broker took (its
    controller epoch was current) means the broker already holds that leader epoch: it accepted an
    earlier request carrying it whose answer was never recorded — a departing controller's, whose
    channel closed before the answer came back (ReplicaManager.becomeLeaderOrFollower@2.5.1).
    After a StopReplica such an 11 counts only when a LeaderAndIsr with that leader epoch was
    sent to the broker since (the departed controller's, to a paused broker that read it on
    resuming): otherwise the epoch may be one the broker held before it stopped the replica."""
    last: tuple[int, int] | None = None
    stopped = False  # after a StopReplica, an 11 tells nothing about what the broker follows…
    sent_since_stop: set[tuple[int, int]] = set()  # …unless that epoch was sent to it since
    for r in requests:
        if r.dest != dest:
            continue
        entry = next((e for e in r.partitions if (e.topic, e.partition) == tp), None)
        if entry is None:
            continue
        seen = (-1 if entry.leader is None else int(entry.leader), int(entry.leader_epoch or 0))
        sent_before = seen in sent_since_stop  # by an earlier request than this one
        if r.api == "LeaderAndIsr":
            sent_since_stop.add(seen)
        if r.error_code is None:
            continue
        code = r.partition_errors.get(tp, 0)
        if r.api == "StopReplica" and r.error_code == 0 and code == 0:
            last, stopped, sent_since_stop = None, True, set()
        elif r.api == "LeaderAndIsr" and r.error_code == 0 and code in (0, 11):
            if code == 0 or (stopped and sent_before):
                last, stopped = seen, False
            elif not stopped and (last is None or last[1] < seen[1]):
                last = seen
    return last


def _isr(dc: DiffCluster) -> list[str]:
    journal, zk = dc.cluster.journal, dc.cluster.zk
    if journal is None:
        return []
    requests, problems = journal.requests(), []
    for topic in zk.get_children("/brokers/topics"):
        try:
            assignment = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"]
        except (NoNodeError, ValueError, KeyError, TypeError):
            continue
        for p, replicas in assignment.items():
            try:
                state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
            except (NoNodeError, ValueError, TypeError):
                continue
            leader, epoch, tp = state.get("leader", -1), state.get("leader_epoch"), (topic, int(p))
            if (
                leader not in dc.state
                or not dc.running(leader)
                or _accepted(requests, leader, tp) != (leader, epoch)
            ):
                continue
            followers = {
                r for r in replicas if r != leader and r in dc.state and dc.running(r)
                and _accepted(requests, r, tp) == (leader, epoch)
            }  # fmt: skip
            if set(state.get("isr", [])) != {leader} | followers:
                problems.append(f"{topic}-{p} ISR {state.get('isr')} not yet {sorted({leader} | followers)}")
    return problems


def isr_settled(dc: DiffCluster, deadline_s: float = 30.0) -> bool:
    """Wait until every ISR has converged (outcome 5 only): e.g. a killed node dropped by its leaders."""
    give_up = time.monotonic() + dc.deadline(deadline_s)
    while time.monotonic() < give_up:
        with contextlib.suppress(Exception):  # a znode mid-write: look again
            if not _isr(dc):
                return True
        time.sleep(POLL_S)
    return False


def _rebalance(dc: DiffCluster) -> list[str]:
    c = dc.expected_controller
    if dc.scenario.nodes.get(c, {}).get("auto.leader.rebalance.enable") != "true" or not dc.running(c):
        return []
    elected = [
        r for r in dc.cluster.history() if r.op == "multi" and any(o.path == "/controller" for o in r.ops)
    ]
    if not elected or time.time() * 1000 - elected[-1].time_ms > (FIRST_REBALANCE_S + FAILOVER_S) * 1000:
        return []
    return ["the first auto-rebalance check has not run yet"]


def _unseen_triggers(dc: DiffCluster) -> list[str]:
    """Harness writes the running controller has not read since (the path or its parent): it has
    not started on the step's work yet, however quiet the cluster looks."""
    c = dc.expected_controller
    if not dc.triggers or not dc.running(c) or c not in dc.cluster.zk_journals:
        return []
    reads = [r for r in dc.cluster.zk_journal(c).requests() if r.path is not None]
    return [
        f"the controller has not read {path} since the harness wrote it"
        for path, when in dc.triggers
        if not any(r.time_s > when and r.path in (path, path.rsplit("/", 1)[0] or "/") for r in reads)
    ]


def _problems(dc: DiffCluster) -> list[str]:
    return [
        *_unseen_triggers(dc),
        *_unanswered(dc),
        *_controller(dc),
        *_notifications(dc),
        *_isr(dc),
        *_rebalance(dc),
    ]


def quiesce(dc: DiffCluster, deadline_s: float = 45.0) -> Any:
    """``"ok"`` once the step's work is finished, else ``{"timeout": [...]}`` at the deadline;
    raises :class:`TargetStartError` when a node the scenario holds up has exited."""
    give_up = time.monotonic() + dc.deadline(deadline_s)
    window = settle_window_s()
    seen, since = _activity(dc), time.monotonic()
    problems: list[str] = []
    while True:
        time.sleep(POLL_S)
        gone = dc.exited()
        if gone:
            raise TargetStartError(f"{gone} while the step's work was awaited")
        now_seen = _activity(dc)
        if now_seen != seen:
            seen, since = now_seen, time.monotonic()
        elif time.monotonic() - since >= window:
            try:
                problems = _problems(dc)
            except Exception as exc:  # a znode mid-write: look again
                problems = [f"unreadable: {type(exc).__name__}"]
            if not problems and _activity(dc) == seen:
                return "ok"
        if time.monotonic() > give_up:
            return {"timeout": sorted(problems) or ["activity never stopped"]}
