"""The report job: inputs → tables → files (reports, drivers ring; the transforms are pure).

``build(spark, options)`` discovers and loads the inputs (:mod:`reports.read`), computes the
tables with the pure transforms (:mod:`reports.flakiness`, :mod:`reports.latency`,
:mod:`reports.policy`, :mod:`reports.breakdowns`), collects them (they are aggregates: one row
per test × target × …, per metric × …) and writes every output (:mod:`reports.outputs`,
:mod:`reports.page`). It returns the ``summary.json`` content. ``main`` checks the inputs and
the output directory before it starts Spark, and says what it is doing as it goes (stderr).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention

from reports import breakdowns as bd
from reports import flakiness as fl
from reports import latency as lat
from reports import policy as pol
from reports import session
from reports.errors import InputError
from reports.inputs import Defaults, Inputs, discover
from reports.outputs import CSV_TABLES, Table, terminal_summary, write_outputs
from reports.read import Loaded, load

__all__ = ["BuildOptions", "Tables", "build", "check_output", "compute_tables", "main"]


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
    policy: pol.PolicyParams = field(default_factory=pol.PolicyParams)


def check_output(out: Path) -> None:
    """``out`` must be a directory this process can write in (or be creatable in one): checked by
    writing a temporary file, since permission bits say nothing to root or on a read-only mount."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory: name a directory for the report")
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"--out {out}: {probe} is a file, not a directory: name a directory for the report")
    try:
        with tempfile.TemporaryFile(dir=probe, prefix=".kzk-reports-probe-"):
            pass
    except OSError as exc:
        raise InputError(
            f"--out {out}: cannot write in {probe} ({exc.strerror or exc}): name a writable directory"
        ) from exc


def _cutoff(loaded: Loaded, options: BuildOptions) -> datetime | None:
    if options.baseline_before is not None:
        return options.baseline_before
    if loaded.latest_started_at is None:
        return None
    return loaded.latest_started_at - timedelta(days=options.recent_days)


class Tables:
    """Every report table as a lazy DataFrame (pure transforms of the canonical records), each
    planned when first asked for (:meth:`get`), so that the job's threads plan their own tables
    side by side (planning a table is driver work, seconds in all for the whole set).

    The heavy work is four fused passes over the records, each cached when it first runs:
    flakiness of tests and behaviour IDs together (:func:`reports.flakiness.flakiness_levels`,
    over the cached behaviour runs that the behaviour trend reads too), failure signatures, the
    exact percentiles of every latency grain together (:func:`reports.latency.latency_grains`),
    and the policy replay of the conformance executions (:func:`reports.policy.executions`); the
    tables are small selections and aggregations of those.
    """

    NAMES: Final = CSV_TABLES  # every table the outputs write, and no other

    def __init__(
        self,
        records: DataFrame,
        params: fl.FlakinessParams,
        top: int,
        policy: pol.PolicyParams | None = None,
    ) -> None:
        self._records, self._params, self._top = records, params, top
        self._policy = policy or pol.PolicyParams()
        self._made: dict[str, DataFrame] = {}
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def _once(self, name: str, make: Callable[[], DataFrame]) -> DataFrame:
        """``make()`` once per name: a frame two threads share is planned (and cached) once,
        while frames of different names are planned at the same time."""
        with self._lock:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self._made:
                self._made[name] = make()
            return self._made[name]

    def _behaviours(self) -> DataFrame:
        return self._once("_behaviours", lambda: fl.behaviour_runs(self._records).persist())

    def _levels(self) -> DataFrame:
        return self._once(
            "_levels", lambda: fl.flakiness_levels(self._records, self._params, self._behaviours()).persist()
        )

    def _per_test(self) -> DataFrame:
        return self._once("_per_test", lambda: fl.level(self._levels(), "test"))

    def _signatures(self) -> DataFrame:
        return self._once("_signatures", lambda: fl.failure_signatures(self._records, fl.TEST_KEYS).persist())

    def _values(self) -> DataFrame:
        return self._once("_values", lambda: lat.metric_values(self._records))

    def _grains(self) -> DataFrame:
        return self._once("_grains", lambda: lat.latency_grains(self._values()).persist())

    def _execs(self) -> DataFrame:
        return self._once("_execs", lambda: pol.executions(self._records, self._policy).persist())

    def _gates(self) -> DataFrame:
        return self._once("_gates", lambda: pol.gates(self._execs()).persist())

    def _make(self, name: str) -> DataFrame:
        if name == "flakiness":
            return self._per_test().orderBy(F.desc_nulls_last("failure_rate"), *fl.TEST_KEYS)
        if name == "behaviour_flakiness":
            return fl.level(self._levels(), "behaviour").orderBy(
                F.desc_nulls_last("failure_rate"), *fl.BEHAVIOUR_KEYS
            )
        if name == "failure_signatures":
            return self._signatures().orderBy(*fl.TEST_KEYS, F.desc("failures"))
        if name == "flake_ranking":
            return fl.flake_ranking(self._per_test(), self._signatures(), fl.TEST_KEYS, self._top)
        if name == "failure_trend":
            return fl.failure_trend(self._records)
        if name == "latency":
            return lat.grain(self._grains(), "all")
        if name == "latency_by_day":
            return lat.grain(self._grains(), "day")
        if name == "latency_by_commit":
            return lat.grain(self._grains(), "commit")
        if name == "latency_histogram":
            return lat.latency_histogram(self._values())
        if name == "gate_policies":
            return pol.gate_policies(self._gates(), self._execs())
        if name == "policy_backtest":
            return pol.policy_backtest(self._execs())
        if name == "impact":
            return pol.impact(self._execs(), self._gates(), self._per_test())
        if name == "failure_clusters":
            return bd.failure_clusters(self._signatures())
        if name == "excusals":
            return bd.excusals(self._records)
        if name == "behaviour_trend":
            return bd.behaviour_trend(self._behaviours())
        raise KeyError(name)

    def get(self, name: str) -> DataFrame:
        """The table ``name`` (one of :attr:`NAMES`), planned on first use."""
        return self._once(name, lambda: self._make(name))


def compute_tables(
    records: DataFrame,
    params: fl.FlakinessParams,
    top: int,
    policy: pol.PolicyParams | None = None,
) -> dict[str, DataFrame]:
    """Every table of :class:`Tables`, planned now, by name."""
    tables = Tables(records, params, top, policy)
    return {name: tables.get(name) for name in Tables.NAMES}


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
    ("flakiness", "behaviour_flakiness", "behaviour_trend"),
    ("failure_signatures", "failure_trend", "failure_clusters", "excusals"),
    ("latency", "latency_by_day", "latency_by_commit", "latency_histogram"),
    ("gate_policies", "policy_backtest"),
)
_AFTER: Final = ("flake_ranking", "impact")


def _collect(tables: Tables, log: Callable[[str], None]) -> dict[str, Table]:
    out: dict[str, Table] = {}

    def collect(names: tuple[str, ...]) -> None:
        log(f"  pass: {', '.join(names)} …")
        for name in names:
            t0 = time.monotonic()
            df = tables.get(name)  # planned in this thread, beside the other threads' planning
            out[name] = Table(name, df.schema, df.collect())
            log(f"  {name}: {len(out[name].rows)} rows ({time.monotonic() - t0:.1f} s)")

    assert sorted(n for g in (*_THREADS, _AFTER) for n in g) == sorted(Tables.NAMES), (
        "a table without a thread"
    )
    with ThreadPoolExecutor(max_workers=len(_THREADS), thread_name_prefix="tables") as pool:
        for f in [pool.submit(collect, names) for names in _THREADS]:
            f.result()
    collect(_AFTER)
    return {name: out[name] for name in Tables.NAMES}


def _params(loaded: Loaded, options: BuildOptions) -> fl.FlakinessParams:
    return fl.FlakinessParams(
        flake_rate=options.flake_rate,
        confidence=options.confidence,
        baseline_before=_cutoff(loaded, options),
    )


def inputs_line(inputs: Inputs) -> str:
    """What ``discover`` found, in one line (plus one on what it skipped)."""
    line = (
        f"reports: inputs: {len(inputs.records)} record file(s) ({inputs.record_bytes() / 1e6:.1f} MB), "
        f"{len(inputs.junit)} JUnit XML, {len(inputs.allure)} allure result(s)"
    )
    skipped = inputs.skipped_line()
    return f"{line}\nreports: {skipped}" if skipped else line


def build(
    spark: SparkSession,
    options: BuildOptions,
    log: Callable[[str], None] = print,
    inputs: Inputs | None = None,
) -> dict[str, Any]:
    """Run the whole report; returns the summary written to ``summary.json``. ``inputs``: what
    :func:`reports.inputs.discover` found for ``options.inputs``, if the caller has it already."""
    t0 = time.monotonic()
    clock = _Clock(spark)
    started = datetime.now(UTC)
    if inputs is None:
        inputs = discover(options.inputs)
        log(inputs_line(inputs))
    check_output(options.out)
    loaded: Loaded = load(spark, inputs, permissive=options.permissive, defaults=options.defaults, log=log)
    log(
        f"reports: {sum(loaded.counts.values())} records to report on, {loaded.rejected_total} rejected "
        f"({clock.lap()})"
    )
    params = _params(loaded, options)
    log(f"reports: computing {len(_THREADS)} passes at once, then {', '.join(_AFTER)} …")
    tables = _collect(Tables(loaded.records, params, options.top, options.policy), log)
    log(f"reports: tables computed ({clock.lap()})")
    log(f"reports: writing outputs to {options.out} …")
    context = {
        "started_at": started.isoformat(timespec="seconds"),
        "spark": {"version": spark.version, "master": spark.sparkContext.master},
        "inputs": {
            "paths": list(options.inputs),
            "record_files": len(inputs.records),
            "junit_files": len(inputs.junit),
            "allure_results": len(inputs.allure),
            "skipped_files": len(inputs.skipped),
            "skipped_example": str(inputs.skipped[0]) if inputs.skipped else None,
        },
        "records": loaded.counts,
        "duplicates": loaded.duplicates,
        "rejected": loaded.rejected,
        "rejected_total": loaded.rejected_total,
        "unknown_kinds": loaded.unknown_kinds,
        "params": params,
        "policy": options.policy,
    }
    summary = write_outputs(spark, options.out, tables, context, wall_s=lambda: time.monotonic() - t0)
    log(f"reports: outputs written ({clock.lap()})")
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
        policy=pol.PolicyParams(quarantine_above=args.quarantine_above, retries=args.retries),
    )
    log = _stderr
    inputs = discover(options.inputs)  # a bad path or output fails before a JVM starts
    check_output(options.out)
    log(inputs_line(inputs))
    memory = session.auto_driver_memory() if args.driver_memory == "auto" else args.driver_memory
    log(f"reports: starting Spark ({args.master or 'local[*]'}, driver memory {memory}) …")
    t0 = time.monotonic()
    spark = session.start(
        args.master, driver_memory=args.driver_memory, shuffle_partitions=args.shuffle_partitions
    )
    log(f"reports: Spark {spark.version} started ({time.monotonic() - t0:.1f} s)")
    try:
        summary = build(spark, options, log=log, inputs=inputs)
        cpu = session.jvm_cpu_s(spark)
        if cpu is not None:
            print(f"reports: JVM CPU {cpu:.1f} s in all (Spark start-up included)", file=sys.stderr)
    finally:
        spark.stop()
    print(terminal_summary(summary, args.out))
    return 0


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
