"""``python -m reports bench``: wall time of the full report on synthetic records (drivers ring).

For each size (default 100k, 1M, 10M records): synthesise the records once (kept under
``--work-dir``; not timed as part of the report), then time ``python -m reports build`` in a
fresh process — Spark start-up included — and print wall seconds, records/s, the CPU seconds
the build's Spark JVM used (as the job logs it) and the load average (1/5/15 min)
at its start and end, since on a shared 2-core machine the wall time depends on what else runs.
Figures go to ``<work-dir>/bench.json`` too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

from reports.errors import EnvironmentProblem, InputError

__all__ = ["main", "run_size"]

_TIMEOUT_S = 3 * 3600


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _run(cmd: list[str], what: str) -> tuple[float, float | None]:
    """Wall seconds of a command, and the CPU seconds of its Spark JVM as the job logs them
    (``JVM CPU … s in all``; the JVM is a grandchild, outside ``RUSAGE_CHILDREN``)."""
    t0 = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentProblem(f"{what} did not finish within {_TIMEOUT_S} s") from exc
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise EnvironmentProblem(f"{what} failed (exit {done.returncode}): {done.stderr.strip()[-600:]}")
    m = re.search(r"JVM CPU ([0-9.]+) s in all", done.stderr)
    return wall, float(m.group(1)) if m else None


def _spark_opts(args: argparse.Namespace) -> list[str]:
    return ["--driver-memory", args.driver_memory, "--shuffle-partitions", str(args.shuffle_partitions)]


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Synthesise ``n`` records (unless kept) and time one full report over them."""
    data, out = args.work_dir / f"data-{n}", args.work_dir / f"out-{n}"
    py = [sys.executable, "-m", "reports"]
    synth_s = None
    if not (data / "_SUCCESS").is_file():
        synth_s, _ = _run(
            [*py, "synth", "--records", str(n), "--out", str(data), *_spark_opts(args)], "synth"
        )
    load_start = _load()
    wall, cpu = _run([*py, "build", "--input", str(data), "--out", str(out), *_spark_opts(args)], "build")
    return {
        "records": n,
        "wall_s": round(wall, 1),
        "records_per_s": round(n / wall),
        "jvm_cpu_s": None if cpu is None else round(cpu, 1),
        "load_avg_at_start": load_start,
        "load_avg_at_end": _load(),
        "synth_s": None if synth_s is None else round(synth_s, 1),
    }


def main(args: argparse.Namespace) -> int:
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError as exc:
        raise InputError(f"--sizes: comma list of record counts, got {args.sizes!r}") from exc
    args.work_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"{'records':>10} {'wall s':>8} {'records/s':>10} {'JVM CPU s':>9}  {'load 1/5/15 at start':>20}  "
        f"{'at end':>15}  (Spark start-up included)"
    )
    results = []
    for n in sizes:
        r = run_size(n, args)
        results.append(r)
        print(
            f"{n:>10} {r['wall_s']:>8} {r['records_per_s']:>10} {r['jvm_cpu_s'] or '?':>9}  "
            f"{r['load_avg_at_start']:>20}  {r['load_avg_at_end']:>15}",
            flush=True,
        )
    (args.work_dir / "bench.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"figures: {args.work_dir / 'bench.json'}")
    return 0
