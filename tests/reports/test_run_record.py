"""The run-record schema, version 2: record_id, excused, sim-run, and version 1 still readable."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from records.run_record import (
    SCHEMA_VERSION,
    RecordError,
    RunRecord,
    derive_record_id,
    read_records,
    record_id_of,
    run_order_key,
    validate,
    write_record,
)
from tests.reports.conftest import record, v1_record

pytestmark = pytest.mark.unit


def _record(**kw: object) -> RunRecord:
    base: dict[str, object] = {
        "kind": "conformance-test",
        "run_id": "5c6b9f6e672b",
        "run_order": run_order_key(datetime(2026, 1, 2, tzinfo=UTC), "5c6b9f6e672b"),
        "test_id": "conformance/checks/test_epoch.py::test_epoch_1",
        "behaviour_ids": ("EPOCH-1",),
        "target": "reference",
        "profile": "2.5",
        "outcome": "passed",
        "duration_s": 1.5,
        "started_at": "2026-01-02T00:00:00+00:00",
        "finished_at": "2026-01-02T00:00:01.500+00:00",
        "host": "h",
    }
    return RunRecord(**(base | kw))  # type: ignore[arg-type]


def test_a_conformance_record_is_identified_by_run_and_test() -> None:
    d = json.loads(_record().to_json())
    assert d["schema_version"] == SCHEMA_VERSION == 2
    assert d["record_id"] == "5c6b9f6e672b:conformance/checks/test_epoch.py::test_epoch_1"
    assert d["excused"] is None


def test_a_chaos_run_executed_again_in_the_same_campaign_has_the_same_record_id() -> None:
    # A retried shard runs plan 3 of campaign c0ffee again: same scenario and seed, another start.
    first = _record(
        kind="chaos-run", run_id="c0ffee", test_id="chaos/links", fault_package="links", seed=1003
    )
    again = _record(
        kind="chaos-run", run_id="c0ffee", test_id="chaos/links", fault_package="links", seed=1003,
        started_at="2026-01-02T01:00:00+00:00", outcome="failed",
    )  # fmt: skip
    other = _record(
        kind="chaos-run", run_id="c0ffee", test_id="chaos/links", fault_package="links", seed=1004
    )
    assert first.record_id == again.record_id == "c0ffee:chaos/links:1003"
    assert other.record_id == "c0ffee:chaos/links:1004"
    sim = _record(kind="sim-run", run_id="s1", test_id="sim/partition", fault_package="partition", seed=9)
    assert sim.record_id == "s1:sim/partition:9"


def test_a_given_record_id_is_kept() -> None:
    assert _record(record_id="mine").record_id == "mine"


def test_excused_counts_per_quirk_on_chaos_and_simulator_runs_only() -> None:
    chaos = _record(kind="chaos-run", test_id="chaos/x", fault_package="kill", seed=1,
                    excused={"reassignment-stranded-by-deletion": 2})  # fmt: skip
    assert json.loads(chaos.to_json())["excused"] == {"reassignment-stranded-by-deletion": 2}
    with pytest.raises(RecordError, match="excused: only for chaos-run and sim-run records"):
        _record(excused={"q": 1}).to_json()
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(RecordError, match=r"excused\['q'\]: must be a count"):
            _record(
                kind="chaos-run", test_id="chaos/x", fault_package="kill", seed=1, excused={"q": bad}
            ).to_json()


def test_version_2_requires_a_record_id_and_version_1_has_none() -> None:
    v2 = record()
    assert validate(v2) == []
    assert validate({k: v for k, v in v2.items() if k != "record_id"}) == ["record_id: missing"]
    assert validate(v2 | {"record_id": ""}) == ["record_id: empty"]
    v1 = v1_record()
    assert validate(v1) == []
    assert validate(v1 | {"record_id": "x"}) == ["record_id: unknown field"]
    assert validate(v1 | {"kind": "sim-run"}) == ["kind: 'sim-run' not in ('conformance-test', 'chaos-run')"]
    assert validate(v2 | {"schema_version": 3}) == [
        "schema_version: 3 not supported (this reader knows [1, 2])"
    ]


def test_version_1_records_are_read_and_get_their_record_id_derived(tmp_path: Path) -> None:
    old = v1_record(kind="chaos-run", run_id="c", test_id="chaos/links", fault_package="links", seed=7)
    (tmp_path / "chaos-runs-w0.jsonl").write_text(json.dumps(old) + "\n", encoding="utf-8")
    (d,) = list(read_records([tmp_path / "chaos-runs-w0.jsonl"]))
    assert "record_id" not in d
    assert record_id_of(d) == derive_record_id("chaos-run", "c", "chaos/links", 7) == "c:chaos/links:7"
    assert record_id_of(record(record_id="given")) == "given"


def test_write_record_streams_are_the_layout_the_reports_read(tmp_path: Path) -> None:
    sim = _record(kind="sim-run", test_id="sim/x", fault_package="none", seed=1, worker="s0")
    path = write_record(tmp_path, sim, stream="sim-runs")
    assert path.name == "sim-runs-s0.jsonl"
    (d,) = list(read_records([path]))
    assert (d["kind"], d["record_id"]) == ("sim-run", "5c6b9f6e672b:sim/x:1")


def test_a_version_1_run_record_serialises_without_the_version_2_fields() -> None:
    d = json.loads(_record(schema_version=1).to_json())
    assert d["schema_version"] == 1
    assert "record_id" not in d
    assert "excused" not in d
