"""What ``Cluster.start`` promises a check: when it returns, no node's election attempt is still
to come or unanswered (real reference nodes on a real ZooKeeper, their traffic through the
recording ZooKeeper proxies).

A check that marks a node's ZooKeeper journal right after the cluster started and compares that
node's writes must never find the node's own attempt to create ``/controller`` in its window
(ADMIN-4 did: a node had read ``/controller`` as absent, which the start counted as done, and its
losing election ``multi`` came after the mark).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient

from cluster.cluster import Cluster, done_contending, wait_for
from cluster.targets import load_target
from conformance.ahead import cluster_on
from harness.zookeeper import ZooKeeperServer
from probes.jute import ClientOp, OpResult
from probes.zk_journal import ZkJournal, ZkReply, ZkRequest

pytestmark = pytest.mark.integration

STARTS = 8
READS = ("exists", "getData")


def _controller_ops(journal: ZkJournal, since: int = 0) -> list[ZkRequest]:
    return [
        r
        for r in journal.requests(since=since)
        if r.path == "/controller" or any(getattr(op, "path", None) == "/controller" for op in r.sub_ops)
    ]


def _saw_a_controller(journal: ZkJournal) -> bool:
    """A read of ``/controller`` was answered with the znode present: the node has seen the
    election's outcome, so its own attempt, if it made one, came before that read."""
    for r in _controller_ops(journal):
        reply = journal.reply_to(r)
        if r.name in ("exists", "getData") and reply is not None and reply.err == 0:
            return True
    return False


def _one_start(zk_server: ZooKeeperServer, chroot: str, base: Path) -> None:
    cluster: Cluster = cluster_on(load_target("reference"), zk_server, chroot, base)
    try:
        cluster.start()
        marks = {b: cluster.zk_journal(b).mark() for b in cluster.broker_ids}
        # every node contended before the mark: each made a write touching /controller (its
        # election multi) or found the znode there, and that request was answered before the mark
        for bid, mark in marks.items():
            journal = cluster.zk_journal(bid)
            answered = [
                r
                for r in _controller_ops(journal)
                if (reply := journal.reply_to(r)) is not None and reply.seq < mark
            ]
            assert answered, f"node {bid} had no answered /controller request when start() returned"
        # a node that read /controller as absent tries to create it, then reads who won: wait
        # until every node has seen a controller, and its attempt, if any, must be before the mark
        wait_for(
            lambda: all(_saw_a_controller(cluster.zk_journal(b)) for b in cluster.broker_ids),
            cluster.deadline(10),
            "every node read /controller present",
        )
        for bid, mark in marks.items():
            journal = cluster.zk_journal(bid)
            late = [
                r.describe() for r in _controller_ops(journal, mark) if r.name not in ("exists", "getData")
            ]
            assert not late, f"node {bid} wrote to /controller after start() returned: {late}"
    finally:
        cluster.close()


def test_no_election_attempt_lands_after_the_start_returned(
    zk_server: ZooKeeperServer, zk_chroot: str, zk_client: KazooClient, tmp_path: Path
) -> None:
    """Eight starts of three nodes: the first election's losers lose in a race the start must see
    through (each node reads ``/controller`` absent, then tries its ``multi``)."""
    for i in range(STARTS):
        zk_client.ensure_path(f"/s{i}")
        chroot = f"{zk_chroot}/s{i}"
        _one_start(zk_server, chroot, tmp_path / f"s{i}")


# --- the decision itself, on journals written here (pure logic) --------------------------------

NO_NODE = -101
EXISTS, GET_DATA, MULTI, MULTI_READ, CREATE = 3, 4, 14, 22, 1


def _request(journal: ZkJournal, opcode: int, path: str | None, ops: tuple[ClientOp, ...] = ()) -> ZkRequest:
    op = ClientOp(opcode, path=path, ops=ops)
    return journal.append(lambda seq, now: ZkRequest(seq, now, 1, 7, seq + 1, opcode, 0, op))


def _reply(journal: ZkJournal, to: ZkRequest, err: int, results: tuple[OpResult, ...] = ()) -> None:
    journal.append(
        lambda seq, now: ZkReply(seq, now, 1, 7, to.xid, 0, err, to.seq, to.opcode, results=results)
    )


def test_a_read_answered_no_node_is_not_done_the_answered_attempt_is() -> None:
    journal = ZkJournal("n1")
    _reply(journal, _request(journal, EXISTS, "/controller"), NO_NODE)
    _reply(journal, _request(journal, GET_DATA, "/controller"), NO_NODE)
    assert not done_contending(journal)  # the node creates /controller next
    attempt = _request(journal, MULTI, None, (ClientOp(CREATE, path="/controller"),))
    assert not done_contending(journal)  # sent, not answered
    _reply(journal, attempt, 0, (OpResult(-1, -110),))  # lost: NodeExists inside the multi
    assert done_contending(journal)


def test_a_read_answered_with_the_znode_is_done() -> None:
    journal = ZkJournal("n2")
    _reply(journal, _request(journal, GET_DATA, "/brokers/ids"), 0)
    assert not done_contending(journal)  # another path
    read = _request(journal, EXISTS, "/controller")
    assert not done_contending(journal)
    _reply(journal, read, 0)
    assert done_contending(journal)
    assert not done_contending(journal, since=journal.mark())  # a new process: nothing yet


def test_a_multi_read_counts_by_its_controller_result() -> None:
    journal = ZkJournal("n3")
    ops = (ClientOp(GET_DATA, path="/brokers/ids"), ClientOp(GET_DATA, path="/controller"))
    _reply(
        journal, _request(journal, MULTI_READ, None, ops), 0, (OpResult(GET_DATA, 0), OpResult(-1, NO_NODE))
    )
    assert not done_contending(journal)
    _reply(
        journal, _request(journal, MULTI_READ, None, ops), 0, (OpResult(-1, NO_NODE), OpResult(GET_DATA, 0))
    )
    assert done_contending(journal)
