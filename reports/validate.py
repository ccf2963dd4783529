"""Run-record lines → canonical rows plus the problems of each line (reports, decisions ring).

Pure ``DataFrame -> DataFrame`` transforms. Input: ``value`` (one JSON line) and ``source_file``.
Each line is parsed twice, both with explicit schemas (no inference):

1. with :data:`reports.schema.PARSE_SCHEMA` (every version's fields) — the typed values;
2. as ``map<string,string>`` — which keys are present and their raw text, so that a missing key,
   an unknown key, an explicit ``null`` and a value of the wrong type are told apart.

Each line is checked by the rules of its own ``schema_version`` (which keys it must have and may
have, which kinds; a version this reader does not know, by the newest version's rules, plus the
problem that it is unknown). ``problems`` lists every schema violation of the line, worded as
``records.run_record.validate`` words them (``kind: 'x' not in (...)``); an empty list means the
record is valid. A version-1 record's ``record_id`` is derived as the writers derive it.

Spark's JSON parser reads any JSON value into a string field (``"test_id": 5`` becomes ``"5"``,
an object its JSON text). A string field whose parsed text could be such a rendering (a number,
``true``/``false``, ``NaN``/``Infinity``, or text starting with ``{``/``[``) is looked at again
with the line parsed as ``map<string,variant>``, which keeps each value's JSON type; only those
few lines pay for that third parse, and a non-string value is ``<field>: wrong type``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.sql import types as T  # noqa: N812 - PySpark convention

from reports.schema import (
    CANONICAL,
    METRIC_UNITS,
    OUTCOMES,
    PARSE_SCHEMA,
    RECORD_SCHEMAS,
    SCHEMA_VERSION,
    SEEDED_KINDS,
    RecordVersion,
)

__all__ = ["accepted", "derived_record_id", "parse_lines", "rejected"]

_VERSIONS: Final = tuple(RECORD_SCHEMAS.values())


def _version() -> Column:
    """The version whose rules a line is checked by: its own, or the newest if it has none this
    reader knows (that problem is reported on its own)."""
    sv = F.col("_r.schema_version")
    return F.when(sv.isin(*RECORD_SCHEMAS), sv).otherwise(F.lit(SCHEMA_VERSION))


def _versions_where(keep: Callable[[RecordVersion], bool]) -> Column:
    """True for the lines whose version satisfies ``keep`` (a constant when all or none do)."""
    chosen = [v.version for v in _VERSIONS if keep(v)]
    if len(chosen) in (0, len(_VERSIONS)):
        return F.lit(bool(chosen))
    return _version().isin(*chosen)


def _by_version(value: Callable[[RecordVersion], Column]) -> Column:
    """``value(v)`` of each line's version ``v``."""
    out = F.when(_version() == _VERSIONS[0].version, value(_VERSIONS[0]))
    for v in _VERSIONS[1:]:
        out = out.when(_version() == v.version, value(v))
    return out


def _known_keys() -> Column:
    return _by_version(lambda v: F.array(*[F.lit(n) for n in sorted(v.known)]))


def _key_problems() -> list[Column]:
    raw, r = F.col("_raw"), F.col("_r")
    out: list[Column] = []
    for name in PARSE_SCHEMA.fieldNames():
        present = F.map_contains_key(raw, F.lit(name))
        raw_value = raw.getItem(name)
        required = _versions_where(lambda v, n=name: n in v.required)  # type: ignore[misc]
        known = _versions_where(lambda v, n=name: n in v.known)  # type: ignore[misc]
        not_null = _versions_where(lambda v, n=name: n in v.known and n not in v.nullable)  # type: ignore[misc]
        out.append(F.when(required & ~present, F.lit(f"{name}: missing")))
        out.append(
            F.when(known & present & raw_value.isNotNull() & r[name].isNull(), F.lit(f"{name}: wrong type"))
        )
        out.append(F.when(not_null & present & raw_value.isNull(), F.lit(f"{name}: null")))
    unknown = F.array_except(F.map_keys(raw), _known_keys())
    out.append(F.when(F.size(unknown) > 0, F.concat(F.lit("unknown field(s): "), F.concat_ws(", ", unknown))))
    return out


# How Spark's parser renders a non-string JSON value read into a string field (Jackson's
# copyCurrentStructure): a number, a literal, or an object's / array's JSON text.
_COERCED: Final = (
    r"(?s)^(?:[-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|[-+]?Infinity|[-+]?INF"
    r"|[\[{].*)$"
)
# The same for any element of a string array joined with U+0001.
_COERCED_ELEMENT: Final = (
    r"(?s)(?:^|\x01)(?:[-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|[-+]?Infinity"
    r"|[-+]?INF|[\[{][^\x01]*)(?:\x01|$)"
)
_STRING_ARRAYS: Final = ("ARRAY<STRING>", "ARRAY<VOID>")


def _string_fields() -> list[str]:
    return [f.name for f in PARSE_SCHEMA.fields if isinstance(f.dataType, T.StringType)]


def _type_problems() -> list[Column]:
    """String fields that held another JSON type (see the module docstring): a cheap look at the
    parsed text first; the variant parse only where that text could be a rendering."""
    r = F.col("_r")
    typed = F.from_json(F.col("value"), "map<string,variant>")
    out: list[Column] = []
    for name in _string_fields():
        maybe = r[name].rlike(_COERCED)
        out.append(
            F.when(maybe & (F.schema_of_variant(typed[name]) != "STRING"), F.lit(f"{name}: wrong type"))
        )
    maybe_ids = F.exists(F.coalesce(r["behaviour_ids"], F.array()), lambda b: b.rlike(_COERCED))
    out.append(
        F.when(
            maybe_ids & ~F.schema_of_variant(typed["behaviour_ids"]).isin(*_STRING_ARRAYS),
            F.lit("behaviour_ids: must be strings"),
        )
    )
    return out


def _metric_problems() -> list[Column]:
    units = F.create_map(*[x for n, u in sorted(METRIC_UNITS.items()) for x in (F.lit(n), F.lit(u))])
    pm = F.coalesce(F.col("_r.phase_metrics"), F.array())
    names = F.transform(F.filter(pm, lambda m: ~F.map_contains_key(units, m["name"])), lambda m: m["name"])
    bad_units = F.filter(pm, lambda m: F.map_contains_key(units, m["name"]) & (units[m["name"]] != m["unit"]))
    return [
        F.when(
            F.size(names) > 0, F.concat(F.lit("phase_metrics: unknown metric "), F.concat_ws(", ", names))
        ),
        F.when(
            F.size(bad_units) > 0,
            F.concat(
                F.lit("phase_metrics: wrong unit for "),
                F.concat_ws(", ", F.transform(bad_units, lambda m: m["name"])),
            ),
        ),
        F.when(F.exists(pm, lambda m: m["value"].isNull()), F.lit("phase_metrics: value must be a number")),
        F.when(
            F.exists(pm, lambda m: m["name"].isNull() | m["unit"].isNull()),
            F.lit("phase_metrics: must be objects with name, value, unit"),
        ),
    ]


def _kind_unknown() -> Column:
    return _by_version(lambda v: ~F.col("_r.kind").isin(*v.kinds))


def _excused_problems() -> list[Column]:
    r = F.col("_r")
    counts = F.map_values(r["excused"])  # null when absent: no problem
    return [
        F.when(
            r["excused"].isNotNull() & ~r["kind"].isin(*SEEDED_KINDS),
            F.lit(f"excused: only for {' and '.join(SEEDED_KINDS)} records"),
        ),
        F.when(
            F.exists(counts, lambda c: c.isNull() | (c < 0)),
            F.lit("excused: counts must be whole numbers >= 0"),
        ),
    ]


def _value_problems() -> list[Column]:
    r = F.col("_r")
    version_ok = r["schema_version"].isNull() | r["schema_version"].isin(*RECORD_SCHEMAS)
    out = [
        F.when(
            ~version_ok,
            F.concat(
                F.lit("schema_version: "),
                r["schema_version"].cast("string"),
                F.lit(f" not supported (this reader knows {sorted(RECORD_SCHEMAS)})"),
            ),
        ),
        F.when(
            _kind_unknown(),
            F.concat(
                F.lit("kind: '"), r["kind"], F.lit("' not in "), _by_version(lambda v: F.lit(str(v.kinds)))
            ),
        ),
        F.when(
            ~r["outcome"].isin(*OUTCOMES),
            F.concat(F.lit("outcome: '"), r["outcome"], F.lit(f"' not in {OUTCOMES}")),
        ),
        F.when(r["record_id"] == "", F.lit("record_id: empty")),
        F.when(
            (r["kind"] == "conformance-test") & (r["fault_package"] != "none"),
            F.lit("fault_package: must be 'none' for conformance-test"),
        ),
        F.when(r["duration_s"] < 0, F.lit("duration_s: negative")),
        F.when(
            F.exists(F.coalesce(r["behaviour_ids"], F.array()), lambda b: b.isNull()),
            F.lit("behaviour_ids: must be strings"),
        ),
    ]
    for key in ("started_at", "finished_at"):
        ts = F.try_to_timestamp(r[key])
        out.append(
            F.when(r[key].isNotNull() & ts.isNull(), F.concat(F.lit(f"{key}: not ISO-8601: "), r[key]))
        )
    return out + _metric_problems() + _excused_problems()


def _lowest_is_null(values: Column) -> Column:
    """An array holds a null (nulls sort first), without a higher-order function."""
    return (F.size(values) > 0) & F.element_at(F.sort_array(values), 1).isNull()


def _maybe_coerced(parsed: Column, name: str) -> Column:
    """The string field ``name`` may hold another JSON type: its text looks like a rendering and
    the line does not show it as a string. In valid JSON, ``"name"`` followed by ``:`` is a key
    (a quote inside a string is escaped); if no such key is followed by anything but a string and
    no key is spelled with ``\\u`` escapes, the top-level value is a string (``"profile": "2.5"``)."""
    line = F.col("value")
    non_string_after_key = line.rlike(f'"{name}"\\s*:\\s*[^"\\s]')
    return parsed.rlike(_COERCED) & (line.contains("\\u") | non_string_after_key)


def _suspect() -> Column:
    """True for every line that has a problem, and for few valid ones: the checks above reduced to
    plain (code-generated) expressions. The checks themselves use higher-order functions, which
    Spark evaluates row by row without code generation, so they only run where this is true."""
    raw, r = F.col("_raw"), F.col("_r")
    pm = r["phase_metrics"]
    pairs = F.arrays_zip(pm["name"].alias("n"), pm["unit"].alias("u"))
    allowed = F.array(
        *[F.struct(F.lit(n).alias("n"), F.lit(u).alias("u")) for n, u in sorted(METRIC_UNITS.items())]
    )
    always = frozenset.intersection(*(v.known - v.nullable for v in _VERSIONS))
    newer = sorted(frozenset.union(*(v.known - v.nullable for v in _VERSIONS)) - always)
    nullable = frozenset.union(*(v.nullable for v in _VERSIONS))
    non_string = [f.name for f in PARSE_SCHEMA.fields if not isinstance(f.dataType, T.StringType)]
    counts = F.map_values(r["excused"])
    # A null condition means a null field, which the checks of the null fields catch: False.
    conditions = [
        F.size(F.array_except(F.map_keys(raw), _known_keys())) > 0,
        F.size(raw) != _by_version(lambda v: F.lit(len(v.known))),
        *[r[n].isNull() for n in sorted(always)],
        *[r[n].isNull() & _versions_where(lambda v, n=n: n in v.required) for n in newer],  # type: ignore[misc]
        *[r[n].isNull() & raw.getItem(n).isNotNull() for n in non_string if n in nullable],
        *[_maybe_coerced(r[n], n) for n in _string_fields()],
        F.array_join(r["behaviour_ids"], "\u0001").rlike(_COERCED_ELEMENT),
        ~r["schema_version"].isin(*RECORD_SCHEMAS),
        _kind_unknown(),
        ~r["outcome"].isin(*OUTCOMES),
        r["record_id"] == "",
        (r["kind"] == "conformance-test") & (r["fault_package"] != "none"),
        r["duration_s"] < 0,
        _lowest_is_null(r["behaviour_ids"]),
        *[r[k].isNotNull() & F.try_to_timestamp(r[k]).isNull() for k in ("started_at", "finished_at")],
        F.size(F.array_except(pairs, allowed)) > 0,
        _lowest_is_null(pm["value"]),
        r["excused"].isNotNull() & ~r["kind"].isin(*SEEDED_KINDS),
        F.array_min(counts) < 0,
        _lowest_is_null(counts),
    ]
    out = F.lit(False)
    for c in conditions:
        out = out | F.coalesce(c, F.lit(False))
    return out


def derived_record_id(kind: Column, run_id: Column, test_id: Column, seed: Column) -> Column:
    """:func:`records.run_record.derive_record_id` as a column: ``<run_id>:<test_id>``, plus
    ``:<seed>`` for a chaos or simulator run with a seed."""
    return F.concat_ws(":", run_id, test_id, F.when(kind.isin(*SEEDED_KINDS), seed.cast("string")))


def _canonical(name: str) -> Column:
    r = F.col("_r")
    if name in ("started_at", "finished_at"):
        return F.try_to_timestamp(r[name]).alias(name)
    if name == "record_id":
        derived = derived_record_id(r["kind"], r["run_id"], r["test_id"], r["seed"])
        return F.coalesce(r["record_id"], derived).alias(name)
    return r[name].alias(name)


def parse_lines(lines: DataFrame) -> DataFrame:
    """``value, source_file`` → canonical columns + ``problems`` (array) + ``value``.

    Blank lines are dropped; a line that is not a JSON object has the one problem saying so.
    """
    nonblank = lines.filter(F.trim("value") != "")
    parsed = nonblank.select(
        "value",
        "source_file",
        F.from_json("value", PARSE_SCHEMA).alias("_r"),
        F.from_json("value", "map<string,string>").alias("_raw"),
    )
    checks = _key_problems() + _type_problems() + _value_problems()
    problems = (
        F.when(F.col("_raw").isNull(), F.array(F.lit("not a JSON object")))
        .when(_suspect(), F.filter(F.array(*checks), lambda p: p.isNotNull()))
        .otherwise(F.array().cast("array<string>"))
    )
    canonical = [_canonical(f.name) for f in CANONICAL.fields if f.name not in ("source", "source_file")]
    return parsed.select(
        *canonical,
        F.lit("records").alias("source"),
        "source_file",
        problems.alias("problems"),
        "value",
    )


def accepted(parsed: DataFrame) -> DataFrame:
    """The valid rows of :func:`parse_lines`, as :data:`reports.schema.CANONICAL`."""
    return parsed.filter(F.size("problems") == 0).select(*CANONICAL.fieldNames())


def rejected(parsed: DataFrame) -> DataFrame:
    """The invalid rows: ``source_file``, ``value`` (the line), ``problems`` joined by ``; ``."""
    return parsed.filter(F.size("problems") > 0).select(
        "source_file", "value", F.concat_ws("; ", "problems").alias("problems")
    )


def drop_described(lower: DataFrame, higher: DataFrame, slack_s: int = 5) -> DataFrame:
    """Rows of ``lower`` (JUnit / allure, with ``window_start`` / ``window_end``) whose execution
    no row of ``higher`` describes: same ``test_id`` and overlapping time (± ``slack_s``).

    The small side is broadcast; ``higher`` (possibly millions of records) is only scanned.
    """
    slack = F.expr(f"INTERVAL {slack_s} SECONDS")
    low = lower.withColumn("_sid", F.monotonically_increasing_id())
    windows = F.broadcast(low.select("_sid", F.col("test_id").alias("_tid"), "window_start", "window_end"))
    hi = higher.select("test_id", "started_at", "finished_at")
    overlap = (
        (hi["test_id"] == windows["_tid"])
        & (hi["started_at"] <= windows["window_end"] + slack)
        & (hi["finished_at"] >= windows["window_start"] - slack)
    )
    described = hi.join(windows, overlap).select("_sid").distinct()
    return low.join(described, "_sid", "left_anti").drop("_sid")
