"""The driver's lean pipelined multis (`driver/multiwrite.py`) and kazoo handlers (`driver/kazoo_handler.py`)
against a real ZooKeeper 3.8: the same bytes on the wire as kazoo's own multis, the same znodes and
the same per-op results and errors (NoNode, NodeExists, BadVersion on the fencing check, a partial
failure), and a connection dropped in the middle of a pipelined batch."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError, RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData
from kazoo.protocol.states import KazooState
from kazoo.security import OPEN_ACL_UNSAFE

from harness.zookeeper import ZooKeeperServer
from reference_controller.controller.driver.kazoo_handler import LeanThreadingHandler, PollingThreadingHandler
from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.events import Expire, TopicChange, ZkReconnected
from reference_controller.controller.ports import (
    CheckOp,
    ChildHandler,
    ControllerMovedError,
    CreateOp,
    DeleteOp,
    OpResult,
    SetDataOp,
    ZkCode,
    ZkOp,
)
from tests.integration.controller.helpers import EventSink, wait_for

pytestmark = pytest.mark.integration

HANDLERS: dict[str, Callable[[], Any] | None] = {
    "stock": None,
    "poll": PollingThreadingHandler,
    "lean": LeanThreadingHandler,
}


class _RecordingProxy:
    """Forwards ZooKeeper client connections byte for byte and keeps every client→server frame
    (``(connection number, frame bytes)``, the length prefix excluded); ``drop_after(n)`` closes
    the current connection right after the ``n``-th multi (opcode 14) frame has been forwarded."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.frames: list[tuple[int, bytes]] = []
        self._drop_at: int | None = None
        self._multis = 0
        self._connections = 0
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.dropped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def drop_after(self, multis: int) -> None:
        with self._lock:
            self._drop_at = self._multis + multis

    def multi_bodies(self) -> list[bytes]:
        """Each multi's body (after xid and opcode), in the order sent."""
        return [frame[8:] for _conn, frame in self.frames if _opcode(frame) == 14]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._connections += 1
                number = self._connections
                self._sockets += [client, server]
            threading.Thread(target=self._up, args=(client, server, number), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, number: int) -> None:
        buffered = b""
        try:
            while chunk := client.recv(65536):
                buffered += chunk
                while len(buffered) >= 4:
                    (length,) = struct.unpack_from("!i", buffered)
                    if len(buffered) < 4 + length:
                        break
                    frame, buffered = buffered[4 : 4 + length], buffered[4 + length :]
                    server.sendall(struct.pack("!i", length) + frame)
                    with self._lock:
                        self.frames.append((number, frame))
                        if _opcode(frame) == 14:
                            self._multis += 1
                            drop = self._drop_at is not None and self._multis >= self._drop_at
                        else:
                            drop = False
                        if drop:
                            self._drop_at = None
                    if drop:
                        self.dropped.set()
                        for sock in (client, server):
                            sock.shutdown(socket.SHUT_RDWR)
                        return
        except OSError:
            pass

    @staticmethod
    def _down(server: socket.socket, client: socket.socket) -> None:
        try:
            while chunk := server.recv(65536):
                client.sendall(chunk)
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()


def _opcode(frame: bytes) -> int | None:
    """The opcode of a request frame; None for a ConnectRequest (no xid/opcode header)."""
    if len(frame) < 8:
        return None
    xid, opcode = struct.unpack_from("!ii", frame)
    return opcode if xid > 0 else None


@pytest.fixture
def proxy(zk_server: ZooKeeperServer) -> Iterator[_RecordingProxy]:
    recording = _RecordingProxy(("127.0.0.1", zk_server.port))
    yield recording
    recording.close()


@pytest.fixture
def client_factory(zk_chroot: str) -> Iterator[Callable[..., KazooClient]]:
    made: list[KazooClient] = []

    def make(port: int, handler: str = "stock", chroot: str = "") -> KazooClient:
        if chroot:
            admin = KazooClient(f"127.0.0.1:{port}", timeout=10.0)
            admin.start(timeout=15)
            admin.ensure_path(zk_chroot + chroot)
            admin.stop()
            admin.close()
        factory = HANDLERS[handler]
        client = KazooClient(
            f"127.0.0.1:{port}{zk_chroot}{chroot}", timeout=10.0, handler=factory() if factory else None
        )
        client.start(timeout=15)
        made.append(client)
        return client

    yield make
    for client in made:
        client.stop()
        client.close()


def _kazoo_multi(zk: KazooClient, ops: list[ZkOp]) -> list[Any]:
    """What the driver sent before: kazoo's own records in a kazoo transaction (chrooted by hand,
    as the driver did), committed; kazoo's results (values or exception instances)."""
    chroot = zk.chroot
    records: list[Any] = []
    for op in ops:
        path = chroot + op.path
        if isinstance(op, CreateOp):
            records.append(
                Create(
                    path, op.data, OPEN_ACL_UNSAFE, (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
                )
            )
        elif isinstance(op, SetDataOp):
            records.append(SetData(path, op.data, op.version))
        elif isinstance(op, DeleteOp):
            records.append(Delete(path, op.version))
        else:
            records.append(CheckVersion(path, op.version))
    tx = zk.transaction()
    tx.operations.extend(records)
    return list(tx.commit())


def _tree(zk: KazooClient, path: str) -> dict[str, tuple[bytes | None, int]]:
    """Every znode under ``path``: (data, version)."""
    out: dict[str, tuple[bytes | None, int]] = {}
    for child in sorted(zk.get_children(path)):
        full = f"{path}/{child}"
        data, stat = zk.get(full)
        out[full] = (data, stat.version)
        out.update(_tree(zk, full))
    return out


# sequences of multis covering every op kind, null / empty / non-ASCII data, flags and versions
_SEQUENCE: list[list[ZkOp]] = [
    [CheckOp("/controller_epoch", 0), CreateOp("/t/a", b'{"x":1}')],
    [CheckOp("/controller_epoch", 0), CreateOp("/t/a/null", None)],
    [CheckOp("/controller_epoch", 0), CreateOp("/t/a/empty", b"")],
    [CheckOp("/controller_epoch", 0), CreateOp("/t/\u00e9t\u00e9", "\u00e9".encode())],
    [CreateOp("/t/seq-", b"s", sequential=True), CreateOp("/t/eph", b"e", ephemeral=True)],
    [CheckOp("/controller_epoch", 0), SetDataOp("/t/a", b'{"x":2}', 0)],
    [CheckOp("/controller_epoch", 0), SetDataOp("/t/a/null", None)],
    [CheckOp("/controller_epoch", 0), SetDataOp("/t/a", b"bad version", 7)],  # BADVERSION on the op
    [CheckOp("/controller_epoch", 3), SetDataOp("/t/a", b"moved")],  # BADVERSION on the check
    [CheckOp("/controller_epoch", 0), CreateOp("/t/a", b"exists")],  # NODEEXISTS
    [CheckOp("/controller_epoch", 0), SetDataOp("/t/none", b"x")],  # NONODE
    [
        CheckOp("/controller_epoch", 0),
        CreateOp("/t/b", b"1"),
        SetDataOp("/t/none", b"x"),
        CreateOp("/t/c", b""),
    ],
    [CheckOp("/controller_epoch", 0), DeleteOp("/t/a/empty", 0), DeleteOp("/t/a/null")],
]


def _prepare(zk: KazooClient) -> None:
    zk.create("/controller_epoch", b"1", makepath=True)
    zk.ensure_path("/t")


@pytest.mark.parametrize("handler", ["stock", "lean"])
def test_the_lean_multis_are_kazoos_bytes_and_leave_the_same_znodes(
    proxy: _RecordingProxy, client_factory: Callable[..., KazooClient], handler: str
) -> None:
    kazoo_client = client_factory(proxy.port, "stock", "/kazoo")
    _prepare(kazoo_client)
    kazoo_results = [_kazoo_multi(kazoo_client, ops) for ops in _SEQUENCE]
    kazoo_bodies = proxy.multi_bodies()
    lean_client = client_factory(proxy.port, handler, "/kazoo")  # same chroot: same bytes expected
    kazoo_tree = _tree(kazoo_client, "/t")
    kazoo_client.delete("/t", recursive=True)
    kazoo_client.delete("/controller_epoch")
    _prepare(lean_client)
    port = KazooZkPort(lean_client, EventSink().put)
    lean_results = [port.multi(ops) for ops in _SEQUENCE]
    port.close()
    lean_bodies = proxy.multi_bodies()[len(kazoo_bodies) :]

    assert len(kazoo_bodies) == len(_SEQUENCE)
    assert lean_bodies == kazoo_bodies  # byte for byte, multi by multi, in order
    lean_tree = {path: value for path, value in _tree(lean_client, "/t").items() if "/seq-" not in path}
    assert lean_tree == {path: value for path, value in kazoo_tree.items() if "/seq-" not in path}
    assert lean_tree["/t/a"] == (b'{"x":2}', 1)
    assert "/t/a/empty" not in lean_tree
    assert "/t/b" not in lean_tree  # the partial failure left nothing behind
    # per op: kazoo's exception class ↔ the driver's code, literally
    expected_codes = {
        RolledBackError: ZkCode.RUNTIME_INCONSISTENCY,
        RuntimeInconsistency: ZkCode.RUNTIME_INCONSISTENCY,
        NoNodeError: ZkCode.NONODE,
        NodeExistsError: ZkCode.NODEEXISTS,
    }
    for ops, kazoo_ops, lean_ops in zip(_SEQUENCE, kazoo_results, lean_results, strict=True):
        for op, kazoo_op, lean_op in zip(ops, kazoo_ops, lean_ops, strict=True):
            assert lean_op.op == op
            if isinstance(kazoo_op, Exception):
                code = expected_codes.get(type(kazoo_op), ZkCode(getattr(kazoo_op, "code", 1)))
                assert lean_op.code == code, (op, kazoo_op)
            else:
                assert lean_op.code == ZkCode.OK, (op, kazoo_op)
                if isinstance(op, CreateOp):
                    assert lean_op.created_path is not None
                    assert lean_op.created_path == kazoo_op or op.sequential
                    assert lean_op.created_path.startswith(op.path)
                if isinstance(op, SetDataOp):
                    assert lean_op.stat is not None
                    assert lean_op.stat.version == kazoo_op.version
    partial = lean_results[11]
    assert [r.code for r in partial] == [
        ZkCode.RUNTIME_INCONSISTENCY,  # rolled back (ZooKeeper: 0)
        ZkCode.RUNTIME_INCONSISTENCY,  # rolled back
        ZkCode.NONODE,
        ZkCode.RUNTIME_INCONSISTENCY,  # after the failing op (ZooKeeper: -2)
    ]
    assert [r.code for r in lean_results[8]] == [ZkCode.BADVERSION, ZkCode.RUNTIME_INCONSISTENCY]


@pytest.mark.parametrize("handler", ["stock", "poll", "lean"])
def test_fenced_writes_report_results_and_a_moved_controller_after_the_whole_batch(
    zk_server: ZooKeeperServer, client_factory: Callable[..., KazooClient], handler: str
) -> None:
    zk = client_factory(zk_server.port, handler)
    zk.create("/controller_epoch", b"1")
    zk.create("/p/exists", b"", makepath=True)
    port = KazooZkPort(zk, EventSink().put)
    ops: list[ZkOp] = [CreateOp(f"/p/n{i}", f"{i}".encode()) for i in range(600)]
    ops += [CreateOp("/p/exists", b"x"), SetDataOp("/p/missing", b"x"), SetDataOp("/p/n1", b"y", 0)]
    results = port.fenced(ops, 0)
    assert [r.code for r in results[:600]] == [ZkCode.OK] * 600
    assert [r.created_path for r in results[:3]] == ["/p/n0", "/p/n1", "/p/n2"]
    assert [r.code for r in results[600:]] == [ZkCode.NODEEXISTS, ZkCode.NONODE, ZkCode.OK]
    assert results[602].stat is not None
    assert results[602].stat.version == 1
    assert zk.get("/p/n599")[0] == b"599"
    assert zk.get("/p/n1")[0] == b"y"

    zk.set("/controller_epoch", b"2")  # another controller moved the epoch on
    with pytest.raises(ControllerMovedError, match="Expected zkVersion = 0"):
        port.fenced([SetDataOp(f"/p/n{i}", b"late") for i in range(300)], 0)
    assert zk.get("/p/n0")[0] == b"0", "no fenced write of the moved controller was applied"
    batched = KazooZkPort(zk, EventSink().put, batch_writes=True, batch_size=50)
    with pytest.raises(ControllerMovedError):
        batched.fenced([SetDataOp(f"/p/n{i}", b"late") for i in range(120)], 0)
    assert [r.code for r in batched.fenced([SetDataOp("/p/n0", b"v1"), CreateOp("/p/exists", b"")], 1)] == [
        ZkCode.OK,
        ZkCode.NODEEXISTS,
    ]
    port.close()
    batched.close()


@pytest.mark.parametrize("handler", ["stock", "lean"])
def test_a_connection_dropped_mid_batch_loses_no_write(
    proxy: _RecordingProxy, client_factory: Callable[..., KazooClient], handler: str
) -> None:
    zk = client_factory(proxy.port, handler)
    zk.create("/controller_epoch", b"1")
    zk.ensure_path("/d")
    session = zk.client_id
    port = KazooZkPort(zk, EventSink().put)
    proxy.drop_after(700)
    results: list[OpResult] = port.fenced([CreateOp(f"/d/n{i}", b"v") for i in range(3000)], 0)
    assert proxy.dropped.is_set()
    assert zk.client_id == session
    # a create whose reply was lost with the connection is re-sent and then finds its znode
    assert {r.code for r in results} <= {ZkCode.OK, ZkCode.NODEEXISTS}
    assert sorted(zk.get_children("/d")) == sorted(f"n{i}" for i in range(3000))
    assert [r.code for r in port.fenced([SetDataOp("/d/n0", b"after")], 0)] == [ZkCode.OK]
    port.close()


@pytest.mark.parametrize("handler", ["stock", "lean"])
def test_the_lean_handler_keeps_kazoos_heartbeat_reconnect_watch_and_expiry_behaviour(
    zk_server_factory: Callable[..., ZooKeeperServer], handler: str
) -> None:
    server = zk_server_factory(tick_time_ms=500)  # session timeouts 1–10 s
    states: list[str] = []
    factory = HANDLERS[handler]
    zk = KazooClient(server.connect_string, timeout=4.0, handler=factory() if factory else None)

    def record(state: str) -> bool:
        states.append(state)
        return False

    zk.add_listener(record)
    zk.start(timeout=10)
    try:
        events = EventSink()
        port = KazooZkPort(zk, events.put, clear_and_put=events.clear_and_put)
        zk.create("/controller_epoch", b"1")
        port.register_child_handler(ChildHandler("/brokers/topics", on_child_change=TopicChange()))
        zk.ensure_path("/brokers/topics")
        assert port.get_children("/brokers/topics") == []  # arms the child watch
        zk.create("/brokers/topics/t", b"{}")
        assert events.next() == TopicChange()  # a watch event through the lean connection
        assert "zk_version" in zk.command(b"mntr")  # a four-letter word on its own connection
        session = zk.client_id
        server.pause()  # heartbeats time out through the handler's select: SUSPENDED
        try:
            wait_for(lambda: KazooState.SUSPENDED in states, 10.0, "SUSPENDED")
        finally:
            server.resume()
        wait_for(lambda: zk.state == KazooState.CONNECTED, 10.0, "reconnected")
        assert zk.client_id == session
        assert events.next() == ZkReconnected()
        assert [r.code for r in port.fenced([CreateOp(f"/w{i}", b"") for i in range(300)], 0)] == [
            ZkCode.OK
        ] * 300
        session_id, password = zk.client_id
        killer = KazooClient(server.connect_string, client_id=(session_id, password))
        killer.start(timeout=10)  # same session, then closed: the server ends it, kazoo sees LOST
        killer.stop()
        killer.close()
        wait_for(lambda: KazooState.LOST in states, 20.0, "LOST")
        assert events.cleared == [Expire()]  # Expire put at the head of the queue
        wait_for(lambda: zk.state == KazooState.CONNECTED, 20.0, "a new session")
        assert port.session_id() != session_id
        assert [r.code for r in port.fenced([CreateOp("/w0", b"")], 0)] == [ZkCode.NODEEXISTS]
        port.close()
    finally:
        zk.stop()
        zk.close()
