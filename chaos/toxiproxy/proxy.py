"""Proxies, their toxic collections and the proxy collection (ring: drivers, asyncio).

Restates upstream's ``proxy.go``, ``toxic_collection.go`` and ``proxy_collection.go``:

* a proxy listens on ``listen`` and, per accepted client, dials ``upstream`` and starts a
  :class:`~chaos.toxiproxy.link.Connection` with a snapshot of its toxic chains;
* ``stop`` (``enabled=false``, delete, replace) closes the listener — new connects are refused —
  and closes every live connection; ``start`` listens again on the same address (after the first
  start ``listen`` holds the bound port, so port 0 becomes a fixed port);
* toxic edits are serialised per proxy and applied to every live link of their direction.

One deliberate divergence: a ``listen`` with an empty host (``":0"``) binds the API server's host
(loopback by default) where upstream binds every interface.
"""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import Callable
from typing import Any

from chaos.toxiproxy import log
from chaos.toxiproxy.errors import PROXY_ALREADY_EXISTS, PROXY_NOT_FOUND, TOXIC_NOT_FOUND, ApiError
from chaos.toxiproxy.link import Connection
from chaos.toxiproxy.model import (
    STREAMS,
    ProxyInput,
    Stream,
    ToxicSpec,
    apply_toxic_update,
    parse_new_toxic,
)

LISTEN_BACKLOG = 512


def split_host_port(address: str) -> tuple[str, str]:
    """Go's ``net.SplitHostPort`` (errors as Go words them)."""
    if address.startswith("["):
        end = address.find("]")
        if end < 0:
            raise ValueError(f"address {address}: missing ']' in address")
        if not address[end + 1 :].startswith(":"):
            raise ValueError(f"address {address}: missing port in address")
        return address[1:end], address[end + 2 :]
    if ":" not in address:
        raise ValueError(f"address {address}: missing port in address")
    host, _, port = address.rpartition(":")
    if ":" in host:
        raise ValueError(f"address {address}: too many colons in address")
    return host, port


def resolve(address: str, default_host: str) -> tuple[socket.AddressFamily, str, int]:
    """``host:port`` → (family, ip, port); ``ValueError`` with a Go-like message if it cannot be.

    An empty address means any port on ``default_host`` (Go: any port on every interface).
    """
    host, port_text = split_host_port(address) if address else ("", "0")
    try:
        port = int(port_text) if port_text else 0
    except ValueError:
        raise ValueError(f"lookup tcp/{port_text}: unknown port") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"address {address}: invalid port")
    try:
        infos = socket.getaddrinfo(host or default_host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise ValueError(f"lookup {host}: no such host") from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)  # Go prefers IPv4 for listening
    family, _, _, _, sockaddr = infos[0]
    return family, str(sockaddr[0]), port


def format_address(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def resolved_text(address: str, default_host: str) -> str:
    """``net.ResolveTCPAddr(...).String()``, used to decide whether a proxy must restart."""
    _, ip, port = resolve(address, default_host)
    return format_address(ip, port)


class ToxicCollection:
    """A proxy's toxics: one chain per direction, applied to each live connection."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.chains: dict[Stream, list[ToxicSpec]] = {"upstream": [], "downstream": []}
        self.lock = asyncio.Lock()

    def toxics(self) -> list[ToxicSpec]:
        return [*self.chains["upstream"], *self.chains["downstream"]]

    def find(self, name: str) -> tuple[Stream, int] | None:
        """Direction and link index (1-based: index 0 is the hidden noop) of a toxic."""
        for direction in STREAMS:
            for i, toxic in enumerate(self.chains[direction]):
                if toxic.name == name:
                    return direction, i + 1
        return None

    def get(self, name: str) -> ToxicSpec:
        found = self.find(name)
        if found is None:
            raise TOXIC_NOT_FOUND
        return self.chains[found[0]][found[1] - 1]

    async def add(self, body: bytes) -> ToxicSpec:
        async with self.lock:
            toxic = parse_new_toxic(body, {t.name for t in self.toxics()})
            direction = toxic.direction
            self.chains[direction].append(toxic)
            await self._each_link(direction, lambda link: link.add_toxic(toxic))
            return toxic

    async def update(self, name: str, body: bytes) -> ToxicSpec:
        async with self.lock:
            direction, index = self._locate(name)
            toxic = apply_toxic_update(self.chains[direction][index - 1], body)
            self.chains[direction][index - 1] = toxic
            await self._each_link(direction, lambda link: link.update_toxic(index, toxic))
            return toxic

    async def remove(self, name: str) -> None:
        async with self.lock:
            direction, index = self._locate(name)
            await self._remove_at(direction, index)

    async def reset(self) -> None:
        async with self.lock:
            for direction in STREAMS:
                while self.chains[direction]:
                    await self._remove_at(direction, 1)

    async def start_connection(self, connection: Connection, on_closed: Callable[[], None]) -> None:
        async with self.lock:
            chains = {d: list(self.chains[d]) for d in STREAMS}
            connection.start(chains, self.proxy.rng, on_closed)

    def _locate(self, name: str) -> tuple[Stream, int]:
        found = self.find(name)
        if found is None:
            raise TOXIC_NOT_FOUND
        return found

    async def _remove_at(self, direction: Stream, index: int) -> None:
        del self.chains[direction][index - 1]
        await self._each_link(direction, lambda link: link.remove_toxic(index))

    async def _each_link(self, direction: Stream, edit: Callable[[Any], Any]) -> None:
        links = [c.links[direction] for c in self.proxy.connections.values() if direction in c.links]
        if links:
            await asyncio.gather(*(edit(link) for link in links))


class Proxy:
    """One named proxy: a listener on ``listen`` forwarding to ``upstream``."""

    def __init__(
        self, name: str, listen: str, upstream: str, *, rng: random.Random, default_host: str
    ) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.rng = rng
        self.default_host = default_host
        self.toxics = ToxicCollection(self)
        self.connections: dict[int, Connection] = {}
        self.lock = asyncio.Lock()
        self._server: asyncio.Server | None = None
        self._pending: set[asyncio.Task[None]] = set()
        self._next_id = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": [t.to_json() for t in self.toxics.toxics()],
        }

    async def start(self) -> None:
        async with self.lock:
            await self._start()

    async def stop(self) -> None:
        async with self.lock:
            await self._stop()

    def differs(self, listen: str, upstream: str) -> bool:
        """Upstream's ``Differs``: the resolved new listen or the upstream changed."""
        try:
            new_listen = resolved_text(listen, self.default_host)
        except ValueError as exc:
            raise ApiError(str(exc), 500) from None
        return self.listen != new_listen or self.upstream != upstream

    async def update(self, given: ProxyInput) -> None:
        async with self.lock:
            listen = self.listen if given.listen is None else given.listen
            upstream = self.upstream if given.upstream is None else given.upstream
            enabled = self.enabled if given.enabled is None else given.enabled
            if self.differs(listen, upstream):
                await self._stop()
                self.listen, self.upstream = listen, upstream
            if enabled and not self.enabled:
                await self._start()
            elif not enabled and self.enabled:
                await self._stop()

    async def _start(self) -> None:
        if self.enabled:
            return
        sock = self._bind()
        self._server = await asyncio.start_server(self._accepted, sock=sock)
        ip, port = sock.getsockname()[:2]
        self.listen = format_address(ip, port)
        self.enabled = True
        log.info("Started proxy", name=self.name, proxy=self.listen, upstream=self.upstream)

    def _bind(self) -> socket.socket:
        try:
            family, ip, port = resolve(self.listen, self.default_host)
        except ValueError as exc:
            raise ApiError(f"listen tcp: {exc}", 500) from None
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((ip, port))
            sock.listen(LISTEN_BACKLOG)
        except OSError as exc:
            sock.close()
            reason = (exc.strerror or str(exc)).lower()
            raise ApiError(f"listen tcp {format_address(ip, port)}: bind: {reason}", 500) from None
        sock.setblocking(False)
        return sock

    async def _stop(self) -> None:
        if not self.enabled:
            return
        self.enabled = False
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._pending):
            task.cancel()
        for connection in list(self.connections.values()):
            connection.abort()
        self.connections.clear()
        log.info("Terminated proxy", name=self.name, proxy=self.listen, upstream=self.upstream)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._pending.add(task)
        try:
            await self._connect(reader, writer)
        except asyncio.CancelledError:
            writer.transport.abort()
        finally:
            self._pending.discard(task)

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = format_address(*writer.get_extra_info("peername")[:2])
        log.info("Accepted client", name=self.name, client=client, proxy=self.listen)
        try:
            _, ip, port = resolve(self.upstream, self.default_host)
            upstream = await asyncio.open_connection(ip, port)
        except (OSError, ValueError) as exc:
            log.error("Unable to open connection to upstream", name=self.name, client=client, error=str(exc))
            writer.transport.abort()
            return
        if not self.enabled:
            writer.transport.abort()
            upstream[1].transport.abort()
            return
        self._next_id += 1
        key = self._next_id
        connection = Connection(client, (reader, writer), upstream)
        self.connections[key] = connection

        def closed() -> None:
            self.connections.pop(key, None)

        await self.toxics.start_connection(connection, closed)


class ProxyCollection:
    """All proxies by name (upstream's ``ProxyCollection``)."""

    def __init__(self, *, rng: random.Random, default_host: str) -> None:
        self.proxies: dict[str, Proxy] = {}
        self.rng = rng
        self.default_host = default_host
        self.lock = asyncio.Lock()

    def new_proxy(self, name: str, listen: str, upstream: str) -> Proxy:
        return Proxy(name, listen, upstream, rng=self.rng, default_host=self.default_host)

    def get(self, name: str) -> Proxy:
        if name not in self.proxies:
            raise PROXY_NOT_FOUND
        return self.proxies[name]

    async def add(self, proxy: Proxy, start: bool) -> None:
        async with self.lock:
            if proxy.name in self.proxies:
                raise PROXY_ALREADY_EXISTS
            if start:
                await proxy.start()
            self.proxies[proxy.name] = proxy

    async def add_or_replace(self, proxy: Proxy, start: bool) -> Proxy:
        async with self.lock:
            existing = self.proxies.get(proxy.name)
            if existing is not None:
                if not existing.differs(proxy.listen, proxy.upstream):
                    return existing
                await existing.stop()
            if start:
                await proxy.start()
            self.proxies[proxy.name] = proxy
            return proxy

    async def populate(self, entries: list[ProxyInput]) -> tuple[list[Proxy], ApiError | None]:
        """Create or replace in order; the first failure stops the run, keeping earlier proxies."""
        done: list[Proxy] = []
        for entry in entries:
            proxy = self.new_proxy(entry.name or "", entry.listen or "", entry.upstream or "")
            try:
                done.append(await self.add_or_replace(proxy, entry.enabled is not False))
            except ApiError as exc:
                return done, exc
        return done, None

    async def remove(self, name: str) -> None:
        async with self.lock:
            proxy = self.get(name)
            await proxy.stop()
            del self.proxies[name]

    async def reset(self) -> None:
        """Enable every proxy and remove every toxic (upstream's ``ResetState``)."""
        for proxy in list(self.proxies.values()):
            await proxy.start()
            await proxy.toxics.reset()

    async def clear(self) -> None:
        async with self.lock:
            for proxy in list(self.proxies.values()):
                await proxy.stop()
            self.proxies.clear()
