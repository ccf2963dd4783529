"""The command line as a user meets it: bad input, no JVM, unreachable or invalid masters, and
the job through spark-submit. Each runs the real CLI in a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reports.conftest import record, runs, write_jsonl

pytestmark = pytest.mark.reports

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reports", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=cwd,
        check=False,
    )


def _records(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "runs.jsonl", [*runs("t.py::a", "PFPP"), record(test_id="t.py::b")])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_missing_input_path_is_named_with_exit_2(tmp_path: Path) -> None:
    done = _cli("build", "--input", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"reports: input {tmp_path / 'nope'}: no such file or directory"
    assert not (tmp_path / "out").exists()


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    done = _cli("build", "--input", str(_records(tmp_path)), "--out", "x", "--flake-rate", "2")
    assert done.returncode == 2
    assert "--flake-rate: must be between 0 and 1" in done.stderr


def test_no_jvm_names_the_fix(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"} | {"PATH": str(tmp_path)}
    done = _cli("build", "--input", str(_records(tmp_path)), "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 1
    assert "no Java runtime (no java on PATH)" in done.stderr
    assert "apt-get install -y openjdk-17-jre-headless" in done.stderr
    assert "Traceback" not in done.stderr


def test_unreachable_master_is_one_line_and_non_zero(tmp_path: Path) -> None:
    master = f"spark://127.0.0.1:{_free_port()}"
    done = _cli(
        "build", "--input", str(_records(tmp_path)), "--out", str(tmp_path / "out"), "--master", master
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"reports: Spark master {master} cannot be reached (127.0.0.1:")
    assert "Connection refused" in lines[0]


def test_master_spark_rejects_is_explained_in_one_line(tmp_path: Path) -> None:
    done = _cli(
        "build", "--input", str(_records(tmp_path)), "--out", str(tmp_path / "out"), "--master", "nowhere://x"
    )
    assert done.returncode == 1
    ours = [ln for ln in done.stderr.splitlines() if ln.startswith("reports:")]
    assert len(ours) == 1
    assert "Spark could not start with master nowhere://x" in ours[0]
    assert "SparkException: Master must either be yarn or start with spark, k8s, or local" in ours[0]
    assert done.stderr.strip().splitlines() == ours  # Spark's stack trace is not dumped on the user


def test_spark_submit_runs_the_job(tmp_path: Path) -> None:
    spark_submit = Path(sys.executable).parent / "spark-submit"
    env = os.environ | {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    out = tmp_path / "out"
    done = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[2]",
            "--driver-memory",
            "1g",
            str(ROOT / "reports" / "__main__.py"),
            "build",
            "--input",
            str(_records(tmp_path)),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "records: 5  rejected: 0" in done.stdout
    rows = (out / "flakiness.csv").read_text(encoding="utf-8").splitlines()
    assert rows[1].startswith("conformance-test,t.py::a,reference,2.5,none,4,3,1,0,0,0.25,")
    assert (out / "report.html").stat().st_size > 1000
