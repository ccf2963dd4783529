"""Ending a session from outside its client, against a real ZooKeeper server."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient, KazooState

from harness.zookeeper import ZooKeeperServer
from harness.zookeeper.sessions import close_session, end_session, server_password

pytestmark = pytest.mark.integration


@pytest.fixture
def owner(zk_server: ZooKeeperServer, zk_chroot: str) -> Iterator[KazooClient]:
    """A client with a 30 s session holding an ephemeral znode, ``<chroot>/mine``."""
    client = KazooClient(hosts=zk_server.connect_string, timeout=30.0)
    client.start(timeout=15.0)
    client.create(f"{zk_chroot}/mine", b"x", ephemeral=True)
    yield client
    client.stop()
    client.close()


def _observer(zk_server: ZooKeeperServer) -> KazooClient:
    client = KazooClient(hosts=zk_server.connect_string, timeout=10.0)
    client.start(timeout=15.0)
    return client


def test_the_derived_password_is_the_one_the_server_handed_out(zk_server: ZooKeeperServer) -> None:
    clients = [_observer(zk_server) for _ in range(5)]
    try:
        for client in clients:
            session_id, password = client.client_id
            assert len(password) == 16
            assert server_password(session_id) == password, hex(session_id)
            # the transaction log and kazoo's ZnodeStat give the id signed; the same password
            signed = session_id - (1 << 64) if session_id >= 1 << 63 else session_id
            assert server_password(signed) == password
    finally:
        for client in clients:
            client.stop()
            client.close()


def test_ending_a_session_removes_its_ephemerals_and_its_owner_loses_it(
    zk_server: ZooKeeperServer, zk_chroot: str, owner: KazooClient
) -> None:
    lost = threading.Event()
    owner.add_listener(lambda state: lost.set() if state == KazooState.LOST else None)
    watcher = _observer(zk_server)
    try:
        stat = watcher.exists(f"{zk_chroot}/mine")
        assert stat is not None
        assert stat.ephemeralOwner == owner.client_id[0]

        assert end_session(zk_server.connect_string, stat.ephemeralOwner) is True

        # closeSession is answered after its transaction is applied: the ephemeral is gone now
        assert watcher.exists(f"{zk_chroot}/mine") is None
        assert lost.wait(20.0), "the session's own client was never told its session is gone"
        # ended once, it cannot be ended again
        assert end_session(zk_server.connect_string, stat.ephemeralOwner) is False
    finally:
        watcher.stop()
        watcher.close()


def test_a_wrong_password_ends_nothing(
    zk_server: ZooKeeperServer, zk_chroot: str, owner: KazooClient
) -> None:
    session_id = owner.client_id[0]
    assert close_session(zk_server.connect_string, (session_id, b"\x00" * 16)) is False
    assert owner.exists(f"{zk_chroot}/mine") is not None
    assert owner.state == KazooState.CONNECTED


def test_an_unreachable_server_ends_nothing_and_does_not_hang(owner: KazooClient) -> None:
    assert close_session("127.0.0.1:1", (owner.client_id[0], b"\x00" * 16), timeout_s=2.0) is False
