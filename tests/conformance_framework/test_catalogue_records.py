"""Unit: the behaviour catalogue and the run-record schema."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import catalogue
from records.run_record import (
    METRICS,
    PhaseMetric,
    RecordError,
    RunRecord,
    read_records,
    run_order_key,
    validate,
    write_record,
)

pytestmark = pytest.mark.unit


def test_catalogue_ids_are_unique_and_areas_known() -> None:
    ids = [b.id for b in catalogue.CATALOGUE]
    assert len(ids) == len(set(ids)) == 107  # behaviours.md (90) and behaviours-admin-api.md (17)
    assert {"SHUTDOWN-3", "ELECT-6", "ADMIN-1", "REASSIGN-22"} <= set(ids)
    assert {b.area for b in catalogue.CATALOGUE} == set(catalogue.AREAS)


def test_unit_marks_follow_the_spec() -> None:
    assert catalogue.by_id("RSM-2").unit == "only"
    assert catalogue.by_id("PSM-1").unit == "partly"
    assert catalogue.by_id("EPOCH-1").unit == "none"


def test_cross_check_reports_both_directions(tmp_path: Path) -> None:
    md = tmp_path / "behaviours.md"
    md.write_text("- EPOCH-1 x\n- EPOCH-99 y\n- RSM-2 *(unit)* z\n", encoding="utf-8")
    problems = catalogue.cross_check(md)
    assert problems is not None
    assert "EPOCH-99: in behaviours.md, missing from the catalogue" in problems
    assert "EPOCH-2: in the catalogue, not in behaviours.md" in problems
    assert not any(p.startswith("RSM-2") for p in problems)


def test_cross_check_absent_file_is_none(tmp_path: Path) -> None:
    assert catalogue.cross_check(tmp_path / "nope.md") is None


def test_spec_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KZK_SPEC_DIR", str(tmp_path))
    assert catalogue.spec_dir() == tmp_path


def test_real_spec_agrees_when_present() -> None:
    problems = catalogue.cross_check()
    if problems is None:
        pytest.skip("behaviours.md not present")
    assert problems == []


def test_ids_in_areas() -> None:
    assert catalogue.ids_in_areas(["epoch"]) == [f"EPOCH-{i}" for i in range(1, 7)]
    assert catalogue.ids_in_areas(None, profile="1.x") == []


def _record(**kw: object) -> RunRecord:
    base: dict[str, object] = {
        "kind": "conformance-test",
        "run_id": "abc",
        "run_order": run_order_key(datetime(2024, 1, 2, tzinfo=UTC), "abc"),
        "test_id": "t::x",
        "behaviour_ids": ("EPOCH-1",),
        "target": "reference",
        "profile": "2.5",
        "outcome": "passed",
        "duration_s": 1.5,
        "started_at": "2024-01-02T00:00:00+00:00",
        "finished_at": "2024-01-02T00:00:01.500+00:00",
        "phase_metrics": (PhaseMetric("controller_election", 0.2),),
        "commit": "deadbeef",
        "host": "h",
    }
    base.update(kw)
    return RunRecord(**base)  # type: ignore[arg-type]


def test_record_roundtrip(tmp_path: Path) -> None:
    path = write_record(tmp_path, _record(worker="gw0"))
    assert path.name == "runs-gw0.jsonl"
    (rec,) = list(read_records([path]))
    assert rec["phase_metrics"] == [{"name": "controller_election", "value": 0.2, "unit": "s"}]
    assert rec["schema_version"] == 2
    assert rec["record_id"] == "abc:t::x"
    assert rec["fault_package"] == "none"


def test_run_order_sorts_by_start() -> None:
    a = run_order_key(datetime(2024, 1, 2, tzinfo=UTC), "zzz")
    b = run_order_key(datetime(2024, 1, 3, tzinfo=UTC), "aaa")
    assert a < b


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"kind": "other"}, "kind"),
        ({"outcome": "green"}, "outcome"),
        ({"fault_package": "partition"}, "fault_package"),
        ({"duration_s": -1.0}, "duration_s"),
        ({"started_at": "yesterday"}, "started_at"),
    ],
)
def test_invalid_records_are_rejected(change: dict[str, object], problem: str) -> None:
    with pytest.raises(RecordError, match=problem):
        _record(**change).to_json()


def test_validate_unknown_metric_and_unit() -> None:
    d = json.loads(_record().to_json())
    d["phase_metrics"] = [
        {"name": "warp", "value": 1, "unit": "s"},
        {"name": "isr_expansion", "value": 1, "unit": "ms"},
    ]
    d["extra"] = 1
    problems = validate(d)
    assert any("unknown metric" in p for p in problems) or any("unknown field" in p for p in problems)
    del d["extra"]
    problems = validate(d)
    assert any("unknown metric 'warp'" in p for p in problems)
    assert any("unit 'ms'" in p for p in problems)


def test_chaos_run_record_is_valid() -> None:
    rec = _record(
        kind="chaos-run",
        fault_package="partition-controller",
        seed=7,
        behaviour_ids=(),
        phase_metrics=(PhaseMetric("time_to_heal", 3.0),),
    )
    assert json.loads(rec.to_json())["seed"] == 7


def test_every_metric_has_unit_and_method() -> None:
    assert set(METRICS) == {
        "controller_election",
        "failover_to_ready",
        "partition_online_after_create",
        "reassignment_completion",
        "leader_reelection_after_broker_failure",
        "isr_expansion",
        "time_to_heal",
    }
    assert all(m.unit == "s" and m.measured for m in METRICS.values())
