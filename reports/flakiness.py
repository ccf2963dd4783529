"""Flakiness of tests, scenarios and behaviour IDs (reports, decisions ring: pure transforms).

Every function is ``DataFrame -> DataFrame`` over :data:`reports.schema.CANONICAL` rows (or the
per-behaviour runs derived from them). Definitions (also printed in the HTML report):

- *executed* = passed + failed + error (skipped runs are counted but carry no verdict);
  *failures* = failed + error; ``failure_rate`` = failures / executed.
- ``wilson_low`` / ``wilson_high``: the Wilson score 95 % interval of ``failure_rate``.
- ``flip_rate``: executed runs ordered by ``run_order`` (then ``started_at``); a flip is a run
  whose verdict (pass / fail) differs from the previous executed run's; flips / (executed - 1).
- ``entropy``: binary entropy (bits) of ``failure_rate``.
- ``classification``: ``flaky`` when it both passed and failed; otherwise ``stable-pass`` /
  ``stable-fail`` once executed ≥ N, where N = ceil(ln(1 - confidence) / ln(1 - flake_rate))
  (299 for 1 % at 95 %); below N ``not-enough-data`` with ``runs_needed`` = N - executed.
- regression: executed runs that started before ``baseline_before`` are the baseline window,
  later ones the current window; one-sided pooled two-proportion z-test, ``regression_p_value``;
  ``regressed`` when p < 0.05, the current rate is higher and both windows have at least 5
  executed runs (below that the normal approximation says little).
- per behaviour ID: one run = one ``run_id``; it failed if any of its tests failed, else errored
  if any errored, else passed if any passed, else was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.sql import types as T  # noqa: N812 - PySpark convention

from reports import stats

__all__ = [
    "BEHAVIOUR_KEYS",
    "TEST_KEYS",
    "FlakinessParams",
    "behaviour_runs",
    "failure_signatures",
    "failure_trend",
    "flake_ranking",
    "flakiness",
    "flakiness_levels",
    "level",
    "normalised_signature",
]

TEST_KEYS: Final = ("kind", "test_id", "target", "profile", "fault_package")
BEHAVIOUR_KEYS: Final = ("kind", "behaviour_id", "target", "profile", "fault_package")
# Both levels in one frame (:func:`flakiness_levels`): ``level`` is "test" or "behaviour" and
# ``id`` the test id or the behaviour ID.
LEVEL_KEYS: Final = ("level", "kind", "id", "target", "profile", "fault_package")
_RUN_COLUMNS: Final = ("run_id", "run_order", "started_at", "outcome", "reason")
_FAIL: Final = ("failed", "error")


@dataclass(frozen=True)
class FlakinessParams:
    flake_rate: float = 0.01
    confidence: float = 0.95
    baseline_before: datetime | None = None
    alpha: float = 0.05
    min_window_runs: int = 5

    @property
    def runs_needed(self) -> int:
        return stats.runs_needed(self.flake_rate, self.confidence)


def _verdict() -> Column:
    """1 = failed or error, 0 = passed, null = skipped."""
    return F.when(F.col("outcome").isin(*_FAIL), 1).when(F.col("outcome") == "passed", 0)


def _count(outcome: str) -> Column:
    return F.sum((F.col("outcome") == outcome).cast("long")).alias(outcome)


def _window_counts(cutoff: datetime | None) -> list[Column]:
    executed, failed = F.col("_verdict").isNotNull(), F.col("_verdict") == 1
    if cutoff is None:
        return [F.lit(None).cast("long").alias(c) for c in ("_b_n", "_b_f", "_c_n", "_c_f")]
    base = F.col("started_at") < F.lit(cutoff)
    return [
        F.sum((executed & base).cast("long")).alias("_b_n"),
        F.sum((failed & base).cast("long")).alias("_b_f"),
        F.sum((executed & ~base).cast("long")).alias("_c_n"),
        F.sum((failed & ~base).cast("long")).alias("_c_f"),
    ]


def _counts(runs: DataFrame, keys: tuple[str, ...], cutoff: datetime | None) -> DataFrame:
    order = Window.partitionBy(*keys).orderBy("run_order", "started_at", "run_id")
    prev = F.last("_verdict", ignorenulls=True).over(order.rowsBetween(Window.unboundedPreceding, -1))
    flagged = runs.withColumn("_verdict", _verdict()).withColumn("_prev", prev)
    flip = F.col("_prev").isNotNull() & F.col("_verdict").isNotNull() & (F.col("_prev") != F.col("_verdict"))
    failing = F.col("_verdict") == 1
    return flagged.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("runs"),
        *[_count(o) for o in ("passed", "failed", "error", "skipped")],
        F.sum(flip.cast("long")).alias("flips"),
        F.min(F.when(failing, F.col("started_at"))).alias("first_failure_at"),
        F.max(F.when(failing, F.col("started_at"))).alias("last_failure_at"),
        F.min("started_at").alias("first_run_at"),
        F.max("started_at").alias("last_run_at"),
        *_window_counts(cutoff),
    )


def _rate(num: Column, den: Column) -> Column:
    return F.when(den > 0, num.cast("double") / den)


def _wilson(k: Column, n: Column, low: bool) -> Column:
    z2 = stats.Z95**2
    p = k.cast("double") / n
    denom = 1 + F.lit(z2) / n
    centre = (p + F.lit(z2) / (2 * n)) / denom
    half = F.lit(stats.Z95) / denom * F.sqrt(p * (1 - p) / n + F.lit(z2) / (4 * n * n))
    return F.when(n > 0, centre - half if low else centre + half)


def _entropy(rate: Column) -> Column:
    bits = -(rate * F.log2(rate) + (1 - rate) * F.log2(1 - rate))
    return F.when(rate.isNull(), None).when((rate == 0) | (rate == 1), 0.0).otherwise(bits)


# A plain Python UDF, but only over the aggregated rows (one per group), never per record.
_p_value = F.udf(
    lambda bf, bn, cf, cn: None if None in (bf, bn, cf, cn) else stats.two_proportion_p(bf, bn, cf, cn),
    T.DoubleType(),
)


def _classify(params: FlakinessParams) -> tuple[Column, Column]:
    n, k, needed = F.col("executed"), F.col("failures"), F.lit(params.runs_needed)
    cls = (
        F.when((k > 0) & (k < n), "flaky")
        .when(n < needed, "not-enough-data")
        .when(k == 0, "stable-pass")
        .otherwise("stable-fail")
    )
    return cls, F.when(cls == "not-enough-data", needed - n).otherwise(F.lit(0)).cast("long")


def with_statistics(counts: DataFrame, keys: tuple[str, ...], params: FlakinessParams) -> DataFrame:
    """Counts (``runs, passed, failed, error, skipped, flips`` …) → the flakiness columns."""
    executed = F.col("passed") + F.col("failed") + F.col("error")
    df = counts.withColumn("executed", executed).withColumn("failures", F.col("failed") + F.col("error"))
    n, k = F.col("executed"), F.col("failures")
    df = df.withColumn("failure_rate", _rate(k, n))
    cls, needed = _classify(params)
    p_value = (
        _p_value(F.col("_b_f"), F.col("_b_n"), F.col("_c_f"), F.col("_c_n"))
        if params.baseline_before is not None
        else F.lit(None).cast("double")
    )
    df = df.select(
        *keys,
        "runs",
        "passed",
        "failed",
        "error",
        "skipped",
        "failure_rate",
        _wilson(k, n, low=True).alias("wilson_low"),
        _wilson(k, n, low=False).alias("wilson_high"),
        F.when(n > 1, F.col("flips").cast("double") / (n - 1)).alias("flip_rate"),
        cls.alias("classification"),
        needed.alias("runs_needed"),
        _entropy(F.col("failure_rate")).alias("entropy"),
        "executed",
        "failures",
        "flips",
        "first_failure_at",
        "last_failure_at",
        "first_run_at",
        "last_run_at",
        F.col("_b_n").alias("baseline_executed"),
        _rate(F.col("_b_f"), F.col("_b_n")).alias("baseline_failure_rate"),
        F.col("_c_n").alias("current_executed"),
        _rate(F.col("_c_f"), F.col("_c_n")).alias("current_failure_rate"),
        p_value.alias("regression_p_value"),
    )
    regressed = (
        (F.col("regression_p_value") < params.alpha)
        & (F.col("current_failure_rate") > F.col("baseline_failure_rate"))
        & (F.col("baseline_executed") >= params.min_window_runs)
        & (F.col("current_executed") >= params.min_window_runs)
    )
    return df.withColumn("regressed", F.coalesce(regressed, F.lit(False)))


def flakiness(runs: DataFrame, keys: tuple[str, ...], params: FlakinessParams) -> DataFrame:
    """One row per ``keys`` group of runs (``outcome, run_order, started_at, run_id`` columns)."""
    return with_statistics(_counts(runs, keys, params.baseline_before), keys, params)


def behaviour_runs(records: DataFrame) -> DataFrame:
    """Canonical records → one run per (behaviour ID, target, profile, fault package, run_id),
    with the run's ``commit`` and ``target_version`` (the smallest, should a run have several)."""
    exploded = records.select("*", F.explode("behaviour_ids").alias("behaviour_id"))
    any_of = {o: F.max((F.col("outcome") == o).cast("int")) for o in ("failed", "error", "passed")}
    outcome = (
        F.when(any_of["failed"] == 1, "failed")
        .when(any_of["error"] == 1, "error")
        .when(any_of["passed"] == 1, "passed")
        .otherwise("skipped")
    )
    return exploded.groupBy(*BEHAVIOUR_KEYS, "run_id").agg(
        F.min("run_order").alias("run_order"),
        F.min("started_at").alias("started_at"),
        outcome.alias("outcome"),
        F.min(F.when(F.col("outcome").isin(*_FAIL), F.col("reason"))).alias("reason"),
        F.min("commit").alias("commit"),
        F.min("target_version").alias("target_version"),
    )


def flakiness_levels(
    records: DataFrame, params: FlakinessParams, behaviours: DataFrame | None = None
) -> DataFrame:
    """:func:`flakiness` per test and per behaviour ID in one pass (one shuffle, one sort, one
    aggregation for both): the union of the test runs and :func:`behaviour_runs` (``behaviours``
    when given, e.g. cached for other tables), grouped by :data:`LEVEL_KEYS`. :func:`level` takes
    one level back out with its usual key names."""
    tests = records.select(F.lit("test").alias("level"), "kind", F.col("test_id").alias("id"),
                           "target", "profile", "fault_package", *_RUN_COLUMNS)  # fmt: skip
    per_run = behaviour_runs(records) if behaviours is None else behaviours
    per_behaviour = per_run.select(
        F.lit("behaviour").alias("level"), "kind", F.col("behaviour_id").alias("id"),
        "target", "profile", "fault_package", *_RUN_COLUMNS,
    )  # fmt: skip
    return flakiness(tests.unionByName(per_behaviour), LEVEL_KEYS, params)


def level(levels: DataFrame, name: str) -> DataFrame:
    """The rows of one level of :func:`flakiness_levels` ("test" or "behaviour"), with the
    columns of :func:`flakiness` over :data:`TEST_KEYS` or :data:`BEHAVIOUR_KEYS`."""
    id_name = "test_id" if name == "test" else "behaviour_id"
    stats_columns = [c for c in levels.columns if c not in LEVEL_KEYS]
    return levels.filter(F.col("level") == name).select(
        "kind", F.col("id").alias(id_name), "target", "profile", "fault_package", *stats_columns
    )


_SIGNATURE_RULES: Final = (
    (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
    (r"0x[0-9a-fA-F]+", "<hex>"),
    (r"\b(?=[0-9a-f]*[0-9])[0-9a-f]{7,}\b", "<hex>"),
    (r"\d+(\.\d+)?([eE][-+]?\d+)?", "<n>"),
    (r"\s+", " "),
)


def normalised_signature(reason: Column) -> Column:
    """A failure reason with ids, numbers and whitespace normalised (clusters like failures)."""
    out = reason
    for pattern, repl in _SIGNATURE_RULES:
        out = F.regexp_replace(out, pattern, repl)
    return F.coalesce(F.substring(F.trim(out), 1, 200), F.lit("<no reason>"))


def failure_signatures(runs: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """Failed / errored runs per ``keys`` × normalised signature, with an example reason."""
    failing = runs.filter(F.col("outcome").isin(*_FAIL))
    return failing.groupBy(*keys, normalised_signature(F.col("reason")).alias("signature")).agg(
        F.count(F.lit(1)).alias("failures"),
        F.min("reason").alias("example"),
        F.min("started_at").alias("first_seen"),
        F.max("started_at").alias("last_seen"),
    )


def flake_ranking(flaky: DataFrame, signatures: DataFrame, keys: tuple[str, ...], top: int) -> DataFrame:
    """The ``top`` worst flakes, ranked by ``wilson_low`` then ``flip_rate`` then failures, each
    with its three most frequent failure signatures (``signatures``: array of structs)."""
    ranked = (
        flaky.filter(F.col("classification") == "flaky")
        .orderBy(F.desc("wilson_low"), F.desc("flip_rate"), F.desc("failures"), *keys)
        .limit(top)
        .withColumn(
            "rank",
            F.row_number().over(
                Window.orderBy(F.desc("wilson_low"), F.desc("flip_rate"), F.desc("failures"), *keys)
            ),
        )
    )
    by_count = Window.partitionBy(*keys).orderBy(F.desc("failures"), "signature")
    top_sigs = (
        signatures.withColumn("_n", F.row_number().over(by_count))
        .filter(F.col("_n") <= 3)
        .groupBy(*keys)
        .agg(
            F.sort_array(F.collect_list(F.struct(F.col("_n"), "signature", "failures", "example"))).alias(
                "_s"
            )
        )
        .select(*keys, F.transform("_s", lambda s: s.dropFields("_n")).alias("signatures"))
    )
    return ranked.join(top_sigs, list(keys), "left").orderBy("rank")


def failure_trend(records: DataFrame) -> DataFrame:
    """Executions and failure rate per kind × target × UTC day."""
    verdict = _verdict()
    df = records.withColumn("_verdict", verdict).filter(F.col("_verdict").isNotNull())
    agg = df.groupBy("kind", "target", F.to_date("started_at").alias("day")).agg(
        F.count(F.lit(1)).alias("executed"), F.sum("_verdict").cast("long").alias("failures")
    )
    return agg.withColumn("failure_rate", F.col("failures") / F.col("executed")).orderBy(
        "kind", "target", "day"
    )
