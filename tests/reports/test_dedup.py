"""Duplicate records (same record_id) are found and kept once: the worked example of
:mod:`reports.dedup`, and the whole reader counting what it dropped."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from reports import dedup
from reports.inputs import Defaults, discover
from reports.read import Duplicates, drop_duplicates, load
from tests.reports.conftest import frame, record, runs, v1_record, write_jsonl

pytestmark = pytest.mark.reports


def _at(minute: str) -> dict[str, str]:
    return {"started_at": f"2026-01-01T{minute}:00+00:00", "finished_at": f"2026-01-01T{minute}:30+00:00"}


EXAMPLE = [
    record(run_id="r1", test_id="t", source_file="a.jsonl", **_at("10:00")),
    record(run_id="r1", test_id="t", source_file="b.jsonl", **_at("10:00")),
    record(run_id="r2", test_id="t", outcome="failed", source_file="a.jsonl", **_at("11:00")),
    record(run_id="r2", test_id="t", source_file="retry.jsonl", **_at("10:59")),
    record(run_id="r3", test_id="t", source_file="a.jsonl", **_at("12:00")),
]


def test_duplicate_ids_count_copies_and_conflicting_outcomes(spark: SparkSession) -> None:
    actual = dedup.duplicate_ids(frame(spark, EXAMPLE))
    expected = [("r1:t", 2, False), ("r2:t", 2, True)]
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema))


def test_keep_first_keeps_the_earliest_copy_then_the_smallest_source(spark: SparkSession) -> None:
    kept = dedup.keep_first(frame(spark, EXAMPLE)).select("record_id", "source_file", "outcome")
    expected = [
        ("r1:t", "a.jsonl", "passed"),
        ("r2:t", "retry.jsonl", "passed"),
        ("r3:t", "a.jsonl", "passed"),
    ]
    assertDataFrameEqual(kept, spark.createDataFrame(expected, kept.schema))


def test_the_same_records_given_twice_are_counted_once(spark: SparkSession, tmp_path: Path) -> None:
    # Three chaos runs and a conformance test; the same file is given twice (as a copy), and one
    # chaos run was executed again by a retried shard (same campaign, scenario and seed).
    chaos = [record(kind="chaos-run", run_id="camp", test_id="chaos/links", fault_package="links", seed=s,
                    run_order=f"20260101T000000.000000Z-camp-{s}") for s in (7, 8, 9)]  # fmt: skip
    again = chaos[1] | {"outcome": "failed", "started_at": "2026-01-01T01:00:00+00:00"}
    conformance = runs("t.py::a", "P")
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    write_jsonl(tmp_path / "one" / "chaos-runs-w0.jsonl", chaos)
    write_jsonl(tmp_path / "one" / "runs-gw0.jsonl", conformance)
    write_jsonl(tmp_path / "one" / "chaos-runs-w1.jsonl", [again])
    write_jsonl(tmp_path / "two" / "chaos-runs-w0.jsonl", chaos)
    loaded = load(spark, discover([str(tmp_path)]), permissive=False, defaults=Defaults())
    # 8 lines: chaos/links:7 ×2, :8 ×3 (one conflicting), :9 ×2, the conformance test once.
    assert loaded.counts == {"records/chaos-run": 3, "records/conformance-test": 1}
    assert (loaded.duplicates.dropped, loaded.duplicates.ids, loaded.duplicates.conflicting) == (4, 3, 1)
    rows = {r["record_id"]: r["outcome"] for r in loaded.records.collect()}
    assert rows == {"camp:chaos/links:7": "passed", "camp:chaos/links:8": "passed",
                    "camp:chaos/links:9": "passed", "r010000:t.py::a": "passed"}  # fmt: skip


def test_version_1_records_get_the_derived_record_id_and_meet_their_version_2_copies(
    spark: SparkSession, tmp_path: Path
) -> None:
    old = v1_record(kind="chaos-run", run_id="camp", test_id="chaos/process", fault_package="kill", seed=4)
    new = record(kind="chaos-run", run_id="camp", test_id="chaos/process", fault_package="kill", seed=4)
    write_jsonl(tmp_path / "chaos-runs-old.jsonl", [old])
    write_jsonl(tmp_path / "chaos-runs-new.jsonl", [new])
    loaded = load(spark, discover([str(tmp_path)]), permissive=False, defaults=Defaults())
    assert [r["record_id"] for r in loaded.records.collect()] == ["camp:chaos/process:4"]
    assert loaded.duplicates.dropped == 1


@pytest.mark.parametrize("literal_ids", [10_000, 0])
def test_both_ways_of_dropping_keep_the_same_rows(spark: SparkSession, literal_ids: int) -> None:
    # literal_ids 0: the ids go through a join and the result is cached, as for a large input.
    counts = {"records/conformance-test": 5}
    kept, found = drop_duplicates(frame(spark, EXAMPLE), counts, literal_ids=literal_ids)
    assert found == Duplicates(dropped=2, ids=2, conflicting=1)
    assert counts == {"records/conformance-test": 3}
    rows = sorted((r["record_id"], r["source_file"]) for r in kept.collect())
    assert rows == [("r1:t", "a.jsonl"), ("r2:t", "retry.jsonl"), ("r3:t", "a.jsonl")]
