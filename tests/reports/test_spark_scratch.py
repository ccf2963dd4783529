"""Where a report's Spark driver keeps its scratch files (Spark's local dir, the JVM's temporary
files such as the native libraries it unpacks): inside the process's reapable run root, gone when
the process ends — and after a SIGKILL, gone once the reaper runs. A real JVM through the real
session start, in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.reports

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 1500

_PROGRAM = """
import json, os, sys
from reports.session import start
spark = start()
jvm = spark.sparkContext._jvm
df = spark.range(2000)
df.groupBy((df.id % 7).alias("k")).count().collect()  # a shuffle: block manager files on disk
scratch = jvm.System.getProperty("java.io.tmpdir")
print(json.dumps({
    "tmpdir": scratch,
    "local_dir": spark.conf.get("spark.local.dir"),
    "entries": sorted(os.listdir(scratch)),
}), flush=True)
if sys.argv[1] == "wait":
    sys.stdin.read()
"""


def _start(mode: str) -> tuple[subprocess.Popen[str], dict[str, object]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _PROGRAM, mode],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the Spark program ended early with {proc.wait(timeout=TIMEOUT_S)}"
    return proc, json.loads(line)


def _check_inside_a_run_root(seen: dict[str, object], pid: int) -> Path:
    scratch = Path(str(seen["tmpdir"]))
    assert seen["local_dir"] == str(scratch)
    assert scratch.name.startswith("spark-driver-")
    assert scratch.parent.name.startswith(f"kzk-run-{pid}-")  # the process's run root
    assert seen["entries"], "Spark wrote nothing in its scratch directory"
    return scratch


@pytest.mark.slow
def test_the_driver_scratch_lives_in_the_run_root_and_goes_with_the_process() -> None:
    proc, seen = _start("exit")
    scratch = _check_inside_a_run_root(seen, proc.pid)
    assert proc.wait(timeout=TIMEOUT_S) == 0
    assert not scratch.exists()
    assert not scratch.parent.exists()


@pytest.mark.slow
def test_a_killed_drivers_scratch_is_reaped() -> None:
    proc, seen = _start("wait")
    scratch = _check_inside_a_run_root(seen, proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, no clean-up at all
    proc.wait(timeout=60)
    assert (scratch.parent / "owner.json").is_file()
    assert scratch.exists()
    reaped = subprocess.run(
        [sys.executable, "-m", "harness", "reap"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert reaped.returncode == 0, reaped.stderr
    assert not scratch.parent.exists(), reaped.stdout
