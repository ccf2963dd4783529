"""Flakiness and latency reports over run records (PySpark), an Allure HTML report, synthetic records, a
benchmark of the report and a nightly job (chaos runs, then the report).

``python -m reports``, the reports app's command line (drivers ring):

- ``build --input PATH... --out DIR`` — the PySpark report (also ``spark-submit reports/__main__.py
  build …``; ``--master`` for a cluster);
- ``allure RESULTS_DIR --out DIR`` — Allure 3's offline HTML report of allure results;
- ``synth --records N --out PATH`` — realistic synthetic run records;
- ``bench`` — wall time of the full report for 100k, 1M and 10M synthetic records;
- ``nightly --budget-minutes M | --runs N`` — the chaos runner, then the report over all kept
  records.

Exit status: 0 done, 2 bad input (arguments, paths, records), 1 the environment cannot run it
(no JVM, no pyspark, an unreachable master, a failing tool).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (spark-submit reports/__main__.py): import as a package
    _here = Path(__file__).resolve().parent
    sys.path[:] = [str(_here.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _here]

import argparse
import importlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from reports.errors import EnvironmentProblem, ReportsError
from reports.session import explain

__all__ = ["main"]


def _utc(text: str) -> datetime:
    try:
        ts = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 date or time: {text!r}") from exc
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _positive_int(text: str) -> int:
    try:
        n = int(text.replace("_", ""))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from exc
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return n


def _fraction(text: str) -> float:
    try:
        x = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not 0 < x < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive): {text!r}")
    return x


def _share(text: str) -> float:
    try:
        x = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not 0 <= x < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1: {text!r}")
    return x


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from exc
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return n


def _spark_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--master", default=None, help="Spark master URL (default local[*]; spark://, yarn, k8s://)"
    )
    p.add_argument(
        "--driver-memory",
        default="auto",
        help="driver JVM heap when this process starts it (auto: a quarter of the RAM, 1g-8g)",
    )
    p.add_argument(
        "--shuffle-partitions", type=_positive_int, default=8, help="spark.sql.shuffle.partitions (8)"
    )


def _build_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input",
        "-i",
        nargs="+",
        action="extend",
        required=True,
        metavar="PATH",
        help="run-record files/dirs/globs (*.jsonl[.gz]), JUnit XML, allure results dirs",
    )
    p.add_argument("--out", "-o", type=Path, required=True, help="output directory")
    p.add_argument("--permissive", action="store_true", help="count and list bad records instead of failing")
    p.add_argument(
        "--baseline-before",
        type=_utc,
        default=None,
        metavar="WHEN",
        help="runs started before WHEN (ISO-8601, UTC) are the baseline window "
        "(default: the latest run minus --recent-days)",
    )
    p.add_argument("--recent-days", type=float, default=1.0, help="current window length in days (1)")
    p.add_argument(
        "--flake-rate", type=_fraction, default=0.01, help="smallest flake rate to rule out (0.01)"
    )
    p.add_argument("--confidence", type=_fraction, default=0.95, help="confidence for runs-needed (0.95)")
    p.add_argument("--top", type=_positive_int, default=20, help="flakes in the ranking (20)")
    p.add_argument(
        "--quarantine-above",
        type=_fraction,
        default=0.05,
        help="policy backtest: quarantine a flaky test whose failure rate so far is above this (0.05)",
    )
    p.add_argument("--retries", type=_count, default=1, help="policy backtest: retries of a failing test (1)")
    p.add_argument("--default-target", default="reference", help="target of JUnit/allure inputs (reference)")
    p.add_argument("--default-profile", default="2.5", help="profile of JUnit/allure inputs (2.5)")
    _spark_args(p)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m reports", description=(__doc__ or "").split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="{build,allure,synth,bench,nightly}")
    _build_args(sub.add_parser("build", help="build the flakiness and latency report"))
    a = sub.add_parser("allure", help="generate the Allure 3 HTML report (offline)")
    a.add_argument("results", type=Path, help="allure results directory")
    a.add_argument("--out", "-o", type=Path, required=True)
    a.add_argument("--name", default="Conformance", help="report name")
    s = sub.add_parser("synth", help="write synthetic run records")
    s.add_argument("--records", type=_positive_int, required=True)
    s.add_argument("--out", "-o", type=Path, required=True, help="output directory (part-*.json.gz)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--days", type=_positive_int, default=30, help="days the runs span (30)")
    s.add_argument(
        "--duplicate-rate",
        type=_share,
        default=0.001,
        help="share of records that execute an earlier one again (same record_id; 0.001)",
    )
    s.add_argument("--no-gzip", action="store_true")
    _spark_args(s)
    b = sub.add_parser("bench", help="time the report for 100k, 1M, 10M synthetic records")
    b.add_argument("--sizes", default="100000,1000000,10000000", help="comma list of record counts")
    b.add_argument("--work-dir", type=Path, default=Path("results/reports-bench"))
    b.add_argument("--driver-memory", default="auto")
    b.add_argument("--shuffle-partitions", type=_positive_int, default=8)
    n = sub.add_parser("nightly", help="run the chaos runner, then the report over kept records")
    g = n.add_mutually_exclusive_group(required=True)
    g.add_argument("--budget-minutes", type=_positive_int)
    g.add_argument("--runs", type=_positive_int)
    n.add_argument(
        "--store", type=Path, default=Path("results/nightly"), help="kept records (results/nightly)"
    )
    n.add_argument("--keep-days", type=_positive_int, default=90, help="drop nights older than this (90)")
    n.add_argument(
        "--batch-runs", type=_positive_int, default=10, help="runs per batch with --budget-minutes"
    )
    n.add_argument("--with-conformance", action="store_true", help="also run the conformance suite")
    n.add_argument("runner_args", nargs="*", help="extra arguments for `python -m chaos run` (after --)")
    _spark_args(n)
    return p


_COMMANDS = {
    "build": "reports.job",
    "allure": "reports.allure",
    "synth": "reports.synth",
    "bench": "reports.bench",
    "nightly": "reports.nightly",
}


def _dispatch(args: argparse.Namespace) -> int:
    # Imported on use: a bad argument or path fails before pyspark (and a JVM) loads.
    try:
        module = importlib.import_module(_COMMANDS[args.command])
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("pyspark", "py4j"):
            raise EnvironmentProblem(
                "pyspark is not installed: pip install -e '.[reports]' (or bash scripts/setup_reports.sh)"
            ) from exc
        raise
    command: Callable[[argparse.Namespace], int] = module.main
    return command(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return _dispatch(args)
    except ReportsError as exc:
        print(f"reports: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("reports: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a Spark / Py4J failure mid-job: one line, not a traceback
        if type(exc).__module__.startswith(("py4j", "pyspark")):
            print(f"reports: Spark failed: {explain(exc)}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
