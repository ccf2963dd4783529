"""A Spark standalone master and N workers on 127.0.0.1, started from the pyspark installation
(test tooling shared by the reports and chaos tests). Every daemon runs in its own process group
and is killed as a group, whatever happens — and dies with the test process even when that is
killed (``PR_SET_PDEATHSIG``; a worker's executors exit when their worker goes); a worker can be
killed on its own mid-test."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
UP_DEADLINE_S = 240.0  # a JVM start on a loaded 2-core machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Daemon:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.is_file() else ""

    def wait_for(self, pattern: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            if re.search(pattern, self.text()):
                return
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the {self.name} exited ({self.proc.returncode}):\n{self.text()[-3000:]}"
                )
            time.sleep(0.5)
        raise AssertionError(f"the {self.name} did not log {pattern!r} in time:\n{self.text()[-3000:]}")

    def kill(self, first: signal.Signals = signal.SIGTERM) -> None:
        """``first`` to the whole group (a worker's executors are in it), SIGKILL if it lingers;
        returns when no process of the group is left."""
        for sig, grace_s in ((first, 30.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace_s
            while group_alive(self.proc.pid) and time.monotonic() < deadline:
                self.proc.poll()
                time.sleep(0.2)
            if not group_alive(self.proc.pid):
                break
        self.proc.poll()


@dataclass
class Standalone:
    master_url: str
    base: Path
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def workers(self) -> list[Daemon]:
        return [d for d in self.daemons if d.name.startswith("worker")]


def _env(base: Path) -> dict[str, str]:
    return os.environ | {
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "SPARK_WORKER_DIR": str(base / "work"),
        # the executors' block files and every daemon's and executor's JVM temporary files (the
        # native libraries they unpack) under the test's directory, not loose in /tmp
        "SPARK_LOCAL_DIRS": str(base / "local"),
        "_JAVA_OPTIONS": f"-Djava.io.tmpdir={base / 'tmp'}",
        "SPARK_LOG_DIR": str(base / "logs"),
        "SPARK_PID_DIR": str(base),
        "PYSPARK_PYTHON": sys.executable,
    }


def _die_with_test() -> None:  # between fork and exec; spark-class execs the JVM, which keeps it
    import ctypes  # noqa: PLC0415

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _spawn(name: str, args: list[str], base: Path, daemons: list[Daemon]) -> Daemon:
    log = base / f"{name}.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_env(base),
            cwd=base,
            start_new_session=True,  # killed as a group; and with the test process if it is killed
            preexec_fn=_die_with_test,  # noqa: PLW1509 - only prctl
        )
    daemon = Daemon(name, proc, log)
    daemons.append(daemon)
    return daemon


@contextmanager
def standalone(base: Path, workers: int = 1, cores: int = 1, memory: str = "1g") -> Iterator[Standalone]:
    """``spark://127.0.0.1:PORT`` with ``workers`` registered workers; every daemon killed at exit."""
    for sub in ("work", "local", "tmp"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    daemons: list[Daemon] = []
    try:
        port = free_port()
        url = f"spark://127.0.0.1:{port}"
        deadline = time.monotonic() + UP_DEADLINE_S
        master = _spawn(
            "master",
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(free_port())],
            base, daemons,
        )  # fmt: skip
        master.wait_for(r"I have been elected leader! New state: ALIVE", deadline)
        for i in range(workers):
            work = base / "work" / f"w{i}"
            work.mkdir(parents=True, exist_ok=True)
            worker = _spawn(
                f"worker{i}",
                ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", str(cores),
                 "--memory", memory, "--webui-port", str(free_port()), "--work-dir", str(work)],
                base, daemons,
            )  # fmt: skip
            worker.wait_for(re.escape(f"Successfully registered with master {url}"), deadline)
        yield Standalone(url, base, daemons)
    finally:
        for d in reversed(daemons):
            d.kill()
    left = [d.name for d in daemons if group_alive(d.proc.pid)]
    assert not left, f"Spark daemons outlived their kill: {left}"
