"""Reading inputs: the explicit schema, file:line errors, permissive mode, JUnit and allure."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from reports.errors import InputError
from reports.inputs import Defaults, discover
from reports.read import load
from tests.reports.conftest import record, runs, v1_record, write_jsonl

pytestmark = pytest.mark.reports

DEFAULTS = Defaults()


def _load(spark: SparkSession, *paths: Path, permissive: bool = False) -> object:
    return load(spark, discover([str(p) for p in paths]), permissive=permissive, defaults=DEFAULTS)


def test_bad_lines_fail_with_file_and_line(spark: SparkSession, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "runs.jsonl",
        [record()],
        ["{not json", json.dumps(record(kind="nightly")), "", json.dumps(record(run_id="r2"))],
    )
    with pytest.raises(InputError) as err:
        _load(spark, path)
    text = str(err.value)
    assert text.startswith(
        "1 record(s) of a kind this reader does not know ('nightly' ×1; it knows conformance-test, "
        "chaos-run, sim-run): records of a newer kit? Report them with a kit that knows the kind.\n"
    )
    assert "2 input record(s) do not match" in text
    assert f"{path}:2: not a JSON object" in text
    assert f"{path}:3: kind: 'nightly' not in ('conformance-test', 'chaos-run', 'sim-run')" in text
    assert "--permissive" in text


def test_permissive_counts_and_lists_rejected_lines(spark: SparkSession, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", [record(), record(run_id="r2")], ["[1, 2]", "{}"])
    loaded = load(spark, discover([str(path)]), permissive=True, defaults=DEFAULTS)
    assert loaded.rejected_total == 2
    assert [(r.file, r.line) for r in loaded.rejected] == [(str(path), 3), (str(path), 4)]
    assert loaded.rejected[0].problems == "not a JSON object"
    assert "kind: missing" in loaded.rejected[1].problems
    assert loaded.counts == {"records/conformance-test": 2}


def _m(name: str, unit: str) -> dict[str, object]:
    return {"name": name, "value": 1, "unit": unit}


def test_each_schema_violation_is_named(spark: SparkSession, tmp_path: Path) -> None:
    bad = {
        "seed: missing": {k: v for k, v in record().items() if k != "seed"},
        "duration_s: wrong type": record(duration_s="fast"),
        "seed: wrong type": record(seed="x"),
        "test_id: null": record(test_id=None),
        "unknown field(s): colour": record(colour="red"),
        "schema_version: 3 not supported (this reader knows [1, 2])": record(schema_version=3),
        "fault_package: must be 'none' for conformance-test": record(fault_package="kill-broker"),
        "phase_metrics: unknown metric warp_speed": record(phase_metrics=[_m("warp_speed", "s")]),
        "phase_metrics: wrong unit for isr_expansion": record(phase_metrics=[_m("isr_expansion", "ms")]),
        "started_at: not ISO-8601: yesterday": record(started_at="yesterday"),
        "duration_s: negative": record(duration_s=-1.0),
        "record_id: missing": {k: v for k, v in record().items() if k != "record_id"},
        "record_id: empty": record(record_id=""),
        "record_id: null": record(record_id=None),
        "unknown field(s): record_id": v1_record() | {"record_id": "x"},
        "kind: 'sim-run' not in ('conformance-test', 'chaos-run')": v1_record(kind="sim-run"),
        "excused: only for chaos-run and sim-run records": record(excused={"q": 1}),
        "excused: counts must be whole numbers >= 0": _chaos(excused={"q": -1}),
        "excused: counts must be whole numbers >= 0 ": _chaos(excused={"q": None}),
        "excused: wrong type": _chaos(excused={"q": 1.5}),
        "excused: wrong type ": _chaos(excused=["q"]),
    }  # fmt: skip
    path = write_jsonl(tmp_path / "runs.jsonl", [record(), *bad.values()])
    loaded = load(spark, discover([str(path)]), permissive=True, defaults=DEFAULTS)
    assert loaded.rejected_total == len(bad)
    by_line = {r.line: r.problems for r in loaded.rejected}
    for line, expected in enumerate(bad, start=2):
        assert expected.strip() in by_line[line], (line, by_line[line])


def _chaos(**kw: object) -> dict[str, object]:
    return record(kind="chaos-run", test_id="chaos/links", fault_package="links", seed=3, **kw)


def test_mixed_versions_keep_v1_and_v2_and_reject_unknown_versions(
    spark: SparkSession, tmp_path: Path
) -> None:
    lines = [v1_record(), record(schema_version=3), record(run_id="b"), _chaos(excused={"q": 2}),
             v1_record(kind="chaos-run", test_id="chaos/links", fault_package="links", seed=4, run_id="c"),
             record(kind="sim-run", test_id="sim/x", fault_package="none", seed=5, excused={})]  # fmt: skip
    path = write_jsonl(tmp_path / "runs.jsonl", lines)
    loaded = load(spark, discover([str(path)]), permissive=True, defaults=DEFAULTS)
    assert loaded.rejected_total == 1
    assert loaded.rejected[0].line == 2
    assert loaded.counts == {"records/conformance-test": 2, "records/chaos-run": 2, "records/sim-run": 1}
    rows = {r["record_id"]: r["excused"] for r in loaded.records.collect()}
    assert rows == {"r0:t.py::test_a": None, "b:t.py::test_a": None, "r0:chaos/links:3": {"q": 2},
                    "c:chaos/links:4": None, "r0:sim/x:5": {}}  # fmt: skip


def test_unknown_kinds_are_counted_as_rejected_under_permissive(spark: SparkSession, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", [record(), record(kind="bench-run", run_id="x"),
                                                  record(kind="bench-run", run_id="y")])  # fmt: skip
    loaded = load(spark, discover([str(path)]), permissive=True, defaults=DEFAULTS)
    assert (loaded.rejected_total, loaded.unknown_kinds) == (2, {"bench-run": 2})
    only = write_jsonl(tmp_path / "other.jsonl", [record(kind="bench-run")])
    with pytest.raises(InputError) as err:
        load(spark, discover([str(only)]), permissive=True, defaults=DEFAULTS)
    assert str(err.value).endswith(
        "nothing to report; 1 rejected; 1 record(s) of a kind this reader does not know ('bench-run' ×1; "
        "it knows conformance-test, chaos-run, sim-run): records of a newer kit? Report them with a kit "
        "that knows the kind"
    )


def test_missing_optional_fields_are_null(spark: SparkSession, tmp_path: Path) -> None:
    minimal = {k: v for k, v in record(reason="x").items() if k not in ("reason", "worker", "target_version")}
    path = write_jsonl(tmp_path / "runs.jsonl", [minimal])
    row = load(spark, discover([str(path)]), permissive=False, defaults=DEFAULTS).records.first()
    assert row is not None
    assert (row["reason"], row["worker"], row["target_version"], row["test_id"]) == (
        None,
        None,
        None,
        "t.py::test_a",
    )


def test_gzip_and_spark_part_files_are_read(spark: SparkSession, tmp_path: Path) -> None:
    with gzip.open(tmp_path / "part-00000-x.json.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r) for r in runs("g", "PFP")) + "\n")
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    loaded = load(spark, discover([str(tmp_path)]), permissive=False, defaults=DEFAULTS)
    assert loaded.counts == {"records/conformance-test": 3}


def test_missing_and_empty_inputs_are_named(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=f"input {tmp_path}/nope: no such file or directory"):
        discover([str(tmp_path / "nope")])
    with pytest.raises(InputError, match=r"no file matches this pattern"):
        discover([str(tmp_path / "*.jsonl")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=f"input {tmp_path}/empty: no run records"):
        discover([str(tmp_path / "empty")])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"the inputs hold no valid run records \\({empty}"):
        _load(spark, empty)


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites>
<testsuite name="pytest" tests="4" time="20.5" timestamp="2026-01-05T10:00:00+00:00" hostname="ci">
<testcase classname="conformance.checks.test_epoch" name="test_one" time="1.5"/>
<testcase classname="conformance.checks.test_epoch.TestFence" name="test_two[x]" time="2.0">
  <failure message="AssertionError: epoch 3 != 4&#10;more">trace</failure></testcase>
<testcase classname="conformance.checks.test_epoch" name="test_three" time="0.0">
  <skipped type="pytest.skip" message="needs kafka">skip</skipped></testcase>
<testcase classname="conformance.checks.test_epoch" name="test_four" time="0.1">
  <error message="fixture broke"/></testcase>
</testsuite></testsuites>
"""


def test_junit_maps_to_records_and_a_described_execution_is_dropped(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "junit.xml").write_text(JUNIT, encoding="utf-8")
    # A run record of test_one inside the suite's time window describes the same execution.
    write_jsonl(
        tmp_path / "runs-main.jsonl",
        [
            record(
                test_id="conformance/checks/test_epoch.py::test_one",
                started_at="2026-01-05T10:00:01+00:00",
                finished_at="2026-01-05T10:00:03+00:00",
            )
        ],
    )
    loaded = load(spark, discover([str(tmp_path)]), permissive=False, defaults=DEFAULTS)
    rows = {r["test_id"]: r for r in loaded.records.collect()}
    assert loaded.counts == {"records/conformance-test": 1, "junit/conformance-test": 3}
    two = rows["conformance/checks/test_epoch.py::TestFence::test_two[x]"]
    assert (two["outcome"], two["reason"], two["source"], two["target"]) == (
        "failed",
        "AssertionError: epoch 3 != 4",
        "junit",
        "reference",
    )
    assert rows["conformance/checks/test_epoch.py::test_three"]["outcome"] == "skipped"
    assert rows["conformance/checks/test_epoch.py::test_four"]["outcome"] == "error"
    assert rows["conformance/checks/test_epoch.py::test_one"]["source"] == "records"


def test_allure_results_map_to_records(spark: SparkSession, tmp_path: Path) -> None:
    result = {
        "name": "test_elect[3]", "status": "broken", "start": 1767607200000, "stop": 1767607202500,
        "fullName": "conformance.checks.test_elect#test_elect",
        "titlePath": ["conformance", "checks", "test_elect.py"],
        "statusDetails": {"message": "ConnectionLoss\ntrace"},
        "labels": [{"name": "feature", "value": "ELECT-1"}, {"name": "host", "value": "ci"}],
    }  # fmt: skip
    (tmp_path / "abc-result.json").write_text(json.dumps(result), encoding="utf-8")
    (tmp_path / "abc-container.json").write_text("{}", encoding="utf-8")
    loaded = load(spark, discover([str(tmp_path)]), permissive=False, defaults=DEFAULTS)
    row = loaded.records.first()
    assert row is not None
    assert (row["test_id"], row["outcome"], row["reason"], row["behaviour_ids"], row["duration_s"]) == (
        "conformance/checks/test_elect.py::test_elect[3]",
        "error",
        "ConnectionLoss",
        ["ELECT-1"],
        2.5,
    )
    (tmp_path / "bad-result.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad-result\.json:\?: not an allure result"):
        load(spark, discover([str(tmp_path)]), permissive=False, defaults=DEFAULTS)


def test_a_value_of_the_wrong_json_type_in_a_string_field_is_rejected(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Spark's JSON parser would read each of these into the string field as text ("5", "true",
    # '{"a":1}', "2.5"); the reader must see that the JSON value was not a string.
    bad = {
        "test_id: wrong type": record(test_id=5),
        "kind: wrong type": record(kind=True),
        "reason: wrong type": record(reason={"a": 1}),
        "profile: wrong type": record(profile=2.5),
        "commit: wrong type": record(commit=1234567),
        "behaviour_ids: must be strings": record(behaviour_ids=["EPOCH-1", 7]),
    }
    # Strings that look like numbers or literals stay valid: they were strings in the JSON.
    good = [record(profile="2.5"), record(test_id="5", commit="1234567", reason="[x] {y}", worker="true")]
    path = write_jsonl(tmp_path / "runs.jsonl", [*good, *bad.values()])
    with pytest.raises(InputError) as err:
        _load(spark, path)
    assert f"{path}:3: test_id: wrong type" in str(err.value)
    loaded = load(spark, discover([str(path)]), permissive=True, defaults=DEFAULTS)
    assert loaded.counts == {"records/conformance-test": 2}
    assert loaded.rejected_total == len(bad)
    by_line = {r.line: r.problems for r in loaded.rejected}
    for line, expected in enumerate(bad, start=len(good) + 1):
        assert expected in by_line[line], (line, by_line[line])


def test_nulls_inside_arrays_are_rejected(spark: SparkSession, tmp_path: Path) -> None:
    bad = {
        "behaviour_ids: must be strings": record(behaviour_ids=["EPOCH-1", None]),
        "phase_metrics: value must be a number": record(
            phase_metrics=[{"name": "isr_expansion", "value": None, "unit": "s"}]
        ),
        "phase_metrics: must be objects with name, value, unit": record(phase_metrics=[{"value": 1.0}]),
        "phase_metrics: must be objects with name, value, unit ": record(phase_metrics=[None]),
    }
    path = write_jsonl(tmp_path / "runs.jsonl", [record(), *bad.values()])
    loaded = load(spark, discover([str(path)]), permissive=True, defaults=DEFAULTS)
    assert loaded.rejected_total == len(bad)
    by_line = {r.line: r.problems for r in loaded.rejected}
    for line, expected in enumerate(bad, start=2):
        assert expected.strip() in by_line[line], (line, by_line[line])
