"""The one TCP tap over real loopback TCP: it relays both ways unchanged, shows each length-prefixed
frame with its direction before forwarding it, survives lost framing and observers that raise,
and reports how each connection ended."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from harness.wait import wait_for
from probes.tap import FrameSplitter, FramingLost, ProxyLoop, Side, Tap

pytestmark = pytest.mark.unit


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


# --- the splitter -----------------------------------------------------------------------------------


def test_frames_split_across_and_within_chunks() -> None:
    splitter = FrameSplitter(max_bytes=100)
    stream = _frame(b"one") + _frame(b"") + _frame(b"three")
    got = [body for i in range(len(stream)) for body in splitter.feed(stream[i : i + 1])]
    assert got == [b"one", b"", b"three"]
    assert list(splitter.feed(_frame(b"a") + _frame(b"b"))) == [b"a", b"b"]


def test_a_length_no_frame_can_have_loses_the_framing_after_the_frames_before_it() -> None:
    splitter = FrameSplitter(max_bytes=100)
    got: list[bytes] = []
    with pytest.raises(FramingLost) as lost:
        got.extend(splitter.feed(_frame(b"ok") + b"ruok"))
    assert got == [b"ok"], "the frame before the break is not dropped"
    assert lost.value.size == int.from_bytes(b"ruok", "big")
    assert str(lost.value) == f"frame length {lost.value.size} (bytes {b'ruok'.hex()})"
    with pytest.raises(FramingLost, match="frame length -1"):
        list(FrameSplitter(max_bytes=100).feed(b"\xff\xff\xff\xff"))


# --- the tap ------------------------------------------------------------------------------------------


@dataclass
class Recorder:
    """An observer that records what the tap tells it (from the loop thread)."""

    frames: list[tuple[Side, bytes]] = field(default_factory=list)
    lost: list[tuple[Side, bytes, str]] = field(default_factory=list)
    ends: list[tuple[str, str]] = field(default_factory=list)
    raise_on: bytes | None = None

    def frame(self, side: Side, body: bytes) -> None:
        if body == self.raise_on:
            raise RuntimeError("observer bug")
        self.frames.append((side, body))

    def framing_lost(self, side: Side, chunk: bytes, error: Exception) -> None:
        self.lost.append((side, chunk, str(error)))

    def closed(self, by: str, reason: str) -> None:
        self.ends.append((by, reason))


class EchoServer:
    """Echoes every byte back; ``seen`` is what it received (what got through the tap)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        self.seen = bytearray()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                self.seen += data
                conn.sendall(data)


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.listener.close()


def _tap(
    recorders: list[Recorder],
    upstream: tuple[str, int] | None,
    loop: ProxyLoop | None = None,
    connect_timeout_s: float | None = None,
) -> Tap:
    def observe() -> Recorder:
        recorders.append(Recorder(raise_on=b"boom"))
        return recorders[-1]

    return Tap(observe, upstream, max_frame_bytes=1024, loop=loop, connect_timeout_s=connect_timeout_s)


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def test_bytes_pass_unchanged_and_each_frame_is_observed_before_it_is_forwarded(echo: EchoServer) -> None:
    recorders: list[Recorder] = []
    tap = _tap(recorders, echo.address)
    try:
        stream = _frame(b"request-1") + _frame(b"request-2")
        with socket.create_connection(tap.address, timeout=5) as sock:
            sock.sendall(stream[:7])
            sock.sendall(stream[7:])
            assert _recv(sock, len(stream)) == stream
            (rec,) = recorders
            # the echo came back through the tap: its frames were observed before being forwarded
            assert rec.frames[:2] == [("client", b"request-1"), ("client", b"request-2")]
            wait_for(lambda: len(rec.frames) == 4, 10, "the answers' frames")
            assert rec.frames[2:] == [("server", b"request-1"), ("server", b"request-2")]
        wait_for(lambda: rec.ends, 10, "the end of the connection")
        assert rec.ends == [("client", "")]
        assert bytes(echo.seen) == stream
    finally:
        tap.close()


def test_lost_framing_and_a_raising_observer_never_stop_or_alter_traffic(echo: EchoServer) -> None:
    recorders: list[Recorder] = []
    tap = _tap(recorders, echo.address)
    try:
        with socket.create_connection(tap.address, timeout=5) as sock:
            sock.sendall(_frame(b"fine"))
            assert _recv(sock, 8) == _frame(b"fine")
            sock.sendall(b"ruok")  # not framed at all: the framing of both directions is lost
            assert _recv(sock, 4) == b"ruok"
            sock.sendall(_frame(b"after"))  # relayed, no longer split
            assert _recv(sock, 9) == _frame(b"after")
        (rec,) = recorders
        wait_for(lambda: len(rec.lost) == 2 and rec.ends, 10, "both sides' framing lost, and the end")
        assert rec.frames == [("client", b"fine"), ("server", b"fine")]
        assert {(side, chunk) for side, chunk, _ in rec.lost} == {("client", b"ruok"), ("server", b"ruok")}
        assert all(error.startswith("frame length 1920298859") for _, _, error in rec.lost)
        with socket.create_connection(tap.address, timeout=5) as sock:
            sock.sendall(_frame(b"boom"))  # the observer raises on it
            assert _recv(sock, 8) == _frame(b"boom")
        bad = recorders[1]
        wait_for(lambda: len(bad.lost) == 2, 10, "the raising observer's sides marked lost")
        assert [error for _, _, error in bad.lost] == ["observer bug", "observer bug"]
    finally:
        tap.close()


def test_an_unreachable_or_missing_upstream_ends_the_connection_and_says_so() -> None:
    recorders: list[Recorder] = []
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        tap = _tap(recorders, dead.getsockname(), connect_timeout_s=5.0)
        try:
            with socket.create_connection(tap.address, timeout=5) as sock:
                assert sock.recv(1) == b""
            tap.upstream = None
            with socket.create_connection(tap.address, timeout=5) as sock:
                assert sock.recv(1) == b""
        finally:
            tap.close()
    assert [r.ends[0][0] for r in recorders] == ["upstream-unreachable", "upstream-unreachable"]
    assert "ConnectionRefusedError" in recorders[0].ends[0][1]
    assert recorders[1].ends == [("upstream-unreachable", "no upstream")]


def test_taps_share_a_loop_and_drop_connections_cuts_both_ends(echo: EchoServer) -> None:
    loop = ProxyLoop("test-taps")
    recorders: list[Recorder] = []
    first, second = _tap(recorders, echo.address, loop=loop), _tap(recorders, echo.address, loop=loop)
    try:
        with (
            socket.create_connection(first.address, timeout=5) as a,
            socket.create_connection(second.address, timeout=5) as b,
        ):
            for sock in (a, b):
                sock.sendall(_frame(b"x"))
                assert _recv(sock, 5) == _frame(b"x")
            assert first.drop_connections() == 2
            assert a.recv(1) == b"", "the client side is closed"
            b.sendall(_frame(b"y"))
            assert _recv(b, 5) == _frame(b"y"), "the other tap's connection is untouched"
    finally:
        first.close()
        second.close()
        assert loop.loop.is_running(), "a shared loop belongs to its owner"
        loop.close()
    with pytest.raises(OSError), socket.create_connection(first.address, timeout=2):
        pass


def test_closing_the_loop_under_a_live_connection_leaves_no_pending_task(
    echo: EchoServer, caplog: pytest.LogCaptureFixture
) -> None:
    import gc  # noqa: PLC0415

    recorders: list[Recorder] = []
    loop = ProxyLoop("test-close")
    tap = _tap(recorders, echo.address, loop=loop)
    with socket.create_connection(tap.address, timeout=5) as sock:
        sock.sendall(_frame(b"open"))
        assert _recv(sock, 8) == _frame(b"open")  # both pumps are running now
        with caplog.at_level("ERROR", logger="asyncio"):
            loop.close()  # its owner is done: the connection is still open
            del tap
            gc.collect()
    # neither "Task was destroyed but it is pending" nor "Exception in callback ... CancelledError"
    logged = [r.getMessage() for r in caplog.records if r.name == "asyncio" and r.levelname == "ERROR"]
    assert not logged, logged
