"""Shared helpers for the harness tests: child processes that own servers, and ``ps`` checks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.reaper import kill_process_group, proc_start_time

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Sandbox:
    """A private runtime dir and temp dir for child owners.

    Other pytest runs on this machine (xdist workers, other engineers) run the reaper at session
    start; in the shared dirs they could reap a test's deliberately orphaned run first and make
    the test's own observations racy. The sandbox keeps the test's records to itself.
    """

    runtime: Path
    tmp: Path

    @classmethod
    def create(cls, base: Path) -> Sandbox:
        sandbox = cls(base / "runtime", base / "tmp")
        sandbox.runtime.mkdir(mode=0o700, parents=True)
        sandbox.tmp.mkdir(mode=0o700, parents=True)
        return sandbox

    @property
    def runs(self) -> Path:
        return self.tmp / f"kzk-runs-{os.getuid()}"

    def env(self) -> dict[str, str]:
        return {"KZK_RUNTIME_DIR": str(self.runtime), "TMPDIR": str(self.tmp)}


def child_env(sandbox: Sandbox, **extra: str) -> dict[str, str]:
    """The environment for a child Python: the repo importable, no inherited pytest/xdist state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KZK_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return env | sandbox.env() | extra


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


def processes_mentioning(text: str) -> list[str]:
    """``ps -ww -eo pid,args`` lines that mention ``text`` (a run dir is in every JVM's argv).

    ``-ww``: without it ps cuts lines at ``$COLUMNS``, which pytest's terminal set-up makes short.
    """
    ps = ["ps", "-ww", "-eo", "pid,args"]
    out = subprocess.run(ps, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if text in line]


@dataclass
class OwnedServer:
    """What a helper owner process reports about the server it started."""

    owner: subprocess.Popen[str]
    pid: int
    start_time: int
    port: int
    run_dir: Path
    run_root: Path
    record: Path

    def jvm_alive(self) -> bool:
        return proc_start_time(self.pid) == self.start_time

    def force_cleanup(self) -> None:
        """Test teardown: whatever happened, leave no process behind."""
        if self.owner.poll() is None:
            self.owner.kill()
            self.owner.wait()
        kill_process_group(self.pid, self.start_time)


def start_owner(sandbox: Sandbox, *, die_with_owner: bool) -> OwnedServer:
    """Start ``tests/harness/zk_owner.py`` in a child Python and wait for its server."""
    owner = subprocess.Popen(
        [sys.executable, "-m", "tests.harness.zk_owner", "1" if die_with_owner else "0"],
        cwd=REPO_ROOT,
        env=child_env(sandbox),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    if not line:
        owner.wait()
        raise AssertionError(f"owner helper exited with {owner.returncode} before starting its server")
    info = json.loads(line)
    return OwnedServer(
        owner=owner,
        pid=info["pid"],
        start_time=info["start_time"],
        port=info["port"],
        run_dir=Path(info["run_dir"]),
        run_root=Path(info["run_root"]),
        record=Path(info["record"]),
    )


def run_pytest(test_file: Path, sandbox: Sandbox, *args: str, **env: str) -> subprocess.Popen[str]:
    """Start a separate ``pytest`` run of ``test_file``; the harness plugin loads through its
    ``pytest11`` entry point, as in any project that installs the kit."""
    plugins = ["-p", "no:cacheprovider"]
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *plugins, "-q", *args, str(test_file)],
        cwd=test_file.parent,
        env=child_env(sandbox, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def sigkill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


#: Tests of what only the process launcher has (pid files, PR_SET_PDEATHSIG, process groups,
#: ``Popen`` exit codes): under ``--launcher docker`` they are skipped with this reason — the docker
#: launcher's counterparts are in ``tests/containers`` (owner labels, reaper, ``docker kill``).
process_launcher_only = pytest.mark.skipif(
    os.environ.get("KZK_LAUNCHER", "process") != "process",
    reason="process-launcher specific (pid files, PR_SET_PDEATHSIG, process groups): does not hold for "
    "containers; the docker launcher's cleanup and fault semantics are tested in tests/containers",
)
