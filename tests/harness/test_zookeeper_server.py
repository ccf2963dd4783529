"""The standalone ZooKeeper harness against a real server: life cycle, faults, ports, discovery."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState

from harness.pytest_plugin import ServerFactory
from harness.reaper import proc_start_time
from harness.zookeeper import (
    PortInUse,
    ZooKeeperNotFound,
    ZooKeeperServer,
    find_zookeeper,
    runtime_dir,
)
from harness.zookeeper.jars import DEBIAN_JAVA_DIR
from tests.harness.helpers import (
    REPO_ROOT,
    Sandbox,
    child_env,
    process_launcher_only,
    run_pytest,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def occupied_port() -> Iterator[int]:
    """A loopback port with a listener on it for the whole test."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _client(server: ZooKeeperServer, timeout_s: float = 10.0) -> KazooClient:
    client = KazooClient(hosts=server.connect_string, timeout=timeout_s)
    client.start(timeout=15.0)
    return client


def _listen_addresses(port: int) -> set[str]:
    """IPv4 addresses with a TCP listener on ``port``, from /proc/net/tcp (state 0A = LISTEN)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        hex_ip, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.add(socket.inet_ntoa(bytes.fromhex(hex_ip)[::-1]))
    return found


def _pid_files_of(pid: int) -> list[Path]:
    return list(runtime_dir().glob(f"jvm-{pid}-*.json"))


# --- the session server and chroots ---------------------------------------------------------------


def test_session_server_serves_standalone_on_loopback_only(zk_server: ZooKeeperServer) -> None:
    assert zk_server.four_letter("ruok") == "imok"
    assert zk_server.mode() == "standalone"
    assert zk_server.host == "127.0.0.1"
    assert zk_server.connect_string == f"127.0.0.1:{zk_server.port}"
    assert _listen_addresses(zk_server.port) == {"127.0.0.1"}
    assert zk_server.txn_log_dir == zk_server.data_dir / "version-2"
    assert zk_server.pid is not None
    assert _pid_files_of(zk_server.pid), "a running JVM has a pid file in the runtime dir"


@pytest.mark.parametrize("turn", ["first", "second"])
def test_each_test_gets_an_empty_chroot_of_its_own(zk_client: KazooClient, zk_chroot: str, turn: str) -> None:
    assert zk_chroot.startswith("/t/test_each_test_gets_an_empty_chroot_of_its_own")
    assert zk_client.get_children("/") == [], "another test's nodes leaked into this chroot"
    zk_client.create("/same-name-in-every-test", turn.encode())


def test_zk_client_is_confined_to_the_chroot(
    zk_server: ZooKeeperServer, zk_client: KazooClient, zk_chroot: str, zk_connect: str
) -> None:
    assert zk_connect == f"{zk_server.connect_string}{zk_chroot}"
    zk_client.create("/inside", b"x")
    root = _client(zk_server)
    try:
        assert root.get(f"{zk_chroot}/inside")[0] == b"x"
        assert not root.exists("/inside")
    finally:
        root.stop()
        root.close()


# --- life cycle -----------------------------------------------------------------------------------


def test_a_standalone_server_starts_in_about_a_second(
    zk_server_factory: ServerFactory, record_property: Callable[[str, object], None]
) -> None:
    began = time.monotonic()
    server = zk_server_factory()
    elapsed_s = time.monotonic() - began
    record_property("zk_start_s", round(elapsed_s, 3))
    assert server.last_start_s is not None
    assert elapsed_s < 10.0, f"start took {elapsed_s:.2f} s; expected about 1 s"


@process_launcher_only
def test_stop_is_graceful_keeps_data_and_removes_the_pid_file(zk_server_isolated: ZooKeeperServer) -> None:
    server = zk_server_isolated
    pid = server.pid
    assert pid is not None
    assert _pid_files_of(pid)
    assert server.stop() == 143, "SIGTERM exit (128 + 15) means the JVM shut down on its own"
    assert not server.is_running()
    assert server.pid is None
    assert proc_start_time(pid) is None
    assert not _pid_files_of(pid)
    assert list(server.txn_log_dir.iterdir()), "the data dir survives a stop"


@process_launcher_only
def test_kill_sigkills_the_jvm_group(zk_server_isolated: ZooKeeperServer) -> None:
    server = zk_server_isolated
    pid = server.pid
    assert pid is not None
    assert server.kill() == -9
    assert proc_start_time(pid) is None
    assert not _pid_files_of(pid)
    assert "killed" in server.log_tail()


def test_restart_keeps_data_dir_port_and_znodes(zk_server_isolated: ZooKeeperServer) -> None:
    server = zk_server_isolated
    port, data_dir, old_pid = server.port, server.data_dir, server.pid
    client = _client(server)
    client.create("/survives-restart", b"v1")
    client.stop()
    client.close()
    server.restart()
    assert (server.port, server.data_dir) == (port, data_dir)
    assert server.pid != old_pid
    client = _client(server)
    try:
        assert client.get("/survives-restart")[0] == b"v1"
    finally:
        client.stop()
        client.close()


def test_pause_suspends_a_kazoo_client_and_resume_recovers_it(zk_server_factory: ServerFactory) -> None:
    server = zk_server_factory(tick_time_ms=500)
    states: list[KazooState] = []
    seen = threading.Event()

    def listener(state: KazooState) -> None:
        states.append(state)
        seen.set()

    client = _client(server, timeout_s=3.0)
    client.add_listener(listener)
    try:
        server.pause()
        assert server.is_paused
        assert server.mode() is None
        wait_until(lambda: KazooState.SUSPENDED in states, 15.0, "the client to see SUSPENDED")
        server.resume()
        wait_until(lambda: client.state == KazooState.CONNECTED, 15.0, "the client to reconnect")
        client.ensure_path("/after-resume")
        assert server.mode() == "standalone"
    finally:
        client.stop()
        client.close()
    assert states[0] == KazooState.SUSPENDED, f"state changes: {states}"


def test_context_manager_stops_the_jvm_and_removes_the_run_dir() -> None:
    with ZooKeeperServer(name="ctx") as server:
        pid, run_dir = server.pid, server.run_dir
        assert pid is not None
        assert server.four_letter("ruok") == "imok"
    assert proc_start_time(pid) is None
    assert not run_dir.exists()
    assert "binding to port" in server.log_tail(), "the log tail outlives the run dir, for reports"


# --- configuration --------------------------------------------------------------------------------


def test_server_logs_to_a_file_in_its_run_dir(zk_server: ZooKeeperServer) -> None:
    assert zk_server.log_file.parent == zk_server.run_dir
    assert f"binding to port /127.0.0.1:{zk_server.port}" in zk_server.log_file.read_text()


def test_tick_time_and_session_timeout_bounds_reach_the_server(zk_server_factory: ServerFactory) -> None:
    server = zk_server_factory(tick_time_ms=200, min_session_timeout_ms=400, max_session_timeout_ms=3000)
    conf = server.four_letter("conf")
    assert "tickTime=200" in conf
    assert "minSessionTimeout=400" in conf
    assert "maxSessionTimeout=3000" in conf


def test_low_snap_count_and_small_prealloc_roll_small_txn_logs(zk_server_factory: ServerFactory) -> None:
    server = zk_server_factory(snap_count=10, pre_alloc_size_kb=16)
    client = _client(server)
    try:
        for i in range(60):
            client.create(f"/n{i}", b"x")
    finally:
        client.stop()
        client.close()
    logs = sorted(server.txn_log_dir.glob("log.*"))
    assert len(logs) >= 2, f"expected rollover with snapCount=10, got {logs}"
    assert all(p.stat().st_size < 1024 * 1024 for p in logs), "preAllocSize=16 KB keeps log files small"


def test_invalid_settings_are_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="min_session_timeout_ms"):
        ZooKeeperServer(min_session_timeout_ms=5000, max_session_timeout_ms=1000)
    with pytest.raises(ValueError, match="snap_count"):
        ZooKeeperServer(snap_count=1)
    with pytest.raises(ValueError, match="extra_cfg"):
        ZooKeeperServer(extra_cfg={"a\nb": "c"})


# --- ports ----------------------------------------------------------------------------------------


def test_an_explicit_port_in_use_falls_back_to_another_port(
    zk_server_factory: ServerFactory, occupied_port: int
) -> None:
    server = zk_server_factory(port=occupied_port)
    assert server.requested_port == occupied_port
    assert server.port != occupied_port
    assert server.four_letter("ruok") == "imok"


def test_an_explicit_port_in_use_without_fallback_is_a_clear_error(occupied_port: int) -> None:
    server = ZooKeeperServer(name="no-fallback", port=occupied_port, port_fallback=False)
    try:
        with pytest.raises(PortInUse, match=f"port {occupied_port} is already in use") as caught:
            server.start()
        assert caught.value.port == occupied_port
        assert not server.is_running()
    finally:
        server.close()


def test_a_port_taken_between_check_and_bind_is_retried_from_the_jvm_log(
    zk_server_factory: ServerFactory, occupied_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulate losing the race: the pre-check passes once, so the JVM itself hits BindException.
    answers = iter([True])
    monkeypatch.setattr("harness.ports.bindable", lambda port: next(answers, True))
    server = zk_server_factory(port=occupied_port)
    assert server.port != occupied_port
    assert "java.net.BindException" in server.log_tail(200_000)


def test_a_restart_never_moves_to_another_port(zk_server_isolated: ZooKeeperServer) -> None:
    server = zk_server_isolated
    server.stop()
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", server.port))
        squatter.listen()
        with pytest.raises(PortInUse, match="clients hold its address"):
            server.start()


# --- discovery ------------------------------------------------------------------------------------


def test_missing_zookeeper_names_the_debian_package_and_zookeeper_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    monkeypatch.setenv("KZK_DEBIAN_JAVA_DIR", str(tmp_path))
    with pytest.raises(ZooKeeperNotFound) as caught:
        ZooKeeperServer(name="nowhere")
    message = str(caught.value)
    assert "apt-get install -y zookeeper" in message
    assert "ZOOKEEPER_HOME" in message


def test_a_zookeeper_home_without_jars_is_reported_not_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-home"
    empty.mkdir()
    monkeypatch.setenv("ZOOKEEPER_HOME", str(empty))
    monkeypatch.setenv("KZK_DEBIAN_JAVA_DIR", str(tmp_path))
    with pytest.raises(ZooKeeperNotFound, match=f"ZOOKEEPER_HOME={empty} holds no zookeeper"):
        find_zookeeper()


def test_a_tarball_style_zookeeper_home_is_used_first(
    zk_server_factory: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not (DEBIAN_JAVA_DIR / "zookeeper.jar").is_file():
        pytest.skip("builds a fake ZOOKEEPER_HOME from Debian's jars")
    monkeypatch.setenv("KZK_JVM_CDS", "0")  # no class-data archive for a throw-away classpath
    lib = tmp_path / "apache-zookeeper-3.8.0-bin" / "lib"
    lib.mkdir(parents=True)
    for jar, target in [
        ("zookeeper-3.8.0.jar", "zookeeper.jar"),
        ("zookeeper-jute-3.8.0.jar", "zookeeper-jute.jar"),
        ("slf4j-simple-1.7.32.jar", "slf4j-simple.jar"),
    ]:
        (lib / jar).symlink_to(DEBIAN_JAVA_DIR / target)
    install = find_zookeeper(zookeeper_home=lib.parent)
    assert install.source == f"ZOOKEEPER_HOME={lib.parent}"
    assert install.logging == "slf4j-simple"
    server = zk_server_factory(install=install)
    assert server.mode() == "standalone"
    assert "binding to port" in server.log_tail()


# --- reports --------------------------------------------------------------------------------------

FAILING_TEST = """
def test_fails_after_using_zookeeper(zk_client):
    zk_client.create("/visible-in-the-report")
    assert False, "deliberate failure"


def test_passes(zk_client):
    zk_client.create("/not-in-any-report")
"""


def test_a_failing_test_report_carries_the_zookeeper_log_tail(tmp_path: Path) -> None:
    test_file = tmp_path / "failing" / "test_failing.py"
    test_file.parent.mkdir()
    test_file.write_text(FAILING_TEST)
    allure_dir = tmp_path / "allure"
    run = run_pytest(test_file, Sandbox.create(tmp_path / "sandbox"), "--alluredir", str(allure_dir))
    out, _ = run.communicate(timeout=120)
    assert "1 failed, 1 passed" in out, out
    assert out.count("ZooKeeper log session-master") == 1, out
    assert "binding to port /127.0.0.1:" in out
    results = [json.loads(p.read_text()) for p in allure_dir.glob("*-result.json")]
    failed = next(r for r in results if r["name"] == "test_fails_after_using_zookeeper")
    passed = next(r for r in results if r["name"] == "test_passes")
    assert [a["name"] for a in failed["attachments"]] == ["zookeeper-session-master.log"]
    assert not passed.get("attachments")
    attachment = allure_dir / failed["attachments"][0]["source"]
    assert "binding to port" in attachment.read_text()


# --- command line ---------------------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "harness", *args]
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_zk_smoke_starts_uses_and_stops_a_real_zookeeper(tmp_path: Path) -> None:
    sandbox = Sandbox.create(tmp_path)
    smoke = _cli("zk-smoke", env=child_env(sandbox))
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    for step in ("started ZooKeeper", "wrote and read back /kzk-smoke", "stopped ZooKeeper", "OK in"):
        assert step in smoke.stdout, smoke.stdout
    reap = _cli("reap", env=child_env(sandbox))
    assert reap.returncode == 0, reap.stdout + reap.stderr
    assert "removed 0 leftover(s)" in reap.stdout, "zk-smoke left nothing behind"


def test_cli_names_the_fix_when_zookeeper_is_missing(tmp_path: Path) -> None:
    env = child_env(Sandbox.create(tmp_path), KZK_DEBIAN_JAVA_DIR=str(tmp_path))
    env.pop("ZOOKEEPER_HOME", None)
    smoke = _cli("zk-smoke", env=env)
    assert smoke.returncode == 2
    assert "apt-get install -y zookeeper" in smoke.stderr
    assert "ZOOKEEPER_HOME" in smoke.stderr
