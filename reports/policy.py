"""Policy backtest and impact: what a CI gate would have decided (reports, decisions ring).

Pure ``DataFrame -> DataFrame`` transforms over :data:`reports.schema.CANONICAL` rows. The
records are replayed in ``run_order`` to ask: how many gated runs would each policy have blocked,
and which checks block gates?

- **gated run**: one ``run_id`` of kind ``conformance-test`` (one conformance invocation; it
  runs against one target and profile, and a ``run_id`` holding several target × profile pairs
  is one gated run per pair). Its selected tests are its records. It is **blocked** under a
  policy iff any of its executed tests fails under that policy, or it executed nothing (a gate
  never passes because it ran nothing: ``ran_nothing``). Chaos and simulator records gate nothing.
- **replay**: a test's executions (same ``test_id``, target and profile; skipped ones carry no
  verdict and are left out) ordered by ``run_order``, then ``started_at``, then ``run_id``. A
  policy decides from the executions before a run, never from later ones — except retries,
  which are executions themselves.
- policy **none**: a failed or errored execution blocks.
- policy **retries** (k = ``--retries``, 1): a failing execution is retried up to k times and
  blocks unless a retry passes. The test's next k executions in the replay stand in for the
  retries (the same test on the same target and profile, but in a later run, so at a later
  commit); with fewer than k later executions the missing retries count as failed.
- policy **quarantine** (T = ``--quarantine-above``, 0.05): in a run, a test is quarantined when
  its executions before that run both passed and failed (flaky — a test that only ever failed is
  broken, not quarantined) and failed at a rate above T; a quarantined test's failure does not
  block. The rate is over its whole history before the run.
- policy **quarantine+retries**: a failure blocks unless quarantined or rescued by a retry.

Tables:

- ``gate_policies``: per target × profile × policy: ``gated_runs``, ``blocked``,
  ``blocked_rate``, ``ran_nothing``, ``unblocked`` (gates blocked with no policy that this one
  lets pass), ``failures_ignored`` (failing executions the policy does not count: its price).
- ``policy_backtest``: per level (``test`` | ``behaviour``) × id × target × profile:
  ``gated_runs`` (gates in which it executed), ``failing_runs``, and ``blocked_<policy>``: gates
  its failures block under that policy. A behaviour ID fails / blocks a gate when any of its
  tests does.
- ``impact``: per test that blocked a gate with no policy: ``gates_blocked``,
  ``gates_blocked_alone`` (it was the gate's only failing test: fixing or quarantining it alone
  would have let that gate pass), ``share_of_blocked_gates`` and ``share_alone`` (of the gates of
  its target × profile that failing tests blocked), with its flakiness ``classification``,
  ``failure_rate`` and ``flip_rate``.

Worked example (k = 1, T = 0.05; tests a and b, four gated runs; P passed, F failed)::

    run  a  b   none     retries                  quarantine                     both
    r1   P  F   blocked  pass (b's next: P)       blocked (b: no history)        pass
    r2   F  P   blocked  pass (a's next: P)       blocked (a: only passed)       pass
    r3   P  F   blocked  pass (b's next: P)       pass (b before: F P, 50 %)     pass
    r4   P  P   pass     pass                     pass                           pass
    blocked:    3        0                        2                              0
    impact: a blocked 1 gate (alone 1, share 1/3), b 2 gates (alone 2, share 2/3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F  # noqa: N812 - PySpark convention

__all__ = [
    "GATE_KEYS",
    "POLICIES",
    "PolicyParams",
    "executions",
    "gate_policies",
    "gates",
    "impact",
    "policy_backtest",
]

GATE_KEYS: Final = ("run_id", "target", "profile")
HISTORY_KEYS: Final = ("test_id", "target", "profile")
# policy → the column of :func:`executions` that says whether an execution blocks under it
POLICIES: Final = {
    "none": "blocks_none",
    "retries": "blocks_retries",
    "quarantine": "blocks_quarantine",
    "quarantine+retries": "blocks_quarantine_retries",
}
_BLOCKS: Final = tuple(POLICIES.values())


@dataclass(frozen=True)
class PolicyParams:
    quarantine_above: float = 0.05
    retries: int = 1


def _rescued(order: WindowSpec, retries: int) -> Column:
    """One of the next ``retries`` executions passed (a skipped row sorts after every
    execution, so it reads as a missing retry)."""
    out = F.lit(False)
    for i in range(1, retries + 1):
        out = out | F.coalesce(F.lead("_v", i).over(order) == 0, F.lit(False))
    return out


def executions(records: DataFrame, params: PolicyParams) -> DataFrame:
    """Every conformance-test record with its replayed policy verdicts: ``executed``, ``fails``,
    ``quarantined``, ``rescued`` and one ``blocks_<policy>`` per policy (false for skipped)."""
    conf = records.filter(F.col("kind") == "conformance-test").select(
        *GATE_KEYS, "test_id", "behaviour_ids", "run_order", "started_at",
        F.when(F.col("outcome").isin("failed", "error"), 1).when(F.col("outcome") == "passed", 0).alias("_v"),
    )  # fmt: skip
    # Skipped rows (no verdict) sort after every execution of the test: they are nobody's history
    # and nobody's retry, and one window (one sort) serves all the columns.
    order = Window.partitionBy(*HISTORY_KEYS).orderBy(
        F.col("_v").isNull(), "run_order", "started_at", "run_id"
    )
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    n, failed = F.count("_v").over(before), F.coalesce(F.sum("_v").over(before), F.lit(0))
    quarantined = (failed > 0) & (failed < n) & (failed / n > F.lit(params.quarantine_above))
    fails = F.coalesce(F.col("_v") == 1, F.lit(False))
    annotated = conf.select(
        "*",
        F.col("_v").isNotNull().alias("executed"),
        fails.alias("fails"),
        quarantined.alias("quarantined"),
        _rescued(order, params.retries).alias("rescued"),
    )
    q, r = F.col("quarantined"), F.col("rescued")
    return annotated.select(
        "*",
        F.col("fails").alias("blocks_none"),
        (F.col("fails") & ~r).alias("blocks_retries"),
        (F.col("fails") & ~q).alias("blocks_quarantine"),
        (F.col("fails") & ~q & ~r).alias("blocks_quarantine_retries"),
    ).drop("_v")


def _n(condition: Column) -> Column:
    return F.sum(condition.cast("long"))


def gates(execs: DataFrame) -> DataFrame:
    """One row per gated run: ``selected``, ``executed``, ``failing_<policy>`` (its executions
    that block under the policy) and ``blocked_<policy>``."""
    per_gate = execs.groupBy(*GATE_KEYS).agg(
        F.count(F.lit(1)).alias("selected"),
        _n(F.col("executed")).alias("executed"),
        *[_n(F.col(c)).alias(c.replace("blocks_", "failing_")) for c in _BLOCKS],
    )
    ran_nothing = F.col("executed") == 0
    return per_gate.select(
        "*",
        ran_nothing.alias("ran_nothing"),
        *[
            ((F.col(c.replace("blocks_", "failing_")) > 0) | ran_nothing).alias(
                c.replace("blocks_", "blocked_")
            )
            for c in _BLOCKS
        ],
    )


def gate_policies(gates_df: DataFrame, execs: DataFrame) -> DataFrame:
    """Per target × profile × policy: how many gated runs it blocks, and its price."""
    keys = ("target", "profile")
    g = gates_df.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("gated_runs"),
        _n(F.col("ran_nothing")).alias("ran_nothing"),
        *[_n(F.col(f"blocked_{p}")).alias(f"_b_{p}") for p in _suffixes()],
        *[_n(F.col("blocked_none") & ~F.col(f"blocked_{p}")).alias(f"_u_{p}") for p in _suffixes()],
    )
    e = execs.groupBy(*keys).agg(
        *[_n(F.col("fails") & ~F.col(f"blocks_{p}")).alias(f"_i_{p}") for p in _suffixes()]
    )
    both = g.join(e, list(keys), "left")
    per_policy = F.array(
        *[
            F.struct(
                F.lit(i).alias("order"),
                F.lit(policy).alias("policy"),
                F.col(f"_b_{p}").alias("blocked"),
                F.col(f"_u_{p}").alias("unblocked"),
                F.coalesce(F.col(f"_i_{p}"), F.lit(0)).alias("failures_ignored"),
            )
            for i, (policy, p) in enumerate(zip(POLICIES, _suffixes(), strict=True))
        ]
    )
    rows = both.select(*keys, "gated_runs", "ran_nothing", F.explode(per_policy).alias("p"))
    return rows.select(
        *keys,
        "p.policy",
        "gated_runs",
        "p.blocked",
        (F.col("p.blocked") / F.col("gated_runs")).alias("blocked_rate"),
        "ran_nothing",
        "p.unblocked",
        "p.failures_ignored",
    ).orderBy(*keys, "p.order")


def _suffixes() -> tuple[str, ...]:
    return tuple(c.removeprefix("blocks_") for c in _BLOCKS)


def policy_backtest(execs: DataFrame) -> DataFrame:
    """Per test and per behaviour ID: gated runs, failing runs, gates blocked under each policy."""
    counts = [_n(F.col(c)).alias(c.replace("blocks_", "blocked_")) for c in _BLOCKS]
    tests = execs.groupBy(
        F.lit("test").alias("level"), F.col("test_id").alias("id"), "target", "profile"
    ).agg(_n(F.col("executed")).alias("gated_runs"), _n(F.col("fails")).alias("failing_runs"), *counts)
    per_run = (
        execs.select("*", F.explode("behaviour_ids").alias("behaviour_id"))
        .groupBy("behaviour_id", *GATE_KEYS)
        .agg(
            F.max(F.col("executed")).alias("executed"),
            F.max(F.col("fails")).alias("fails"),
            *[F.max(F.col(c)).alias(c) for c in _BLOCKS],
        )
    )
    behaviours = per_run.groupBy(
        F.lit("behaviour").alias("level"), F.col("behaviour_id").alias("id"), "target", "profile"
    ).agg(_n(F.col("executed")).alias("gated_runs"), _n(F.col("fails")).alias("failing_runs"), *counts)
    return tests.unionByName(behaviours).orderBy(  # tests first
        F.desc("level"), F.desc("blocked_none"), F.desc("failing_runs"), "id", "target", "profile"
    )


def impact(execs: DataFrame, gates_df: DataFrame, per_test: DataFrame) -> DataFrame:
    """Per test that blocked a gate with no policy: gates blocked, alone, and shares of the gates
    failing tests blocked (``per_test``: :func:`reports.flakiness.level` of the tests)."""
    failing = gates_df.select(*GATE_KEYS, "failing_none")
    blocking = execs.filter(F.col("blocks_none")).join(F.broadcast(failing), list(GATE_KEYS))
    per = blocking.groupBy(*HISTORY_KEYS).agg(
        F.count(F.lit(1)).alias("gates_blocked"),
        _n(F.col("failing_none") == 1).alias("gates_blocked_alone"),
    )
    blocked = gates_df.groupBy("target", "profile").agg(_n(F.col("failing_none") > 0).alias("_blocked"))
    flak = per_test.filter(F.col("kind") == "conformance-test").select(
        *HISTORY_KEYS, "classification", "failure_rate", "flip_rate"
    )
    joined = per.join(blocked, ["target", "profile"]).join(flak, list(HISTORY_KEYS), "left")
    return joined.select(
        *HISTORY_KEYS,
        "gates_blocked",
        "gates_blocked_alone",
        (F.col("gates_blocked") / F.col("_blocked")).alias("share_of_blocked_gates"),
        (F.col("gates_blocked_alone") / F.col("_blocked")).alias("share_alone"),
        "classification",
        "failure_rate",
        "flip_rate",
    ).orderBy(F.desc("gates_blocked_alone"), F.desc("gates_blocked"), *HISTORY_KEYS)
