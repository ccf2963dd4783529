"""The server process: API listener, config populate, port announcement, signals (ring: drivers).

:func:`run` binds the API (a port in use is a one-line error and exit status 1), populates proxies
from ``--config`` (upstream's ``-config``), then announces the bound address: a log line
``Starting Toxiproxy HTTP server`` with ``"address"`` on stdout and, with ``--port-file``, the port
written atomically to that file — so ``--port 0`` is safe to use from another process. SIGTERM
and SIGINT stop it gracefully: the API stops, every proxy closes its listener and connections,
exit status 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from chaos.toxiproxy import log
from chaos.toxiproxy.api import Api
from chaos.toxiproxy.errors import ApiError
from chaos.toxiproxy.http import serve
from chaos.toxiproxy.model import VERSION, parse_populate
from chaos.toxiproxy.proxy import ProxyCollection, format_address, resolve


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8474
    config: Path | None = None
    seed: int | None = None
    port_file: Path | None = None


class StartupError(Exception):
    """The server cannot start; ``exit_code`` 1 (environment) or 2 (bad input)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def bind_api(host: str, port: int) -> socket.socket:
    try:
        family, ip, _ = resolve(f"{host}:{port}" if ":" not in host else f"[{host}]:{port}", host)
    except ValueError as exc:
        raise StartupError(f"cannot listen on {host}:{port}: {exc}", 2) from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((ip, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = (exc.strerror or str(exc)).lower()
        hint = " (choose another --port, or --port 0 for any free port)" if exc.errno == 98 else ""
        raise StartupError(f"listen tcp {format_address(ip, port)}: bind: {reason}{hint}", 1) from None
    sock.setblocking(False)
    return sock


async def populate_config(proxies: ProxyCollection, config: Path) -> None:
    try:
        body = config.read_bytes()
    except OSError as exc:
        raise StartupError(f"cannot read --config {config}: {exc.strerror or exc}", 2) from None
    try:
        done, error = await proxies.populate(parse_populate(body))
    except ApiError as exc:
        raise StartupError(f"--config {config}: {exc.message}", 2) from None
    if error is not None:
        raise StartupError(f"--config {config}: {error.message}", 1 if error.status >= 500 else 2)
    log.info("Populated proxies from file", config=str(config), proxies=len(done))


def write_port_file(path: Path, port: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{port}\n")
    os.replace(tmp, path)


async def run(options: ServerOptions) -> int:
    """Serve until SIGTERM/SIGINT; the exit status."""
    seed = options.seed if options.seed is not None else random.SystemRandom().getrandbits(63)
    proxies = ProxyCollection(rng=random.Random(seed), default_host=options.host)
    api = Api(proxies)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info("Starting Toxiproxy", version=VERSION, seed=seed)
    try:
        sock = bind_api(options.host, options.port)
        server = await asyncio.start_server(lambda r, w: serve(r, w, api.handle), sock=sock)
        if options.config is not None:
            await populate_config(proxies, options.config)
    except StartupError as exc:
        print(f"toxiproxy: error: {exc}", file=sys.stderr)
        await proxies.clear()
        return exc.exit_code
    ip, port = sock.getsockname()[:2]
    log.info("Starting Toxiproxy HTTP server", address=format_address(ip, port))
    if options.port_file is not None:
        try:
            write_port_file(options.port_file, port)
        except OSError as exc:
            print(f"toxiproxy: error: cannot write --port-file {options.port_file}: {exc}", file=sys.stderr)
            server.close()
            await proxies.clear()
            return 2
    await stop.wait()
    log.info("Shutdown started")
    server.close()
    await proxies.clear()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.wait_closed(), 1.0)
    return 0
