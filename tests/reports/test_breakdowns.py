"""Failure clusters, excused Kafka quirks and behaviour trends on hand-made records; every
expected number is worked out in the comments."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.testing import assertDataFrameEqual

from reports import breakdowns as bd
from reports import flakiness as fl
from tests.reports.conftest import frame, record, runs

pytestmark = pytest.mark.reports


def test_failure_clusters_rank_signatures_across_tests_with_their_share(spark: SparkSession) -> None:
    # conformance failures: "no leader … after <n> s" ×3 (tests a, a, b), "epoch <n> != <n>" ×1 (c);
    # shares 3/4 and 1/4, cumulative 3/4 then 1. Chaos: one failure, share 1. Passes do not count.
    records = (
        runs("a", "FF", reason="no leader after 3 s")
        + runs("b", "PF", day=2, reason="no leader after 12 s")
        + runs("c", "F", day=3, reason="epoch 4 != 5")
        + runs("chaos/links", "F", kind="chaos-run", fault_package="links", seed=1, reason="2 controllers")
    )
    sigs = fl.failure_signatures(frame(spark, records), fl.TEST_KEYS)
    actual = bd.failure_clusters(sigs).select("kind", "rank", "signature", "failures", "share",
                                             "cumulative_share", "tests", F.col("example"))  # fmt: skip
    expected = [
        ("chaos-run", 1, "<n> controllers", 1, 1.0, 1.0, 1, "2 controllers"),
        ("conformance-test", 1, "no leader after <n> s", 3, 0.75, 0.75, 2, "no leader after 12 s"),
        ("conformance-test", 2, "epoch <n> != <n>", 1, 0.25, 1.0, 1, "epoch 4 != 5"),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), checkRowOrder=True)


def _chaos(excused: dict[str, int] | None, **kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "kind": "chaos-run",
        "test_id": "chaos/partition",
        "fault_package": "partition",
    }
    return record(**(base | {"seed": 1, "excused": excused} | kw))


def test_excusals_count_runs_and_items_per_quirk_over_the_runs_that_report(spark: SparkSession) -> None:
    # partition: 4 runs, 3 report a map (one says nothing). stranded: 2 items in one run, 1 in
    # another → runs 2, items 3, share 2/3; halted: 0 items in one run → runs 0, share 0.
    # kill: 1 run reporting, stranded 1 → share 1. Conformance records never count.
    records = [
        _chaos({"stranded": 2, "halted": 0}, run_id="c1"),
        _chaos({"stranded": 1}, run_id="c2"),
        _chaos({}, run_id="c3"),
        _chaos(None, run_id="c4"),
        _chaos({"stranded": 1}, run_id="c5", fault_package="kill"),
        record(run_id="c6"),
    ]
    actual = bd.excusals(frame(spark, records))
    expected = [
        ("chaos-run", "stranded", "reference", "partition", 3, 2, 3, 2 / 3),
        ("chaos-run", "stranded", "reference", "kill", 1, 1, 1, 1.0),
        ("chaos-run", "halted", "reference", "partition", 3, 0, 0, 0.0),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), checkRowOrder=True)


def test_simulator_runs_report_excusals_too(spark: SparkSession) -> None:
    records = [record(kind="sim-run", test_id="sim/x", fault_package="none", seed=2, excused={"q": 4})]
    row = bd.excusals(frame(spark, records)).first()
    assert row is not None
    assert (row["kind"], row["quirk"], row["items_excused"]) == ("sim-run", "q", 4)


def test_behaviour_trend_per_commit_and_target_version(spark: SparkSession) -> None:
    # EPOCH-1 runs (one per run_id): commit c1 (2.8.1): P P; commit c2 (2.8.2): F P S, the skipped
    # run not executed. Per commit: c1 0/2 = 0, c2 1/2 = 0.5 (+0.5); per target version the same
    # split. A run without a target version is "unknown".
    def at(i: int, **kw: object) -> dict[str, object]:
        started = f"2026-01-0{i + 1}T00:00:00+00:00"
        return record(run_id=f"r{i}", started_at=started, finished_at=started, **kw)

    records = [
        at(0, commit="c1", target_version="2.8.1"),
        at(1, commit="c1", target_version="2.8.1"),
        at(2, commit="c2", target_version="2.8.2", outcome="failed"),
        at(3, commit="c2", target_version="2.8.2"),
        at(4, commit="c2", target_version="2.8.2", outcome="skipped"),
        at(5, commit="c3", target_version=None, behaviour_ids=["FENCE-1"]),
    ]
    trend = bd.behaviour_trend(fl.behaviour_runs(frame(spark, records)))
    actual = trend.select("behaviour_id", "axis", "version", "runs", "executed", "failures",
                          "failure_rate", "rate_change", "first_seen")  # fmt: skip
    d = [datetime(2026, 1, i) for i in (1, 3, 6)]
    expected = [
        ("EPOCH-1", "commit", "c1", 2, 2, 0, 0.0, None, d[0]),
        ("EPOCH-1", "commit", "c2", 3, 2, 1, 0.5, 0.5, d[1]),
        ("EPOCH-1", "target_version", "2.8.1", 2, 2, 0, 0.0, None, d[0]),
        ("EPOCH-1", "target_version", "2.8.2", 3, 2, 1, 0.5, 0.5, d[1]),
        ("FENCE-1", "commit", "c3", 1, 1, 0, 0.0, None, d[2]),
        ("FENCE-1", "target_version", "unknown", 1, 1, 0, 0.0, None, d[2]),
    ]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema), checkRowOrder=True)
