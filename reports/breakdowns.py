"""Failure clusters, excused Kafka quirks, behaviour trends across versions (reports, decisions ring).

Pure ``DataFrame -> DataFrame`` transforms; definitions (also printed in the HTML report):

- ``failure_clusters``: failing executions (failed + error) of each kind grouped by normalised
  failure signature (:func:`reports.flakiness.normalised_signature`: ids, numbers and whitespace
  folded) across all tests, targets and fault packages: ``failures``, ``share`` = failures /
  all failures of the kind (the share of failures the cluster explains), ``cumulative_share``
  down the clusters ranked by failures (``rank``), ``tests`` (distinct test / scenario ids),
  ``first_seen`` / ``last_seen`` and one example reason.
- ``excusals``: the ``excused`` map of chaos and simulator records (quirk → items the Kafka-quirk
  registry excused in the run) per kind × quirk × target × fault package: ``runs_reporting``
  (runs of the group whose record carries the map at all; a record without it said nothing),
  ``runs_excused`` (runs with at least one item of this quirk), ``items_excused`` (their sum)
  and ``share_of_runs`` = runs_excused / runs_reporting.
- ``behaviour_trend``: behaviour-ID runs (one per ``run_id``, as in the per-behaviour flakiness)
  per kind × behaviour ID × target × profile × fault package, along two axes: ``commit`` (the kit
  or implementation under test) and ``target_version`` (what the target reported; ``unknown``
  when it reported nothing). Per version: ``runs``, ``executed``, ``failures``,
  ``failure_rate``, ``first_seen`` / ``last_seen``, and ``rate_change`` = the failure rate minus
  that of the previous version (versions in order of first appearance).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention

from reports.flakiness import BEHAVIOUR_KEYS
from reports.schema import SEEDED_KINDS

__all__ = ["AXES", "behaviour_trend", "excusals", "failure_clusters"]

AXES: Final = ("commit", "target_version")
_FAIL: Final = ("failed", "error")


def failure_clusters(signatures: DataFrame) -> DataFrame:
    """Signatures (:func:`reports.flakiness.failure_signatures`) clustered across tests."""
    per = signatures.groupBy("kind", "signature").agg(
        F.sum("failures").alias("failures"),
        F.countDistinct("test_id").alias("tests"),
        F.min("first_seen").alias("first_seen"),
        F.max("last_seen").alias("last_seen"),
        F.min("example").alias("example"),
    )
    kind = Window.partitionBy("kind")
    ranked = kind.orderBy(F.desc("failures"), "signature")
    running = ranked.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    total = F.sum("failures").over(kind)
    return per.select(
        "kind",
        F.row_number().over(ranked).alias("rank"),
        "signature",
        "failures",
        (F.col("failures") / total).alias("share"),
        (F.sum("failures").over(running) / total).alias("cumulative_share"),
        "tests",
        "first_seen",
        "last_seen",
        "example",
    ).orderBy("kind", "rank")


def excusals(records: DataFrame) -> DataFrame:
    """Items excused per Kafka quirk from the chaos and simulator records' ``excused`` maps."""
    keys = ("kind", "target", "fault_package")
    seeded = records.filter(F.col("kind").isin(*SEEDED_KINDS))
    reporting = seeded.groupBy(*keys).agg(F.count("excused").alias("runs_reporting"))
    items = seeded.select(*keys, F.explode("excused").alias("quirk", "items"))
    per = items.groupBy(*keys, "quirk").agg(
        F.sum((F.col("items") > 0).cast("long")).alias("runs_excused"),
        F.sum("items").alias("items_excused"),
    )
    return (
        per.join(reporting, list(keys))
        .select(
            "kind",
            "quirk",
            "target",
            "fault_package",
            "runs_reporting",
            "runs_excused",
            "items_excused",
            (F.col("runs_excused") / F.col("runs_reporting")).alias("share_of_runs"),
        )
        .orderBy("kind", F.desc("items_excused"), "quirk", "target", "fault_package")
    )


def behaviour_trend(behaviour_runs: DataFrame) -> DataFrame:
    """Failure rate per behaviour ID across commits and target versions."""
    per_axis = [
        behaviour_runs.select(
            *BEHAVIOUR_KEYS,
            F.lit(axis).alias("axis"),
            F.coalesce(F.col(axis), F.lit("unknown")).alias("version"),
            "outcome",
            "started_at",
        )
        for axis in AXES
    ]
    both = per_axis[0].unionByName(per_axis[1])
    executed = ~F.col("outcome").isin("skipped")
    agg = both.groupBy(*BEHAVIOUR_KEYS, "axis", "version").agg(
        F.count(F.lit(1)).alias("runs"),
        F.sum(executed.cast("long")).alias("executed"),
        F.sum(F.col("outcome").isin(*_FAIL).cast("long")).alias("failures"),
        F.min("started_at").alias("first_seen"),
        F.max("started_at").alias("last_seen"),
    )
    rate = F.when(F.col("executed") > 0, F.col("failures") / F.col("executed"))
    series = Window.partitionBy(*BEHAVIOUR_KEYS, "axis").orderBy("first_seen", "version")
    with_rate = agg.withColumn("failure_rate", rate)
    return with_rate.withColumn(
        "rate_change", F.col("failure_rate") - F.lag("failure_rate").over(series)
    ).orderBy(*BEHAVIOUR_KEYS, "axis", "first_seen", "version")
