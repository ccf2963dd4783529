"""Synthetic run records for tests, demos and the benchmark (reports, drivers ring).

``python -m reports synth --records N --out DIR`` writes schema-valid version-2 records as
gzip JSON lines (``part-*.json.gz``) with Spark, so 10M records take minutes, not hours:

- 480 conformance tests (real behaviour IDs from the catalogue) × 3 targets and 120 chaos
  scenarios × 6 fault packages; one "run" is 600 consecutive records, runs spread over
  ``--days`` days, a new commit every 25 runs;
- per test a failure profile: 70 % stable (p = 0), 12 % rare flakes (p 0.2–2 %), 8 % frequent
  flakes (5–40 %), 3 % always failing, 3 % regressing (0.2 % → 20 % in the last fifth of the
  days), 4 % always skipped; errors are 20 % of the failures; reasons from templates with
  numbers and ids in them (so signatures cluster);
- phase metrics with heavy tails: a log-normal body (σ = 0.6) around a per-metric median, and
  2 % of values multiplied by a Pareto(α = 1.5) factor; 4 decimals, in seconds;
- ``record_id`` as the writers derive it (``<run_id>:<test_id>``, chaos ``…:<seed>``); a share
  ``--duplicate-rate`` (0.001) of the N records are executions again of earlier ones (a retried
  shard: same ``record_id``, outcome and timings drawn again);
- chaos records carry ``excused``: empty in most runs, 1–3 items of one of seven Kafka quirks
  in 15 % of them;
- ``target_version``: ``2.5.1`` for kafka-2.5, ``2.8.1`` then ``2.8.2`` (from the middle of the
  runs) for kafka-2.8, and for the reference one version per 100 runs.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from typing import Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention

from catalogue import CATALOGUE
from reports import session

__all__ = ["FAULT_PACKAGES", "TARGETS", "main", "synthetic_records"]

TARGETS: Final = ("reference", "kafka-2.5", "kafka-2.8")
FAULT_PACKAGES: Final = (
    "kill-broker",
    "kill-controller",
    "partition-controller",
    "zk-session-expiry",
    "pause-broker",
    "slow-zk",
)
_TESTS_PER_RUN: Final = 600
_MEDIANS: Final = {
    "controller_election": 0.25,
    "failover_to_ready": 0.05,
    "partition_online_after_create": 0.08,
    "reassignment_completion": 1.5,
    "leader_reelection_after_broker_failure": 0.4,
    "isr_expansion": 0.3,
    "time_to_heal": 4.0,
}
# Java format strings, all taking (a long, a double).
_REASONS: Final = (
    "AssertionError: no controller within %2$.1f s (last epoch %1$d)",
    "TimeoutError: UpdateMetadata for partition t-%1$d-0 not seen after %2$.1f s",
    "checker one-controller: 2 controllers at epoch %1$d after %2$.1f s",
    "checker isr-subset-of-live: ISR [1, 2, %1$d] has a dead broker after %2$.1f s",
    "ConnectionLossException at /brokers/ids/%1$d (session 0x%1$x)",
)
_EPOCH_2026_S: Final = 1767225600
QUIRKS: Final = (
    "reassignment-stranded-by-deletion",
    "reassignment-abandoned-after-topic-znode",
    "deletion-dropped-before-creation",
    "deleted-topic-kept-by-unregistered-broker",
    "leaderless-after-failed-reassignment-election",
    "isr-outside-replicas-after-failed-election",
    "deletion-halted-by-earlier-incarnation",
)


@dataclass(frozen=True)
class _Spec:
    slot: int
    kind: str
    name: str
    behaviours: list[str]
    package: str
    p_before: float
    p_after: float
    skipped: bool
    metrics: list[str]
    reasons: list[str]


def _profile(rng: random.Random) -> tuple[float, float, bool]:
    u = rng.random()
    if u < 0.70:
        return 0.0, 0.0, False
    if u < 0.82:
        p = rng.uniform(0.002, 0.02)
        return p, p, False
    if u < 0.90:
        p = rng.uniform(0.05, 0.4)
        return p, p, False
    if u < 0.93:
        return 1.0, 1.0, False
    if u < 0.96:
        return 0.002, 0.2, False
    return 0.0, 0.0, True


def _conformance_name(behaviour_id: str, slot: int) -> str:
    area = behaviour_id.rsplit("-", 1)[0].lower()
    return f"conformance/checks/test_{area}.py::test_case_{slot:03d}"


def _specs(seed: int) -> list[_Spec]:
    rng = random.Random(seed)
    ids = [b.id for b in CATALOGUE]
    metrics = [m for m in _MEDIANS if m != "time_to_heal"]
    specs = []
    for slot in range(_TESTS_PER_RUN):
        chaos = slot >= 480
        p_before, p_after, skipped = _profile(rng)
        specs.append(
            _Spec(
                slot=slot,
                kind="chaos-run" if chaos else "conformance-test",
                name=f"chaos/scenario-{slot - 480:03d}"
                if chaos
                else _conformance_name(ids[slot % len(ids)], slot),
                behaviours=[] if chaos else rng.sample(ids, k=rng.randint(1, 3)),
                package=FAULT_PACKAGES[slot % len(FAULT_PACKAGES)] if chaos else "none",
                p_before=p_before,
                p_after=p_after,
                skipped=skipped,
                metrics=(
                    ["time_to_heal", rng.choice(metrics)]
                    if chaos
                    else rng.sample(metrics, k=rng.randint(0, 2))
                ),
                reasons=rng.sample(_REASONS, k=2),
            )
        )
    return specs


def _spec_frame(spark: SparkSession, seed: int) -> DataFrame:
    rows = [
        (
            s.slot,
            s.kind,
            s.name,
            s.behaviours,
            s.package,
            s.p_before,
            s.p_after,
            s.skipped,
            [(m, _MEDIANS[m]) for m in s.metrics],
            s.reasons,
        )
        for s in _specs(seed)
    ]
    schema = (
        "slot long, kind string, test_id string, behaviour_ids array<string>, fault_package string, "
        "p_before double, p_after double, skipped boolean, "
        "metrics array<struct<name:string,median:double>>, reasons array<string>"
    )
    return spark.createDataFrame(rows, schema)


def _heavy_tail(seed: int, i: int) -> Column:
    body = F.exp(F.lit(0.6) * F.randn(seed + 10 + i))
    tail = F.when(F.rand(seed + 20 + i) < 0.02, F.pow(F.rand(seed + 30 + i) + F.lit(1e-9), F.lit(-1 / 1.5)))
    return body * F.coalesce(tail, F.lit(1.0))


def _iso(ts: Column) -> Column:
    return F.concat(F.date_format(ts, "yyyy-MM-dd'T'HH:mm:ss.SSS"), F.lit("+00:00"))


def synthetic_records(
    spark: SparkSession, n: int, seed: int = 1, days: int = 30, duplicate_rate: float = 0.001
) -> DataFrame:
    """``n`` records as a DataFrame of version-2 record columns (JSON-ready strings); the last
    ``duplicate_rate`` of them execute earlier records again (same ``record_id``)."""
    unique = max(1, n - int(n * duplicate_rate))
    runs = max(1, -(-unique // _TESTS_PER_RUN))
    run_span_s = days * 86400.0 / runs
    files = max(1, min(64, n // 500_000))
    source = F.when(F.col("id") < unique, F.col("id")).otherwise(F.pmod(F.xxhash64("id"), F.lit(unique)))
    ids = spark.range(0, n, 1, files).select(
        (source % _TESTS_PER_RUN).alias("slot"), (source / _TESTS_PER_RUN).cast("long").alias("run")
    )
    df = ids.join(F.broadcast(_spec_frame(spark, seed)), "slot")
    run_start_s = F.lit(_EPOCH_2026_S) + F.col("run") * run_span_s
    run_start = F.timestamp_seconds(run_start_s)
    started = F.timestamp_seconds(run_start_s + F.col("slot") * run_span_s / (2 * _TESTS_PER_RUN))
    late = F.col("run") >= F.lit(runs * 0.8)
    p = F.when(late, F.col("p_after")).otherwise(F.col("p_before"))
    u = F.rand(seed)
    outcome = (
        F.when(F.col("skipped"), "skipped")
        .when(u < p * 0.8, "failed")
        .when(u < p, "error")
        .otherwise("passed")
    )
    run_id = F.substring(F.sha1(F.concat(F.lit(f"run-{seed}-"), F.col("run").cast("string"))), 1, 12)
    df = df.select(
        "*",
        outcome.alias("outcome"),
        run_id.alias("run_id"),
        run_start.alias("_run_start"),
        started.alias("_started"),
        F.round(F.lit(0.5) + F.exp(F.randn(seed + 1)) * 3, 4).alias("duration_s"),
        F.array(*[_heavy_tail(seed, i) for i in range(2)]).alias("_noise"),
        F.rand(seed + 2).alias("_r"),
    )
    return df.select(*_columns(seed, runs))


def _target_version(target: Column, runs: int) -> Column:
    return (
        F.when(target == "kafka-2.5", F.lit("2.5.1"))
        .when(target == "kafka-2.8", F.when(F.col("run") < runs // 2, "2.8.1").otherwise("2.8.2"))
        .otherwise(F.concat(F.lit("2.5-ref."), (F.col("run") / 100).cast("long").cast("string")))
    )


def _excused(seed: int) -> Column:
    """Most chaos runs excuse nothing; 15 % excuse 1–3 items of one quirk."""
    quirk = F.element_at(F.array(*map(F.lit, QUIRKS)), (F.rand(seed + 3) * len(QUIRKS)).cast("int") + 1)
    items = (F.rand(seed + 4) * 3).cast("long") + 1
    some = F.create_map(quirk, items)
    none = F.create_map().cast("map<string,bigint>")
    return F.when(F.col("kind") != "chaos-run", F.lit(None).cast("map<string,bigint>")).otherwise(
        F.when(F.rand(seed + 5) < 0.15, some).otherwise(none)
    )


def _columns(seed: int, runs: int) -> list[Column | str]:
    failing = F.col("outcome").isin("failed", "error")
    formatted = F.expr("format_string(element_at(reasons, cast(_r * 2 AS INT) + 1), run % 50, _r * 30)")
    reason = F.when(F.col("skipped"), F.lit("target does not support this behaviour")).when(
        failing, formatted
    )
    metrics = F.when(F.col("outcome") == "skipped", F.array()).otherwise(
        F.zip_with(
            "metrics",
            F.slice("_noise", 1, F.size("metrics")),
            lambda m, z: F.struct(
                m["name"].alias("name"), F.round(m["median"] * z, 4).alias("value"), F.lit("s").alias("unit")
            ),
        )
    )
    chaos = F.col("kind") == "chaos-run"
    record_seed = F.when(chaos, F.col("run") * 1000 + F.col("slot"))
    target = F.when(chaos, F.lit("reference")).otherwise(
        F.element_at(F.array(*map(F.lit, TARGETS)), (F.col("run") % 3 + 1).cast("int"))
    )
    return [
        F.lit(2).alias("schema_version"),
        "kind",
        F.concat_ws(":", "run_id", "test_id", record_seed.cast("string")).alias("record_id"),
        "run_id",
        F.concat(F.date_format("_run_start", "yyyyMMdd'T'HHmmss.SSSSSS"), F.lit("Z-"), F.col("run_id")).alias(
            "run_order"
        ),
        "test_id",
        "behaviour_ids",
        target.alias("target"),
        _target_version(target, runs).alias("target_version"),
        F.lit("2.5").alias("profile"),
        "fault_package",
        record_seed.alias("seed"),
        "outcome",
        reason.alias("reason"),
        "duration_s",
        metrics.alias("phase_metrics"),
        _excused(seed).alias("excused"),
        F.sha1(F.concat(F.lit(f"commit-{seed}-"), (F.col("run") / 25).cast("long").cast("string"))).alias(
            "commit"
        ),
        F.concat(F.lit("ci-"), (F.col("run") % 4).cast("string")).alias("host"),
        F.when(~chaos, F.concat(F.lit("gw"), (F.col("slot") % 2).cast("string"))).alias("worker"),
        _iso(F.col("_started")).alias("started_at"),
        _iso(F.timestamp_seconds(F.unix_micros("_started") / 1e6 + F.col("duration_s"))).alias("finished_at"),
    ]


def write(df: DataFrame, out: str, gzip: bool = True) -> None:
    """Write as JSON lines with every key present (nulls included); one file per partition."""
    writer = df.write.mode("overwrite").option("ignoreNullFields", "false")
    if gzip:
        writer = writer.option("compression", "gzip")
    writer.json(out)


def main(args: argparse.Namespace) -> int:
    spark = session.start(
        args.master, driver_memory=args.driver_memory, shuffle_partitions=args.shuffle_partitions
    )
    try:
        records = synthetic_records(spark, args.records, args.seed, args.days, args.duplicate_rate)
        write(records, str(args.out), gzip=not args.no_gzip)
    finally:
        spark.stop()
    print(f"synth: {args.records} records in {args.out}")
    return 0
