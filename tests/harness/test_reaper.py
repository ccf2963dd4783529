"""No leaked JVM: owner-death handling, signal clean-up and the reaper of orphaned runs.

The owner of a server here is a separate Python process (``tests/harness/zk_owner.py``) or a
separate ``pytest`` run, so the test can SIGKILL it as a crash or a CI timeout would.
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

from harness.reaper import (
    RUN_ROOT_MARKER,
    RUN_ROOT_PREFIX,
    kill_process_group,
    proc_start_time,
    write_record,
)
from harness.zookeeper import four_letter, reap_orphans
from tests.harness.helpers import (
    OwnedServer,
    Sandbox,
    process_launcher_only,
    processes_mentioning,
    run_pytest,
    sigkill,
    start_owner,
    wait_until,
)

pytestmark = [pytest.mark.integration, process_launcher_only]


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox.create(tmp_path / "sandbox")


@pytest.fixture
def owners() -> Iterator[list[OwnedServer]]:
    """Owner processes started by a test; all killed (with their JVMs) at teardown."""
    started: list[OwnedServer] = []
    yield started
    for owned in started:
        owned.force_cleanup()


def _assert_nothing_left(owned: OwnedServer) -> None:
    assert proc_start_time(owned.pid) is None, "the JVM is still running"
    assert not owned.run_dir.exists(), "the run dir is still there"
    assert not owned.record.exists(), "the pid file is still there"
    assert processes_mentioning(str(owned.run_dir)) == []


# --- a killed owner -------------------------------------------------------------------------------


def test_the_reaper_removes_the_jvm_of_a_sigkilled_owner(owners: list[OwnedServer], sandbox: Sandbox) -> None:
    owned = start_owner(sandbox, die_with_owner=False)
    owners.append(owned)
    sigkill(owned.owner)
    assert four_letter(owned.port, "ruok") == "imok", "without pdeathsig the JVM outlives its owner"
    reaped = reap_orphans(runtime=sandbox.runtime, runs=sandbox.runs)
    assert any(r.action == "killed-jvm" and r.pid == owned.pid for r in reaped), reaped
    _assert_nothing_left(owned)
    assert not owned.run_root.exists()


def test_with_pdeathsig_the_jvm_dies_with_its_owner_and_the_reaper_removes_the_rest(
    owners: list[OwnedServer], sandbox: Sandbox
) -> None:
    owned = start_owner(sandbox, die_with_owner=True)
    owners.append(owned)
    sigkill(owned.owner)
    wait_until(lambda: not owned.jvm_alive(), 10.0, "the kernel to SIGKILL the orphaned JVM")
    assert owned.run_dir.exists(), "nobody has cleaned the run dir yet"
    reaped = reap_orphans(runtime=sandbox.runtime, runs=sandbox.runs)
    assert not any(r.action == "killed-jvm" and r.pid == owned.pid for r in reaped)
    _assert_nothing_left(owned)


# --- a live owner ---------------------------------------------------------------------------------


def test_the_reaper_never_touches_a_run_whose_owner_is_alive(
    owners: list[OwnedServer], sandbox: Sandbox
) -> None:
    owned = start_owner(sandbox, die_with_owner=False)
    owners.append(owned)
    reaped = reap_orphans(runtime=sandbox.runtime, runs=sandbox.runs)
    assert not [r for r in reaped if owned.run_root == r.path or owned.run_root in r.path.parents]
    assert four_letter(owned.port, "ruok") == "imok"
    assert owned.record.exists()
    assert owned.run_dir.exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_owner_stopped_by_a_signal_cleans_up_its_jvm(
    owners: list[OwnedServer], sandbox: Sandbox, sig: signal.Signals
) -> None:
    owned = start_owner(sandbox, die_with_owner=False)
    owners.append(owned)
    owned.owner.send_signal(sig)
    # the owner stops its JVM before it exits: on a loaded 2-core machine that took over 30 s once
    try:
        code = owned.owner.wait(timeout=90)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the owner did not exit within 90 s of {sig.name}: {_stuck(owned)}") from None
    if sig == signal.SIGTERM:
        assert code == -signal.SIGTERM, "the handler re-raises SIGTERM after cleaning up"
    _assert_nothing_left(owned)
    assert not owned.run_root.exists()


def _stuck(owned: OwnedServer) -> str:
    """What a hung owner and its JVM are doing (their stacks also go to the captured stderr)."""
    states = []
    for pid in (owned.owner.pid, owned.pid):
        for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
            try:
                stat = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                wchan = (task / "wchan").read_text()
                comm = (task / "comm").read_text().strip()
            except OSError:
                continue
            states.append(f"{pid}/{task.name} {comm} {stat} {wchan}")
    owned.owner.send_signal(signal.SIGUSR1)  # faulthandler: the owner's Python stacks
    time.sleep(1)
    return "; ".join(states[:40]) or "no /proc entries"


# --- the reaper's rules, on records it is given ---------------------------------------------------


def _fake_run(tmp_path: Path, *, pid: int, start_time: int, owner_start_offset: int) -> Path:
    """A runtime dir holding one JVM record whose owner is this process with a shifted start time."""
    runtime = tmp_path / "runtime"
    run_dir = tmp_path / "runs" / f"{RUN_ROOT_PREFIX}fake" / "zk-x"
    runtime.mkdir()
    run_dir.mkdir(parents=True)
    me = os.getpid()
    write_record(
        runtime / f"jvm-{pid}-{start_time}.json",
        {
            "kind": "jvm",
            "pid": pid,
            "start_time": start_time,
            "owner_pid": me,
            "owner_start": (proc_start_time(me) or 0) + owner_start_offset,
            "run_dir": str(run_dir),
            "run_root": str(run_dir.parent),
            "name": "fake",
        },
    )
    return runtime


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def test_a_recorded_pid_reused_by_another_process_is_never_signalled(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    start = proc_start_time(sleeper.pid) or 0
    runtime = _fake_run(tmp_path, pid=sleeper.pid, start_time=start + 1, owner_start_offset=1)
    reaped = reap_orphans(runtime=runtime, runs=tmp_path / "runs")
    assert sleeper.poll() is None, "a pid whose start time differs belongs to someone else"
    assert [r.action for r in reaped] == ["removed-run-dir", "removed-record"]


def test_an_owner_pid_reused_by_a_live_process_counts_as_dead(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    start = proc_start_time(sleeper.pid) or 0
    runtime = _fake_run(tmp_path, pid=sleeper.pid, start_time=start, owner_start_offset=1)
    reaped = reap_orphans(runtime=runtime, runs=tmp_path / "runs")
    assert sleeper.wait(timeout=5) == -signal.SIGKILL
    assert [r.action for r in reaped] == ["killed-jvm", "removed-run-dir", "removed-record"]


def test_a_record_of_a_live_owner_is_left_alone(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    start = proc_start_time(sleeper.pid) or 0
    runtime = _fake_run(tmp_path, pid=sleeper.pid, start_time=start, owner_start_offset=0)
    assert reap_orphans(runtime=runtime, runs=tmp_path / "runs") == []
    assert sleeper.poll() is None


def test_an_unrecorded_process_marked_with_a_dead_owners_run_root_is_killed(tmp_path: Path) -> None:
    root = tmp_path / "runs" / f"{RUN_ROOT_PREFIX}dead"
    root.mkdir(parents=True)
    write_record(
        root / "owner.json",
        {"kind": "owner", "owner_pid": os.getpid(), "owner_start": 1, "run_root": str(root)},
    )
    marker = f"{RUN_ROOT_MARKER}{root}"
    stray = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", marker], start_new_session=True
    )
    try:
        wait_until(lambda: bool(processes_mentioning(marker)), 10.0, "the stray process to start")
        (tmp_path / "runtime").mkdir()
        reaped = reap_orphans(runtime=tmp_path / "runtime", runs=tmp_path / "runs")
        assert stray.wait(timeout=5) == -signal.SIGKILL
        assert [r.action for r in reaped] == ["killed-jvm", "removed-run-root"]
        assert not root.exists()
    finally:
        stray.kill()
        stray.wait()


# --- a killed pytest run --------------------------------------------------------------------------

SLEEPY_TEST = """
import json, os, time

def test_hold_a_server(zk_server):
    with open(os.environ["KZK_TEST_INFO"], "w") as f:
        json.dump({"pid": zk_server.pid, "port": zk_server.port, "run_dir": str(zk_server.run_dir)}, f)
    time.sleep(600)
"""


def _run_quick_pytest(tmp_path: Path, sandbox: Sandbox) -> str:
    quick = tmp_path / "quick" / "test_quick.py"
    quick.parent.mkdir(exist_ok=True)
    quick.write_text("def test_nothing():\n    pass\n")
    out, _ = run_pytest(quick, sandbox).communicate(timeout=120)
    assert "1 passed" in out, out
    return out


@pytest.mark.parametrize("die_with_owner", [False, True], ids=["reaper", "pdeathsig"])
def test_a_sigkilled_pytest_run_leaves_no_jvm_after_the_next_runs_reaper(
    tmp_path: Path, sandbox: Sandbox, die_with_owner: bool
) -> None:
    info_file = tmp_path / "info.json"
    sleepy = tmp_path / "sleepy" / "test_sleepy.py"
    sleepy.parent.mkdir()
    sleepy.write_text(SLEEPY_TEST)
    run = run_pytest(
        sleepy, sandbox, KZK_TEST_INFO=str(info_file), KZK_JVM_DIE_WITH_OWNER=str(int(die_with_owner))
    )
    jvm: tuple[int, int] | None = None
    try:
        wait_until(
            lambda: info_file.exists() and info_file.stat().st_size > 0, 60.0, "the pytest run's server"
        )
        info = json.loads(info_file.read_text())
        jvm = (info["pid"], proc_start_time(info["pid"]) or 0)
        if not die_with_owner:  # a second pytest run in parallel leaves the live run alone
            _run_quick_pytest(tmp_path, sandbox)
            assert four_letter(info["port"], "ruok") == "imok"
        sigkill(run)
        if not die_with_owner:
            assert four_letter(info["port"], "ruok") == "imok", "the JVM outlived the killed pytest"
        out = _run_quick_pytest(tmp_path, sandbox)
        if not die_with_owner:
            assert f"killed-jvm pid={info['pid']}" in out, out
        wait_until(lambda: proc_start_time(jvm[0]) != jvm[1], 10.0, "the JVM to be gone")
        assert processes_mentioning(info["run_dir"]) == []
        assert not Path(info["run_dir"]).exists()
    finally:
        if run.poll() is None:
            sigkill(run)
        if jvm is not None:
            kill_process_group(*jvm)


def test_an_owned_temp_dir_is_kept_while_its_owner_lives_and_reaped_once_it_was_killed(
    tmp_path: Path,
) -> None:
    """The differential mode's work root: a killed ``conformance diff`` leaves it behind, and the
    next reaper (``python -m harness reap``, any harness start) deletes it — never a live run's."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    code = (
        "from harness.reaper import owned_temp_dir; import time;"
        " print(owned_temp_dir('diff'), flush=True); time.sleep(120)"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        owned = Path(owner.stdout.readline().strip())
        assert owned.is_dir()
        assert owned.parent == tmp_path / f"kzk-runs-{os.getuid()}"
        (owned / "scenario-work").mkdir()
        runtime = tmp_path / "runtime"
        runtime.mkdir()
        assert not [r for r in reap_orphans(runtime=runtime, runs=owned.parent) if r.path == owned]
        assert owned.is_dir(), "the reaper deleted the work dir of a live owner"
        sigkill(owner)
        reaped = reap_orphans(runtime=runtime, runs=owned.parent)
        assert [(r.action, r.pid) for r in reaped if r.path == owned] == [("removed-owned-dir", owner.pid)]
        assert not owned.exists()
    finally:
        owner.kill()
        owner.wait()
