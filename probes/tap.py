"""One TCP tap: relay a loopback connection upstream and show each frame to an observer (drivers ring:
read-only observation).

A :class:`Tap` listens on loopback, opens a connection to its ``upstream`` for every connection it
accepts, and pumps bytes both ways, unchanged and in order. On the side it splits each direction
into frames with the one :class:`FrameSplitter` (a 4-byte big-endian length, then the body: the
framing of the Kafka protocol and of ZooKeeper's client protocol alike) and hands every frame,
with its direction, to the connection's observer. The Kafka request decoder
(:mod:`probes.request_proxy`) and the ZooKeeper client-protocol decoder (:mod:`probes.zk_journal`)
are such observers.

Rules every observer can count on:

* **Observe first, forward second.** A chunk's frames are observed before the chunk is forwarded,
  so whoever sees a frame's effect (the reply, a node's reaction) finds it already observed.
* **Nothing alters or stops traffic.** When a direction's framing is lost — a length no frame can
  have (a four-letter word is not framed at all), or an observer that raises — the observer is
  told once, with the chunk that broke it (:meth:`ConnectionObserver.framing_lost`), and that
  direction is forwarded from then on without splitting. Frames before the break are observed.
* **Every connection ends once.** :meth:`ConnectionObserver.closed` names who ended it:
  ``client`` or ``server`` (an orderly end, or ``client (ConnectionResetError)`` …), ``proxy``,
  or ``upstream-unreachable`` (the connection to ``upstream`` failed; nothing was relayed).

Seams: ``upstream`` may be changed at any time (new connections use it; None refuses them);
``listen_port`` may be fixed (0: the kernel chooses, see :mod:`harness.ports`), so a fault proxy
can sit behind a tap or in front of it; :meth:`Tap.drop_connections` cuts every live connection.
Any number of taps share one :class:`ProxyLoop` (an asyncio loop in a daemon thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Literal, Protocol

from probes.errors import ProbeError

__all__ = ["Address", "ConnectionObserver", "FrameSplitter", "FramingLost", "ProxyLoop", "Side", "Tap"]

Address = tuple[str, int]
#: ``client``: bytes from the accepted connection to upstream; ``server``: the answers.
Side = Literal["client", "server"]
_SIZE = struct.Struct(">i")
_READ_BYTES = 65536


class FramingLost(ProbeError):
    """A length prefix no frame can have: ``size`` and the first bytes from it (``head``)."""

    def __init__(self, size: int, head: bytes) -> None:
        super().__init__(f"frame length {size} (bytes {head.hex()})")
        self.size, self.head = size, head


class FrameSplitter:
    """Incremental splitter of a byte stream into the bodies of int32-length-prefixed frames."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Buffer ``data``; the frames now complete, oldest first. Raises :class:`FramingLost` at
        a length that is negative or above ``max_bytes`` (after yielding the frames before it)."""
        self._buf += data
        return self._split()

    def _split(self) -> Iterator[bytes]:
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf)
            if size < 0 or size > self.max_bytes:
                raise FramingLost(size, bytes(self._buf[:8]))
            if len(self._buf) < 4 + size:
                return
            body = bytes(self._buf[4 : 4 + size])
            del self._buf[: 4 + size]
            yield body


class ConnectionObserver(Protocol):
    """What a tap tells about one connection (called from the loop thread only)."""

    def frame(self, side: Side, body: bytes) -> None:
        """One frame's body (without its length prefix)."""
        ...

    def framing_lost(self, side: Side, chunk: bytes, error: Exception) -> None:
        """``side``'s framing is lost in ``chunk``: no more frames from that side."""
        ...

    def closed(self, by: str, reason: str) -> None:
        """The connection ended (see the module docstring for ``by``)."""
        ...


async def _cancel_others() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class ProxyLoop:
    """An asyncio loop in a daemon thread, shared by any number of taps."""

    def __init__(self, name: str = "tap") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout_s: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=timeout_s)

    def close(self) -> None:
        """Cancel what still runs on the loop (connections being pumped), then stop it: a loop
        stopped under pending tasks makes asyncio print "Task was destroyed but it is pending"."""
        if self.loop.is_running():
            with contextlib.suppress(Exception):
                self.run(_cancel_others(), timeout_s=5.0)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        with contextlib.suppress(RuntimeError):
            self.loop.close()


class _Direction:
    """One direction of a connection: its splitter, and whether its framing is lost."""

    def __init__(self, side: Side, observer: ConnectionObserver, max_frame_bytes: int) -> None:
        self.side, self.observer = side, observer
        self.frames = FrameSplitter(max_frame_bytes)
        self.lost = False

    def observe(self, chunk: bytes) -> None:
        if self.lost:
            return
        try:
            for body in self.frames.feed(chunk):
                self.observer.frame(self.side, body)
        except Exception as exc:  # framing lost (or an observer's bug): stop splitting, keep relaying
            self.lost = True
            self.observer.framing_lost(self.side, chunk, exc)


class Tap:
    """Listen on ``listen_host:listen_port``, relay each connection to ``upstream``, observe it.

    ``observe()`` makes the observer of each accepted connection; ``max_frame_bytes`` bounds a
    plausible frame (a larger length means the stream is not this protocol);
    ``connect_timeout_s`` bounds the connection to upstream (None: the OS's own timeout).
    """

    def __init__(
        self,
        observe: Callable[[], ConnectionObserver],
        upstream: Address | None,
        *,
        max_frame_bytes: int,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        loop: ProxyLoop | None = None,
        connect_timeout_s: float | None = None,
    ) -> None:
        self.upstream = upstream
        self._observe, self._max_frame_bytes = observe, max_frame_bytes
        self.connect_timeout_s = connect_timeout_s
        self._own_loop = loop is None
        self._loop = loop or ProxyLoop()
        self._server: asyncio.Server | None = None
        self._live: set[asyncio.StreamWriter] = set()
        self.host = listen_host
        try:
            self.port: int = self._loop.run(self._start(listen_host, listen_port))
        except BaseException:
            if self._own_loop:
                self._loop.close()
            raise

    @property
    def address(self) -> Address:
        return self.host, self.port

    async def _start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._handle, host, port)
        return int(self._server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Python 3.11's start_server asks a finished handler task for its exception without checking
        # whether it was cancelled, and logs the CancelledError: a connection still open when the
        # loop closes (ProxyLoop.close cancels it) ends here instead, quietly.
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        observer = self._observe()
        upstream = self.upstream
        if upstream is None:
            observer.closed("upstream-unreachable", "no upstream")
            writer.close()
            return
        host, port = upstream
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), self.connect_timeout_s
            )
        except (OSError, TimeoutError) as exc:
            observer.closed("upstream-unreachable", f"{host}:{port}: {exc!r}")
            writer.close()
            return
        self._live |= {writer, up_writer}
        ended: list[str] = []
        try:
            await asyncio.gather(
                self._pump(reader, up_writer, _Direction("client", observer, self._max_frame_bytes), ended),
                self._pump(up_reader, writer, _Direction("server", observer, self._max_frame_bytes), ended),
                return_exceptions=True,
            )
        finally:
            self._live -= {writer, up_writer}
            observer.closed(ended[0] if ended else "proxy", "")

    @staticmethod
    async def _pump(
        src: asyncio.StreamReader, dst: asyncio.StreamWriter, direction: _Direction, ended: list[str]
    ) -> None:
        try:
            while data := await src.read(_READ_BYTES):
                direction.observe(data)  # observe first, forward second (see the module docstring)
                dst.write(data)
                await dst.drain()
            ended.append(direction.side)
        except (OSError, asyncio.IncompleteReadError) as exc:
            ended.append(f"{direction.side} ({type(exc).__name__})")
        finally:
            dst.close()

    def drop_connections(self) -> int:
        """Close every live connection on both sides (a connection loss); returns how many ends."""

        async def _drop() -> int:
            writers = list(self._live)
            for w in writers:
                w.close()
            return len(writers)

        return int(self._loop.run(_drop()))

    def close(self) -> None:
        """Stop listening and cut every connection; idempotent."""

        async def _close() -> None:
            if self._server is not None:
                self._server.close()
                self._server = None
            for w in list(self._live):
                w.close()

        if self._loop.loop.is_running():
            with contextlib.suppress(Exception):
                self._loop.run(_close())
        if self._own_loop:
            self._loop.close()
