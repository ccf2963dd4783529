"""The in-memory ZooKeeper model's semantics (the agreement test checks them against a real one)."""

from __future__ import annotations

import pytest

from reference_controller.controller.events import BrokerChange, ControllerChange, Reelect
from reference_controller.controller.ports import (
    CheckOp,
    ChildHandler,
    ControllerMovedError,
    CreateOp,
    DeleteOp,
    NodeHandler,
    SetDataOp,
    ZkCode,
)
from reference_controller.testing.memory_zk import MemoryZooKeeper

pytestmark = pytest.mark.unit


def test_versions_zxids_and_sequential_names() -> None:
    zk = MemoryZooKeeper()
    c = zk.client()
    assert c.create(CreateOp("/a", b"x")).ok
    assert c.set_data("/a", b"y").stat is not None
    found = zk.get("/a")
    assert found is not None
    data, stat = found
    assert (data, stat.version, stat.czxid, stat.mzxid) == (b"y", 1, 1, 2)
    r1 = c.create(CreateOp("/a/n_", b"", sequential=True))
    r2 = c.create(CreateOp("/a/n_", b"", sequential=True))
    assert (r1.created_path, r2.created_path) == ("/a/n_0000000000", "/a/n_0000000001")
    c.delete("/a/n_0000000000")
    # ZooKeeper 3.8 numbers by child creations, not by cversion (which also counts the delete)
    assert c.create(CreateOp("/a/n_", b"", sequential=True)).created_path == "/a/n_0000000002"
    parent = zk.get("/a")
    assert parent is not None
    assert parent[1].cversion == 4


def test_error_codes() -> None:
    zk = MemoryZooKeeper()
    c = zk.client()
    assert c.create(CreateOp("/x/y", None)).code == ZkCode.NONODE
    c.create(CreateOp("/x", None))
    assert c.create(CreateOp("/x", None)).code == ZkCode.NODEEXISTS
    c.create(CreateOp("/x/y", None))
    assert c.delete("/x").code == ZkCode.NOTEMPTY
    assert c.set_data("/x", b"", version=5).code == ZkCode.BADVERSION
    c.create(CreateOp("/e", None, ephemeral=True))
    assert c.create(CreateOp("/e/c", None)).code == ZkCode.NOCHILDRENFOREPHEMERALS


def test_multi_is_atomic_and_reports_the_failing_op() -> None:
    zk = MemoryZooKeeper()
    c = zk.client()
    c.create(CreateOp("/epoch", b"0"))
    results = c.multi([CreateOp("/controller", b"1", ephemeral=True), SetDataOp("/epoch", b"1", 3)])
    assert [r.code for r in results] == [ZkCode.RUNTIME_INCONSISTENCY, ZkCode.BADVERSION]
    assert zk.get("/controller") is None
    assert zk.zxid == 1  # failed transactions consume no zxid


def test_fenced_raises_controller_moved_when_the_check_fails() -> None:
    zk = MemoryZooKeeper()
    c = zk.client()
    c.create(CreateOp("/controller_epoch", b"1"))
    assert c.fenced([CreateOp("/a", None)], 0)[0].ok
    c.set_data("/controller_epoch", b"2")
    with pytest.raises(ControllerMovedError):
        c.fenced([CreateOp("/b", None)], 0)
    assert zk.get("/b") is None
    assert [t for t in zk.history if any(isinstance(op, CheckOp) for op in t.ops) and not t.ok] != []


def test_watches_are_one_shot_and_only_set_with_a_handler() -> None:
    zk = MemoryZooKeeper()
    admin, c = zk.client(), zk.client()
    c.exists("/controller")  # no handler: no watch
    admin.create(CreateOp("/controller", b"1", ephemeral=True))
    assert c.drain_events() == []
    c.register_node_handler(NodeHandler("/controller", ControllerChange(), Reelect(), ControllerChange()))
    c.exists("/controller")
    admin.set_data("/controller", b"2")
    admin.set_data("/controller", b"3")
    assert c.drain_events() == [ControllerChange()]
    c.get_data(["/controller"])
    admin.delete("/controller")
    assert c.drain_events() == [Reelect()]


def test_child_watch_and_session_expiry_remove_ephemerals() -> None:
    zk = MemoryZooKeeper()
    admin, broker, ctl = zk.client(), zk.client(), zk.client()
    admin.create(CreateOp("/ids", None))
    broker.create(CreateOp("/ids/1", b"", ephemeral=True))
    ctl.register_child_handler(ChildHandler("/ids", BrokerChange()))
    assert ctl.get_children("/ids") == ["1"]
    old = broker.session
    zk.expire_session(broker)
    assert broker.session != old
    assert zk.get("/ids/1") is None
    assert ctl.drain_events() == [BrokerChange()]


def test_drop_watches_models_a_kazoo_reconnect() -> None:
    zk = MemoryZooKeeper()
    admin, c = zk.client(), zk.client()
    admin.create(CreateOp("/ids", None))
    c.register_child_handler(ChildHandler("/ids", BrokerChange()))
    c.get_children("/ids")
    c.drop_watches()
    admin.create(CreateOp("/ids/1", None))
    assert c.drain_events() == []
    assert admin.multi([DeleteOp("/ids/1"), DeleteOp("/ids")])[0].ok
