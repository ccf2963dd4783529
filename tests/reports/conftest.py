"""Shared fixtures of the reports tests: one real local Spark session per test session."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from records.run_record import derive_record_id
from reports import session
from reports.schema import CANONICAL


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """local[2], 4 shuffle partitions, UTC: started once, stopped at the end."""
    s = session.start("local[2]", driver_memory="1g", shuffle_partitions=4)
    yield s
    s.stop()


def record(**kw: Any) -> dict[str, Any]:
    """A valid version-2 run record; keyword arguments override fields. ``record_id`` is derived
    from the result (as the writers derive it) unless given."""
    base: dict[str, Any] = {
        "schema_version": 2,
        "kind": "conformance-test",
        "run_id": "r0",
        "run_order": "20260101T000000.000000Z-r0",
        "test_id": "t.py::test_a",
        "behaviour_ids": ["EPOCH-1"],
        "target": "reference",
        "target_version": None,
        "profile": "2.5",
        "fault_package": "none",
        "seed": None,
        "outcome": "passed",
        "reason": None,
        "duration_s": 1.0,
        "phase_metrics": [],
        "commit": "c1",
        "host": "h",
        "worker": None,
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:01+00:00",
        "excused": None,
    }
    out = base | kw
    if "record_id" not in kw:
        out["record_id"] = derive_record_id(out["kind"], out["run_id"], out["test_id"], out["seed"])
    return out


def v1_record(**kw: Any) -> dict[str, Any]:
    """A valid version-1 run record (no ``record_id``, no ``excused``)."""
    out = record(**kw) | {"schema_version": 1}
    del out["record_id"], out["excused"]
    return out


def runs(test_id: str, outcomes: str, *, day: int = 1, **kw: Any) -> list[dict[str, Any]]:
    """One record per letter of ``outcomes`` (P passed, F failed, E error, S skipped), run i
    starting at minute i of ``2026-01-<day>``."""
    names = {"P": "passed", "F": "failed", "E": "error", "S": "skipped"}
    out = []
    for i, letter in enumerate(outcomes):
        run_id = f"r{day:02d}{i:04d}"
        started = f"2026-01-{day:02d}T{i // 60:02d}:{i % 60:02d}:00+00:00"
        order = f"202601{day:02d}T{i // 60:02d}{i % 60:02d}00.000000Z-{run_id}"
        out.append(
            record(
                test_id=test_id,
                outcome=names[letter],
                run_id=run_id,
                run_order=order,
                started_at=started,
                finished_at=started,
                **kw,
            )
        )
    return out


def write_jsonl(path: Path, records: list[dict[str, Any]], extra_lines: list[str] | None = None) -> Path:
    lines = [json.dumps(r) for r in records] + (extra_lines or [])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def frame(spark: SparkSession, records: list[dict[str, Any]]) -> DataFrame:
    """Records as a canonical DataFrame (what the reader produces), built directly."""
    rows = []
    for r in records:
        d = {k: r.get(k) for k in CANONICAL.fieldNames() if k not in ("source", "source_file")}
        d["record_id"] = d["record_id"] or derive_record_id(r["kind"], r["run_id"], r["test_id"], r["seed"])
        for key in ("started_at", "finished_at"):
            d[key] = datetime.fromisoformat(r[key])
        d["source"], d["source_file"] = "records", r.get("source_file", "test")
        rows.append(tuple(d[k] for k in CANONICAL.fieldNames()))
    return spark.createDataFrame(rows, CANONICAL)
