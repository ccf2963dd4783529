"""Spark schemas of the run-record stream, one per record version (reports, decisions ring).

The contract is :mod:`records.run_record` (version 1); this module states it as Spark types:

- :data:`RECORD_SCHEMAS` maps ``schema_version`` → the ``StructType`` its JSON lines are parsed
  with (``from_json``, never inference), plus which keys are required and which nullable;
- :data:`CANONICAL` is the frame every reader produces (records, JUnit XML and allure results
  alike): the version-1 fields with ``started_at`` / ``finished_at`` as timestamps, plus
  ``source`` (records | junit | allure) and ``source_file``.

A future version 2 adds its ``StructType`` here and an upgrade to the canonical columns in
:mod:`reports.validate`; the transforms only ever see :data:`CANONICAL`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyspark.sql import types as T  # noqa: N812 - PySpark convention

from records.run_record import KINDS, METRICS, OUTCOMES, SCHEMA_VERSION

__all__ = [
    "CANONICAL",
    "KINDS",
    "METRICS",
    "METRIC_UNITS",
    "OUTCOMES",
    "PHASE_METRIC",
    "RECORD_SCHEMAS",
    "SCHEMA_VERSION",
    "RecordVersion",
]

PHASE_METRIC: Final = T.StructType(
    [
        T.StructField("name", T.StringType()),
        T.StructField("value", T.DoubleType()),
        T.StructField("unit", T.StringType()),
    ]
)

METRIC_UNITS: Final[dict[str, str]] = {name: m.unit for name, m in METRICS.items()}


@dataclass(frozen=True)
class RecordVersion:
    """One record version: its parse schema, required keys and keys whose value may be null."""

    version: int
    schema: T.StructType
    required: frozenset[str]
    nullable: frozenset[str]

    @property
    def known(self) -> frozenset[str]:
        return frozenset(self.schema.fieldNames())


_V1_FIELDS: Final = [
    ("schema_version", T.LongType()),
    ("kind", T.StringType()),
    ("run_id", T.StringType()),
    ("run_order", T.StringType()),
    ("test_id", T.StringType()),
    ("behaviour_ids", T.ArrayType(T.StringType())),
    ("target", T.StringType()),
    ("target_version", T.StringType()),
    ("profile", T.StringType()),
    ("fault_package", T.StringType()),
    ("seed", T.LongType()),
    ("outcome", T.StringType()),
    ("reason", T.StringType()),
    ("duration_s", T.DoubleType()),
    ("phase_metrics", T.ArrayType(PHASE_METRIC)),
    ("commit", T.StringType()),
    ("host", T.StringType()),
    ("worker", T.StringType()),
    ("started_at", T.StringType()),
    ("finished_at", T.StringType()),
]

V1: Final = RecordVersion(
    version=1,
    schema=T.StructType([T.StructField(n, t) for n, t in _V1_FIELDS]),
    required=frozenset(n for n, _ in _V1_FIELDS) - {"reason", "worker", "target_version"},
    nullable=frozenset({"seed", "commit", "reason", "worker", "target_version"}),
)

RECORD_SCHEMAS: Final[dict[int, RecordVersion]] = {1: V1}
assert max(RECORD_SCHEMAS) == SCHEMA_VERSION, "records.run_record has a version this reader lacks"

CANONICAL: Final = T.StructType(
    [T.StructField(n, T.TimestampType() if n in ("started_at", "finished_at") else t) for n, t in _V1_FIELDS]
    + [T.StructField("source", T.StringType()), T.StructField("source_file", T.StringType())]
)
