"""The toxics: how each one moves chunks from a stub's input to its output (ring: drivers, asyncio).

One coroutine per toxic type, restating upstream's ``toxics/*.go`` ``Pipe`` methods. Times in the
attributes are milliseconds (the slicer's ``delay`` is microseconds); ``bandwidth``'s rate is in
KB/s with 1 KB = 1000 bytes. A toxic that holds a chunk across an ``await`` records it in
``stub.pending`` (via :meth:`Stub.forward` or explicitly), so an interrupt forwards it.

Deliberate divergences from upstream, where upstream hangs or panics on nonsense attributes:
``bandwidth`` with ``rate <= 0`` passes data unthrottled (upstream stalls at 0 and panics below);
``slicer`` keeps every cut inside the chunk and stops at one byte (upstream recurses forever or
panics when ``size_variation >= average_size`` or ``average_size <= 0``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping

from chaos.toxiproxy.model import ToxicSpec
from chaos.toxiproxy.stream import Chunk, Pipe, Stub


def _now() -> float:
    return asyncio.get_running_loop().time()


async def noop(stub: Stub, toxic: ToxicSpec) -> None:
    while (chunk := await stub.input.get()) is not None:
        await stub.forward(chunk)
    stub.close()


def latency_delay_s(toxic: ToxicSpec, rng: random.Random) -> float:
    """``latency ± jitter`` ms: upstream adds ``Int63n(2*jitter) - jitter`` when ``jitter > 0``."""
    delay_ms = toxic.attr("latency")
    jitter_ms = toxic.attr("jitter")
    if jitter_ms > 0:
        delay_ms += rng.randrange(2 * jitter_ms) - jitter_ms
    return delay_ms / 1000.0


async def latency(stub: Stub, toxic: ToxicSpec) -> None:
    """Hold each chunk until ``delay`` after it was read; the chunk's timestamp moves on by the wait."""
    while (chunk := await stub.input.get()) is not None:
        sleep_s = latency_delay_s(toxic, stub.rng) - (_now() - chunk.timestamp)
        stub.pending = chunk  # forwarded at once if interrupted (upstream "exit fast")
        await asyncio.sleep(max(0.0, sleep_s))
        chunk.timestamp += sleep_s
        await stub.forward(chunk)
    stub.close()


async def _sleep_until(deadline: float) -> None:
    await asyncio.sleep(max(0.0, deadline - _now()))


async def bandwidth(stub: Stub, toxic: ToxicSpec) -> None:
    """Release ``len/rate`` ms per chunk; chunks over ``rate*100`` bytes go in 100 ms slices.

    Upstream sleeps per chunk and carries the oversleep over as a credit; here each release has an
    absolute deadline (a chunk starts when it arrived or when the previous one was done, whichever
    is later), so a late wake-up on a loaded machine does not lower the average rate either.
    """
    rate = toxic.attr("rate")
    free_at = 0.0
    while (chunk := await stub.input.get()) is not None:
        if rate <= 0:
            await stub.forward(chunk)
            continue
        free_at = max(free_at, chunk.timestamp)
        stub.pending = chunk
        while len(chunk.data) > rate * 100:
            free_at += 0.1
            await _sleep_until(free_at)
            await stub.output.put(Chunk(chunk.data[: rate * 100], chunk.timestamp))  # pending: head + rest
            chunk = Chunk(chunk.data[rate * 100 :], chunk.timestamp)
            stub.pending = chunk
        free_at += len(chunk.data) / rate / 1000.0
        await _sleep_until(free_at)
        await stub.forward(chunk)
    stub.close()


async def slow_close(stub: Stub, toxic: ToxicSpec) -> None:
    """Pass data; when the input ends, wait ``delay`` ms before closing the output."""
    while (chunk := await stub.input.get()) is not None:
        await stub.forward(chunk)
    await asyncio.sleep(toxic.attr("delay") / 1000.0)
    stub.close()


async def timeout(stub: Stub, toxic: ToxicSpec) -> None:
    """Drop all data; close after ``timeout`` ms with no chunk (0 = never close).

    Upstream creates its ``time.After(timeout)`` inside the receive loop, so each dropped chunk
    restarts the clock; the same here.
    """
    timeout_s = toxic.attr("timeout") / 1000.0
    while True:
        try:
            # asyncio.timeout, not wait_for: wait_for can swallow an interrupt's cancellation
            async with asyncio.timeout(timeout_s if timeout_s > 0 else None):
                chunk = await stub.input.get()
        except TimeoutError:
            break
        if chunk is None:
            break
    stub.close()


async def reset_peer(stub: Stub, toxic: ToxicSpec) -> None:
    """On the first chunk (or the end of input), drop it, wait ``timeout`` ms, then close.

    The sockets were given ``SO_LINGER 0`` when the connection started, so that close is a TCP RST.
    Upstream's wait is not interruptible: an interrupt in it waits for the reset.
    """
    await stub.input.get()
    stub.uninterruptible = True
    await asyncio.sleep(toxic.attr("timeout") / 1000.0)
    stub.close()


def slicer_cuts(size: int, average: int, variation: int, rng: random.Random) -> list[tuple[int, int]]:
    """Pieces ``[start, end)`` of a ``size``-byte chunk: bisect until ``len - average <= variation``.

    Each midpoint moves by ``Intn(2*variation) - variation`` (upstream's rule), kept inside the piece.
    """
    pieces: list[tuple[int, int]] = []
    stack = [(0, size)]
    while stack:
        start, end = stack.pop()
        if (end - start) - average <= variation or end - start <= 1:
            pieces.append((start, end))
            continue
        mid = start + (end - start) // 2
        if variation > 0:
            mid += rng.randrange(2 * variation) - variation
        mid = min(max(mid, start + 1), end - 1)
        stack += [(mid, end), (start, mid)]
    return pieces


async def slicer(stub: Stub, toxic: ToxicSpec) -> None:
    """Cut each chunk into pieces around ``average_size`` bytes, ``delay`` µs apart."""
    delay_s = toxic.attr("delay") / 1_000_000.0
    while (chunk := await stub.input.get()) is not None:
        cuts = slicer_cuts(
            len(chunk.data), toxic.attr("average_size"), toxic.attr("size_variation"), stub.rng
        )
        for start, end in cuts:
            stub.pending = Chunk(chunk.data[start:], chunk.timestamp)
            await stub.output.put(Chunk(chunk.data[start:end], chunk.timestamp))
            stub.pending = Chunk(chunk.data[end:], chunk.timestamp) if end < len(chunk.data) else None
            await asyncio.sleep(delay_s)
        stub.pending = None
    stub.close()


async def limit_data(stub: Stub, toxic: ToxicSpec) -> None:
    """Forward at most ``bytes`` bytes on this connection (state survives updates), then close.

    Like upstream, the close happens on the chunk that reaches the limit (or on the first chunk
    when the limit is already used up), not before any data arrives.
    """
    limit = toxic.attr("bytes")
    while (chunk := await stub.input.get()) is not None:
        remaining = max(0, limit - stub.state.get("transmitted", 0))
        data = chunk.data[:remaining]
        if data:
            stub.state["transmitted"] = stub.state.get("transmitted", 0) + len(data)
            await stub.forward(Chunk(data, chunk.timestamp))
        if limit - stub.state.get("transmitted", 0) <= 0:
            break
    stub.close()


PIPES: Mapping[str, Pipe] = {
    "noop": noop,
    "latency": latency,
    "bandwidth": bandwidth,
    "slow_close": slow_close,
    "timeout": timeout,
    "reset_peer": reset_peer,
    "slicer": slicer,
    "limit_data": limit_data,
}

CLOSES_ON_REMOVE = frozenset({"timeout"})  # upstream's CleanupToxic: removing it closes the link
