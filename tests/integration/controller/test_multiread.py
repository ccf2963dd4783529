"""``multiRead`` batches of the kazoo driver against a real ZooKeeper 3.8 (and a 3.5-like refusal)."""

from __future__ import annotations

import logging
import socket
import struct
import threading
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from harness.zookeeper import ZooKeeperServer
from reference_controller.controller.driver.multiread import MultiRead, ReadOp
from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.events import PartitionModifications
from reference_controller.controller.ports import DataResult, NodeHandler
from tests.integration.controller.helpers import EventSink

pytestmark = pytest.mark.integration


def _packets_received(server: ZooKeeperServer) -> int:
    for line in server.four_letter("mntr").splitlines():
        key, _, value = line.partition("\t")
        if key == "zk_packets_received":
            return int(value)
    raise AssertionError("mntr has no zk_packets_received")


def _populate(zk: KazooClient, count: int) -> list[str]:
    zk.ensure_path("/s")
    tx = zk.transaction()
    for i in range(count):
        tx.create(f"/s/p{i}", f'{{"leader":{i}}}'.encode())
    tx.commit()
    return [f"/s/p{i}" for i in range(count)]


def test_batched_reads_answer_exactly_like_per_request_reads(
    zk_client: KazooClient, port_factory: Callable[..., KazooZkPort]
) -> None:
    zk_client.create("/a", b"x")
    zk_client.create("/null", None)
    zk_client.create("/empty", b"")
    zk_client.set("/a", b"y")
    paths = ["/a", "/missing", "/null", "/empty", "/a"]
    batched = port_factory().get_data(paths)
    per_request = KazooZkPort(zk_client, EventSink().put, multi_read=False).get_data(paths)
    assert batched == per_request
    assert [r.data for r in batched] == [b"y", None, None, b"", b"y"]
    assert batched[1] == DataResult("/missing", None, None)
    assert batched[0].stat is not None
    assert batched[0].stat.version == 1
    assert batched[2].stat is not None  # null data, existing znode: distinct from missing


def test_many_unwatched_reads_take_a_few_requests_not_one_each(
    zk_server: ZooKeeperServer, zk_client: KazooClient, port: KazooZkPort
) -> None:
    paths = _populate(zk_client, 1200)
    before = _packets_received(zk_server)
    results = port.get_data(paths)
    sent = _packets_received(zk_server) - before
    assert [r.data for r in results] == [f'{{"leader":{i}}}'.encode() for i in range(1200)]
    # 1,200 reads in chunks of 500 = 3 multiRead requests (+ the mntr connection, pings)
    assert sent <= 10, f"{sent} packets for 1,200 batched reads"


def test_a_batch_sets_no_watch_and_watched_paths_still_arm_theirs(
    zk_client: KazooClient, port: KazooZkPort, events: EventSink
) -> None:
    for path in ("/u1", "/u2", "/w"):
        zk_client.create(path, b"0")
    port.register_node_handler(NodeHandler("/w", on_data_change=PartitionModifications("w")))
    port.get_data(["/u1", "/w", "/u2"])
    zk_client.set("/u1", b"1")
    zk_client.set("/u2", b"1")
    zk_client.set("/w", b"1")
    assert events.next() == PartitionModifications("w")
    assert events.drain() == []


def test_get_children_in_a_multiread_request(zk_client: KazooClient) -> None:
    zk_client.ensure_path("/c/x")
    zk_client.ensure_path("/c/y")
    result = zk_client.handler.async_result()
    request = MultiRead(
        [ReadOp("children", zk_client.chroot + "/c"), ReadOp("children", zk_client.chroot + "/nope")]
    )
    zk_client._call(request, result)
    children, missing = result.get(timeout=10)
    assert sorted(children) == ["x", "y"]
    assert type(missing).__name__ == "NoNodeError"


class _RefusingProxy:
    """Forwards a ZooKeeper client connection byte for byte, except that it answers every
    ``multiRead`` (opcode 22) itself with ``UNIMPLEMENTED`` (-6), as a pre-3.6 server does."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.refused = 0
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self._sockets += [client, server]
            pairs = ((self._client_to_server, client, server), (self._pipe, server, client))
            for target, src, dst in pairs:
                thread = threading.Thread(target=target, args=(src, dst), daemon=True)
                thread.start()
                self._threads.append(thread)

    @staticmethod
    def _read_exact(sock: socket.socket, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError
            out += chunk
        return out

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                with self._lock:
                    dst.sendall(chunk)
        except OSError:
            pass

    def _client_to_server(self, client: socket.socket, server: socket.socket) -> None:
        try:
            first = True
            while True:
                (length,) = struct.unpack("!i", self._read_exact(client, 4))
                body = self._read_exact(client, length)
                if not first and len(body) >= 8:
                    xid, opcode = struct.unpack_from("!ii", body)
                    if opcode == 22:
                        self.refused += 1
                        with self._lock:  # a reply frame: ReplyHeader(xid, zxid, err)
                            client.sendall(struct.pack("!iiqi", 16, xid, 0, -6))
                        continue
                first = False
                server.sendall(struct.pack("!i", length) + body)
        except (OSError, ConnectionError):
            pass

    def close(self) -> None:
        self.listener.close()
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def refusing_client(
    zk_server: ZooKeeperServer, zk_chroot: str
) -> Iterator[tuple[KazooClient, _RefusingProxy]]:
    proxy = _RefusingProxy(("127.0.0.1", zk_server.port))
    client = KazooClient(f"127.0.0.1:{proxy.port}{zk_chroot}")
    client.start(timeout=15)
    yield client, proxy
    client.stop()
    client.close()
    proxy.close()


def test_a_server_without_multiread_gets_per_request_reads_logged_once(
    refusing_client: tuple[KazooClient, _RefusingProxy], caplog: pytest.LogCaptureFixture
) -> None:
    client, proxy = refusing_client
    paths = _populate(client, 30)
    port = KazooZkPort(client, EventSink().put)
    with caplog.at_level(logging.INFO, logger="kafka.zookeeper.ZooKeeperClient"):
        first = port.get_data([*paths, "/gone"])
        second = port.get_data(paths)
    assert [r.data for r in first[:-1]] == [f'{{"leader":{i}}}'.encode() for i in range(30)]
    assert first[-1] == DataResult("/gone", None, None)
    assert second == first[:-1]
    assert proxy.refused == 1, "the refusal is remembered: one multiRead attempt, then per-request reads"
    notes = [r for r in caplog.records if "multiRead" in r.getMessage()]
    assert len(notes) == 1
    assert notes[0].levelno == logging.INFO
    port.close()
