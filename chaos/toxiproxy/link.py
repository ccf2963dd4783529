"""Links and connections: client ⇄ proxy ⇄ upstream through chains of toxics (ring: drivers).

A proxied connection has two sockets (client, upstream) and two :class:`Link` s: ``upstream``
(client → server) and ``downstream`` (server → client). A link is::

    reader ─▶ [noop] ─▶ [toxic 1] ─▶ … ─▶ writer
    (source socket)                    (dest socket)

as in upstream's ``link.go``. The hidden noop stub at the head lets the first real toxic be
removed like any other. When a link's chain ends, its writer closes the destination socket (a full
close, as upstream: there is no half-close through Toxiproxy); the other link then reads EOF from
that socket and ends too. Chain edits on a live link follow upstream's ``AddToxic`` /
``UpdateToxic`` / ``RemoveToxic``: interrupt the affected stubs, rewire the channels, restart them
(each restart rolls ``toxicity`` again, as upstream's ``Run`` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from collections.abc import Callable

from chaos.toxiproxy.model import TOXIC_TYPES, Stream, ToxicSpec
from chaos.toxiproxy.stream import READ_SIZE, Channel, Chunk, Stub
from chaos.toxiproxy.toxics import CLOSES_ON_REMOVE, PIPES, noop

NOOP = ToxicSpec("", "noop", "downstream", 1.0, {})


def _buffer(toxic: ToxicSpec) -> int:
    return TOXIC_TYPES[toxic.type].buffer_size


class Link:
    """One direction of one connection."""

    def __init__(self, direction: Stream, chain: list[ToxicSpec], rng: random.Random) -> None:
        self.direction = direction
        self.rng = rng
        self.specs = [NOOP, *chain]
        self.input = Channel()
        self.stubs: list[Stub] = []
        last = self.input
        for i in range(len(self.specs)):
            nxt = Channel(_buffer(self.specs[i + 1])) if i + 1 < len(self.specs) else Channel()
            self.stubs.append(Stub(last, nxt, rng))
            last = nxt
        self.output = last
        self.tasks: list[asyncio.Task[None]] = []
        self.done = asyncio.get_running_loop().create_future()

    def start(self, source: asyncio.StreamReader, dest: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        self.tasks.append(loop.create_task(self._read(source)))
        for stub, spec in zip(self.stubs, self.specs, strict=True):
            if TOXIC_TYPES[spec.type].stateful:
                stub.state = {}
            self._run(stub, spec)
        self.tasks.append(loop.create_task(self._write(dest)))

    def _run(self, stub: Stub, spec: ToxicSpec) -> None:
        stub.run(spec, PIPES[spec.type], noop)

    async def _read(self, source: asyncio.StreamReader) -> None:
        loop = asyncio.get_running_loop()
        try:
            while data := await source.read(READ_SIZE):
                await self.input.put(Chunk(data, loop.time()))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.input.close()

    async def _write(self, dest: asyncio.StreamWriter) -> None:
        try:
            while (chunk := await self.output.get()) is not None:
                if dest.is_closing():
                    break
                dest.write(chunk.data)
                await dest.drain()
        except OSError:
            pass
        finally:
            self.output.close()  # anything still flowing is dropped, like writes to a dead socket
            dest.close()
            if not self.done.done():
                self.done.set_result(None)

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()
        for stub in self.stubs:
            stub.cancel()

    # --- chain edits (the collection holds its lock around these) --------------------------------

    async def add_toxic(self, toxic: ToxicSpec) -> None:
        last = self.stubs[-1]
        new_input = Channel(_buffer(toxic))
        stub = Stub(new_input, last.output, self.rng)
        self.stubs.append(stub)
        self.specs.append(toxic)
        if await last.interrupt():
            last.output = new_input
            if TOXIC_TYPES[toxic.type].stateful:
                stub.state = {}
            self._run(stub, toxic)
            self._run(last, self.specs[-2])
        else:  # the link is closing: keep the new stub closed too
            stub.output = new_input
            stub.close()

    async def update_toxic(self, index: int, toxic: ToxicSpec) -> None:
        self.specs[index] = toxic
        stub = self.stubs[index]
        if await stub.interrupt():
            self._run(stub, toxic)

    async def remove_toxic(self, index: int) -> None:
        stub, prev = self.stubs[index], self.stubs[index - 1]
        toxic = self.specs[index]
        if not await stub.interrupt():
            del self.stubs[index]  # a closing link; keep indexes in step with the collection
            del self.specs[index]
            return
        if toxic.type in CLOSES_ON_REMOVE:
            stub.close()  # upstream's Cleanup: removing a timeout closes the connection
            del self.stubs[index]
            del self.specs[index]
            return
        prev_ok = await prev.interrupt(flush=False)
        # Order: what the removed stub buffered, then what the previous one held. Upstream
        # forwards these with a 5 s timeout each (dropping them on expiry); pushing them past the
        # next channel's capacity keeps every byte and does not hold up the API call.
        while (chunk := stub.input.get_nowait()) is not None:
            stub.output.push(chunk)
        if prev.pending is not None:
            stub.output.push(prev.pending)
            prev.pending = None
        del self.stubs[index]
        del self.specs[index]
        if not prev_ok:  # the previous stub has ended: so has the stream
            stub.close()
            return
        prev.output = stub.output
        self._run(prev, self.specs[index - 1])


class Connection:
    """A proxied TCP connection: two sockets, two links."""

    def __init__(
        self,
        name: str,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        self.name = name
        self.client = client
        self.upstream = upstream
        self.links: dict[Stream, Link] = {}

    def start(
        self, chains: dict[Stream, list[ToxicSpec]], rng: random.Random, on_closed: Callable[[], None]
    ) -> None:
        if any(t.type == "reset_peer" for chain in chains.values() for t in chain):
            for _, writer in (self.client, self.upstream):
                set_linger_zero(writer)
        self.links["upstream"] = Link("upstream", chains["upstream"], rng)
        self.links["downstream"] = Link("downstream", chains["downstream"], rng)
        self.links["upstream"].start(self.client[0], self.upstream[1])
        self.links["downstream"].start(self.upstream[0], self.client[1])
        both = asyncio.gather(*(link.done for link in self.links.values()))
        both.add_done_callback(lambda _: self._finished(on_closed))

    def _finished(self, on_closed: Callable[[], None]) -> None:
        for link in self.links.values():
            link.cancel()
        on_closed()

    def abort(self) -> None:
        """Close both sockets now (a disabled or deleted proxy drops its connections)."""
        for _, writer in (self.client, self.upstream):
            writer.transport.abort()
        for link in self.links.values():
            link.cancel()
            if not link.done.done():
                link.done.set_result(None)


def set_linger_zero(writer: asyncio.StreamWriter) -> None:
    """``SO_LINGER`` on, timeout 0: closing the socket sends RST (upstream's ``SetLinger(0)``)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
