"""``python -m reports nightly``: chaos runs, then the report over every kept night (drivers ring).

Layout under ``--store`` (default ``results/nightly``)::

    nights/<UTC stamp>/chaos/         records the chaos runner wrote (``--out``)
    nights/<UTC stamp>/conformance/   the conformance suite's records (``--with-conformance``)
    report/                           the latest report over all kept nights

Steps: drop nights older than ``--keep-days``; run ``python -m chaos run --runs N --out
<night>/chaos`` (plus any arguments after ``--``), or with ``--budget-minutes M`` batches of
``--batch-runs`` runs while the next batch still fits in the budget; optionally run the
conformance suite; build the report over ``nights/``. Invalid chaos runs (runner exit 1) and
runs that could not be judged (exit 3; their records say ``error``) are findings and go into the
report; a missing or failing runner is reported in one line, the report
is still built over what is kept, and the exit status is then 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reports import session
from reports.errors import EnvironmentProblem, InputError
from reports.job import BuildOptions, build
from reports.outputs import terminal_summary

__all__ = ["chaos_command", "main", "prune"]

_STAMP = "%Y%m%dT%H%M%SZ"
_SLACK_S = 15 * 60


def chaos_command(night: Path, runs: int, extra: Sequence[str]) -> list[str]:
    """The runner's command line for one batch of ``runs`` chaos runs."""
    return [sys.executable, "-m", "chaos", "run", "--runs", str(runs), "--out", str(night / "chaos"), *extra]


def prune(nights: Path, keep_days: int, now: datetime) -> list[Path]:
    """Remove night directories older than ``keep_days``; returns what was removed."""
    removed = []
    for d in sorted(nights.glob("*")) if nights.is_dir() else []:
        try:
            stamp = datetime.strptime(d.name, _STAMP).replace(tzinfo=UTC)
        except ValueError:
            continue
        if now - stamp > timedelta(days=keep_days):
            shutil.rmtree(d)
            removed.append(d)
    return removed


def _run_step(cmd: list[str], what: str, timeout_s: float | None) -> int | str:
    """Run one step with its output on the terminal: its exit status, or a problem as one line."""
    print(f"nightly: {what}: {' '.join(cmd)}", flush=True)
    try:
        return subprocess.run(cmd, timeout=timeout_s, check=False).returncode
    except subprocess.TimeoutExpired:
        return f"{what} did not finish within {timeout_s:.0f} s (stopped); its records so far are kept"
    except OSError as exc:
        return f"{what} could not start: {exc}"


def _batch_problem(status: int | str) -> str | None:
    """The chaos runner exits 0 (all runs valid), 1 (a run was invalid), 3 (none invalid, some could
    not be judged) — each with its records written, findings the report shows — 2 (bad arguments)
    or anything else (it failed)."""
    if isinstance(status, str):
        return status
    if status in (0, 1, 3):
        return None
    if status == 2:
        return "the chaos runner rejected its arguments (exit 2): see its message above"
    return f"the chaos runner failed (exit {status})"


def _chaos(night: Path, args: argparse.Namespace) -> str | None:
    """Batches of runs: ``--runs N`` in one batch, or ``--budget-minutes M`` as batches of
    ``--batch-runs`` while the next batch (as long as the last one took) still fits."""
    if importlib.util.find_spec("chaos") is None or importlib.util.find_spec("chaos.__main__") is None:
        return (
            "the chaos runner is not available (no `python -m chaos`): reporting over the kept records only"
        )
    if args.runs:
        return _batch_problem(
            _run_step(chaos_command(night, args.runs, args.runner_args), "chaos runner", None)
        )
    deadline = time.monotonic() + args.budget_minutes * 60
    last_s = 0.0
    while time.monotonic() + last_s < deadline:
        t0 = time.monotonic()
        cmd = chaos_command(night, args.batch_runs, args.runner_args)
        problem = _batch_problem(_run_step(cmd, "chaos runner", deadline - t0 + _SLACK_S))
        if problem:
            return problem
        last_s = time.monotonic() - t0
    return None


def main(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    nights = args.store / "nights"
    night = nights / now.strftime(_STAMP)
    night.mkdir(parents=True, exist_ok=True)
    for d in prune(nights, args.keep_days, now):
        print(f"nightly: dropped {d} (older than {args.keep_days} days)")
    problems = [p for p in [_chaos(night, args)] if p]
    if args.with_conformance:
        cmd = [sys.executable, "-m", "conformance", "--results-dir", str(night / "conformance")]
        status = _run_step(cmd, "conformance suite", None)
        if isinstance(status, str):
            problems.append(status)
    for p in problems:
        print(f"nightly: {p}", file=sys.stderr)
    out = args.store / "report"
    spark = session.start(
        args.master, driver_memory=args.driver_memory, shuffle_partitions=args.shuffle_partitions
    )
    try:
        summary = build(spark, BuildOptions(inputs=(str(nights),), out=out, permissive=True))
    except InputError as exc:
        raise InputError(f"{exc} (no night in {nights} has records yet)") from exc
    finally:
        spark.stop()
    print(terminal_summary(summary, out))
    print(f"nightly: report at {out / 'report.html'}")
    if problems:
        raise EnvironmentProblem("; ".join(problems))
    return 0
