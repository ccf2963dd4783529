"""Agreement for the node's port: the in-memory ZooKeeper and `KazooNodeZk` on a real ZooKeeper give
the same answers to everything `NodeZkPort` offers.

A seeded random program of node-port calls — `get`, `exists`, `get_children`, `create`
(ephemeral, sequential, null / empty / non-empty data), `set` with versions, `multi` with failing
ops and null data, and writes by a second session — runs on `memory_zk.MemoryZooKeeper` and on real
ZooKeeper; every step's outcome (codes, created paths, data, normalised stats, children, the code
of a read that raised) must be equal. Then the session: what a closed client answers, and what
its listener hears on a close and on an expiry, with the ephemerals it held. Zxids are not compared
(real ZooKeeper spends zxids on sessions); ephemeral owners are compared as "which session". The
seed is in the test id and in every failure message.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from reference_controller.controller.ports import (
    CheckOp,
    CreateOp,
    DataResult,
    DeleteOp,
    OpResult,
    SetDataOp,
    Stat,
    ZkOp,
)
from reference_controller.node.zk_port import NodeZkError, NodeZkPort, SessionState
from tests.node.zk_worlds import World, memory_world, zookeeper_world

__all__ = ["zookeeper_world"]
pytestmark = pytest.mark.integration
PATHS = ("/a", "/a/b", "/a/c", "/b", "/b/x", "/e", "/s")
DATA: tuple[bytes | None, ...] = (None, b"", b"x", b'{"v":1}')
STEPS = 120
Step = tuple[Any, ...]


# ---- the program ------------------------------------------------------------------------------
def random_op(rng: random.Random) -> ZkOp:
    kind = rng.choice(("create", "create", "set", "delete", "check"))
    path = rng.choice(PATHS)
    if kind == "create":
        sequential = path == "/s" or (path in ("/a", "/b") and rng.random() < 0.15)
        return CreateOp(
            path + ("/n-" if sequential else ""), rng.choice(DATA), rng.random() < 0.2, sequential
        )
    if kind == "set":
        return SetDataOp(path, rng.choice(DATA), rng.choice((-1, 0, 1, 2)))
    if kind == "check":
        return CheckOp(path, rng.choice((-1, 0, 1)))
    return DeleteOp(path, rng.choice((-1, -1, 0, 1)))


def program(seed: int) -> list[Step]:
    rng = random.Random(seed)
    steps: list[Step] = []
    for _ in range(STEPS):
        r = rng.random()
        if r < 0.20:
            steps.append(("observer", [random_op(rng)]))
        elif r < 0.40:
            op = random_op(rng)
            steps.append(("create", op) if isinstance(op, CreateOp) else ("multi", [op]))
        elif r < 0.52:
            steps.append(("set", SetDataOp(rng.choice(PATHS), rng.choice(DATA), rng.choice((-1, 0, 1, 2)))))
        elif r < 0.65:
            steps.append(("multi", [random_op(rng) for _ in range(rng.randint(1, 3))]))
        else:
            steps.append(("read", rng.choice(("get", "exists", "get_children")), rng.choice(PATHS)))
    return steps


# ---- one side -----------------------------------------------------------------------------------
class Normal:
    def __init__(self, world: World) -> None:
        self.world = world

    def stat(self, stat: Stat | None) -> Any:
        if stat is None:
            return None
        owners = {
            0: 0,
            self.world.broker.session_id(): "broker",
            self.world.observer.session_id(): "observer",
        }
        owner = owners.get(stat.ephemeral_owner, "another session")
        return (stat.version, stat.cversion, stat.num_children, stat.data_length, owner)

    def result(self, r: OpResult) -> Any:
        return (r.code.name, r.created_path, self.stat(r.stat))

    def data(self, r: DataResult) -> Any:
        return (r.path, r.data, self.stat(r.stat))


def run(world: World, step: Step) -> Any:
    normal, zk = Normal(world), world.broker
    try:
        match step:
            case ("observer", ops):
                return [normal.result(r) for r in world.observer.multi(ops)]
            case ("create", op):
                return normal.result(zk.create(op))
            case ("set", op):
                return normal.result(zk.set(op))
            case ("multi", ops):
                return [normal.result(r) for r in zk.multi(ops)]
            case ("read", "get", path):
                return normal.data(zk.get(path))
            case ("read", "exists", path):
                return normal.stat(zk.exists(path))
            case ("read", "get_children", path):
                children = zk.get_children(path)
                return None if children is None else sorted(children)
    except NodeZkError as exc:
        return ("raised", exc.code.name)
    raise AssertionError(f"unknown step {step}")


def agree(steps: list[Step], real: World, label: str) -> None:
    memory = memory_world()
    for i, step in enumerate(steps):
        want, got = run(memory, step), run(real, step)
        assert got == want, f"{label} step {i} {step}:\n memory: {want}\n real:   {got}"


@pytest.mark.parametrize("seed", range(1, 7))
def test_the_node_port_agrees_with_real_zookeeper(seed: int, zookeeper_world: World) -> None:
    agree(program(seed), zookeeper_world, f"seed {seed}")


def test_null_data_in_a_multi_and_a_registration_multi_agree(zookeeper_world: World) -> None:
    """The broker registration's shape: multi[create(null, ephemeral), setData @0]."""
    steps: list[Step] = [
        ("multi", [CreateOp("/b", None), CreateOp("/b/x", None, ephemeral=True),
                   SetDataOp("/b/x", b"{}", 0)]),
        ("read", "get", "/b/x"), ("read", "get", "/b"),
        ("multi", [CreateOp("/b/x", None, ephemeral=True), SetDataOp("/b/x", b"{}", 0)]),
        ("multi", [SetDataOp("/b", None, 0), CheckOp("/b", 1)]), ("read", "get", "/b"),
        ("set", SetDataOp("/a", b"", 0)), ("create", CreateOp("/a/b", b"")),
    ]  # fmt: skip
    agree(steps, zookeeper_world, "registration")


# ---- the session ------------------------------------------------------------------------------
def _after_close(world: World) -> list[Any]:
    world.broker.create(CreateOp("/e", b"", ephemeral=True))
    world.broker.create(CreateOp("/a", b"kept"))
    world.close()
    return [
        world.broker.is_closed(),
        SessionState.LOST in world.states,
        world.observer.exists("/e"),
        run(world, ("read", "get", "/a")),
        run(world, ("read", "exists", "/a")),
        run(world, ("read", "get_children", "/")),
        run(world, ("create", CreateOp("/c", None))),
        run(world, ("set", SetDataOp("/a", b""))),
        run(world, ("multi", [CreateOp("/c", None), DeleteOp("/a")])),
    ]


def test_a_closed_client_agrees(zookeeper_world: World) -> None:
    memory = memory_world()
    assert not memory.broker.is_closed()
    assert not zookeeper_world.broker.is_closed()
    want, got = _after_close(memory), _after_close(zookeeper_world)
    assert got == want, f"\n memory: {want}\n real:   {got}"
    assert want[:3] == [True, True, None]


def _across_expiry(world: World, expire: Callable[[], None]) -> list[Any]:
    world.broker.create(CreateOp("/e", b"", ephemeral=True))
    world.broker.create(CreateOp("/a", b"kept"))
    old = world.broker.session_id()
    heard = len(world.states)
    expire()
    return [
        world.states[heard:][-3:],
        world.broker.session_id() != old,
        world.observer.exists("/e"),
        run(world, ("read", "get", "/a")),
        run(world, ("create", CreateOp("/e", b"", ephemeral=True))),
        Normal(world).stat(world.observer.exists("/e")),
    ]


def test_an_expired_session_agrees(zookeeper_world: World) -> None:
    memory = memory_world()
    want = _across_expiry(memory, memory.expire)
    got = _across_expiry(zookeeper_world, zookeeper_world.expire)
    assert got == want, f"\n memory: {want}\n real:   {got}"
    assert want[0] == [SessionState.SUSPENDED, SessionState.LOST, SessionState.CONNECTED]


def test_both_worlds_implement_the_port() -> None:
    """Statically too: mypy checks these assignments against `NodeZkPort`."""
    world = memory_world()
    ports: list[NodeZkPort] = [world.broker, world.observer]
    assert all(not p.is_closed() for p in ports)
