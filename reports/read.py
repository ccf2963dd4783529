"""Load every input into one canonical frame (reports, drivers ring: Spark and file I/O).

Run records are read as text (gzip by extension) and parsed with the version's explicit schema
(:mod:`reports.validate`); JUnit XML and allure results are mapped on the driver
(:mod:`reports.inputs`) and kept only where no run record describes the same execution
(precedence: run records, then allure, then JUnit). Rejected lines get their file and line
number; strict mode raises :class:`~reports.errors.InputError` listing the first ten (and, first,
the kinds this reader does not know, if any). Rows that share a ``record_id`` describe one
execution and are kept once (:mod:`reports.dedup`); how many were dropped is counted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention
from pyspark.sql import types as T  # noqa: N812 - PySpark convention

from reports import dedup
from reports.errors import InputError
from reports.inputs import Defaults, Inputs, Rejected, locate_lines, parse_allure, parse_junit
from reports.schema import CANONICAL, KINDS
from reports.validate import accepted, drop_described, parse_lines, rejected

__all__ = ["Duplicates", "Loaded", "drop_duplicates", "duplicates_line", "load", "unknown_kinds_line"]

_SECONDARY = T.StructType(
    [
        *CANONICAL.fields,
        T.StructField("window_start", T.TimestampType()),
        T.StructField("window_end", T.TimestampType()),
    ]
)
_SHOWN_STRICT = 10
_LITERAL_IDS = 10_000  # duplicated ids kept as a literal set in the plan


@dataclass(frozen=True)
class Duplicates:
    """Rows that repeated a ``record_id``: ``dropped`` rows of ``ids`` ids, ``conflicting`` of
    those ids with copies that disagree on the outcome."""

    dropped: int = 0
    ids: int = 0
    conflicting: int = 0


@dataclass
class Loaded:
    records: DataFrame
    counts: dict[str, int]  # "<source>/<kind>" → records, after duplicates are dropped
    rejected_total: int
    rejected: list[Rejected] = field(default_factory=list)
    latest_started_at: datetime | None = None  # the newest accepted record's start
    duplicates: Duplicates = field(default_factory=Duplicates)
    unknown_kinds: dict[str, int] = field(default_factory=dict)  # rejected for their kind


def _lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    text = spark.read.text(paths)
    return text.select("value", F.col("_metadata.file_path").alias("source_file"))


def unknown_kinds_line(unknown: dict[str, int]) -> str | None:
    """One sentence on records whose kind this reader does not know (a newer kit's?)."""
    if not unknown:
        return None
    kinds = ", ".join(f"{k!r} ×{n}" for k, n in sorted(unknown.items()))
    return (
        f"{sum(unknown.values())} record(s) of a kind this reader does not know ({kinds}; it knows "
        f"{', '.join(KINDS)}): records of a newer kit? Report them with a kit that knows the kind"
    )


def _fail(rejects: list[Rejected], total: int, unknown: dict[str, int] | None = None) -> InputError:
    shown = "\n".join(
        f"  {r.file}:{r.line if r.line is not None else '?'}: {r.problems}" for r in rejects[:_SHOWN_STRICT]
    )
    more = f"\n  … and {total - _SHOWN_STRICT} more" if total > _SHOWN_STRICT else ""
    kinds = unknown_kinds_line(unknown or {})
    return InputError(
        (f"{kinds}.\n" if kinds else "")
        + f"{total} input record(s) do not match the run-record schema:\n{shown}{more}\n"
        "Fix them, or pass --permissive to count and list them in the report and go on."
    )


@dataclass(frozen=True)
class _Tally:
    """What one aggregation over a frame of records tells: accepted records per
    ``<source>/<kind>``, rejected lines, the newest ``started_at``."""

    counts: dict[str, int]
    rejected: int
    latest: datetime | None
    unknown_kinds: dict[str, int] = field(default_factory=dict)


def _tally(frame: DataFrame, ok: Column) -> _Tally:
    rows = (
        frame.groupBy(ok.alias("_ok"), "source", "kind")
        .agg(F.count(F.lit(1)).alias("n"), F.max("started_at").alias("latest"))
        .collect()
    )
    good = [r for r in rows if r["_ok"]]
    latest = [r["latest"] for r in good if r["latest"] is not None]
    unknown: dict[str, int] = {}
    for r in rows:
        if not r["_ok"] and r["kind"] is not None and r["kind"] not in KINDS:
            unknown[r["kind"]] = unknown.get(r["kind"], 0) + int(r["n"])
    return _Tally(
        counts={f"{r['source']}/{r['kind']}": int(r["n"]) for r in good},
        rejected=sum(int(r["n"]) for r in rows if not r["_ok"]),
        latest=max(latest) if latest else None,
        unknown_kinds=unknown,
    )


def _records(
    spark: SparkSession, paths: list[str], permissive: bool, limit: int
) -> tuple[DataFrame, _Tally, list[Rejected]]:
    """Parse once, cache the parsed rows (a valid line's text is dropped), and count accepted
    and rejected records in the same job that fills the cache."""
    if not paths:  # only JUnit / allure inputs
        return spark.createDataFrame([], CANONICAL), _Tally({}, 0, None), []
    parsed = parse_lines(_lines(spark, paths))
    ok = F.size("problems") == 0
    parsed = parsed.withColumn("value", F.when(~ok, F.col("value")))
    parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        tally = _tally(parsed, ok)  # the first action: every file is read here
    except Exception as exc:
        damaged = _damaged_file(exc)
        if damaged is None:
            raise
        raise damaged from None
    shown: list[Rejected] = []
    if tally.rejected:
        rows = rejected(parsed).limit(limit if permissive else _SHOWN_STRICT).collect()
        shown = locate_lines([(r["source_file"], r["value"], r["problems"]) for r in rows])
        if not permissive:
            raise _fail(shown, tally.rejected, tally.unknown_kinds)
    return accepted(parsed), tally, shown


_READ_FAILED = re.compile(r"Encountered error while reading file (?:file:)?(?://)?(\S+?)\.?\s")
_CAUSE = re.compile(r"Caused by: (\S+?): ?(.*)")


def _damaged_file(exc: Exception) -> InputError | None:
    """Spark could not read a record file (a truncated or corrupt gzip, an I/O error): bad
    input, named with the deepest cause Spark gives; None for any other failure."""
    java = getattr(exc, "java_exception", None)
    text = f"{exc}\n{java.toString() if java is not None else ''}"
    found = _READ_FAILED.search(text)
    if found is None:
        return None
    causes = _CAUSE.findall(text)
    cause = f"{causes[-1][0].rsplit('.', 1)[-1]}: {causes[-1][1]}".strip(": ") if causes else "unreadable"
    return InputError(
        f"cannot read record file {found.group(1)} ({cause[:200]}): it is damaged (a gzip file cut "
        "short?). Restore or remove it and run again"
    )


def _secondary(
    spark: SparkSession, inputs: Inputs, defaults: Defaults
) -> tuple[list[DataFrame], list[Rejected]]:
    frames: list[DataFrame] = []
    rejects: list[Rejected] = []
    for rows, bad in (parse_allure(inputs.allure, defaults), _junit(inputs, defaults)):
        rejects += bad
        frames.append(spark.createDataFrame(_ordered(rows), _SECONDARY))
    return frames, rejects


def _junit(inputs: Inputs, defaults: Defaults) -> tuple[list[dict[str, Any]], list[Rejected]]:
    rows: list[dict[str, Any]] = []
    bad: list[Rejected] = []
    for path in inputs.junit:
        r, b = parse_junit(path, defaults)
        rows += r
        bad += b
    return rows, bad


def _ordered(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    names = _SECONDARY.fieldNames()
    return [tuple(row.get(n) for n in names) for row in rows]


def drop_duplicates(
    records: DataFrame, counts: dict[str, int], literal_ids: int = _LITERAL_IDS
) -> tuple[DataFrame, Duplicates]:
    """``records`` with each ``record_id`` once, and what was dropped (``counts`` is corrected in
    place). One aggregation finds the ids seen more than once; when there are some, only their
    rows are ordered to keep the first copy. Up to ``literal_ids`` ids are a literal set in the
    plan (a hash lookup per row, nothing re-broadcast by every later job); more than that, the
    deduplicated frame is joined once and cached."""
    ids = dedup.duplicate_ids(records).persist(StorageLevel.MEMORY_AND_DISK)
    row = ids.agg(
        F.count(F.lit(1)).alias("ids"),
        F.sum(F.col("copies") - 1).alias("dropped"),
        F.sum(F.col("conflicting").cast("long")).alias("conflicting"),
    ).first()
    found = (
        Duplicates(int(row["dropped"] or 0), int(row["ids"]), int(row["conflicting"] or 0)) if row else None
    )
    if not found or not found.ids:
        ids.unpersist()
        return records, Duplicates()
    if found.ids <= literal_ids:
        dup = F.col("record_id").isin([r["record_id"] for r in ids.select("record_id").collect()])
        single, rows = records.filter(~dup), records.filter(dup)
    else:
        flagged = records.join(ids.select("record_id", F.lit(True).alias("_dup")), "record_id", "left")
        single = flagged.filter(F.col("_dup").isNull()).drop("_dup")
        rows = flagged.filter(F.col("_dup")).drop("_dup")
    copies = dedup.number_copies(rows).persist(StorageLevel.MEMORY_AND_DISK)
    for r in copies.filter(F.col("copy") > 1).groupBy("source", "kind").count().collect():
        counts[f"{r['source']}/{r['kind']}"] -= int(r["count"])
    columns = CANONICAL.fieldNames()
    kept = single.select(*columns).unionByName(copies.filter(F.col("copy") == 1).select(*columns))
    if found.ids > literal_ids:
        kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
        kept.count()
    ids.unpersist()
    return kept, found


def load(
    spark: SparkSession,
    inputs: Inputs,
    *,
    permissive: bool,
    defaults: Defaults,
    list_limit: int = 1000,
    log: Callable[[str], None] = lambda _: None,
) -> Loaded:
    """All inputs as one canonical frame (each execution once), with counts per source and the
    rejects; ``log`` hears what it is doing."""
    t0 = time.monotonic()
    log(
        f"reports: reading {len(inputs.records)} record file(s) ({inputs.record_bytes() / 1e6:.1f} MB), "
        f"{len(inputs.junit)} JUnit XML, {len(inputs.allure)} allure result(s) …"
    )
    records, tally, shown = _records(spark, inputs.records, permissive, list_limit)
    merged = records
    secondary_rejects: list[Rejected] = []
    if inputs.allure or inputs.junit:
        (allure, junit), secondary_rejects = _secondary(spark, inputs, defaults)
        if secondary_rejects and not permissive:
            raise _fail(secondary_rejects, len(secondary_rejects))
        allure = drop_described(allure, records).drop("window_start", "window_end")
        junit = drop_described(junit, records.unionByName(allure)).drop("window_start", "window_end")
        merged = records.unionByName(allure).unionByName(junit).persist(StorageLevel.MEMORY_AND_DISK)
        whole = _tally(merged, F.lit(True))
        tally = _Tally(whole.counts, tally.rejected, whole.latest, tally.unknown_kinds)
    total = sum(tally.counts.values())
    log(f"reports: {total} records valid, {tally.rejected} rejected ({time.monotonic() - t0:.1f} s)")
    if not tally.counts:
        named = ", ".join(inputs.records[:3] + [str(p) for p in inputs.junit[:2] + inputs.allure[:2]])
        kinds = unknown_kinds_line(tally.unknown_kinds)
        raise InputError(
            f"the inputs hold no valid run records ({named}{' …' if inputs.files > 3 else ''}): "
            "nothing to report"
            + (f"; {tally.rejected + len(secondary_rejects)} rejected" if tally.rejected else "")
            + (f"; {kinds}" if kinds else "")
        )
    counts = dict(tally.counts)
    t1 = time.monotonic()
    merged, duplicates = drop_duplicates(merged, counts)
    log(f"reports: {duplicates_line(duplicates)} ({time.monotonic() - t1:.1f} s)")
    return Loaded(
        records=merged,
        counts=counts,
        rejected_total=tally.rejected + len(secondary_rejects),
        rejected=(shown + secondary_rejects)[:list_limit],
        latest_started_at=tally.latest,
        duplicates=duplicates,
        unknown_kinds=tally.unknown_kinds,
    )


def duplicates_line(d: Duplicates) -> str:
    """What deduplication did, in one line."""
    if not d.dropped:
        return "no duplicate records (every record_id once)"
    return (
        f"{d.dropped} duplicate record(s) dropped: {d.ids} record_id(s) seen more than once, "
        f"{d.conflicting} of them with different outcomes (the first copy by start time is kept)"
    )
