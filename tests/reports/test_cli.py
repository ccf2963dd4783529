"""The command line as a user meets it: bad input, no JVM, unreachable or invalid masters, and
the job through spark-submit. Each runs the real CLI in a subprocess."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reports.conftest import record, runs, write_jsonl

pytestmark = pytest.mark.reports

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 1500  # a ceiling for a loaded 2-core machine (Spark start-up alone took 196 s at load 25)


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


_PROGRESS = ("reports: inputs: ", "reports: starting Spark (")


def _not_progress(stderr: str) -> list[str]:
    """stderr without the job's progress lines (what it reads, that Spark is starting)."""
    return [ln for ln in stderr.strip().splitlines() if not ln.startswith(_PROGRESS)]


def test_unreachable_master_is_one_line_and_non_zero(tmp_path: Path) -> None:
    master = f"spark://127.0.0.1:{_free_port()}"
    done = _cli(
        "build", "--input", str(_records(tmp_path)), "--out", str(tmp_path / "out"), "--master", master
    )
    assert done.returncode == 1
    lines = _not_progress(done.stderr)
    assert len(lines) == 1
    assert lines[0].startswith(f"reports: Spark master {master} cannot be reached (127.0.0.1:")
    assert "Connection refused" in lines[0]


def test_master_spark_rejects_is_explained_in_one_line(tmp_path: Path) -> None:
    done = _cli(
        "build", "--input", str(_records(tmp_path)), "--out", str(tmp_path / "out"), "--master", "nowhere://x"
    )
    assert done.returncode == 1
    ours = [ln for ln in _not_progress(done.stderr) if ln.startswith("reports:")]
    assert len(ours) == 1
    assert "Spark could not start with master nowhere://x" in ours[0]
    assert "SparkException: Master must either be yarn or start with spark, k8s, or local" in ours[0]
    assert _not_progress(done.stderr) == ours  # Spark's stack trace is not dumped on the user


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


def test_an_output_that_cannot_be_written_fails_before_spark_starts(tmp_path: Path) -> None:
    records = str(_records(tmp_path))
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    cases = {
        str(tmp_path / "a-file"): f"reports: --out {tmp_path / 'a-file'}: exists and is not a directory",
        str(
            tmp_path / "a-file" / "out"
        ): f"reports: --out {tmp_path / 'a-file' / 'out'}: {tmp_path / 'a-file'} is a file, not a directory",
        "/sys/kzk-reports-out": "reports: --out /sys/kzk-reports-out: cannot write in /sys "
        "(Permission denied)",
    }
    for out, message in cases.items():
        done = _cli("build", "--input", records, "--out", out)
        assert done.returncode == 2, (out, done.stderr)
        assert done.stderr.startswith(message), done.stderr
        assert "starting Spark" not in done.stderr
        assert "Traceback" not in done.stderr


def test_build_says_what_it_is_doing_and_counts_records_given_twice_once(tmp_path: Path) -> None:
    records = _records(tmp_path)  # 5 records
    copy = tmp_path / "copy" / "runs-gw0.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(records.read_bytes())
    out = tmp_path / "out"
    done = _cli("build", "--input", str(records), str(copy.parent), "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    said = [ln for ln in done.stderr.splitlines() if ln.startswith(("reports:", "  "))]
    expected = [
        "reports: inputs: 2 record file(s) (",
        "reports: starting Spark (local[*], driver memory ",
        "reports: Spark 4.",
        "reports: reading 2 record file(s) (",
        "reports: 10 records valid, 0 rejected (",
        "reports: 5 duplicate record(s) dropped: 5 record_id(s) seen more than once, 0 of them with "
        "different outcomes (the first copy by start time is kept) (",
        "reports: 5 records to report on, 0 rejected (",
        "reports: computing 4 passes at once, then flake_ranking, impact …",
        "reports: tables computed (",
        f"reports: writing outputs to {out} …",
        "reports: outputs written (",
    ]
    for prefix in expected:
        assert any(ln.startswith(prefix) for ln in said), (prefix, said)
    assert [ln for ln in said if ln.startswith("  pass: ")]
    assert "records: 5  rejected: 0" in done.stdout
    assert "5 duplicate record(s) dropped" in done.stdout
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["records"]["duplicates"] == {"dropped": 5, "ids": 5, "conflicting": 0}
    rows = (out / "flakiness.csv").read_text(encoding="utf-8").splitlines()
    assert rows[1].startswith("conformance-test,t.py::a,reference,2.5,none,4,3,1,0,0,0.25,")  # not 8 runs


def test_records_of_an_unknown_kind_are_exit_2_with_the_kind_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "runs-x.jsonl", [record(), record(kind="bench-run", run_id="r9")])
    done = _cli("build", "--input", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr[-2000:]
    ours = [
        ln
        for ln in done.stderr.splitlines()
        if not ln.startswith(("reports: inputs", "reports: starting", "reports: Spark", "reports: reading"))
    ]
    assert ours[0] == (
        "reports: 1 record(s) of a kind this reader does not know ('bench-run' ×1; it knows "
        "conformance-test, chaos-run, sim-run): records of a newer kit? Report them with a kit that "
        "knows the kind."
    )
    assert f"{path}:2: kind: 'bench-run' not in ('conformance-test', 'chaos-run', 'sim-run')" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_damaged_gzip_record_file_is_exit_2_with_the_file_named(tmp_path: Path) -> None:
    """A ``.jsonl.gz`` cut short (a copy interrupted, a disk full) is bad input: the file and the
    cause are named, nothing is written, no Spark trace."""
    _records(tmp_path)
    lines = "".join(json.dumps(record(run_id=f"g{i}")) + "\n" for i in range(2000)).encode()
    whole = gzip.compress(lines)
    damaged = tmp_path / "runs-cut.jsonl.gz"
    damaged.write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "out"
    done = _cli("build", "--input", str(tmp_path), "--out", str(out), "--driver-memory", "1g")
    assert done.returncode == 2, done.stderr[-3000:]
    ours = [ln for ln in done.stderr.splitlines() if ln.startswith("reports: cannot read")]
    assert ours == [
        f"reports: cannot read record file {damaged} (EOFException: Unexpected end of input stream): "
        "it is damaged (a gzip file cut short?). Restore or remove it and run again"
    ], done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not (out / "summary.json").exists()
