"""``--master spark://…`` for real: a Spark standalone master and one worker started from the
pyspark installation on 127.0.0.1, the job run against them through the CLI, and its outputs
compared with the same job in local mode. The master, the worker and the worker's executors run
in their own process groups and are killed as groups whatever happens."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

from tests.reports.conftest import record, runs, write_jsonl

pytestmark = pytest.mark.reports

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).resolve().parent
UP_DEADLINE_S = 240.0  # a JVM start on a loaded 2-core machine
BUILD_TIMEOUT_S = 900
# What the job's outputs are compared on: everything but the run's own facts (times, master).
VOLATILE_SUMMARY_KEYS = ("started_at", "wall_s", "spark")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class _Daemon:
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
                pytest.fail(f"the {self.name} exited ({self.proc.returncode}):\n{self.text()[-3000:]}")
            time.sleep(0.5)
        pytest.fail(f"the {self.name} did not log {pattern!r} in time:\n{self.text()[-3000:]}")

    def kill(self) -> None:
        """SIGTERM to the whole group (the worker's executors are in it), SIGKILL if it lingers;
        returns when no process of the group is left (or the SIGKILL grace is over)."""
        for sig, grace_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace_s
            while _group_alive(self.proc.pid) and time.monotonic() < deadline:
                self.proc.poll()  # reap the leader
                time.sleep(0.2)
            if not _group_alive(self.proc.pid):
                break
        self.proc.poll()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _env(tmp: Path) -> dict[str, str]:
    return os.environ | {
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",  # every daemon and web UI on loopback
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",  # no REST server on port 6066
        "SPARK_WORKER_DIR": str(tmp / "work"),
        "SPARK_LOG_DIR": str(tmp / "logs"),
        "SPARK_PID_DIR": str(tmp),
        "PYSPARK_PYTHON": sys.executable,  # the executors' Python: this venv (imports reports)
    }


def _spawn(name: str, args: list[str], tmp: Path, daemons: list[_Daemon]) -> _Daemon:
    log = tmp / f"{name}.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_env(tmp),
            cwd=tmp,
            start_new_session=True,  # its own process group, killed as one
        )
    daemon = _Daemon(name, proc, log)
    daemons.append(daemon)
    return daemon


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``spark://127.0.0.1:PORT`` with one registered worker (1 core, 1 GiB); the worker dir."""
    tmp = tmp_path / "cluster"
    (tmp / "work").mkdir(parents=True)
    daemons: list[_Daemon] = []
    try:
        port = _free_port()
        master_url = f"spark://127.0.0.1:{port}"
        deadline = time.monotonic() + UP_DEADLINE_S
        master = _spawn(
            "master",
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(_free_port())],
            tmp, daemons,
        )  # fmt: skip
        master.wait_for(r"I have been elected leader! New state: ALIVE", deadline)
        worker = _spawn(
            "worker",
            ["org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1", "--cores", "1",
             "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir", str(tmp / "work")],
            tmp, daemons,
        )  # fmt: skip
        worker.wait_for(re.escape(f"Successfully registered with master {master_url}"), deadline)
        yield master_url, tmp / "work"
    finally:  # setup failed, the test failed or passed: the groups go
        for d in reversed(daemons):
            d.kill()
    assert not [d.name for d in daemons if _group_alive(d.proc.pid)], "a Spark daemon outlived its kill"


def _build(inputs: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reports", "build", "--input", str(inputs), "--out", str(out),
         "--driver-memory", "1g", *extra],
        capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=ROOT, check=False,
        env=os.environ | {"PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip


def _records(path: Path) -> Path:
    chaos = [
        record(kind="chaos-run", test_id="chaos/links", fault_package="kill-broker", seed=i, run_id=f"c{i}",
               run_order=f"20260101T00000{i}.000000Z-c{i}", outcome="failed" if i == 2 else "passed",
               reason="checker one-controller: 2 controllers at epoch 7" if i == 2 else None,
               phase_metrics=[{"name": "time_to_heal", "value": v, "unit": "s"}],
               started_at=f"2026-01-0{1 + i % 3}T00:00:00+00:00",
               finished_at=f"2026-01-0{1 + i % 3}T00:00:05+00:00")
        for i, v in enumerate([1.5, 2.25, 0.75, 9.0, 3.0])
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_jsonl(path, runs("t.py::a", "PFPPFPPS") + runs("t.py::b", "PPPP", day=2) + chaos)


def test_a_standalone_master_runs_the_job_with_local_mode_outputs(
    standalone: tuple[str, Path], tmp_path: Path
) -> None:
    master_url, work = standalone
    inputs = _records(tmp_path / "in" / "runs.jsonl")
    on_cluster = _build(inputs.parent, tmp_path / "cluster-out", "--master", master_url)
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    # The tasks ran in the worker's executor, not in the driver: its log says so.
    executor_logs = list(work.glob("app-*/*/stderr"))
    assert executor_logs, f"no executor was launched under {work}"
    assert any("Finished task" in p.read_text(errors="replace") for p in executor_logs)

    local = _build(inputs.parent, tmp_path / "local-out", "--master", "local[2]")
    assert local.returncode == 0, local.stderr[-3000:]
    cluster_out, local_out = tmp_path / "cluster-out", tmp_path / "local-out"
    csvs = sorted(p.name for p in local_out.glob("*.csv"))
    assert "flakiness.csv" in csvs
    assert "latency.csv" in csvs
    assert sorted(p.name for p in cluster_out.glob("*.csv")) == csvs
    for name in csvs:
        assert (cluster_out / name).read_text() == (local_out / name).read_text(), name
    parquet = sorted(p.name for p in (local_out / "parquet").iterdir())
    assert sorted(p.name for p in (cluster_out / "parquet").iterdir()) == parquet
    summaries = [json.loads((d / "summary.json").read_text()) for d in (cluster_out, local_out)]
    assert summaries[0]["spark"]["master"] == master_url
    for s in summaries:
        for key in VOLATILE_SUMMARY_KEYS:
            s.pop(key)
    assert summaries[0] == summaries[1]
    assert "records: 17  rejected: 0" in on_cluster.stdout
