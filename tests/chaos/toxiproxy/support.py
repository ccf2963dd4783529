"""Real TCP peers and raw-HTTP helpers for the Toxiproxy tests (test tooling).

Upstream servers run in threads on 127.0.0.1: an echo server, and a sender that writes a payload
and closes. Clients are plain blocking sockets with deadlines. Raw HTTP (for routes and error
codes the ``toxiproxy`` client does not expose) goes through ``requests``, the client's own
dependency.
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import requests

Handler = Callable[[socket.socket], None]


class TcpServer:
    """A loopback TCP server running ``handler(conn)`` in a thread per connection."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(256)
        self.port = int(self._sock.getsockname()[1])
        self.accepted = 0
        self.received: list[bytes] = []  # per finished connection, for handlers that record
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self._acceptor.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self.accepted += 1
                self._conns.append(conn)
                thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            self._handler(conn)
        with contextlib.suppress(OSError):
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = list(self._conns)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._acceptor.join(5)
        for thread in self._threads:
            thread.join(5)


def echo(conn: socket.socket) -> None:
    while data := conn.recv(65536):
        conn.sendall(data)


def sender(payload: bytes) -> Handler:
    """Write ``payload`` at once, then close."""

    def handle(conn: socket.socket) -> None:
        conn.sendall(payload)

    return handle


def recorder(server_ref: list[TcpServer]) -> Handler:
    """Read until EOF or reset; append what arrived to ``server.received``."""

    def handle(conn: socket.socket) -> None:
        got = bytearray()
        with contextlib.suppress(OSError):
            while data := conn.recv(65536):
                got += data
        server_ref[0].received.append(bytes(got))

    return handle


@contextlib.contextmanager
def serving(handler: Handler) -> Iterator[TcpServer]:
    server = TcpServer(handler)
    try:
        yield server
    finally:
        server.close()


# --- clients ------------------------------------------------------------------------------------


def host_port(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return host.strip("[]"), int(port)


@contextlib.contextmanager
def connect(listen: str, timeout_s: float = 10.0) -> Iterator[socket.socket]:
    sock = socket.create_connection(host_port(listen), timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        yield sock
    finally:
        sock.close()


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        data = sock.recv(size - len(got))
        if not data:
            raise EOFError(f"EOF after {len(got)} of {size} bytes")
        got += data
    return bytes(got)


def round_trip_s(sock: socket.socket, payload: bytes = b"ping") -> float:
    started = time.monotonic()
    sock.sendall(payload)
    assert recv_exactly(sock, len(payload)) == payload
    return time.monotonic() - started


def median_round_trip_s(sock: socket.socket, count: int = 15) -> float:
    return statistics.median(round_trip_s(sock) for _ in range(count))


@dataclass(frozen=True)
class Outcome:
    """How a read ended: ``data`` read before ``end`` ("eof", "reset", "timeout") at ``after_s``."""

    data: bytes
    end: str
    after_s: float


def read_until_end(sock: socket.socket, deadline_s: float) -> Outcome:
    """Read everything until EOF, a reset or ``deadline_s`` (seconds from now)."""
    started = time.monotonic()
    got = bytearray()
    while True:
        left = deadline_s - (time.monotonic() - started)
        if left <= 0:
            return Outcome(bytes(got), "timeout", time.monotonic() - started)
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return Outcome(bytes(got), "timeout", time.monotonic() - started)
        except ConnectionResetError:
            return Outcome(bytes(got), "reset", time.monotonic() - started)
        if not data:
            return Outcome(bytes(got), "eof", time.monotonic() - started)
        got += data


def wait_for(check: Callable[[], bool], deadline_s: float, what: str) -> None:
    end = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline_s}s: {what}")
        time.sleep(0.01)


# --- raw HTTP -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Api:
    """Raw HTTP to the server, for what the ``toxiproxy`` client does not expose."""

    url: str

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        data = body if isinstance(body, bytes | str) or body is None else None
        json_body = None if data is not None or body is None else body
        return requests.request(method, self.url + path, data=data, json=json_body, timeout=15, **kwargs)
