"""Chunks, channels and toxic stubs: the plumbing of one link direction (ring: drivers, asyncio).

Mirrors upstream's ``stream/io_chan.go`` and ``toxics/toxic.go``:

* a :class:`Chunk` is what one ``read`` returned (up to 32 KiB) plus the time it was read;
* a :class:`Channel` is a Go channel: bounded FIFO, ``close`` wakes readers, who then get ``None``;
* a :class:`Stub` is one toxic's place in a link: an input channel, an output channel, the task
  running the toxic, and per-connection state. Interrupting a stub (to add, update or remove a
  toxic) cancels its task; the chunk the toxic held (``pending``) is forwarded, never dropped —
  upstream toxics forward their in-flight chunk when interrupted.

Cancellation is safe at every ``await`` here: :meth:`Channel.get` removes an item and
:meth:`Channel.put` appends one only after its last ``await``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from chaos.toxiproxy.model import ToxicSpec

READ_SIZE = 32 * 1024  # io.Copy's buffer: the largest chunk


@dataclass
class Chunk:
    data: bytes
    timestamp: float  # loop time when read


class Channel:
    """A Go-like channel of chunks with ``capacity`` slots (upstream's unbuffered ones get 1)."""

    def __init__(self, capacity: int = 0) -> None:
        self._items: deque[Chunk] = deque()
        self._capacity = max(1, capacity)
        self._closed = False
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._items)

    async def get(self) -> Chunk | None:
        """The next chunk; ``None`` once the channel is closed and drained."""
        while not self._items:
            if self._closed:
                return None
            await self._wait()
        item = self._items.popleft()
        self._wake()
        return item

    def get_nowait(self) -> Chunk | None:
        if not self._items:
            return None
        item = self._items.popleft()
        self._wake()
        return item

    async def put(self, item: Chunk) -> None:
        """Append ``item`` when there is room; dropped if the channel is closed (the link is gone)."""
        while len(self._items) >= self._capacity and not self._closed:
            await self._wait()
        if not self._closed:
            self._items.append(item)
            self._wake()

    def push(self, item: Chunk) -> None:
        """Append now even past capacity: for chunks flushed by an interrupt, which must keep
        their place in the stream without making the API call wait for a slow toxic downstream."""
        if not self._closed:
            self._items.append(item)
            self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    async def _wait(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


Pipe = Callable[["Stub", ToxicSpec], Coroutine[Any, Any, None]]


class Stub:
    """One toxic's slot in one link: channels, running task, state, held chunk."""

    def __init__(self, input_: Channel, output: Channel, rng: random.Random) -> None:
        self.input = input_
        self.output = output
        self.state: dict[str, int] = {}
        self.pending: Chunk | None = None
        self.closed = False
        self.task: asyncio.Task[None] | None = None
        self.uninterruptible = False  # set by a toxic whose current wait upstream cannot interrupt
        self.rng = rng

    def run(self, toxic: ToxicSpec, pipe: Pipe, noop: Pipe) -> None:
        """Start the toxic, or a noop with probability ``1 - toxicity`` (rolled now, per stub)."""
        self.uninterruptible = False
        chosen = pipe if self.rng.random() < toxic.toxicity else noop
        self.task = asyncio.get_running_loop().create_task(chosen(self, toxic))

    async def forward(self, chunk: Chunk) -> None:
        """Send ``chunk`` on; while it waits for room it counts as held (``pending``)."""
        self.pending = chunk
        await self.output.put(chunk)
        self.pending = None

    def ended(self) -> bool:
        return self.closed

    def close(self) -> None:
        """Close the output: everything after this stub sees the end of the stream."""
        if not self.closed:
            self.closed = True
            self.output.close()

    async def interrupt(self, *, flush: bool = True) -> bool:
        """Stop the running toxic and flush what it held; False if the stub is already closed.

        With ``flush=False`` the held chunk stays in ``pending`` for the caller to place.
        """
        if self.closed:
            return False
        task, self.task = self.task, None
        if task is not None:
            if not self.uninterruptible:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.ended():  # the toxic closed the stub before the interrupt reached it
            return False
        if flush:
            self.flush_pending()
        return True

    def flush_pending(self) -> None:
        chunk, self.pending = self.pending, None
        if chunk is not None:
            self.output.push(chunk)

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
