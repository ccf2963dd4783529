"""Flakiness transforms on hand-made runs; every expected number is worked out in the comments."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.testing import assertDataFrameEqual

from reports import flakiness as fl
from tests.reports.conftest import frame, runs

pytestmark = pytest.mark.reports

Z2 = 1.959963984540054**2
COLUMNS = [
    "test_id", "runs", "passed", "failed", "error", "skipped", "failure_rate", "wilson_low", "wilson_high",
    "flip_rate", "entropy", "classification", "runs_needed",
]  # fmt: skip
NO_BASELINE = fl.FlakinessParams()


def _flakiness(
    spark: SparkSession, records: list[dict[str, object]], params: fl.FlakinessParams
) -> DataFrame:
    return fl.flakiness(frame(spark, records), fl.TEST_KEYS, params)


def test_counts_rates_wilson_flips_entropy_and_classification(spark: SparkSession) -> None:
    records = (
        # a: P F S P P F F P P P P — the skipped run carries no verdict and breaks no sequence.
        # executed 10, failures 3; flips P→F, F→P, P→F, F→P = 4 over 9 steps = 0.444444
        runs("a", "PFSPPFFPPPP")
        # b: one run, passed. Wilson (0, Z²/(1+Z²)) = (0, 0.793451); 299 - 1 = 298 runs still needed
        + runs("b", "P")
        # c: every executed run failed (3 failed, 1 error) and one skipped: (4/(4+Z²), 1) = (0.510109, 1)
        + runs("c", "FEFSF")
        # d: 299 clean runs: a 1 % flake is ruled out at 95 %; Wilson high Z²/(299+Z²) = 0.012685
        + runs("d", "P" * 299)
        # e: 299 failures: stable-fail; Wilson low 299/(299+Z²) = 0.987315
        + runs("e", "F" * 299)
    )
    random.Random(7).shuffle(records)  # the input order must not matter: run_order decides
    expected = [
        ("a", 11, 7, 3, 0, 1, 0.3, 0.1077913, 0.6032219, 4 / 9, 0.8812909, "flaky", 0),
        ("b", 1, 1, 0, 0, 0, 0.0, 0.0, Z2 / (1 + Z2), None, 0.0, "not-enough-data", 298),
        ("c", 5, 0, 3, 1, 1, 1.0, 4 / (4 + Z2), 1.0, 0.0, 0.0, "not-enough-data", 295),
        ("d", 299, 299, 0, 0, 0, 0.0, 0.0, Z2 / (299 + Z2), 0.0, 0.0, "stable-pass", 0),
        ("e", 299, 0, 299, 0, 0, 1.0, 299 / (299 + Z2), 1.0, 0.0, 0.0, "stable-fail", 0),
    ]
    actual = _flakiness(spark, records, NO_BASELINE).select(*COLUMNS)
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), rtol=1e-6)


def test_first_and_last_failure(spark: SparkSession) -> None:
    # runs start at minute i: failures at minutes 1 and 5
    row = _flakiness(spark, runs("a", "PFPPPFP"), NO_BASELINE).first()
    assert row is not None
    assert row["first_failure_at"].replace(tzinfo=UTC) == datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    assert row["last_failure_at"].replace(tzinfo=UTC) == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


def test_all_skipped_has_no_rate_and_needs_every_run(spark: SparkSession) -> None:
    row = _flakiness(spark, runs("s", "SS"), NO_BASELINE).first()
    assert row is not None
    assert (row["failure_rate"], row["wilson_low"], row["flip_rate"], row["entropy"]) == (None,) * 4
    assert (row["classification"], row["runs_needed"]) == ("not-enough-data", 299)


def test_regression_against_the_baseline_window(spark: SparkSession) -> None:
    # r: baseline (day 1) 1 failure in 20, current (day 2) 5 in 10: pooled 6/30, z = 2.904738,
    # one-sided p = 0.0018378 < 0.05 → regressed. n: only current runs → no baseline, no p-value.
    # s: 0 of 2, then 1 of 1: pooled 1/3, se = sqrt(1/3·2/3·1.5) = 0.577350, z = 1.732051, p = 0.0416323
    # < 0.05, but windows under 5 runs are never called a regression.
    records = (
        runs("r", "F" + "P" * 19, day=1) + runs("r", "FPFPFPFPFP", day=2) + runs("n", "FP", day=2)
        + runs("s", "PP", day=1) + runs("s", "F", day=2)
    )  # fmt: skip
    params = fl.FlakinessParams(baseline_before=datetime(2026, 1, 2, tzinfo=UTC))
    cols = ["test_id", "baseline_executed", "baseline_failure_rate", "current_executed",
            "current_failure_rate", "regression_p_value", "regressed"]  # fmt: skip
    actual = _flakiness(spark, records, params).select(*cols)
    expected = [
        ("r", 20, 0.05, 10, 0.5, 0.0018378, True),
        ("n", 0, None, 2, 0.5, None, False),
        ("s", 2, 0.0, 1, 1.0, 0.0416323, False),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), rtol=1e-4)


def test_behaviour_runs_fail_when_any_test_of_the_run_fails(spark: SparkSession) -> None:
    # run r010000: t1 passed, t2 failed → EPOCH-1 failed; t2 also covers FENCE-2.
    # run r010001: both passed. FENCE-2 only in t2. So EPOCH-1: 2 runs, 1 failure; FENCE-2 the same.
    records = runs("t1", "PP", behaviour_ids=["EPOCH-1"]) + runs(
        "t2", "FP", behaviour_ids=["EPOCH-1", "FENCE-2"]
    )
    per_run = fl.behaviour_runs(frame(spark, records))
    actual = fl.flakiness(per_run, fl.BEHAVIOUR_KEYS, NO_BASELINE).select(
        "behaviour_id", "runs", "passed", "failed", "failure_rate", "flip_rate", "classification"
    )
    expected = [("EPOCH-1", 2, 1, 1, 0.5, 1.0, "flaky"), ("FENCE-2", 2, 1, 1, 0.5, 1.0, "flaky")]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema))


def test_failure_signatures_cluster_numbers_and_ids(spark: SparkSession) -> None:
    records = (
        runs("a", "F", reason="TimeoutError: no leader for t-3 after 12.5 s (session 0x1f2e)")
        + runs("a", "F", day=2, reason="TimeoutError: no leader for t-17 after 7 s (session 0xab)")
        + runs("a", "E", day=3, reason="checker one-controller: 2 controllers at epoch 9")
        + runs("a", "F", day=4)
    )
    actual = fl.failure_signatures(frame(spark, records), fl.TEST_KEYS).select("signature", "failures")
    expected = [
        ("TimeoutError: no leader for t-<n> after <n> s (session <hex>)", 2),
        ("checker one-controller: <n> controllers at epoch <n>", 1),
        ("<no reason>", 1),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema))


def test_flake_ranking_orders_by_wilson_low_and_keeps_top_signatures(spark: SparkSession) -> None:
    # x: 5 of 10 failed → Wilson low 0.236593; y: 1 of 20 → 0.008881; z is stable, never ranked.
    records = (
        runs("x", "FPFPFPFPFP", reason="boom 1") + runs("y", "F" + "P" * 19, reason="bang") + runs("z", "PPP")
    )
    df = frame(spark, records)
    per_test = fl.flakiness(df, fl.TEST_KEYS, NO_BASELINE)
    ranking = fl.flake_ranking(per_test, fl.failure_signatures(df, fl.TEST_KEYS), fl.TEST_KEYS, top=5)
    rows = ranking.select("rank", "test_id", "wilson_low", F.col("signatures")[0]["signature"]).collect()
    assert [(r[0], r[1], r[3]) for r in rows] == [(1, "x", "boom <n>"), (2, "y", "bang")]
    assert rows[0][2] == pytest.approx(0.2365931, abs=1e-7)
    assert rows[1][2] == pytest.approx(0.0088814, abs=1e-7)


def test_failure_trend_per_day(spark: SparkSession) -> None:
    records = runs("a", "FPPP", day=1) + runs("a", "FFSP", day=2)
    actual = fl.failure_trend(frame(spark, records)).select(
        F.col("day").cast("string"), "executed", "failures", "failure_rate"
    )
    expected = [("2026-01-01", 4, 1, 0.25), ("2026-01-02", 3, 2, 2 / 3)]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema))
