"""Policy backtest and impact on hand-made gated runs; every expected number is worked out here.

The worked example of :mod:`reports.policy` plus a gate that ran nothing: five gated runs
r0…r4 (``runs`` gives index i the run id r01000i), tests a, b and c, k = 1 retry, quarantine
above 5 %::

    run  a  b  c   none     retries              quarantine                 both
    r0   P  F  S   blocked  pass (b next: P)     blocked (b: no history)    pass
    r1   F  P  S   blocked  pass (a next: P)     blocked (a before: P)      pass
    r2   P  F  S   blocked  pass (b next: P)     pass (b before F P: 50 %)  pass
    r3   P  P  S   pass     pass                 pass                       pass
    r4   -  -  S   blocked  blocked (ran nothing, under every policy)
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.testing import assertDataFrameEqual

from reports import flakiness as fl
from reports import policy as pol
from tests.reports.conftest import frame, runs

pytestmark = pytest.mark.reports

PARAMS = pol.PolicyParams(quarantine_above=0.05, retries=1)


def _example() -> list[dict[str, Any]]:
    return runs("a", "PFPP") + runs("b", "FPFP") + runs("c", "SSSSS")


def _execs(
    spark: SparkSession, records: list[dict[str, Any]], params: pol.PolicyParams = PARAMS
) -> DataFrame:
    return pol.executions(frame(spark, records), params)


def test_gates_count_blocking_executions_per_policy_and_a_gate_that_ran_nothing(spark: SparkSession) -> None:
    gates = pol.gates(_execs(spark, _example())).select(
        "run_id", "selected", "executed", "failing_none", "failing_retries", "failing_quarantine",
        "failing_quarantine_retries", "ran_nothing", "blocked_none", "blocked_retries", "blocked_quarantine",
        "blocked_quarantine_retries",
    )  # fmt: skip
    expected = [
        ("r010000", 3, 2, 1, 0, 1, 0, False, True, False, True, False),
        ("r010001", 3, 2, 1, 0, 1, 0, False, True, False, True, False),
        ("r010002", 3, 2, 1, 0, 0, 0, False, True, False, False, False),
        ("r010003", 3, 2, 0, 0, 0, 0, False, False, False, False, False),
        ("r010004", 1, 0, 0, 0, 0, 0, True, True, True, True, True),
    ]
    assertDataFrameEqual(gates, spark.createDataFrame(expected, gates.schema))


def test_gate_policies_count_blocked_gates_and_the_failures_each_policy_ignores(spark: SparkSession) -> None:
    execs = _execs(spark, _example())
    actual = pol.gate_policies(pol.gates(execs), execs)
    # failures: a at r1, b at r0 and r2 (3). retries rescue all three; quarantine only b at r2.
    expected = [
        ("reference", "2.5", "none", 5, 4, 4 / 5, 1, 0, 0),
        ("reference", "2.5", "retries", 5, 1, 1 / 5, 1, 3, 3),
        ("reference", "2.5", "quarantine", 5, 3, 3 / 5, 1, 1, 1),
        ("reference", "2.5", "quarantine+retries", 5, 1, 1 / 5, 1, 3, 3),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), checkRowOrder=True)


def test_policy_backtest_per_test_and_per_behaviour(spark: SparkSession) -> None:
    actual = pol.policy_backtest(_execs(spark, _example()))
    # EPOCH-1 (every test's behaviour): fails in r0, r1, r2; quarantine lets r2 pass (b quarantined);
    # it executed in r0-r3 (r4 only skipped c).
    expected = [
        ("test", "b", "reference", "2.5", 4, 2, 2, 0, 1, 0),
        ("test", "a", "reference", "2.5", 4, 1, 1, 0, 1, 0),
        ("test", "c", "reference", "2.5", 0, 0, 0, 0, 0, 0),
        ("behaviour", "EPOCH-1", "reference", "2.5", 4, 3, 3, 0, 2, 0),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), checkRowOrder=True)


def test_impact_counts_gates_blocked_and_blocked_alone(spark: SparkSession) -> None:
    records = _example()
    df = frame(spark, records)
    execs = pol.executions(df, PARAMS)
    per_test = fl.level(fl.flakiness_levels(df, fl.FlakinessParams()), "test")
    actual = pol.impact(execs, pol.gates(execs), per_test)
    # Three gates were blocked by failing tests (r4 ran nothing: no test blocked it). a alone
    # blocked r1; b alone blocked r0 and r2. a: P F P P, 2 flips in 3 steps; b: F P F P, 3 in 3.
    expected = [
        ("b", "reference", "2.5", 2, 2, 2 / 3, 2 / 3, "flaky", 0.5, 1.0),
        ("a", "reference", "2.5", 1, 1, 1 / 3, 1 / 3, "flaky", 0.25, 2 / 3),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), checkRowOrder=True)


def test_a_gate_blocked_by_two_tests_is_nobodys_alone(spark: SparkSession) -> None:
    records = runs("a", "FP") + runs("b", "FP")
    df = frame(spark, records)
    execs = pol.executions(df, PARAMS)
    per_test = fl.level(fl.flakiness_levels(df, fl.FlakinessParams()), "test")
    rows = pol.impact(execs, pol.gates(execs), per_test).select(
        "test_id", "gates_blocked", "gates_blocked_alone"
    )
    assert sorted(map(tuple, rows.collect())) == [("a", 1, 0), ("b", 1, 0)]


@pytest.mark.parametrize(
    ("outcomes", "retries", "blocked"),
    [
        # d: F F P F. k = 1: r0's retry is r1 (F) → blocks; r1's is r2 (P) → rescued; r3 has none → blocks.
        ("FFPF", 1, ["r010000", "r010003"]),
        # k = 2: r0's retries r1, r2 → P rescues; r3 still has no later execution.
        ("FFPF", 2, ["r010003"]),
        # A skipped run is no retry: r0's next execution is r2 (P).
        ("FSPF", 1, ["r010003"]),
        # k = 0: every failure blocks.
        ("FFPF", 0, ["r010000", "r010001", "r010003"]),
    ],
)
def test_retries_are_the_next_executions_and_missing_ones_count_as_failed(
    spark: SparkSession, outcomes: str, retries: int, blocked: list[str]
) -> None:
    execs = _execs(spark, runs("d", outcomes), pol.PolicyParams(retries=retries))
    rows = execs.filter(F.col("blocks_retries")).select("run_id").orderBy("run_id").collect()
    assert [r["run_id"] for r in rows] == blocked


def test_quarantine_takes_flaky_tests_above_the_threshold_never_broken_ones(spark: SparkSession) -> None:
    # e only ever fails: broken, never quarantined. f: P×19 then F F: before its first failure it
    # never failed (blocks); before its second it failed 1 in 20 = 5 %: not above 5 % → blocks,
    # above 4 % → quarantined.
    records = runs("e", "FFFF") + runs("f", "P" * 19 + "FF")
    for threshold, f_blocks in ((0.05, 2), (0.04, 1)):
        execs = _execs(spark, records, pol.PolicyParams(quarantine_above=threshold))
        counts = {
            r["test_id"]: r["n"]
            for r in execs.filter(F.col("blocks_quarantine"))
            .groupBy("test_id")
            .agg(F.count("*").alias("n"))
            .collect()
        }
        assert counts == {"e": 4, "f": f_blocks}, threshold


def test_chaos_records_gate_nothing(spark: SparkSession) -> None:
    chaos = runs("chaos/links", "FF", kind="chaos-run", fault_package="links", seed=3)
    assert pol.executions(frame(spark, chaos + runs("a", "P")), PARAMS).select(
        "test_id"
    ).distinct().collect() == [("a",)]
