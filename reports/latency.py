"""Phase-metric latencies: exact percentiles, trends, histograms (reports, decisions ring).

Pure ``DataFrame -> DataFrame`` transforms over :data:`reports.schema.CANONICAL` rows.

Exact percentiles without collecting a group's values: the values of each group are first
counted per distinct value (a histogram; metric values carry 4 decimals, so 10M values
collapse to far fewer rows, and all-distinct values still work, only slower). A running sum
over the histogram sorted by value gives each value's rank range ``[cum - n, cum)``. The q-th
percentile is numpy's default ("linear", Hyndman & Fan type 7) — the value at 0-based
position h = (count - 1)·q, interpolating between the values at ranks floor(h) and ceil(h)::

    values 1, 2, 3, 4:  p50 → h = 1.5 → 2 + 0.5·(3 - 2) = 2.5;  p95 → h = 2.85 → 3.85
    max = the value at rank count - 1

This is what ``numpy.percentile`` and Spark's exact ``percentile`` return, and it never holds a
group in memory (Spark's ``percentile`` keeps a value→count map per group on one executor).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention

__all__ = [
    "LATENCY_KEYS",
    "PERCENTILES",
    "exact_percentiles",
    "grain",
    "latency_by_commit",
    "latency_by_day",
    "latency_grains",
    "latency_histogram",
    "latency_summary",
    "metric_values",
]

PERCENTILES: Final = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
LATENCY_KEYS: Final = ("metric", "unit", "target", "fault_package")
# The three grains of :func:`latency_grains`: whole, per UTC day, per commit.
GRAINS: Final = ("all", "day", "commit")
_GRAIN_KEYS: Final = ("grain", *LATENCY_KEYS, "day", "commit")


def metric_values(records: DataFrame) -> DataFrame:
    """One row per phase-metric value: keys, ``day``, ``commit``, ``started_at``, ``value``."""
    exploded = records.select(
        "kind", "target", "fault_package", "commit", "started_at", F.explode("phase_metrics").alias("m")
    )
    return exploded.select(
        F.col("m.name").alias("metric"),
        F.col("m.unit").alias("unit"),
        "kind",
        "target",
        "fault_package",
        F.coalesce(F.col("commit"), F.lit("unknown")).alias("commit"),
        F.to_date("started_at").alias("day"),
        "started_at",
        F.col("m.value").alias("value"),
    )


def _value_at(rank: Column) -> Column:
    inside = (F.col("_cum") - F.col("_n") <= rank) & (rank < F.col("_cum"))
    return F.max(F.when(inside, F.col("value")))


def _lerp(lo: Column, hi: Column, t: Column) -> Column:
    """numpy's ``_lerp``: exact at both ends, symmetric about t = 0.5."""
    diff = hi - lo
    return F.when(t >= 0.5, hi - diff * (1 - t)).otherwise(lo + diff * t)


def exact_percentiles(values: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """``keys`` + ``count, min, mean, p50, p95, p99, max`` of ``value`` per group, exactly."""
    hist = values.groupBy(*keys, "value").agg(F.count(F.lit(1)).alias("_n"))
    group = Window.partitionBy(*keys)
    running = group.orderBy("value").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    hist = hist.withColumn("_cum", F.sum("_n").over(running)).withColumn("_total", F.sum("_n").over(group))
    picks: list[Column] = []
    for name, q in PERCENTILES:
        h = (F.col("_total") - 1) * F.lit(q)
        picks += [
            _value_at(F.floor(h)).alias(f"_{name}_lo"),
            _value_at(F.ceil(h)).alias(f"_{name}_hi"),
            F.first(h - F.floor(h)).alias(f"_{name}_t"),
        ]
    agg = hist.groupBy(*keys).agg(
        F.sum("_n").alias("count"),
        F.min("value").alias("min"),
        (F.sum(F.col("value") * F.col("_n")) / F.sum("_n")).alias("mean"),
        F.max("value").alias("max"),
        *picks,
    )
    return agg.select(
        *keys,
        "count",
        *[
            _lerp(F.col(f"_{name}_lo"), F.col(f"_{name}_hi"), F.col(f"_{name}_t")).alias(name)
            for name, _ in PERCENTILES
        ],
        "max",
        "min",
        "mean",
    )


def latency_summary(values: DataFrame) -> DataFrame:
    """Percentiles per metric × unit × target × fault package."""
    return exact_percentiles(values, LATENCY_KEYS).orderBy(*LATENCY_KEYS)


def latency_by_day(values: DataFrame) -> DataFrame:
    """Percentiles per metric × target × fault package × UTC day."""
    return exact_percentiles(values, (*LATENCY_KEYS, "day")).orderBy(*LATENCY_KEYS, "day")


def latency_by_commit(values: DataFrame) -> DataFrame:
    """Percentiles per metric × target × fault package × commit, with the commit's first
    appearance (``first_seen``) to order commits in time."""
    first_seen = values.groupBy("commit").agg(F.min("started_at").alias("first_seen"))
    per_commit = exact_percentiles(values, (*LATENCY_KEYS, "commit"))
    return per_commit.join(first_seen, "commit").orderBy(*LATENCY_KEYS, "first_seen", "commit")


def latency_grains(values: DataFrame) -> DataFrame:
    """:func:`latency_summary`, :func:`latency_by_day` and :func:`latency_by_commit` in one pass:
    the values once per grain (``grain`` = "all" | "day" | "commit"; ``day`` / ``commit`` null
    where the grain does not have them) through one :func:`exact_percentiles`, plus each
    commit's ``first_seen``. :func:`grain` takes one grain back out as its own table."""
    no_day, no_commit = F.lit(None).cast("date").alias("day"), F.lit(None).cast("string").alias("commit")
    per = {
        "all": values.select(F.lit("all").alias("grain"), *LATENCY_KEYS, no_day, no_commit, "value"),
        "day": values.select(F.lit("day").alias("grain"), *LATENCY_KEYS, "day", no_commit, "value"),
        "commit": values.select(F.lit("commit").alias("grain"), *LATENCY_KEYS, no_day, "commit", "value"),
    }
    tagged = per["all"].unionByName(per["day"]).unionByName(per["commit"])
    first_seen = values.groupBy("commit").agg(F.min("started_at").alias("first_seen"))
    return exact_percentiles(tagged, _GRAIN_KEYS).join(first_seen, "commit", "left")


def grain(grains: DataFrame, name: str) -> DataFrame:
    """One grain of :func:`latency_grains` with the columns (and order) of its own function."""
    stats = [c for c in grains.columns if c not in (*_GRAIN_KEYS, "first_seen")]
    rows = grains.filter(F.col("grain") == name)
    if name == "all":
        return rows.select(*LATENCY_KEYS, *stats).orderBy(*LATENCY_KEYS)
    if name == "day":
        return rows.select(*LATENCY_KEYS, "day", *stats).orderBy(*LATENCY_KEYS, "day")
    return rows.select("commit", *LATENCY_KEYS, *stats, "first_seen").orderBy(
        *LATENCY_KEYS, "first_seen", "commit"
    )


def latency_histogram(values: DataFrame, bins_per_decade: int = 10) -> DataFrame:
    """Counts per metric × unit in logarithmic bins (``bins_per_decade`` per factor of 10);
    values ≤ 0 fall in the lowest bin, ``bin_low = 0``."""
    positive = F.col("value") > 0
    b = F.when(positive, F.floor(F.log10(F.when(positive, F.col("value"))) * bins_per_decade))
    binned = values.withColumn("_bin", b)
    agg = binned.groupBy("metric", "unit", "_bin").agg(F.count(F.lit(1)).alias("count"))
    step = 1.0 / bins_per_decade
    low = F.when(F.col("_bin").isNull(), F.lit(0.0)).otherwise(F.pow(F.lit(10.0), F.col("_bin") * step))
    high = F.when(F.col("_bin").isNull(), F.lit(0.0)).otherwise(
        F.pow(F.lit(10.0), (F.col("_bin") + 1) * step)
    )
    return agg.select("metric", "unit", low.alias("bin_low"), high.alias("bin_high"), "count").orderBy(
        "metric", "bin_low"
    )
