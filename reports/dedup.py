"""One row per execution: records given more than once are counted once (reports, decisions ring).

Pure ``DataFrame -> DataFrame`` transforms over :data:`reports.schema.CANONICAL` rows. A
``record_id`` names one execution (:func:`records.run_record.derive_record_id`), so rows that
share it describe the same execution: the same file given twice, two copies of a results
directory, or a chaos run executed again by a retried shard of its campaign.

- :func:`duplicate_ids`: each ``record_id`` seen more than once, with ``copies`` and whether
  the copies disagree on the outcome (``conflicting``);
- :func:`keep_first`: of the rows of those ids, the one that started first (then finished
  first, then the smallest source file name, outcome and run order: a total order, so the choice
  never depends on how Spark split the input); rows of other ids are untouched.

Worked example (``copies`` counts rows, ``duplicates`` = copies − 1)::

    record_id   started  outcome  source        kept
    r1:t        10:00    passed   a.jsonl       yes
    r1:t        10:00    passed   b.jsonl       no    (same start: a.jsonl < b.jsonl)
    r2:t        11:00    failed   a.jsonl       no    (r2:t copies 2, conflicting)
    r2:t        10:59    passed   retry.jsonl   yes
    r3:t        12:00    passed   a.jsonl       yes   (not a duplicate)
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention

from reports.schema import OUTCOMES

__all__ = ["ORDER", "duplicate_ids", "keep_first", "number_copies"]

ORDER: Final = ("started_at", "finished_at", "source_file", "outcome", "run_order")


def duplicate_ids(records: DataFrame) -> DataFrame:
    """``record_id, copies, conflicting`` for every id with more than one row."""
    # The outcome as its position in OUTCOMES: min / max of a number keep Spark's hash
    # aggregation (of a string they would sort all the records).
    code = F.array_position(F.array(*[F.lit(o) for o in OUTCOMES]), F.col("outcome"))
    per_id = records.groupBy("record_id").agg(
        F.count(F.lit(1)).alias("copies"),
        (F.min(code) != F.max(code)).alias("conflicting"),
    )
    return per_id.filter(F.col("copies") > 1)


def number_copies(rows: DataFrame) -> DataFrame:
    """``rows`` with ``copy``: 1 for the row of each ``record_id`` that is kept (the first by
    :data:`ORDER`), 2, 3, … for the others."""
    first = Window.partitionBy("record_id").orderBy(*[F.asc_nulls_last(c) for c in ORDER])
    return rows.withColumn("copy", F.row_number().over(first))


def keep_first(rows: DataFrame) -> DataFrame:
    """One row per ``record_id``: the first by :data:`ORDER`."""
    return number_copies(rows).filter(F.col("copy") == 1).drop("copy")
