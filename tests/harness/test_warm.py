"""Warm starts (harness.warm): a program forked from a warm interpreter is the program ``python -m`` runs.

Real processes throughout: the warm server is a real interpreter, the programs are real forks of
it, signals are real, and the owner that dies is a real process killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.targets import load_target
from conformance.ahead import cluster_on
from harness import warm
from harness.process import ManagedJvm, spawn_jvm
from harness.zookeeper import ZooKeeperServer
from tests.harness.helpers import process_launcher_only

pytestmark = [pytest.mark.integration, process_launcher_only]

PROGRAM = "tests.harness.warm_program"
REPO = Path(__file__).resolve().parents[2]


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _gone(pid: int, within_s: float) -> bool:
    """Whether ``pid`` has ended (gone, or a zombie waiting for its reaper) within ``within_s``."""
    give_up = time.monotonic() + within_s
    while time.monotonic() < give_up:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def started() -> Iterator[list[ManagedJvm]]:
    jvms: list[ManagedJvm] = []
    yield jvms
    for jvm in jvms:
        if jvm.exit_code() is None:
            jvm.kill()


def _spawn(
    started: list[ManagedJvm],
    tmp_path: Path,
    *args: str,
    module: str = PROGRAM,
    env: dict[str, str] | None = None,
) -> tuple[ManagedJvm, Path]:
    log = tmp_path / f"out-{len(started)}.log"
    jvm = spawn_jvm(
        [sys.executable, "-m", module, *args],
        name="warm-test",
        run_dir=REPO,
        log_path=log,
        die_with_owner=True,
        env=env if env is not None else {**os.environ, "WARM_TEST_MARK": "m"},
        warm_module=module,
    )
    started.append(jvm)
    return jvm, log


def test_a_forked_program_is_started_as_python_minus_m_would_start_it(
    started: list[ManagedJvm], tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    env = {"PATH": os.environ["PATH"], "PYTHONUNBUFFERED": "1", "WARM_TEST_MARK": "only-this"}
    jvm, log = _spawn(started, tmp_path, "report", str(report), env=env)
    assert jvm.popen.wait(20) == 0, log.read_text()
    got = json.loads(report.read_text())
    assert got["argv"] == ["report", str(report)]
    assert got["name"] == "__main__"
    assert got["cwd"] == str(REPO)
    assert got["env"] == env, "the environment is the request's, nothing of the server's"
    assert got["pid"] == jvm.pid == got["pgid"] == got["sid"], "its own session and process group"
    server = got["ppid"]
    assert server != os.getpid()
    assert "harness.warm_server" in _cmdline(server), _cmdline(server)
    assert got["preloaded_in"] == server, "the module was imported once, by the warm server"
    assert log.read_text().splitlines() == ["to stdout", "to stderr"]


def test_with_warm_starts_off_the_program_is_a_new_interpreter(
    started: list[ManagedJvm], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(warm.ENV, "0")
    report = tmp_path / "report.json"
    jvm, log = _spawn(started, tmp_path, "report", str(report))
    assert jvm.popen.wait(20) == 0, log.read_text()
    got = json.loads(report.read_text())
    assert got["ppid"] == os.getpid()
    assert got["preloaded_in"] == got["pid"]


@pytest.mark.parametrize(
    ("args", "code", "output"),
    [
        (("exit", "3"), 3, ""),
        (("raise",), 1, "RuntimeError: the program failed"),
        (("atexit",), 5, "atexit ran"),
        (("nonsense",), 2, "unknown action 'nonsense'"),
    ],
)
def test_exit_codes_and_output_are_the_interpreters(
    started: list[ManagedJvm], tmp_path: Path, args: tuple[str, ...], code: int, output: str
) -> None:
    jvm, log = _spawn(started, tmp_path, *args)
    assert jvm.popen.wait(20) == code, log.read_text()
    assert output in log.read_text()
    assert jvm.exit_code() == code


def test_sigterm_reaches_the_program_and_sigkill_is_minus_nine(
    started: list[ManagedJvm], tmp_path: Path
) -> None:
    jvm, log = _spawn(started, tmp_path, "sleep")
    _wait_for_line(log, "sleeping")
    assert jvm.terminate(grace_s=10) == 0
    assert log.read_text().splitlines() == ["sleeping", "terminated"]
    jvm2, log2 = _spawn(started, tmp_path, "sleep")
    _wait_for_line(log2, "sleeping")
    jvm2.pause()
    state = Path(f"/proc/{jvm2.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state in ("T", "t"), f"paused program in state {state}"
    jvm2.resume()
    assert jvm2.kill() == -signal.SIGKILL


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP])
def test_a_signal_sent_the_moment_the_start_returns_reaches_the_program(
    started: list[ManagedJvm], tmp_path: Path, sig: signal.Signals
) -> None:
    """A cold ``Popen(start_new_session=True)`` returns after the child's ``setsid``, so a signal
    to its group right away reaches it; a warm start must give the same guarantee (a chaos bounce
    right after a restart SIGTERMs a node within milliseconds of its start)."""
    for _ in range(15):
        jvm, _log = _spawn(started, tmp_path, "sleep")
        jvm.signal_group(sig)
        if sig == signal.SIGSTOP:
            give_up = time.monotonic() + 5.0
            state = ""
            while time.monotonic() < give_up:
                state = Path(f"/proc/{jvm.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state in ("T", "t"):
                    break
                time.sleep(0.01)
            assert state in ("T", "t"), f"a SIGSTOP sent at once left the program in state {state}"
            assert jvm.kill() == -signal.SIGKILL
        else:
            # default dispositions (the program's handler is not installed yet, or is): it ends
            assert jvm.popen.wait(10) in (-sig, 0), f"{sig.name} sent at once did not end the program"


def test_a_dead_warm_server_takes_its_programs_with_it_and_the_next_start_gets_a_new_one(
    started: list[ManagedJvm], tmp_path: Path
) -> None:
    jvm, log = _spawn(started, tmp_path, "sleep")
    _wait_for_line(log, "sleeping")
    server = _ppid(jvm.pid)
    assert "harness.warm_server" in _cmdline(server)
    os.kill(server, signal.SIGKILL)
    assert jvm.popen.wait(20) == -signal.SIGKILL
    assert _gone(jvm.pid, 10)
    report = tmp_path / "report.json"
    again, log2 = _spawn(started, tmp_path, "report", str(report))
    assert again.popen.wait(20) == 0, log2.read_text()
    new_server = json.loads(report.read_text())["ppid"]
    assert new_server != server
    assert "harness.warm_server" in _cmdline(new_server)


def test_a_module_the_warm_server_cannot_import_starts_cold_with_its_own_error(
    started: list[ManagedJvm], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    jvm, log = _spawn(started, tmp_path, module="tests.harness.warm_broken")
    assert "warm starts off for tests.harness.warm_broken: warm server" in capfd.readouterr().err
    assert jvm.popen.wait(20) == 1
    text = log.read_text()
    assert "ImportError: warm_broken cannot be imported" in text
    assert isinstance(jvm.popen, subprocess.Popen), "started as a new interpreter"


OWNER = """
import json, os, sys, time
from pathlib import Path
from harness.process import spawn_jvm
log = Path(sys.argv[1])
module = "tests.harness.warm_program"
jvm = spawn_jvm([sys.executable, "-m", module, "sleep"], name="warm-owned", run_dir=Path.cwd(),
                log_path=log, die_with_owner=True, warm_module=module)
while "sleeping" not in log.read_text():
    time.sleep(0.02)
server = int(Path(f"/proc/{jvm.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
print(json.dumps({"program": jvm.pid, "server": server}), flush=True)
time.sleep(600)
"""


def test_a_killed_owner_leaves_neither_the_warm_server_nor_its_programs(tmp_path: Path) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path / "owned.log")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert owner.stdout is not None
        pids = json.loads(owner.stdout.readline())
        assert "harness.warm_server" in _cmdline(pids["server"])
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        assert _gone(pids["server"], 10), "the warm server outlived its owner"
        assert _gone(pids["program"], 10), "the program outlived its owner"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def _wait_for_line(log: Path, line: str, within_s: float = 20) -> None:
    give_up = time.monotonic() + within_s
    while line not in log.read_text(errors="replace").splitlines():
        assert time.monotonic() < give_up, f"no {line!r} in {log}: {log.read_text(errors='replace')!r}"
        time.sleep(0.02)


def test_the_reference_nodes_are_forked_warm_and_stop_restart_and_die_as_processes(
    zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    """The reference target says ``warm_start = true``: its nodes are forks of a warm server,
    and a controlled shutdown (exit 0), a SIGKILL (-9) and a restart are what they are cold."""
    target = load_target("reference")
    assert target.warm_module == "reference_controller.node"
    cluster = cluster_on(target, zk_server, zk_chroot, tmp_path)
    try:
        cluster.start()
        for node in cluster.nodes.values():
            assert node.proc is not None
            pid = node.proc.pid
            assert pid is not None
            assert "harness.warm_server" in _cmdline(_ppid(pid)), f"node {node.broker_id}: {_cmdline(pid)}"
        cid = cluster.wait_controller()
        stopped, killed = [b for b in cluster.broker_ids if b != cid]
        assert cluster.stop(stopped) == 0
        assert cluster.kill(killed) == -signal.SIGKILL
        cluster.wait_unregistered(killed)  # its session expired: a restart can register again
        cluster.start([stopped, killed])
        assert all(cluster.zk.exists(f"/brokers/ids/{b}") for b in cluster.broker_ids)
    finally:
        cluster.close()
