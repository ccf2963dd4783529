"""Run-record lines → canonical rows plus the problems of each line (reports, decisions ring).

Pure ``DataFrame -> DataFrame`` transforms. Input: ``value`` (one JSON line) and ``source_file``.
Each line is parsed twice, both with explicit schemas (no inference):

1. with the record version's ``StructType`` (:mod:`reports.schema`) — the typed values;
2. as ``map<string,string>`` — which keys are present and their raw text, so that a missing key,
   an unknown key, an explicit ``null`` and a value of the wrong type are told apart.

``problems`` lists every schema violation of the line, worded as ``records.run_record.validate``
words them (``kind: 'x' not in (...)``); an empty list means the record is valid.

Spark's JSON parser reads any JSON value into a string field (``"test_id": 5`` becomes ``"5"``,
an object its JSON text). A string field whose parsed text could be such a rendering (a number,
``true``/``false``, ``NaN``/``Infinity``, or text starting with ``{``/``[``) is looked at again
with the line parsed as ``map<string,variant>``, which keeps each value's JSON type; only those
few lines pay for that third parse, and a non-string value is ``<field>: wrong type``.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.sql import types as T  # noqa: N812 - PySpark convention

from reports.schema import CANONICAL, KINDS, METRIC_UNITS, OUTCOMES, RECORD_SCHEMAS, V1, RecordVersion

__all__ = ["accepted", "parse_lines", "rejected"]


def _in(col: Column, values: tuple[str, ...] | list[str]) -> Column:
    return col.isin(*values)


def _key_problems(v: RecordVersion) -> list[Column]:
    raw, r = F.col("_raw"), F.col("_r")
    out: list[Column] = []
    for name in v.schema.fieldNames():
        present = F.map_contains_key(raw, F.lit(name))
        raw_value = raw.getItem(name)
        if name in v.required:
            out.append(F.when(~present, F.lit(f"{name}: missing")))
        out.append(F.when(present & raw_value.isNotNull() & r[name].isNull(), F.lit(f"{name}: wrong type")))
        if name not in v.nullable:
            out.append(F.when(present & raw_value.isNull(), F.lit(f"{name}: null")))
    unknown = F.array_except(F.map_keys(raw), F.array(*[F.lit(n) for n in sorted(v.known)]))
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


def _string_fields(v: RecordVersion) -> list[str]:
    return [f.name for f in v.schema.fields if isinstance(f.dataType, T.StringType)]


def _type_problems(v: RecordVersion) -> list[Column]:
    """String fields that held another JSON type (see the module docstring): a cheap look at the
    parsed text first; the variant parse only where that text could be a rendering."""
    r = F.col("_r")
    typed = F.from_json(F.col("value"), "map<string,variant>")
    out: list[Column] = []
    for name in _string_fields(v):
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
        F.when(~_in(r["kind"], KINDS), F.concat(F.lit("kind: '"), r["kind"], F.lit(f"' not in {KINDS}"))),
        F.when(
            ~_in(r["outcome"], OUTCOMES),
            F.concat(F.lit("outcome: '"), r["outcome"], F.lit(f"' not in {OUTCOMES}")),
        ),
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
    return out + _metric_problems()


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


def _suspect(v: RecordVersion) -> Column:
    """True for every line that has a problem, and for few valid ones: the checks above reduced to
    plain (code-generated) expressions. The checks themselves use higher-order functions, which
    Spark evaluates row by row without code generation, so they only run where this is true."""
    raw, r = F.col("_raw"), F.col("_r")
    known = F.array(*[F.lit(n) for n in sorted(v.known)])
    pm = r["phase_metrics"]
    pairs = F.arrays_zip(pm["name"].alias("n"), pm["unit"].alias("u"))
    allowed = F.array(
        *[F.struct(F.lit(n).alias("n"), F.lit(u).alias("u")) for n, u in sorted(METRIC_UNITS.items())]
    )
    non_string = [f.name for f in v.schema.fields if not isinstance(f.dataType, T.StringType)]
    # A null condition means a null field, which the checks of the null fields catch: False.
    conditions = [
        F.size(F.array_except(F.map_keys(raw), known)) > 0,
        F.size(raw) != len(v.known),
        *[r[n].isNull() for n in sorted(v.known - v.nullable)],
        *[r[n].isNull() & raw.getItem(n).isNotNull() for n in non_string if n in v.nullable],
        *[_maybe_coerced(r[n], n) for n in _string_fields(v)],
        F.array_join(r["behaviour_ids"], "\u0001").rlike(_COERCED_ELEMENT),
        ~r["schema_version"].isin(*RECORD_SCHEMAS),
        ~r["kind"].isin(*KINDS),
        ~r["outcome"].isin(*OUTCOMES),
        (r["kind"] == "conformance-test") & (r["fault_package"] != "none"),
        r["duration_s"] < 0,
        _lowest_is_null(r["behaviour_ids"]),
        *[r[k].isNotNull() & F.try_to_timestamp(r[k]).isNull() for k in ("started_at", "finished_at")],
        F.size(F.array_except(pairs, allowed)) > 0,
        _lowest_is_null(pm["value"]),
    ]
    out = F.lit(False)
    for c in conditions:
        out = out | F.coalesce(c, F.lit(False))
    return out


def parse_lines(lines: DataFrame, version: RecordVersion = V1) -> DataFrame:
    """``value, source_file`` → canonical columns + ``problems`` (array) + ``value``.

    Blank lines are dropped; a line that is not a JSON object has the one problem saying so.
    """
    nonblank = lines.filter(F.trim("value") != "")
    parsed = nonblank.select(
        "value",
        "source_file",
        F.from_json("value", version.schema).alias("_r"),
        F.from_json("value", "map<string,string>").alias("_raw"),
    )
    checks = _key_problems(version) + _type_problems(version) + _value_problems()
    problems = (
        F.when(F.col("_raw").isNull(), F.array(F.lit("not a JSON object")))
        .when(_suspect(version), F.filter(F.array(*checks), lambda p: p.isNotNull()))
        .otherwise(F.array().cast("array<string>"))
    )
    canonical = [
        F.try_to_timestamp(F.col(f"_r.{f.name}")).alias(f.name)
        if f.name in ("started_at", "finished_at")
        else F.col(f"_r.{f.name}").alias(f.name)
        for f in CANONICAL.fields
        if f.name not in ("source", "source_file")
    ]
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
