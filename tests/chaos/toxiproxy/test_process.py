"""The server as a process: CLI errors, port conflicts, signals, --config; the launcher's ownership."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from chaos.toxiproxy.launch import ToxiproxyUnavailable, client_for, toxiproxy_server
from harness import process, reaper
from tests.chaos.toxiproxy.support import TcpServer, connect, round_trip_s, wait_for

pytestmark = pytest.mark.chaos

SERVER = [sys.executable, "-m", "chaos.toxiproxy"]


def run_cli(*args: str, timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SERVER, *args], capture_output=True, text=True, timeout=timeout_s, check=False)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--port", "http"], "'http' is not a port number"),
        (["--port", "70000"], "70000 is out of range"),
        (["--seed", "x"], "'x' is not an integer"),
        (["--metrics"], "unrecognized arguments: --metrics"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args: list[str], needle: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_config_exits_2(tmp_dir: Path) -> None:
    result = run_cli("--port", "0", "--config", str(tmp_dir / "absent.json"))
    assert result.returncode == 2
    assert "cannot read --config" in result.stderr
    assert "Traceback" not in result.stderr


def test_unwritable_port_file_exits_2(tmp_dir: Path) -> None:
    result = run_cli("--port", "0", "--port-file", str(tmp_dir / "no" / "such" / "dir" / "port"))
    assert result.returncode == 2
    assert "cannot write --port-file" in result.stderr
    assert "Traceback" not in result.stderr


def test_port_in_use_exits_1_with_a_clear_message() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = run_cli("--port", str(port))
    assert result.returncode == 1
    assert f"listen tcp 127.0.0.1:{port}: bind: address already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_version_flag_in_gos_spelling() -> None:
    result = run_cli("-version")
    assert result.returncode == 0
    assert result.stdout.startswith("toxiproxy-server version ")


@pytest.fixture
def tmp_dir() -> Iterator[Path]:
    """A private temp dir (not pytest's shared basetemp, which parallel sessions may prune)."""
    with tempfile.TemporaryDirectory(prefix="kzk-toxiproxy-test-") as path:
        yield Path(path)


@pytest.fixture
def started(tmp_dir: Path, echo_server: TcpServer) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    config = tmp_dir / "proxies.json"
    config.write_text(json.dumps([{"name": "cfg", "listen": "127.0.0.1:0", "upstream": echo_server.address}]))
    port_file = tmp_dir / "port"
    proc = subprocess.Popen(
        [*SERVER, "-host", "127.0.0.1", "-port", "0", "--port-file", str(port_file), "-config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: port_file.exists() or proc.poll() is not None, 20.0, "the port file")
        assert proc.poll() is None, proc.communicate()[0]
        yield proc, f"http://127.0.0.1:{port_file.read_text().strip()}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_gracefully_and_closes_proxies(
    started: tuple[subprocess.Popen[bytes], str], sig: signal.Signals
) -> None:
    proc, url = started
    listen = requests.get(f"{url}/proxies/cfg", timeout=10).json()["listen"]
    with connect(listen) as sock:
        round_trip_s(sock)
        proc.send_signal(sig)
        assert proc.wait(timeout=10) == 0
        assert sock.recv(10) == b""
    with pytest.raises(ConnectionRefusedError), connect(listen):
        pass
    out = proc.communicate()[0].decode()
    first = json.loads(out.splitlines()[0])
    assert first["message"] == "Starting Toxiproxy"
    assert "Shutdown started" in out


def test_launcher_owns_registers_and_stops_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOXIPROXY_URL", raising=False)
    before = {j.pid for j in process.live_jvms()}
    with toxiproxy_server() as url:
        assert requests.get(f"{url}/version", timeout=10).ok
        mine = [j for j in process.live_jvms() if j.pid not in before]
        assert len(mine) == 1
        server = mine[0]
        record = reaper.parse_record(server.record_path)
        assert isinstance(record, reaper.JvmRecord)
        assert (record.pid, record.owner_pid) == (server.pid, os.getpid())
        assert reaper.is_same_process(record.pid, record.start_time)
        if server.name == "chaos.toxiproxy":  # found by the reaper's argv marker sweep as well
            marker = f"{reaper.RUN_ROOT_MARKER}{process.owner_session().run_root}"
            assert server.pid in set(reaper.processes_with_arg(marker))
    assert not reaper.is_same_process(record.pid, record.start_time)
    assert not server.record_path.exists()


def test_launcher_uses_toxiproxy_url_when_set(monkeypatch: pytest.MonkeyPatch, toxiproxy_url: str) -> None:
    monkeypatch.setenv("TOXIPROXY_URL", toxiproxy_url + "/")
    before = len(process.live_jvms())
    with toxiproxy_server() as url:
        assert url == toxiproxy_url
        assert len(process.live_jvms()) == before


def test_launcher_rejects_a_dead_toxiproxy_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.setenv("TOXIPROXY_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(ToxiproxyUnavailable, match="GET /version failed"), toxiproxy_server():
        pass


def test_server_dies_with_a_killed_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOXIPROXY_URL", raising=False)
    owner_script = textwrap.dedent(
        """
        import sys, time
        from chaos.toxiproxy.launch import toxiproxy_server
        from harness import process
        with toxiproxy_server() as url:
            print(process.live_jvms()[0].pid, flush=True)
            time.sleep(600)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", owner_script], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        server_pid = int(owner.stdout.readline())
        start = reaper.proc_start_time(server_pid)
        assert start is not None
        owner.kill()
        owner.wait(timeout=10)
        wait_for(
            lambda: not reaper.is_same_process(server_pid, start), 10.0, "the server died with its owner"
        )
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.wait()
    reaper.reap_orphans()  # the killed owner's pid file and run root go too
    assert not list(reaper.runtime_dir().glob(f"jvm-{server_pid}-*.json"))


def _poison_pattern(monkeypatch: pytest.MonkeyPatch, seed: str, upstream: str) -> list[bool]:
    """Which of 40 sequential connections a ``toxicity=0.5`` toxic hit, on a fresh seeded server."""
    monkeypatch.delenv("TOXIPROXY_URL", raising=False)
    monkeypatch.setenv("KZK_TOXIPROXY_SEED", seed)
    with toxiproxy_server() as url:
        if not [j for j in process.live_jvms() if j.name == "chaos.toxiproxy"]:
            pytest.skip("a real toxiproxy-server is on PATH: its -seed does not seed")
        proxy = client_for(url).create(upstream=upstream, name="seeded")
        proxy.add_toxic(type="limit_data", toxicity=0.5, attributes={"bytes": 0})
        pattern = []
        for _ in range(40):
            with connect(proxy.listen) as sock:
                sock.sendall(b"ping")
                pattern.append(sock.recv(4) == b"")
    return pattern


def test_seed_makes_toxicity_rolls_reproducible(
    monkeypatch: pytest.MonkeyPatch, echo_server: TcpServer
) -> None:
    first = _poison_pattern(monkeypatch, "1234", echo_server.address)
    again = _poison_pattern(monkeypatch, "1234", echo_server.address)
    other = _poison_pattern(monkeypatch, "98765", echo_server.address)
    assert first == again
    assert 5 <= sum(first) <= 35, first
    assert other != first  # 40 fair coins agree by chance with probability 2**-40
