"""Exact percentiles and latency tables on hand-made values."""

from __future__ import annotations

import random
import statistics

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.testing import assertDataFrameEqual

from reports import latency as lat
from tests.reports.conftest import frame, record

pytestmark = pytest.mark.reports


def _metric(name: str, value: float) -> dict[str, object]:
    return {"name": name, "value": value, "unit": "s"}


def _records(values: dict[tuple[str, str], list[float]]) -> list[dict[str, object]]:
    """One record per value: key (target, fault package) → values of controller_election."""
    out = []
    for (target, package), vs in values.items():
        for i, v in enumerate(vs):
            kind = "chaos-run" if package != "none" else "conformance-test"
            out.append(
                record(
                    kind=kind,
                    target=target,
                    fault_package=package,
                    run_id=f"{target}{i}",
                    phase_metrics=[_metric("controller_election", v)],
                    started_at=f"2026-01-0{1 + i % 2}T00:00:00+00:00",
                )
            )
    return out


def test_percentiles_interpolate_linearly_between_ranks(spark: SparkSession) -> None:
    records = _records(
        {
            # 1 2 3 4: p50 at h = 3·0.5 = 1.5 → 2 + 0.5·1 = 2.5; p95 h = 2.85 → 3.85; p99 h = 2.97 → 3.97
            ("reference", "none"): [4.0, 1.0, 3.0, 2.0],
            # 1 1 1 10 (duplicates share a histogram row): p50 h = 1.5 → 1; p95 h = 2.85 → 1 + 0.85·9 = 8.65;
            # p99 h = 2.97 → 1 + 0.97·9 = 9.73
            ("reference", "kill-broker"): [1.0, 10.0, 1.0, 1.0],
            # a single value is every percentile
            ("kafka", "none"): [0.5],
        }
    )
    actual = lat.latency_summary(lat.metric_values(frame(spark, records))).select(
        "target", "fault_package", "count", "p50", "p95", "p99", "max", "min", "mean"
    )
    expected = [
        ("reference", "none", 4, 2.5, 3.85, 3.97, 4.0, 1.0, 2.5),
        ("reference", "kill-broker", 4, 1.0, 8.65, 9.73, 10.0, 1.0, 3.25),
        ("kafka", "none", 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), rtol=1e-9)


def test_percentiles_of_a_large_group_match_two_independent_exact_methods(spark: SparkSession) -> None:
    # 120,001 heavy-tailed values with 4 decimals (many ties), checked against Python's
    # statistics.quantiles(method="inclusive") (the same type-7 definition) and Spark's exact
    # `percentile` aggregate.
    rng = random.Random(3)
    values = [round(rng.lognormvariate(-1.0, 1.2), 4) for _ in range(120_001)]
    df = spark.createDataFrame([(v,) for v in values], "value double").select(
        F.lit("controller_election").alias("metric"),
        F.lit("s").alias("unit"),
        F.lit("reference").alias("target"),
        F.lit("none").alias("fault_package"),
        "value",
    )
    row = lat.exact_percentiles(df, lat.LATENCY_KEYS).first()
    assert row is not None
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    assert (row["count"], row["max"]) == (len(values), max(values))
    assert (row["p50"], row["p95"], row["p99"]) == pytest.approx((cuts[49], cuts[94], cuts[98]), rel=1e-12)
    spark_exact = df.agg(F.percentile("value", [0.5, 0.95, 0.99])).first()
    assert spark_exact is not None
    assert [row["p50"], row["p95"], row["p99"]] == pytest.approx(spark_exact[0], rel=1e-12)


def test_trend_by_day_and_by_commit(spark: SparkSession) -> None:
    records = [
        record(run_id="a", commit="c1", started_at="2026-01-01T10:00:00+00:00",
               phase_metrics=[_metric("failover_to_ready", 1.0), _metric("failover_to_ready", 3.0)]),
        record(run_id="b", commit="c2", started_at="2026-01-02T10:00:00+00:00",
               phase_metrics=[_metric("failover_to_ready", 5.0)]),
        record(run_id="c", commit=None, started_at="2026-01-02T11:00:00+00:00",
               phase_metrics=[_metric("failover_to_ready", 7.0)]),
    ]  # fmt: skip
    values = lat.metric_values(frame(spark, records))
    by_day = lat.latency_by_day(values).select(F.col("day").cast("string"), "count", "p50", "max")
    assertDataFrameEqual(
        by_day,
        spark.createDataFrame([("2026-01-01", 2, 2.0, 3.0), ("2026-01-02", 2, 6.0, 7.0)], by_day.schema),
    )
    by_commit = lat.latency_by_commit(values).select("commit", "count", "p50")
    expected = [("c1", 2, 2.0), ("c2", 1, 5.0), ("unknown", 1, 7.0)]
    assertDataFrameEqual(by_commit, spark.createDataFrame(expected, by_commit.schema), checkRowOrder=True)


def test_histogram_bins_are_tenths_of_a_decade(spark: SparkSession) -> None:
    # 0.15 → floor(10·log10 0.15) = floor(-8.24) = -9: [10^-0.9, 10^-0.8) = [0.1259, 0.1585)
    # 1.0 and 1.2 → bins 0 and 0 ([1, 1.2589)); 0.0 → the "≤ 0" bin with bin_low = 0
    records = _records({("reference", "none"): [0.15, 1.0, 1.2, 0.0]})
    actual = lat.latency_histogram(lat.metric_values(frame(spark, records))).select(
        "bin_low", "bin_high", "count"
    )
    expected = [(0.0, 0.0, 1), (10**-0.9, 10**-0.8, 1), (1.0, 10**0.1, 2)]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), rtol=1e-9)
