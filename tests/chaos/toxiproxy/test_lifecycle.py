"""Nothing outlives a connection or a proxy: tasks, connections, listeners (in-process, real TCP)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from chaos.toxiproxy.launch import client_for, toxiproxy_server
from chaos.toxiproxy.proxy import Proxy, ProxyCollection
from harness import process
from harness.ports import TOXIPROXY_API, claim_port
from tests.chaos.toxiproxy.support import TcpServer, wait_for

pytestmark = pytest.mark.chaos

TOXICS = [
    b'{"type":"latency","attributes":{"latency":5,"jitter":2}}',
    b'{"type":"bandwidth","stream":"upstream","attributes":{"rate":10000}}',
    b'{"type":"slicer","attributes":{"average_size":3,"delay":10}}',
    b'{"type":"slow_close","attributes":{"delay":20}}',
    b'{"type":"limit_data","toxicity":0.5,"attributes":{"bytes":2}}',
    b'{"type":"timeout","name":"t","toxicity":0.3,"stream":"upstream","attributes":{"timeout":0}}',
    b'{"type":"reset_peer","toxicity":0.3,"attributes":{"timeout":1}}',
]


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def _client(listen: str) -> None:
    host, _, port = listen.rpartition(":")
    with contextlib.suppress(OSError):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"hello")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reader.read(5), 0.2)
        writer.close()


async def _settle(proxy: Proxy, baseline: int, deadline_s: float = 10.0) -> tuple[int, int]:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while loop.time() < end:
        tasks = len(asyncio.all_tasks()) - baseline
        if not proxy.connections and tasks <= 0:
            break
        await asyncio.sleep(0.02)
    return len(proxy.connections), len(asyncio.all_tasks()) - baseline


async def _scenario() -> tuple[tuple[int, int], tuple[int, int]]:
    echo = await asyncio.start_server(_echo, "127.0.0.1", 0)
    port = echo.sockets[0].getsockname()[1]
    proxies = ProxyCollection(rng=random.Random(3), default_host="127.0.0.1")
    proxy = proxies.new_proxy("p", "127.0.0.1:0", f"127.0.0.1:{port}")
    await proxies.add(proxy, True)
    baseline = len(asyncio.all_tasks())
    for body in TOXICS:
        await proxy.toxics.add(body)
    await asyncio.gather(*(_client(proxy.listen) for _ in range(60)))
    await proxy.toxics.remove("t")  # closes connections the blackhole held
    after_clients = await _settle(proxy, baseline)
    held = [asyncio.create_task(_client(proxy.listen)) for _ in range(20)]
    await asyncio.sleep(0.05)
    await proxies.remove("p")  # deleting the proxy drops whatever is still open
    await asyncio.gather(*held)
    after_delete = await _settle(proxy, baseline)
    echo.close()
    return after_clients, after_delete


def test_connections_and_their_tasks_are_released() -> None:
    after_clients, after_delete = asyncio.run(_scenario())
    assert after_clients == (0, 0), "connections, extra tasks after the clients left"
    assert after_delete == (0, 0), "connections, extra tasks after the proxy was deleted"


@pytest.fixture
def fake_binary_dir() -> Iterator[Path]:
    """A ``toxiproxy-server`` on PATH that is our server under the real binary's flags."""
    with tempfile.TemporaryDirectory(prefix="kzk-fake-toxiproxy-") as path:
        script = Path(path) / "toxiproxy-server"
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m chaos.toxiproxy "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        yield Path(path)


def test_launcher_prefers_toxiproxy_server_on_path(
    monkeypatch: pytest.MonkeyPatch, fake_binary_dir: Path
) -> None:
    monkeypatch.delenv("TOXIPROXY_URL", raising=False)
    monkeypatch.setenv("PATH", f"{fake_binary_dir}{os.pathsep}{os.environ['PATH']}")
    before = {j.pid for j in process.live_jvms()}
    with toxiproxy_server() as url:
        started = [j for j in process.live_jvms() if j.pid not in before]
        assert [j.name for j in started] == ["toxiproxy-server"]
        assert requests.get(f"{url}/version", timeout=10).ok
        assert url == f"http://127.0.0.1:{url.rsplit(':', 1)[1]}"
        port = int(url.rsplit(":", 1)[1])
        assert port in TOXIPROXY_API.ports, "the binary is told a port of the port plan"
        assert claim_port(port) is None, "claimed host-wide while the server runs"
    assert started[0].exit_code() is not None
    released = claim_port(port)
    assert released is not None, "given up when the server stopped"
    released.close()


def _busy_client(listen: str, until: float, seed: int) -> None:
    rng = random.Random(seed)
    host, _, port = listen.rpartition(":")
    while time.monotonic() < until:
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=2) as sock:
            for _ in range(rng.randint(1, 4)):
                sock.sendall(rng.randbytes(rng.randint(1, 5000)))
                sock.recv(65536)


STRESS_TOXICS = [
    {"type": "latency", "attributes": {"latency": 20, "jitter": 10}},
    {"type": "bandwidth", "attributes": {"rate": 50}},
    {"type": "slicer", "attributes": {"average_size": 10, "size_variation": 5, "delay": 100}},
    {"type": "slow_close", "attributes": {"delay": 50}},
    {"type": "timeout", "attributes": {"timeout": 100}},
    {"type": "timeout", "attributes": {"timeout": 0}},
    {"type": "reset_peer", "attributes": {"timeout": 10}},
    {"type": "limit_data", "attributes": {"bytes": 100}},
]


def _held(pid: int) -> set[str]:
    """What the process's open file descriptors refer to (``socket:[inode]``, paths, …)."""
    fd_dir = f"/proc/{pid}/fd"
    held = set()
    for fd in os.listdir(fd_dir):
        with contextlib.suppress(FileNotFoundError):  # closed between the listing and the read
            held.add(os.readlink(f"{fd_dir}/{fd}"))
    return held


def test_edits_under_load_are_quick_and_leave_no_sockets(
    monkeypatch: pytest.MonkeyPatch, echo_server: TcpServer
) -> None:
    """Busy connections while toxics come and go: each API edit returns quickly, and once the
    clients are gone the server holds no socket or file it did not hold before (no leaked port;
    an API connection open at the baseline may have closed since)."""
    monkeypatch.delenv("TOXIPROXY_URL", raising=False)
    rng = random.Random(11)
    before = {j.pid for j in process.live_jvms()}
    with toxiproxy_server() as url:
        (server,) = [j for j in process.live_jvms() if j.pid not in before]
        proxy = client_for(url).create(upstream=echo_server.address, name="busy")
        baseline = _held(server.pid)
        until = time.monotonic() + 6.0
        clients = [threading.Thread(target=_busy_client, args=(proxy.listen, until, i)) for i in range(8)]
        for thread in clients:
            thread.start()
        slowest_s = 0.0
        while time.monotonic() < until:
            toxic = {**rng.choice(STRESS_TOXICS), "name": f"t{rng.randrange(3)}", "toxicity": rng.random()}
            toxic["stream"] = rng.choice(["upstream", "downstream"])
            started = time.monotonic()
            if requests.post(f"{url}/proxies/busy/toxics", json=toxic, timeout=30).status_code == 409:
                requests.delete(f"{url}/proxies/busy/toxics/{toxic['name']}", timeout=30)
            slowest_s = max(slowest_s, time.monotonic() - started)
        for thread in clients:
            thread.join(30)
        assert requests.post(f"{url}/reset", timeout=30).status_code == 204
        try:  # generous: on a loaded machine the server may take a while to see every EOF
            wait_for(lambda: _held(server.pid) <= baseline, 30.0, "server back to the files it held before")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: new {sorted(_held(server.pid) - baseline)}") from None
    assert slowest_s < 2.0, slowest_s
