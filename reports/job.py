"""The report job: inputs → tables → files (reports, drivers ring; the transforms are pure).

``build(spark, options)`` discovers and loads the inputs (:mod:`reports.read`), computes the
tables with the pure transforms (:mod:`reports.flakiness`, :mod:`reports.latency`), collects
them (they are aggregates: one row per test × target × …, per metric × …) and writes every
output (:mod:`reports.outputs`, :mod:`reports.html`). It returns the ``summary.json`` content.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention

from reports import flakiness as fl
from reports import latency as lat
from reports import session
from reports.inputs import Defaults, discover
from reports.outputs import Table, terminal_summary, write_outputs
from reports.read import Loaded, load

__all__ = ["BuildOptions", "build", "compute_tables", "main"]


@dataclass(frozen=True)
class BuildOptions:
    inputs: tuple[str, ...]
    out: Path
    permissive: bool = False
    baseline_before: datetime | None = None
    recent_days: float = 1.0
    flake_rate: float = 0.01
    confidence: float = 0.95
    top: int = 20
    defaults: Defaults = field(default_factory=Defaults)


def _cutoff(loaded: Loaded, options: BuildOptions) -> datetime | None:
    if options.baseline_before is not None:
        return options.baseline_before
    if loaded.latest_started_at is None:
        return None
    return loaded.latest_started_at - timedelta(days=options.recent_days)


def compute_tables(records: DataFrame, params: fl.FlakinessParams, top: int) -> dict[str, DataFrame]:
    """Every report table as a lazy DataFrame (pure transforms of the canonical records).

    The heavy work is three fused passes over the records, each cached when it first runs:
    flakiness of tests and behaviour IDs together (:func:`reports.flakiness.flakiness_levels`),
    failure signatures, and the exact percentiles of every latency grain together
    (:func:`reports.latency.latency_grains`); the tables are small selections of those.
    """
    levels = fl.flakiness_levels(records, params).persist()
    per_test = fl.level(levels, "test")
    signatures = fl.failure_signatures(records, fl.TEST_KEYS).persist()
    values = lat.metric_values(records)
    grains = lat.latency_grains(values).persist()
    return {
        "flakiness": per_test.orderBy(F.desc_nulls_last("failure_rate"), *fl.TEST_KEYS),
        "behaviour_flakiness": fl.level(levels, "behaviour").orderBy(
            F.desc_nulls_last("failure_rate"), *fl.BEHAVIOUR_KEYS
        ),
        "failure_signatures": signatures.orderBy(*fl.TEST_KEYS, F.desc("failures")),
        "flake_ranking": fl.flake_ranking(per_test, signatures, fl.TEST_KEYS, top),
        "failure_trend": fl.failure_trend(records),
        "latency": lat.grain(grains, "all"),
        "latency_by_day": lat.grain(grains, "day"),
        "latency_by_commit": lat.grain(grains, "commit"),
        "latency_histogram": lat.latency_histogram(values),
    }


class _Clock:
    """Wall and JVM CPU seconds since the last lap, for the log."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._wall = time.monotonic()
        self._cpu = session.jvm_cpu_s(spark)

    def lap(self) -> str:
        wall, cpu = time.monotonic(), session.jvm_cpu_s(self._spark)
        text = f"{wall - self._wall:.1f} s"
        if cpu is not None and self._cpu is not None:
            text += f", JVM CPU {cpu - self._cpu:.1f} s"
        self._wall, self._cpu = wall, cpu
        return text


# Tables collected one after another in one thread; the threads run at once (Spark runs jobs
# from several threads concurrently), so one pass's single-task stages leave the other core to
# another pass. Each group first fills the cache its later tables read; the ranking reads two.
_THREADS: Final = (
    ("flakiness", "behaviour_flakiness"),
    ("failure_signatures", "failure_trend"),
    ("latency", "latency_by_day", "latency_by_commit", "latency_histogram"),
)
_AFTER: Final = ("flake_ranking",)


def _collect(tables: dict[str, DataFrame], log: Callable[[str], None]) -> dict[str, Table]:
    out: dict[str, Table] = {}

    def collect(names: tuple[str, ...]) -> None:
        for name in names:
            t0 = time.monotonic()
            df = tables[name]
            out[name] = Table(name, df.schema, df.collect())
            log(f"  {name}: {len(out[name].rows)} rows ({time.monotonic() - t0:.1f} s)")

    assert sorted(n for g in (*_THREADS, _AFTER) for n in g) == sorted(tables), "a table without a thread"
    with ThreadPoolExecutor(max_workers=len(_THREADS), thread_name_prefix="tables") as pool:
        for f in [pool.submit(collect, names) for names in _THREADS]:
            f.result()
    collect(_AFTER)
    return {name: out[name] for name in tables}


def _params(loaded: Loaded, options: BuildOptions) -> fl.FlakinessParams:
    return fl.FlakinessParams(
        flake_rate=options.flake_rate,
        confidence=options.confidence,
        baseline_before=_cutoff(loaded, options),
    )


def build(spark: SparkSession, options: BuildOptions, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the whole report; returns the summary written to ``summary.json``."""
    t0 = time.monotonic()
    clock = _Clock(spark)
    started = datetime.now(UTC)
    inputs = discover(options.inputs)
    loaded: Loaded = load(spark, inputs, permissive=options.permissive, defaults=options.defaults)
    log(
        f"reports: {sum(loaded.counts.values())} records loaded, {loaded.rejected_total} rejected "
        f"({clock.lap()})"
    )
    params = _params(loaded, options)
    tables = _collect(compute_tables(loaded.records, params, options.top), log)
    log(f"  tables computed ({clock.lap()})")
    context = {
        "started_at": started.isoformat(timespec="seconds"),
        "spark": {"version": spark.version, "master": spark.sparkContext.master},
        "inputs": {
            "paths": list(options.inputs),
            "record_files": len(inputs.records),
            "junit_files": len(inputs.junit),
            "allure_results": len(inputs.allure),
            "ignored_files": len(inputs.ignored),
        },
        "records": loaded.counts,
        "rejected": loaded.rejected,
        "rejected_total": loaded.rejected_total,
        "params": params,
    }
    summary = write_outputs(spark, options.out, tables, context, wall_s=lambda: time.monotonic() - t0)
    log(f"  outputs written ({clock.lap()})")
    spark.catalog.clearCache()
    return summary


def main(args: argparse.Namespace) -> int:
    """``python -m reports build``: check the inputs, start Spark, build, print the summary."""
    options = BuildOptions(
        inputs=tuple(args.input),
        out=args.out,
        permissive=args.permissive,
        baseline_before=args.baseline_before,
        recent_days=args.recent_days,
        flake_rate=args.flake_rate,
        confidence=args.confidence,
        top=args.top,
        defaults=Defaults(target=args.default_target, profile=args.default_profile),
    )
    discover(options.inputs)  # a bad path fails before a JVM starts
    spark = session.start(
        args.master, driver_memory=args.driver_memory, shuffle_partitions=args.shuffle_partitions
    )
    try:
        summary = build(spark, options, log=lambda m: print(m, file=sys.stderr))
        cpu = session.jvm_cpu_s(spark)
        if cpu is not None:
            print(f"reports: JVM CPU {cpu:.1f} s in all (Spark start-up included)", file=sys.stderr)
    finally:
        spark.stop()
    print(terminal_summary(summary, args.out))
    return 0
