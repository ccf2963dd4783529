"""A gate on each node's ZooKeeper link: hold its replies, learn its session (conformance ring, drivers).

Every node of a differential run reaches ZooKeeper through one :class:`LinkGate` placed in front
of its recording proxy (the cluster's ``zk_front`` seam). The gate forwards bytes unchanged, and

- **holds** what ZooKeeper sends to the node while :meth:`LinkGate.hold` is on (buffered in order,
  delivered on :meth:`LinkGate.release`): a node whose link is held sees no watch event. That is
  how a step names the winner of a controller election Kafka leaves open — only the successor
  sees ``/controller`` go — and how a bounce stays invisible to the controller until it is over.
  The node's requests still reach ZooKeeper; only their answers wait.
- **learns the session** the node was granted (id and password, from the ConnectResponse), so
  :func:`close_session` can end it at once: the ``closeSession`` a kill -9 would cause one session
  timeout later, without waiting for it (ZooKeeper logs both the same way).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Coroutine
from typing import Any

from harness.zookeeper.sessions import close_session

__all__ = ["GateLoop", "LinkGate", "close_session"]


class GateLoop:
    """One asyncio loop in a daemon thread for every gate of a cluster."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="zk-gates", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout_s: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=timeout_s)

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        with contextlib.suppress(RuntimeError):
            self.loop.close()


def _connect_response(frame: bytes) -> tuple[int, bytes] | None:
    """(session id, password) of a ConnectResponse body, or None (expired: timeout 0)."""
    if len(frame) < 20:
        return None
    _version, timeout_ms, session = struct.unpack_from(">iiq", frame)
    (length,) = struct.unpack_from(">i", frame, 16)
    if timeout_ms <= 0 or length < 0 or len(frame) < 20 + length:
        return None
    return session, frame[20 : 20 + length]


class LinkGate:
    """Listen on loopback, forward to ``upstream``; hold server→node bytes on demand."""

    def __init__(self, loop: GateLoop, upstream: tuple[str, int], *, held: bool = False) -> None:
        self._loop, self.upstream = loop, upstream
        self._open = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self.sessions: list[tuple[int, bytes]] = []  # every session granted, in order
        self._server: asyncio.Server | None = None
        self.port: int = loop.run(self._start(held))

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.port

    @property
    def session(self) -> tuple[int, bytes] | None:
        return self.sessions[-1] if self.sessions else None

    async def _start(self, held: bool) -> int:
        if not held:
            self._open.set()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    def hold(self) -> None:
        self._loop.loop.call_soon_threadsafe(self._open.clear)

    def release(self) -> None:
        self._loop.loop.call_soon_threadsafe(self._open.set)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(
                self._pump(reader, up_writer, gated=False),
                self._pump(up_reader, writer, gated=True),
                return_exceptions=True,
            )
        finally:
            self._writers -= {writer, up_writer}

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, gated: bool) -> None:
        pending = bytearray()
        first = gated  # the first server frame of a connection is its ConnectResponse
        try:
            while data := await src.read(65536):
                if first:
                    pending += data
                    if len(pending) >= 4 and len(pending) >= 4 + struct.unpack_from(">i", pending)[0]:
                        granted = _connect_response(bytes(pending[4:]))
                        if granted is not None:
                            self.sessions.append(granted)
                        first = False
                if gated:
                    await self._open.wait()
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if gated:
                await self._open.wait()  # a held node learns of the end only on release
            dst.close()

    def close(self) -> None:
        async def _close() -> None:
            self._open.set()
            if self._server is not None:
                self._server.close()
            for w in list(self._writers):
                w.close()

        if self._loop.loop.is_running():
            with contextlib.suppress(Exception):
                self._loop.run(_close())
