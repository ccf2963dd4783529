"""Write the report's files: CSV, Parquet, summary.json, report.html (reports, drivers ring).

The tables arrive collected (:class:`Table`: schema + rows). CSV is written here (one file per
table, ``None`` as an empty cell, timestamps as ISO-8601 UTC); Parquet by Spark from the same
rows (``parquet/<table>/``), so nothing is computed twice.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from pyspark.sql import Row, SparkSession

from reports import page
from reports.flakiness import FlakinessParams
from reports.inputs import Rejected
from reports.policy import PolicyParams
from reports.read import Duplicates, duplicates_line, unknown_kinds_line
from reports.table import Table, plain

__all__ = ["CSV_TABLES", "SUMMARY_VERSION", "Table", "plain", "terminal_summary", "write_outputs"]

SUMMARY_VERSION: Final = 2
_PARQUET_WRITERS: Final = 3
CSV_TABLES: Final = (
    "flakiness",
    "behaviour_flakiness",
    "flake_ranking",
    "failure_signatures",
    "failure_trend",
    "latency",
    "latency_by_day",
    "latency_by_commit",
    "latency_histogram",
    "gate_policies",
    "policy_backtest",
    "impact",
    "failure_clusters",
    "excusals",
    "behaviour_trend",
)
_RANKING_FIELDS: Final = (
    "rank", "kind", "test_id", "target", "profile", "fault_package", "runs", "executed", "failures",
    "failure_rate", "wilson_low", "wilson_high", "flip_rate", "entropy", "signatures",
)  # fmt: skip


def _cell(value: Any) -> str:
    v = plain(value)
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "; ".join(f"{x['signature']} ×{x['failures']}" if isinstance(x, dict) else str(x) for x in v)
    return repr(v) if isinstance(v, float) else str(v)


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[Row]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows([_cell(r[c]) for c in columns] for r in rows)


def _write_parquet(spark: SparkSession, out: Path, table: Table) -> None:
    df = (
        spark.createDataFrame(table.rows, table.schema)
        if table.rows
        else spark.createDataFrame([], table.schema)
    )
    df.coalesce(1).write.mode("overwrite").parquet(str(out / "parquet" / table.name))


def _rejected_csv(path: Path, rejected: Sequence[Rejected]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["file", "line", "problems", "text"])
        w.writerows([r.file, "" if r.line is None else r.line, r.problems, r.text] for r in rejected)


def _ranking(table: Table) -> list[dict[str, Any]]:
    return [{k: plain(r[k]) for k in _RANKING_FIELDS} for r in table.rows]


def _summary(tables: dict[str, Table], context: dict[str, Any], out: Path) -> dict[str, Any]:
    params: FlakinessParams = context["params"]
    policy: PolicyParams = context["policy"]
    flak = tables["flakiness"].dicts()
    regressions = sorted((d for d in flak if d["regressed"]), key=lambda d: d["regression_p_value"])
    return {
        "summary_version": SUMMARY_VERSION,
        "started_at": context["started_at"],
        "spark": context["spark"],
        "inputs": context["inputs"],
        "records": {
            "total": sum(context["records"].values()),
            "by_source_and_kind": context["records"],
            "duplicates": asdict(context["duplicates"]),
        },
        "rejected": {
            "total": context["rejected_total"],
            "unknown_kinds": context["unknown_kinds"],
            "listed": [asdict(r) for r in context["rejected"]],
        },
        "parameters": {
            "flake_rate": params.flake_rate,
            "confidence": params.confidence,
            "runs_needed": params.runs_needed,
            "baseline_before": plain(params.baseline_before) if params.baseline_before else None,
            "regression_alpha": params.alpha,
            "quarantine_above": policy.quarantine_above,
            "retries": policy.retries,
        },
        "classification": dict(Counter(d["classification"] for d in flak)),
        "top_flakes": _ranking(tables["flake_ranking"]),
        "regressions": regressions[:20],
        "gate_policies": tables["gate_policies"].dicts(),
        "top_impact": tables["impact"].dicts()[:20],
        "latency": tables["latency"].dicts(),
        "outputs": sorted(str(p.relative_to(out)) for p in out.iterdir()),
    }


def write_outputs(
    spark: SparkSession,
    out: Path,
    tables: dict[str, Table],
    context: dict[str, Any],
    wall_s: Callable[[], float],
) -> dict[str, Any]:
    """Every output file under ``out``; returns the summary (also written as summary.json)."""
    out.mkdir(parents=True, exist_ok=True)
    # Each Parquet write is a small Spark job whose time is mostly fixed latency (planning, the
    # output committer): a few at once, while this thread writes the CSV files.
    with ThreadPoolExecutor(max_workers=_PARQUET_WRITERS, thread_name_prefix="parquet") as pool:
        writes = [pool.submit(_write_parquet, spark, out, tables[name]) for name in CSV_TABLES]
        for name in CSV_TABLES:
            table = tables[name]
            columns = list(_RANKING_FIELDS) if name == "flake_ranking" else table.columns
            _write_csv(out / f"{name}.csv", columns, table.rows)
        for w in writes:
            w.result()
    if context["rejected"]:
        _rejected_csv(out / "rejected.csv", context["rejected"])
    (out / "report.html").write_text("", encoding="utf-8")
    (out / "summary.json").write_text("{}", encoding="utf-8")
    summary = _summary(tables, context, out)
    summary["wall_s"] = round(wall_s(), 3)
    (out / "report.html").write_text(page.render(tables, summary), encoding="utf-8")
    summary["wall_s"] = round(wall_s(), 3)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return summary


def _gate_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per target × profile: gated runs and how many each policy blocks."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["target"], r["profile"]), []).append(r)
    return [
        f"  gates [{target}/{profile}]: {rs[0]['gated_runs']} gated runs; blocked: "
        + ", ".join(f"{r['policy']} {r['blocked']} ({100 * r['blocked_rate']:.1f} %)" for r in rs)
        for (target, profile), rs in sorted(groups.items())
    ]


def terminal_summary(summary: dict[str, Any], out: Path) -> str:
    """A few lines for the terminal: counts, the worst flakes, latency headlines, where to look."""
    cls = summary["classification"]
    lines = [
        f"records: {summary['records']['total']}  rejected: {summary['rejected']['total']}  "
        f"groups: {sum(cls.values())} ({', '.join(f'{k} {v}' for k, v in sorted(cls.items()))})",
    ]
    dup = summary["records"]["duplicates"]
    if dup["dropped"]:
        lines.append(f"  {duplicates_line(Duplicates(**dup))}")
    kinds = unknown_kinds_line(summary["rejected"]["unknown_kinds"])
    if kinds:
        lines.append(f"  rejected: {kinds}")
    lines += _gate_lines(summary["gate_policies"])
    for f in summary["top_flakes"][:5]:
        lines.append(
            f"  flake #{f['rank']}: {f['test_id']} [{f['target']}/{f['fault_package']}] "
            f"fails {f['failures']}/{f['executed']} ({100 * f['failure_rate']:.1f} %, "
            f"95% CI {100 * f['wilson_low']:.1f}–{100 * f['wilson_high']:.1f} %), "
            f"flip rate {f['flip_rate']:.2f}"
        )
    for r in summary["regressions"][:3]:
        lines.append(f"  regression: {r['test_id']} [{r['target']}] p = {r['regression_p_value']:.2g}")
    for m in summary["latency"][:8]:
        lines.append(
            f"  {m['metric']} [{m['target']}/{m['fault_package']}]: n={m['count']} "
            f"p50 {m['p50']:.3g} p95 {m['p95']:.3g} p99 {m['p99']:.3g} max {m['max']:.3g} {m['unit']}"
        )
    lines.append(f"report: {out / 'report.html'}  (wall {summary['wall_s']} s)")
    return "\n".join(lines)
