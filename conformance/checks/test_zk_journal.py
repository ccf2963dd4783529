"""Checks on the requests each node sends to ZooKeeper (the ZooKeeper request journal, spec §2.1–2.3).

The journal sits on each node's ZooKeeper link (:mod:`probes.zk_journal`), so it sees
what ``wchc`` cannot — child watches are set by a *watched getChildren* request — and it tells
senders apart: every request is journalled per node and per session. A watch counts as armed when
the watched request was answered without error (``exists`` also arms on NONODE).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from cluster import admin
from cluster.admin import encode
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import create_topic, wait_cluster_known, wait_state
from probes.jute import ClientOp
from probes.zk_journal import ZkClosed, ZkJournal, ZkRequest

pytestmark = pytest.mark.conformance

CHILD_PATHS = (
    "/brokers/ids",
    "/brokers/topics",
    "/admin/delete_topics",
    "/log_dir_event_notification",
    "/isr_change_notification",
)
CHILD_OPS = ("getChildren", "getChildren2")
NODE_OPS = ("exists", "getData")
CREATES = ("create", "create2")
WRITES = ("create", "create2", "delete", "setData", "multi", "setACL")
#: What a never-controller may watch (spec §2.3): ``/controller``, the config-change notifications
#: (``DynamicConfigManager``), and from Kafka 2.7 on ``/feature``. No authorizer or delegation
#: tokens are configured by the suite, so their change paths are not allowed.
NEVER_CONTROLLER_WATCHES = frozenset({"/controller", "/config/changes", "/feature"})
#: Top-level paths every broker creates at start-up (``ZkData.PersistentZkPaths``@2.5.1 + config
#: entity types), and their parents: broker bookkeeping, not controller writes.
PERSISTENT_PATHS = frozenset(
    {
        "/admin", "/brokers", "/config", "/consumers", "/brokers/ids", "/brokers/topics",
        "/brokers/seqid", "/config/changes", "/admin/delete_topics", "/isr_change_notification",
        "/latest_producer_id_block", "/log_dir_event_notification", "/config/topics",
        "/config/clients", "/config/users", "/config/brokers", "/config/ips",
    }
)  # fmt: skip


def _journal(cluster: Cluster, bid: int) -> ZkJournal:
    try:
        return cluster.zk_journal(bid)
    except LookupError as exc:
        pytest.skip(f"this check needs the ZooKeeper request journal: {exc}")


def _session(cluster: Cluster, bid: int) -> int:
    """The session of node ``bid``'s controller (its broker's, unless the target is split)."""
    return cluster.controller_session(bid)


def _armed(j: ZkJournal, req: ZkRequest) -> bool:
    reply = j.reply_to(req)
    return reply is not None and (reply.err == 0 or (req.name == "exists" and reply.err == -101))


def _armed_paths(
    j: ZkJournal, session: int | None, ops: Iterable[str], since: int = 0, paths: Iterable[str] | None = None
) -> set[str]:
    wanted = None if paths is None else set(paths)
    return {
        r.path or ""
        for r in j.requests(session=session, op=tuple(ops), watch=True, since=since)
        if (wanted is None or r.path in wanted) and _armed(j, r)
    }


def _touching(j: ZkJournal, paths: Iterable[str], session: int | None = None, since: int = 0) -> str:
    """The journal lines (requests, replies, events) about ``paths``, for failure messages."""
    wanted = set(paths)
    seqs = {
        r.seq
        for r in j.requests(session=session, since=since)
        if r.path in wanted or any(o.path in wanted for o in r.sub_ops)
    }
    lines = [
        rec.describe()
        for rec in j.records(since)
        if rec.seq in seqs
        or getattr(rec, "request_seq", None) in seqs
        or (getattr(rec, "path", None) in wanted and not hasattr(rec, "op"))
    ]
    return "\n".join(lines[-120:]) or "(nothing)"


# --- LISTEN-1 -----------------------------------------------------------------------------------


def _rearmed_after_event(j: ZkJournal, session: int, path: str, since: int) -> bool:
    """A NodeChildrenChanged for ``path`` reached ``session`` and a later watched getChildren of
    ``path`` from it was answered."""
    events = j.events(session=session, type="NodeChildrenChanged", path=path, since=since)
    if not events:
        return False
    later = j.requests(session=session, op=CHILD_OPS, path=path, watch=True, since=events[0].seq)
    return any(_armed(j, r) for r in later)


@pytest.mark.behaviour("LISTEN-1")
def test_controller_arms_and_rearms_every_child_watch(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    cid = wait_cluster_known(cluster)
    j, session = _journal(cluster, cid), _session(cluster, cid)
    wait_for(
        lambda: set(CHILD_PATHS) <= _armed_paths(j, session, CHILD_OPS),
        cluster.deadline(15),
        lambda: (
            f"controller {cid} (session 0x{session:x}) to send an answered watched getChildren on each of "
            f"{list(CHILD_PATHS)}; armed: {sorted(_armed_paths(j, session, CHILD_OPS))}\n"
            f"{_touching(j, CHILD_PATHS, session)}"
        ),
    )
    other = next(b for b in cluster.broker_ids if b != cid)
    mark = j.mark()
    create_topic(cluster, "cw", {0: [cid, other]})  # /brokers/topics
    cluster.zk.create(  # /isr_change_notification
        "/isr_change_notification/isr_change_",
        encode({"version": 1, "partitions": [{"topic": "cw", "partition": 0}]}),
        sequence=True,
    )
    cluster.zk.create(  # /log_dir_event_notification
        "/log_dir_event_notification/log_dir_event_",
        encode({"version": 1, "broker": other, "event": 1}),
        sequence=True,
    )
    admin.delete_topic_zk(cluster, "cw")  # /admin/delete_topics
    cluster.stop(other)  # /brokers/ids
    for path in CHILD_PATHS:
        wait_for(
            lambda path=path: _rearmed_after_event(j, session, path, mark),  # type: ignore[misc]
            cluster.deadline(20),
            lambda path=path: (  # type: ignore[misc]
                f"controller {cid} to get NodeChildrenChanged on {path} and re-arm its child watch with "
                f"a watched getChildren; journal:\n{_touching(j, [path], session, mark)}"
            ),
        )


# --- LISTEN-4 -----------------------------------------------------------------------------------


def _won_election(j: ZkJournal, session: int | None = None, since: int = 0) -> list[ZkRequest]:
    """Creates of ``/controller`` (plain or in a multi) that ZooKeeper answered OK."""
    out = []
    for r in j.requests(session=session, op=(*CREATES, "multi"), since=since):
        ops = r.sub_ops if r.name == "multi" else (r.op,) if r.op is not None else ()
        if any(o is not None and o.op in CREATES and o.path == "/controller" for o in ops):
            reply = j.reply_to(r)
            if reply is not None and reply.ok:
                out.append(r)
    return out


@pytest.mark.behaviour("LISTEN-4")
def test_never_controllers_watch_only_the_controller_and_config_changes(
    cluster_factory: ClusterFactory, request: pytest.FixtureRequest
) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    wait_cluster_known(cluster)
    never = (2, 3)
    for b in never:
        jb = _journal(cluster, b)
        wait_for(
            lambda jb=jb: "/controller" in _armed_paths(jb, None, NODE_OPS),  # type: ignore[misc]
            cluster.deadline(15),
            lambda jb=jb, b=b: f"broker {b} to arm a watch on /controller:\n{jb.dump()}",  # type: ignore[misc]
        )
    j1 = _journal(cluster, 1)
    mark = j1.mark()
    create_topic(cluster, "nc", {0: [1, 2, 3]})  # fires every /brokers/topics child watch
    cluster.stop(3)  # fires every /brokers/ids child watch (twice with the restart)
    cluster.start([3])
    wait_cluster_known(cluster)  # every broker answered an UpdateMetadata naming all three
    session1 = _session(cluster, 1)
    for path in ("/brokers/ids", "/brokers/topics"):  # ZooKeeper delivered these child events
        wait_for(
            lambda path=path: _rearmed_after_event(j1, session1, path, mark),  # type: ignore[misc]
            cluster.deadline(15),
            lambda path=path: f"controller 1 re-arming {path}:\n{_touching(j1, [path], session1, mark)}",  # type: ignore[misc]
        )
    assert cluster.controller_id() == 1, (
        f"the controller moved, brokers 2/3 may have been controller: {cluster.summary()}"
    )
    for b in never:
        jb = _journal(cluster, b)
        assert not _won_election(jb), f"broker {b} won an election:\n{jb.dump()}"
        child = jb.requests(op=CHILD_OPS, watch=True)
        bad = [r for r in child if r.path in ("/brokers/ids", "/brokers/topics")]
        events = [
            e
            for p in ("/brokers/ids", "/brokers/topics")
            for e in jb.events(path=p, type="NodeChildrenChanged")
        ]
        assert not [*bad, *events], (
            f"never-controller broker {b} watches the controller's child paths:\n"
            + "\n".join(x.describe() for x in [*bad, *events])
        )
        watched = {r.path or "" for r in jb.requests(op=(*CHILD_OPS, *NODE_OPS), watch=True)}
        assert "/controller" in watched, f"broker {b} never watched /controller:\n{jb.dump()}"
        extra = watched - NEVER_CONTROLLER_WATCHES
        assert not extra, (
            f"never-controller broker {b} watches {sorted(extra)}, "
            f"allowed only {sorted(NEVER_CONTROLLER_WATCHES)}:\n{_touching(jb, extra)}"
        )


# --- FENCE-1 per sender -------------------------------------------------------------------------


def _election_version(j: ZkJournal, won: ZkRequest) -> int:
    """The ``/controller_epoch`` zkVersion a winning election multi left (expected + 1)."""
    sets = [o for o in won.sub_ops if o.op == "setData" and o.path == "/controller_epoch"]
    assert sets, f"election without a setData of /controller_epoch: {won.describe()}"
    return int(sets[0].version or 0) + 1


def _previous_state(cluster: Cluster, path: str, before_zxid: int) -> dict[str, object] | None:
    prior = None
    for rec in cluster.history():
        if rec.zxid >= before_zxid or rec.failed:
            continue
        for o in rec.ops or (rec.txn,):
            if o.path == path and o.op in (*CREATES, "setData") and o.data:
                prior = json.loads(o.data)
    return prior


def _broker_write(cluster: Cluster, j: ZkJournal, bid: int, req: ZkRequest) -> str | None:
    """Why ``req`` is the broker's own bookkeeping, not a controller write (``None``: it is not)."""
    op = req.op
    assert op is not None
    paths = [o.path for o in (op.ops or (op,))]
    if any(p == f"/brokers/ids/{bid}" for p in paths):
        return "broker registration"
    if op.op == "multi" and any(o.op in CREATES and o.path == "/controller" for o in op.ops):
        return "election"
    if op.op in CREATES:
        return _broker_create(cluster, op)
    if op.path == "/latest_producer_id_block":  # ProducerIdManager's block, on any broker
        return "producer id block"
    if op.op == "setData" and (op.path or "").endswith("/state") and op.data:
        return _isr_update(cluster, j, bid, req, op)
    return None


def _broker_create(cluster: Cluster, op: ClientOp) -> str | None:
    path = op.path or ""
    if path in PERSISTENT_PATHS or path == "/" or cluster.chroot.startswith(path + "/"):
        return "start-up path"
    if path == "/cluster/id" or (path == "/controller_epoch" and op.data == b"0"):
        return "start-up znode"
    if path.startswith(
        ("/isr_change_notification/isr_change_", "/log_dir_event_notification/log_dir_event_")
    ):
        return "broker notification"
    return None


def _isr_update(cluster: Cluster, j: ZkJournal, bid: int, req: ZkRequest, op: ClientOp) -> str | None:
    """A leader's own ISR change: it names itself leader and keeps the leader epoch it replaces."""
    new = json.loads(op.data or b"{}")
    reply = j.reply_to(req)
    if new.get("leader") != bid or reply is None or reply.err != 0:
        return None
    old = _previous_state(cluster, op.path or "", reply.zxid)
    same = old is not None and old.get("leader") == bid and old.get("leader_epoch") == new.get("leader_epoch")
    return "ISR update by the leader" if same else None


def _answered(j: ZkJournal) -> bool:
    gone = {r.conn for r in j.records() if isinstance(r, ZkClosed)}
    return all(j.reply_to(r) is not None or r.conn in gone for r in j.requests(op=WRITES))


def _fenced_at(op: ClientOp, version: int) -> bool:
    first = op.ops[0] if op.op == "multi" and op.ops else None
    return (
        first is not None
        and first.op == "check"
        and first.path == "/controller_epoch"
        and first.version == version
    )


def _controller_writes(cluster: Cluster, bid: int) -> tuple[list[str], list[str], list[str]]:
    """(fenced, unfenced, broker) write lines of every session of ``bid`` after it won an election."""
    j = _journal(cluster, bid)
    fenced: list[str] = []
    unfenced: list[str] = []
    broker: list[str] = []
    for session in j.sessions():
        wins = _won_election(j, session)
        for i, won in enumerate(wins):
            version = _election_version(j, won)
            until = wins[i + 1].seq if i + 1 < len(wins) else None
            for r in j.requests(
                session=session,
                op=WRITES,
                since=won.seq + 1,
            ):
                if until is not None and r.seq >= until:
                    break
                if r.op is None:
                    unfenced.append(f"{r.describe()} (undecodable)")
                    continue
                why = _broker_write(cluster, j, bid, r)
                line = f"broker {bid} (epoch zkVersion {version}): {r.describe()}"
                if why is not None:
                    broker.append(f"{line} [{why}]")
                elif _fenced_at(r.op, version):
                    fenced.append(line)
                else:
                    unfenced.append(line)
    return fenced, unfenced, broker


@pytest.mark.behaviour("FENCE-1")
def test_every_controller_write_is_fenced_per_sender(
    cluster_factory: ClusterFactory, request: pytest.FixtureRequest
) -> None:
    cluster = cluster_factory(start=False)
    cluster.start([1])
    assert cluster.wait_controller() == 1
    cluster.start([2, 3])
    wait_cluster_known(cluster)
    create_topic(cluster, "f1", {0: [1, 2], 1: [2, 3]})
    cluster.stop(3)  # controller 1 shrinks ISRs (fenced writes)
    wait_state(cluster, "f1", 1, lambda s: s["isr"] == [2], "ISR [2] after broker 3 stopped")
    cluster.stop(1)  # controller moves to 2, the only broker left
    assert cluster.wait_controller(not_in=[1]) == 2
    create_topic(cluster, "f2", {0: [2]})
    admin.delete_topic_zk(cluster, "f2")
    wait_for(lambda: not cluster.zk.exists("/brokers/topics/f2"), cluster.deadline(30), "topic f2 deleted")
    cluster.start([3])  # leader 2 expands the ISR of f1-1 itself (a broker write in the controller's session)
    wait_state(cluster, "f1", 1, lambda s: s["isr"] == [2, 3], "ISR [2, 3] after broker 3 restarted")
    wait_for(
        lambda: all(_answered(_journal(cluster, b)) for b in (1, 2)),
        cluster.deadline(10),
        "every write of brokers 1 and 2 answered (or its connection gone)",
    )
    report: list[str] = []
    for bid in (1, 2):
        fenced, unfenced, broker = _controller_writes(cluster, bid)
        report += [f"-- broker {bid}: {len(fenced)} fenced, {len(broker)} broker writes", *broker[-20:]]
        assert not unfenced, (
            f"controller {bid} sent writes that are not "
            "multi[check /controller_epoch at its epoch zkVersion, …]:\n"
            + "\n".join(unfenced)
            + "\n"
            + "\n".join(report)
        )
        assert fenced, f"controller {bid} sent no fenced write at all:\n{_journal(cluster, bid).dump()}"


# --- EPOCH-5 ------------------------------------------------------------------------------------


def _creates_controller(r: ZkRequest) -> bool:
    ops = r.sub_ops if r.name == "multi" else (r.op,) if r.op is not None else ()
    return any(o.op in CREATES and o.path == "/controller" for o in ops)


@pytest.mark.behaviour("EPOCH-5")
def test_controller_deletion_is_seen_by_every_broker_and_won_by_one_create(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    cid = wait_cluster_known(cluster)
    journals = {b: _journal(cluster, b) for b in cluster.broker_ids}
    sessions = {b: _session(cluster, b) for b in cluster.broker_ids}
    for b in cluster.broker_ids:
        if b == cid:
            continue
        wait_for(
            lambda b=b: "/controller" in _armed_paths(journals[b], sessions[b], NODE_OPS),  # type: ignore[misc]
            cluster.deadline(15),
            lambda b=b: (
                f"broker {b} to arm a watch on /controller:\n{_touching(journals[b], ['/controller'])}"
            ),  # type: ignore[misc]
        )
    marks = {b: j.mark() for b, j in journals.items()}
    cluster.zk.delete("/controller")
    new = cluster.wait_controller()

    def after_deletion(b: int) -> list[ZkRequest]:
        """``b``'s answered requests after ZooKeeper told it ``/controller`` was deleted."""
        j, since = journals[b], marks[b]
        deleted = j.events(session=sessions[b], type="NodeDeleted", path="/controller", since=since)
        after = j.requests(session=sessions[b], since=deleted[0].seq) if deleted else []
        return [r for r in after if j.reply_to(r) is not None]

    def reacted(b: int) -> bool:
        """Told of the deletion, ``b`` re-armed its watch (and, if it won, created /controller)."""
        after = after_deletion(b)
        rearmed = any(
            r.name in NODE_OPS and r.path == "/controller" and r.watch and _armed(journals[b], r)
            for r in after
        )
        return rearmed and (b != new or any(_creates_controller(r) for r in after))

    def trace() -> str:
        return "\n".join(
            f"-- broker {b}:\n{_touching(journals[b], ['/controller'], sessions[b], marks[b])}"
            for b in cluster.broker_ids
        )

    wait_for(
        lambda: all(reacted(b) for b in cluster.broker_ids),
        cluster.deadline(20),
        lambda: (
            "every broker to get NodeDeleted /controller and re-arm its watch, "
            f"the winner {new} creating it:\n{trace()}"
        ),
    )
    # Kafka's elect() reads /controller first and returns if someone already won: a broker that
    # handles the deletion late re-arms its watch without a create, so only "at least one" holds.
    contested = [b for b in cluster.broker_ids if any(_creates_controller(r) for r in after_deletion(b))]
    assert contested, f"no broker sent a create of /controller after the deletion:\n{trace()}"
    winners = {b: _won_election(journals[b], sessions[b], marks[b]) for b in cluster.broker_ids}
    assert sum(len(w) for w in winners.values()) == 1, (
        f"{sum(len(w) for w in winners.values())} winning creates:\n{trace()}"
    )
    assert winners[new], f"the winning create did not come from the new controller {new}:\n{trace()}"
    assert cluster.controller_epoch() is not None
    del cid
