"""Deleting a chroot's tree (``harness.zookeeper.observer.delete_tree``) against a real ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from harness.zookeeper import ZooKeeperServer, observer
from harness.zookeeper.observer import delete_tree, observer_client
from probes import TxnLogCursor

pytestmark = pytest.mark.integration

PATHS = (
    "brokers/ids/1",
    "brokers/topics/t/partitions/0/state",
    "brokers/topics/t/partitions/1/state",
    "config/topics/t",
    "admin/delete_topics",
    "controller_epoch",
)
#: the root, brokers/{ids/1, topics/t/partitions/{0,1}/state} (10), config/topics/t (3),
#: admin/delete_topics (2), controller_epoch
ZNODES = 1 + 10 + 3 + 2 + 1


@pytest.fixture
def admin(zk_server: ZooKeeperServer) -> Iterator[KazooClient]:
    client = observer_client(zk_server.connect_string)
    client.start(timeout=15.0)
    yield client
    client.stop()
    client.close()


def _tree(client: KazooClient, root: str) -> None:
    for p in PATHS:
        client.ensure_path(f"{root}/{p}")


def test_the_whole_tree_goes_in_one_transaction_ephemerals_of_live_sessions_too(
    zk_server: ZooKeeperServer, zk_chroot: str, admin: KazooClient
) -> None:
    root = f"{zk_chroot}/tree"
    _tree(admin, root)
    other = observer_client(zk_server.connect_string)
    other.start(timeout=15.0)
    try:
        other.create(f"{root}/controller", b"{}", ephemeral=True)  # a node still holding its znode
        cursor = TxnLogCursor.at_end(zk_server.txn_log_dir)
        delete_tree(admin, root)
        assert admin.exists(root) is None
        assert admin.exists(zk_chroot) is not None  # only the tree asked for
        writes = [r for r in cursor.read() if r.op != "createSession"]
        assert [r.op for r in writes] == ["multi"], [r.op for r in writes]
        deleted = [op.path for op in writes[0].ops]
        assert len(set(deleted)) == len(deleted) == ZNODES + 1  # each znode once, the ephemeral too
        assert deleted[-1] == root
        assert deleted.index(f"{root}/brokers/topics") > deleted.index(f"{root}/brokers/topics/t")
    finally:
        other.stop()
        other.close()


def test_a_missing_tree_is_no_error(zk_chroot: str, admin: KazooClient) -> None:
    delete_tree(admin, f"{zk_chroot}/never-made")


def test_a_tree_too_big_for_one_request_is_deleted_znode_by_znode(
    zk_server: ZooKeeperServer, zk_chroot: str, admin: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = f"{zk_chroot}/big"
    _tree(admin, root)
    monkeypatch.setattr(observer, "DELETE_IN_ONE_MULTI", 3)
    cursor = TxnLogCursor.at_end(zk_server.txn_log_dir)
    delete_tree(admin, root)
    assert admin.exists(root) is None
    ops = [r.op for r in cursor.read()]
    assert "multi" not in ops, ops
    assert ops.count("delete") == ZNODES, ops
