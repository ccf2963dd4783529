"""The transaction-log history read back from a real ZooKeeper 3.8 equals, op for op, the writes
a client made — successful ops exactly, failed ops and multis as their error codes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.serialization import Create
from kazoo.security import OPEN_ACL_UNSAFE

from harness.pytest_plugin import ServerFactory
from harness.zookeeper import ZooKeeperServer
from probes import (
    ChrootView,
    SessionNodeMap,
    TxnLogCursor,
    TxnOp,
    list_log_files,
    read_broker,
    read_txn_log,
    scan_log_file,
)

pytestmark = pytest.mark.integration

EPHEMERAL_FLAG = 1  # CreateMode.EPHEMERAL


def shape(op: TxnOp) -> tuple[object, ...]:
    """What a test wrote, as far as the log records it."""
    if op.op == "multi":
        return ("multi", tuple(shape(o) for o in op.ops))
    if op.op == "error":
        return ("error", op.error)
    if op.op.startswith("create") and op.op != "createSession":
        return (op.op, op.path, op.data, op.ephemeral)
    if op.op == "setData":
        return ("setData", op.path, op.data, op.version)
    if op.op == "check":
        return ("check", op.path, op.version)
    if op.op == "closeSession":
        return ("closeSession", tuple(sorted(op.closed_paths or ())))
    return (op.op,) if op.path is None else (op.op, op.path)


def create_null_then_set(client: KazooClient, path: str, data: bytes, *, ephemeral: bool) -> None:
    """Kafka's ``CheckedEphemeral`` multi: create with *null* data, then setData at version 0.

    kazoo's ``transaction().create`` refuses ``None`` although the wire format allows it, so
    the Create op is added directly (with the chroot prefix kazoo would add).
    """
    t = client.transaction()
    t._add(Create(client.chroot + path, None, OPEN_ACL_UNSAFE, EPHEMERAL_FLAG if ephemeral else 0))
    t.set_data(path, data, 0)
    results = t.commit()
    assert not [r for r in results if isinstance(r, Exception)], results


@pytest.fixture
def make_client(zk_connect: str) -> Iterator[list[KazooClient]]:
    """Extra sessions on this test's chroot (stopped at the end if the test did not)."""
    clients: list[KazooClient] = []
    yield clients
    for c in clients:
        c.stop()
        c.close()


def new_client(connect: str, clients: list[KazooClient]) -> KazooClient:
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=15.0)
    clients.append(client)
    return client


def test_history_equals_the_writes_op_for_op(
    zk_server: ZooKeeperServer,
    zk_chroot: str,
    zk_connect: str,
    zk_client: KazooClient,
    make_client: list[KazooClient],
) -> None:
    cursor = TxnLogCursor.at_end(zk_server.txn_log_dir)
    zk, me = zk_client, zk_client.client_id[0]
    zk.create("/a", b"1")
    zk.create("/a/null", None)
    zk.create("/a/empty", b"")
    stat1 = zk.set("/a", b"2")
    stat2 = zk.set("/a", b"3", version=1)
    seq = zk.create("/a/seq-", b"s", sequence=True)
    ok = zk.transaction()
    ok.create("/m", b"x")
    ok.set_data("/m", b"y")
    ok.check("/m", 1)
    ok.delete("/m")
    assert not [r for r in ok.commit() if isinstance(r, Exception)]
    failing = zk.transaction()
    failing.create("/f", b"")
    failing.check("/a", 99)
    failing.set_data("/a", b"z")
    told = [type(r).__name__ for r in failing.commit()]
    assert told == ["RolledBackError", "BadVersionError", "RuntimeInconsistency"]
    with pytest.raises(NodeExistsError):
        zk.create("/a", b"dup")
    with pytest.raises(BadVersionError):
        zk.set("/a", b"bad", version=99)
    with pytest.raises(NoNodeError):
        zk.delete("/nope")
    zk.get("/a")  # reads are never logged
    zk.delete("/a/empty")
    create_null_then_set(zk, "/b", b"reg", ephemeral=True)
    zk.create("/e1", b"one", ephemeral=True)
    other_client = new_client(zk_connect, make_client)
    other = other_client.client_id[0]
    other_client.create("/e2", b"two", ephemeral=True)
    eseq = other_client.create("/a/eseq-", b"", ephemeral=True, sequence=True)
    other_client.stop()

    records = cursor.read_until(lambda r: r.op == "closeSession" and r.session_id == other)
    view = ChrootView(zk_chroot, frozenset({me, other})).filter(records)

    assert [(r.session_id, shape(r.txn)) for r in view] == [
        (me, ("create", "/a", b"1", False)),
        (me, ("create", "/a/null", None, False)),
        (me, ("create", "/a/empty", b"", False)),
        (me, ("setData", "/a", b"2", 1)),
        (me, ("setData", "/a", b"3", 2)),
        (me, ("create", seq, b"s", False)),
        (
            me,
            (
                "multi",
                (
                    ("create", "/m", b"x", False),
                    ("setData", "/m", b"y", 1),
                    ("check", "/m", 1),
                    ("delete", "/m"),
                ),
            ),
        ),
        (me, ("multi", (("error", 0), ("error", -103), ("error", -2)))),
        (me, ("error", -110)),
        (me, ("error", -103)),
        (me, ("error", -101)),
        (me, ("delete", "/a/empty")),
        (me, ("multi", (("create", "/b", None, True), ("setData", "/b", b"reg", 1)))),
        (me, ("create", "/e1", b"one", True)),
        (other, ("createSession",)),
        (other, ("create", "/e2", b"two", True)),
        (other, ("create", eseq, b"", True)),
        (other, ("closeSession", tuple(sorted(["/e2", eseq])))),
    ]
    zxids = [r.zxid for r in records]
    assert zxids == sorted(set(zxids)), "strictly increasing zxids"
    assert (view[3].zxid, view[4].zxid) == (stat1.mzxid, stat2.mzxid)
    assert view[5].txn.looks_sequential
    assert not view[0].txn.looks_sequential
    failed_multi = view[7]
    assert failed_multi.failed
    assert failed_multi.error_codes == (0, -103, -2)
    prepared = failed_multi.ops[0].attempted  # logged by ZooKeeper, never applied
    assert prepared is not None
    assert (prepared.op, prepared.path, prepared.data) == ("create", "/f", b"")
    my_cxids = [r.cxid for r in view if r.session_id == me]
    assert my_cxids == sorted(my_cxids)


def test_acknowledged_writes_are_already_in_the_log(
    zk_server: ZooKeeperServer, zk_client: KazooClient
) -> None:
    """ZooKeeper flushes the log before it replies, so no polling is needed after a write."""
    zk_client.create("/v", b"")
    me = zk_client.client_id[0]
    cursor = TxnLogCursor.at_end(zk_server.txn_log_dir)
    for i in range(100):
        stat = zk_client.set("/v", b"%d" % i)
        # The server is shared: other tests' sessions may expire in between (closeSession records).
        mine = [(r.zxid, r.data) for r in cursor.read() if r.session_id == me]
        assert mine == [(stat.mzxid, b"%d" % i)]


def test_cursor_reads_everything_in_order_across_log_rollover(zk_server_factory: ServerFactory) -> None:
    server = zk_server_factory(snap_count=10)  # ZooKeeper rolls after a random 5..10 txns
    cursor = TxnLogCursor.at_start(server.txn_log_dir)
    client = KazooClient(hosts=server.connect_string, timeout=10.0)
    client.start(timeout=15.0)
    read = []
    try:
        for i in range(60):
            client.create(f"/n{i}", b"%d" % i)
            if i % 7 == 0:
                read += cursor.read()
        read += cursor.read()
    finally:
        client.stop()
        client.close()
    files = list_log_files(server.txn_log_dir)
    assert len(files) >= 6
    assert [r.path for r in read if r.op == "create"] == [f"/n{i}" for i in range(60)]
    zxids = [r.zxid for r in read]
    assert zxids == list(range(1, len(read) + 1)), "a private server: every zxid, none twice"
    for f in files:  # each file starts with the zxid in its name
        assert scan_log_file(f.path, final=True).records[0].zxid == f.first_zxid
    assert read_txn_log(server.txn_log_dir)[: len(read)] == read


def test_cursor_survives_a_zookeeper_kill_and_restart(zk_server_factory: ServerFactory) -> None:
    """Acknowledged writes survive SIGKILL; the restarted server writes a new log file."""
    server = zk_server_factory()
    cursor = TxnLogCursor.at_start(server.txn_log_dir)
    for path in ("/before-kill", "/after-restart"):
        client = KazooClient(hosts=server.connect_string, timeout=10.0)
        client.start(timeout=15.0)
        client.create(path, b"")
        if path == "/before-kill":
            server.kill()
            client.stop()
            server.start()
        else:
            client.stop()
        client.close()
    records = cursor.read()
    assert [r.path for r in records if r.op == "create"] == ["/before-kill", "/after-restart"]
    assert len(list_log_files(server.txn_log_dir)) == 2


def test_session_close_lists_its_ephemerals_and_maps_sessions_to_brokers(
    zk_server: ZooKeeperServer,
    zk_chroot: str,
    zk_connect: str,
    zk_client: KazooClient,
    make_client: list[KazooClient],
) -> None:
    zk_client.ensure_path("/brokers/ids")
    cursor = TxnLogCursor.at_end(zk_server.txn_log_dir)
    broker1, broker2 = new_client(zk_connect, make_client), new_client(zk_connect, make_client)
    create_null_then_set(broker1, "/brokers/ids/1", b'{"version":4}', ephemeral=True)
    create_null_then_set(broker2, "/brokers/ids/2", b'{"version":4}', ephemeral=True)
    broker1.create("/controller", b'{"version":1,"brokerid":1,"timestamp":"1"}', ephemeral=True)
    s1, s2 = broker1.client_id[0], broker2.client_id[0]
    registration = read_broker(zk_client, 2)
    assert registration is not None
    assert registration.stat.ephemeral_owner == s2
    broker1.stop()

    records = cursor.read_until(lambda r: r.op == "closeSession" and r.session_id == s1)
    close = next(r for r in ChrootView(zk_chroot).filter(records) if r.op == "closeSession")
    assert sorted(close.closed_paths or ()) == ["/brokers/ids/1", "/controller"]
    sessions = SessionNodeMap.from_records(records)
    assert (sessions.broker_of(s1), sessions.broker_of(s2)) == (1, 2)
    assert sessions.sessions_of(1, chroot=zk_chroot) == (s1,)
    assert [role.role for role in sessions.session(s1).roles] == ["broker", "controller"]
    assert sessions.session(s1).closed_zxid == close.zxid
    assert sessions.session(s1).live_ephemerals == frozenset()
    assert sessions.ephemeral_owner(f"{zk_chroot}/brokers/ids/2") == s2
    assert sessions.ephemeral_owner(f"{zk_chroot}/controller") is None


def test_whole_log_of_the_shared_server_reads_in_zxid_order(
    zk_server: ZooKeeperServer, zk_client: KazooClient
) -> None:
    zk_client.create("/x", b"x")
    records = read_txn_log(zk_server.txn_log_dir)
    assert records, "the log is never empty once a test wrote"
    zxids = [r.zxid for r in records]
    assert zxids == sorted(set(zxids))
