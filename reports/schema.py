"""Spark schemas of the run-record stream, one per record version (reports, decisions ring).

The contract is :mod:`records.run_record` (versions 1 and 2); this module states it as Spark
types:

- :data:`RECORD_SCHEMAS` maps ``schema_version`` → its fields as a ``StructType``, which keys
  are required, which nullable, and the kinds it has. Every line is parsed (``from_json``, never
  inference) with :data:`PARSE_SCHEMA`, the union of the versions' fields (version 2's are a
  superset of version 1's), and checked by the rules of its own version;
- :data:`CANONICAL` is the frame every reader produces (records, JUnit XML and allure results
  alike): the version-2 fields with ``started_at`` / ``finished_at`` as timestamps, plus
  ``source`` (records | junit | allure) and ``source_file``; a version-1 record's ``record_id``
  is derived by the rule of :func:`records.run_record.derive_record_id`.

A version 3 adds its fields here and its upgrade to the canonical columns in
:mod:`reports.validate`; the transforms only ever see :data:`CANONICAL`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyspark.sql import types as T  # noqa: N812 - PySpark convention

from records.run_record import KINDS, KINDS_BY_VERSION, METRICS, OUTCOMES, SCHEMA_VERSION, SEEDED_KINDS

__all__ = [
    "CANONICAL",
    "KINDS",
    "METRICS",
    "METRIC_UNITS",
    "OUTCOMES",
    "PARSE_SCHEMA",
    "PHASE_METRIC",
    "RECORD_SCHEMAS",
    "SCHEMA_VERSION",
    "SEEDED_KINDS",
    "V1",
    "V2",
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
    kinds: tuple[str, ...]

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

EXCUSED: Final = T.MapType(T.StringType(), T.LongType())
_V2_FIELDS: Final = [
    _V1_FIELDS[0],
    ("record_id", T.StringType()),
    *_V1_FIELDS[1:],
    ("excused", EXCUSED),
]

V1: Final = RecordVersion(
    version=1,
    schema=T.StructType([T.StructField(n, t) for n, t in _V1_FIELDS]),
    required=frozenset(n for n, _ in _V1_FIELDS) - {"reason", "worker", "target_version"},
    nullable=frozenset({"seed", "commit", "reason", "worker", "target_version"}),
    kinds=KINDS_BY_VERSION[1],
)
V2: Final = RecordVersion(
    version=2,
    schema=T.StructType([T.StructField(n, t) for n, t in _V2_FIELDS]),
    required=V1.required | {"record_id"},
    nullable=V1.nullable | {"excused"},
    kinds=KINDS_BY_VERSION[2],
)

RECORD_SCHEMAS: Final[dict[int, RecordVersion]] = {1: V1, 2: V2}
assert max(RECORD_SCHEMAS) == SCHEMA_VERSION, "records.run_record has a version this reader lacks"
assert set(KINDS) == {k for v in RECORD_SCHEMAS.values() for k in v.kinds}
# Every version's fields are the newest one's or fewer: one parse schema serves all lines.
PARSE_SCHEMA: Final = RECORD_SCHEMAS[SCHEMA_VERSION].schema
assert all(v.known <= frozenset(PARSE_SCHEMA.fieldNames()) for v in RECORD_SCHEMAS.values())

CANONICAL: Final = T.StructType(
    [T.StructField(n, T.TimestampType() if n in ("started_at", "finished_at") else t) for n, t in _V2_FIELDS]
    + [T.StructField("source", T.StringType()), T.StructField("source_file", T.StringType())]
)
