"""Agreement: the in-memory ZooKeeper model and KazooZkPort on a real ZooKeeper give the same answers.

A seeded random program of ZkPort operations — creates (ephemeral, sequential, null / empty /
non-empty data), setData and deletes with versions, multis with failing ops, fenced writes with
current and stale epoch versions, reads with handlers registered, handler (un)registration, and
writes by a second session that fire the first session's watches — runs against
`memory_zk.MemoryZooKeeper` and against real ZooKeeper. Every step's outcome (codes, created paths,
data, normalised stats, children) and the events it fired, in order, must be equal. Zxids are not
compared (real ZooKeeper spends zxids on sessions); ephemeral owners are compared as "which session".
The seed is in the test id and in every failure message.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kazoo.client import KazooClient

from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.events import (
    BrokerChange,
    ControllerChange,
    ControllerEvent,
    PartitionModifications,
    Reelect,
    TopicChange,
)
from reference_controller.controller.ports import (
    ChildHandler,
    ControllerMovedError,
    CreateOp,
    DataResult,
    DeleteOp,
    NodeHandler,
    OpResult,
    SetDataOp,
    Stat,
    ZkOp,
    ZkPort,
)
from reference_controller.testing.memory_zk import MemoryZkClient, MemoryZooKeeper
from tests.integration.controller.helpers import EventSink

pytestmark = pytest.mark.integration
EPOCH = "/controller_epoch"
PATHS = ("/a", "/a/b", "/a/c", "/b", "/b/x", "/b/x/y", "/e", "/s")
DATA: tuple[bytes | None, ...] = (None, b"", b"x", b'{"v":1}')
STEPS = 150
Step = tuple[Any, ...]


# ---- the program ------------------------------------------------------------------------------
def random_op(rng: random.Random) -> ZkOp:
    kind = rng.choice(("create", "create", "set", "delete"))
    path = rng.choice(PATHS)
    if kind == "create":
        # sequential children also under /a and /b, whose other children come and go: the
        # sequence number counts child creations, not deletes
        sequential = path == "/s" or (path in ("/a", "/b") and rng.random() < 0.15)
        return CreateOp(
            path + ("/n-" if sequential else ""), rng.choice(DATA), rng.random() < 0.2, sequential
        )
    if kind == "set":
        return SetDataOp(path, rng.choice(DATA), rng.choice((-1, 0, 1, 2)))
    return DeleteOp(path, rng.choice((-1, -1, 0, 1)))


def program(seed: int) -> list[Step]:
    rng = random.Random(seed)
    steps: list[Step] = []
    for _ in range(STEPS):
        r = rng.random()
        if r < 0.25:
            steps.append(("admin", random_op(rng)))
        elif r < 0.40:
            steps.append(("create", random_op(rng)))
        elif r < 0.50:
            steps.append(("multi", [random_op(rng) for _ in range(rng.randint(1, 3))]))
        elif r < 0.62:
            steps.append(("fenced", [random_op(rng) for _ in range(rng.randint(1, 4))], rng.random() < 0.8))
        elif r < 0.67:
            steps.append(("bump_epoch",))
        elif r < 0.85:
            steps.append(("read", rng.choice(("get_data", "exists", "get_children")), rng.sample(PATHS, 2)))
        else:
            steps.append(("handler", rng.choice(("node", "child")), rng.choice(PATHS), rng.random() < 0.75))
    return steps


NODE_EVENTS: dict[str, tuple[ControllerEvent, ControllerEvent, ControllerEvent]] = {
    p: (ControllerChange(), Reelect(), PartitionModifications(p)) for p in PATHS
}
CHILD_EVENTS: dict[str, ControllerEvent] = {
    p: (BrokerChange() if p == "/a" else TopicChange()) for p in PATHS
}


# ---- one side -----------------------------------------------------------------------------------
@dataclass
class Side:
    port: ZkPort
    admin: ZkPort
    events: Callable[[int], list[ControllerEvent]]  # wait for (at least) n events, return them
    epoch_version: int = 0

    def norm_stat(self, stat: Stat | None) -> Any:
        if stat is None:
            return None
        owner = {0: 0, self.port.session_id(): "port", self.admin.session_id(): "admin"}.get(
            stat.ephemeral_owner
        )
        return (stat.version, stat.cversion, stat.num_children, stat.data_length, owner)

    def norm_result(self, r: OpResult) -> Any:
        return (r.code.name, r.created_path, self.norm_stat(r.stat))

    def norm_data(self, r: DataResult) -> Any:
        return (r.path, r.data, self.norm_stat(r.stat))

    def run(self, step: Step) -> Any:
        match step:
            case ("admin", op):
                return self._admin(op)
            case ("create", op) if isinstance(op, CreateOp):
                return self.norm_result(self.port.create(op))
            case ("create", op):
                return [self.norm_result(r) for r in self.port.multi([op])]
            case ("multi", ops):
                return [self.norm_result(r) for r in self.port.multi(ops)]
            case ("fenced", ops, current):
                version = self.epoch_version if current else self.epoch_version + 1  # -1 would match any
                try:
                    return [self.norm_result(r) for r in self.port.fenced(ops, version)]
                except ControllerMovedError as exc:
                    return ("moved", str(exc))
            case ("bump_epoch",):
                (result,) = self.admin.multi([SetDataOp(EPOCH, b"e", self.epoch_version)])
                self.epoch_version += 1
                return self.norm_result(result)
            case ("read", "get_data", paths):
                return [self.norm_data(r) for r in self.port.get_data(paths)]
            case ("read", "exists", paths):
                return [self.norm_stat(self.port.exists(p)) for p in paths]
            case ("read", "get_children", paths):
                return [sorted(c) if c is not None else None for c in map(self.port.get_children, paths)]
            case ("handler", kind, path, register):
                self._handler(kind, path, register)
                return None
        raise AssertionError(f"unknown step {step}")

    def _admin(self, op: ZkOp) -> Any:
        if isinstance(op, CreateOp):
            return self.norm_result(self.admin.create(op))
        return [self.norm_result(r) for r in self.admin.multi([op])]

    def _handler(self, kind: str, path: str, register: bool) -> None:
        if kind == "node" and register:
            create, delete, change = NODE_EVENTS[path]
            self.port.register_node_handler(NodeHandler(path, create, delete, change))
        elif kind == "node":
            self.port.unregister_node_handler(path)
        elif register:
            self.port.register_child_handler(ChildHandler(path, CHILD_EVENTS[path]))
        else:
            self.port.unregister_child_handler(path)


def transcript(
    side: Side, steps: list[Step], expected_events: list[int] | None
) -> list[tuple[Any, list[Any]]]:
    out: list[tuple[Any, list[Any]]] = []
    for i, step in enumerate(steps):
        outcome = side.run(step)
        fired = side.events(expected_events[i] if expected_events is not None else 0)
        out.append((outcome, fired))
    return out


# ---- the two worlds -----------------------------------------------------------------------------
def memory_side() -> Side:
    server = MemoryZooKeeper()
    port, admin = server.client(), server.client()
    admin.create(CreateOp(EPOCH, b"0"))

    def events(_n: int) -> list[ControllerEvent]:
        return port.drain_events()

    assert isinstance(port, MemoryZkClient)
    return Side(port, admin, events)


@pytest.fixture
def real_side(zk_client: KazooClient, zk_connect: str) -> Iterator[Side]:
    sink = EventSink()
    admin_client = KazooClient(zk_connect)
    admin_client.start(timeout=10)
    port = KazooZkPort(zk_client, sink.put, clear_and_put=sink.clear_and_put)
    admin = KazooZkPort(admin_client, lambda _e: None)
    admin.create(CreateOp(EPOCH, b"0"))

    def events(n: int) -> list[ControllerEvent]:
        got = []
        for _ in range(n):
            try:
                got.append(sink.next(2.0))
            except Exception:
                break
        return got

    yield Side(port, admin, events)
    port.close()
    admin.close()
    admin_client.stop()
    admin_client.close()


def agree(steps: list[Step], real: Side, label: str) -> None:
    expected = transcript(memory_side(), steps, None)
    actual = transcript(real, steps, [len(fired) for _, fired in expected])
    for i, (step, want, got) in enumerate(zip(steps, expected, actual, strict=True)):
        assert got == want, f"{label} step {i} {step}:\n memory: {want}\n real:   {got}"
    assert real.events(0) == []


@pytest.mark.parametrize("seed", range(1, 9))
def test_memory_model_agrees_with_real_zookeeper(seed: int, real_side: Side) -> None:
    agree(program(seed), real_side, f"seed {seed}")


def test_fenced_write_whose_op_fails_agrees(real_side: Side) -> None:
    agree([("fenced", [CreateOp("/a", None), CreateOp("/a", b"again"), SetDataOp("/b", b"", 0)], True)],
          real_side, "fenced")  # fmt: skip


def test_sequential_numbering_after_a_sibling_delete_agrees(real_side: Side) -> None:
    steps: list[Step] = [
        ("create", CreateOp("/a", None)), ("create", CreateOp("/s/n-", None, sequential=True)),
        ("create", CreateOp("/s", None)), ("admin", DeleteOp("/a")),
        ("create", CreateOp("/e", b"", sequential=True)),
    ]  # fmt: skip
    agree(steps, real_side, "sequential")


def test_memory_model_agrees_on_watches_and_null_data(real_side: Side) -> None:
    """Watches and null data on their own, so a disagreement there is reported by name."""
    steps: list[Step] = [
        ("handler", "node", "/a", True), ("handler", "child", "/a", True),
        ("read", "exists", ["/a", "/b"]), ("admin", CreateOp("/a", None)),
        ("read", "get_children", ["/a", "/b"]), ("read", "get_data", ["/a", "/b"]),
        ("admin", CreateOp("/a/b", b"")), ("admin", SetDataOp("/a", b"x", 0)), ("read", "get_data", ["/a"]),
        ("multi", [CreateOp("/a/c", b"x", ephemeral=True), CreateOp("/a/c/d", None)]),
        ("multi", [CreateOp("/e", None, ephemeral=True), SetDataOp("/e", b"", 0)]),
        ("read", "get_data", ["/e"]), ("handler", "node", "/a", False), ("read", "get_children", ["/a"]),
        ("admin", DeleteOp("/a/b")), ("admin", SetDataOp("/a", None)),
        ("fenced", [CreateOp("/b", None), DeleteOp("/e")], True), ("fenced", [CreateOp("/b/x", None)], False),
        ("bump_epoch",), ("read", "exists", ["/b", "/b/x", "/e"]),
    ]  # fmt: skip
    agree(steps, real_side, "watches")
