"""The helpers over the node's ZooKeeper port (ring: unit tests): `expect`, `until_sent` and
`create_recursive`, the last on the in-memory ZooKeeper (whose answers the agreement test holds to
a real ZooKeeper's)."""

from __future__ import annotations

import pytest

from reference_controller.controller.ports import CreateOp, OpResult, SetDataOp, ZkCode
from reference_controller.node.zk_port import NodeZkError, create_recursive, expect, until_sent
from reference_controller.testing.memory_zk import MemoryZooKeeper

pytestmark = pytest.mark.unit
OP = SetDataOp("/a", b"")


def test_expect_passes_ok_and_the_codes_answered_and_raises_the_rest() -> None:
    assert expect(OpResult(OP, ZkCode.OK)).ok
    assert expect(OpResult(OP, ZkCode.NONODE), ZkCode.NONODE).code == ZkCode.NONODE
    with pytest.raises(NodeZkError, match="BADVERSION for /a") as raised:
        expect(OpResult(OP, ZkCode.BADVERSION), ZkCode.NONODE)
    assert raised.value.code == ZkCode.BADVERSION


def test_until_sent_resends_after_connection_losses_only() -> None:
    answers = [ZkCode.CONNECTION_LOSS, ZkCode.OPERATION_TIMEOUT, ZkCode.BADVERSION, ZkCode.OK]
    pauses: list[None] = []
    result = until_sent(lambda: OpResult(OP, answers.pop(0)), lambda: pauses.append(None))
    assert (result.code, len(pauses), answers) == (ZkCode.BADVERSION, 2, [ZkCode.OK])


def test_create_recursive_creates_missing_parents_with_null_data() -> None:
    server = MemoryZooKeeper()
    zk = server.client()
    assert create_recursive(zk, "/a/b/c", b"x").created_path == "/a/b/c"
    parent = server.get("/a/b")
    assert parent is not None
    assert parent[0] is None
    assert create_recursive(zk, "/a/b/c", b"y").code == ZkCode.NODEEXISTS  # left to the caller
    assert create_recursive(zk, "/a/b/d", None).ok  # an existing parent is fine
    zk.create(CreateOp("/e", None, ephemeral=True))
    with pytest.raises(NodeZkError) as raised:  # a parent that cannot be created
        create_recursive(zk, "/e/f/g", None)
    assert raised.value.code == ZkCode.NOCHILDRENFOREPHEMERALS
