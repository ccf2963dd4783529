"""``report.html``: one self-contained page (inline CSS, inline SVG plots, no script, no fetch).

Rendering only (reports, decisions ring: tables in, a string out). Long tables are cut to their
first rows here; the CSV and Parquet files hold everything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from html import escape
from typing import Any, Final

from reports import breakdowns, dedup, flakiness, latency, policy, svg
from reports.sections import decision_sections
from reports.table import Table

__all__ = ["render"]

_CSS: Final = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1280px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td{overflow-wrap:break-word}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.plots{display:flex;flex-wrap:wrap;gap:12px}.muted{color:#777}
.flaky{color:#b35900}.stable-fail{color:#c00}.stable-pass{color:#080}
pre{white-space:pre-wrap;font-size:12px;background:#f7f7f7;padding:8px}
"""
_MAX_ROWS: Final = 200


def _num(v: Any, pct: bool = False) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{100 * v:.2f} %" if pct else f"{v:.4g}"
    return str(v)


def _table(
    rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], pct: set[str] | None = None
) -> str:
    """An HTML table of ``rows`` (the first :data:`_MAX_ROWS`); ``pct`` columns as percentages."""
    pct = pct or set()
    head = "".join(f"<th>{escape(label)}</th>" for _, label in columns)
    body = []
    for r in rows[:_MAX_ROWS]:
        cells = []
        for key, _ in columns:
            v = r.get(key)
            cls = ' class="n"' if isinstance(v, int | float) and not isinstance(v, bool) else ""
            if key == "classification":
                cls = f' class="{escape(str(v))}"'
            cells.append(f"<td{cls}>{escape(_num(v, key in pct))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (
        f'<p class="muted">{len(rows) - _MAX_ROWS} more rows in the CSV.</p>' if len(rows) > _MAX_ROWS else ""
    )
    empty = '<p class="muted">none</p>' if not rows else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}{empty}"


_FLAKE_COLUMNS: Final = [
    ("kind", "kind"), ("test_id", "test / scenario"), ("target", "target"), ("profile", "profile"),
    ("fault_package", "fault package"), ("runs", "runs"), ("passed", "passed"), ("failed", "failed"),
    ("error", "error"), ("skipped", "skipped"), ("failure_rate", "failure rate"),
    ("wilson_low", "Wilson low"),
    ("wilson_high", "Wilson high"), ("flip_rate", "flip rate"), ("entropy", "entropy"),
    ("classification", "classification"), ("runs_needed", "runs still needed"),
    ("last_failure_at", "last failure"), ("regression_p_value", "regression p"),
]  # fmt: skip
_PCT: Final = {"failure_rate", "wilson_low", "wilson_high", "baseline_failure_rate", "current_failure_rate"}
_LAT_COLUMNS: Final = [
    ("metric", "metric"), ("unit", "unit"), ("target", "target"), ("fault_package", "fault package"),
    ("count", "count"), ("p50", "p50"), ("p95", "p95"), ("p99", "p99"), ("max", "max"), ("mean", "mean"),
]  # fmt: skip


def _header(s: dict[str, Any]) -> str:
    rec = s["records"]
    by = ", ".join(f"{k}: {v}" for k, v in sorted(rec["by_source_and_kind"].items()))
    cls = ", ".join(f"{k}: {v}" for k, v in sorted(s["classification"].items()))
    inputs = s["inputs"]
    return (
        "<h1>Run-record report: flakiness and latency</h1>"
        f"<p>Generated {escape(s['started_at'])} by Spark {escape(s['spark']['version'])} "
        f"({escape(s['spark']['master'])}) in {s['wall_s']} s.</p>"
        f"<p>Inputs: {escape(', '.join(inputs['paths']))} — {inputs['record_files']} record files, "
        f"{inputs['junit_files']} JUnit XML, {inputs['allure_results']} allure results; "
        f"{inputs['skipped_files']} other files skipped"
        + (f" (e.g. {escape(inputs['skipped_example'])})" if inputs["skipped_example"] else "")
        + ".</p>"
        f"<p><b>{rec['total']}</b> records ({escape(by)}); <b>{s['rejected']['total']}</b> rejected; "
        f"<b>{rec['duplicates']['dropped']}</b> duplicates dropped ({rec['duplicates']['ids']} "
        f"record_id(s) seen more than once, {rec['duplicates']['conflicting']} with different outcomes).</p>"
        f"<p>Groups: {escape(cls)}. A flake of {100 * s['parameters']['flake_rate']:g} % is ruled out "
        f"with {100 * s['parameters']['confidence']:g} % confidence after "
        f"{s['parameters']['runs_needed']} clean runs. Baseline window: runs before "
        f"{escape(str(s['parameters']['baseline_before']))}.</p>"
    )


def _flake_section(t: dict[str, Table]) -> str:
    ranking = t["flake_ranking"].dicts()
    plot = svg.bars(
        [
            svg.Bar(
                f"{r['test_id']} [{r['target']}/{r['fault_package']}]",
                100 * r["failure_rate"],
                100 * r["wilson_low"],
                100 * r["wilson_high"],
                f"flip rate {r['flip_rate']:.2f}",
            )
            for r in ranking
        ],
        "Worst flakes: failure rate with Wilson 95 % interval",
    )
    rows = [
        r | {"signatures": " | ".join(f"{s['signature']} ×{s['failures']}" for s in r["signatures"] or [])}
        for r in ranking
    ]
    cols = [("rank", "#"), ("test_id", "test / scenario"), ("target", "target"),
            ("fault_package", "fault package"),
            ("failures", "failures"), ("executed", "executed"), ("failure_rate", "failure rate"),
            ("wilson_low", "Wilson low"), ("wilson_high", "Wilson high"), ("flip_rate", "flip rate"),
            ("entropy", "entropy"), ("signatures", "failure signatures (clustered)")]  # fmt: skip
    return f'<h2 id="flakes">Worst flakes</h2><div class="plots">{plot}</div>' + _table(rows, cols, _PCT)


def _trend_section(t: dict[str, Table]) -> str:
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in t["failure_trend"].dicts():
        series[f"{r['kind']} / {r['target']}"].append(
            (date.fromisoformat(r["day"]).toordinal(), 100 * r["failure_rate"])
        )
    # The axis spans at least 0–1 %, so a period in which every run passed shows a flat line at 0
    # on a readable scale.
    plot = svg.lines(
        series=dict(series), title="Failure rate by day", x_label=_day, y_unit="% failed", y_min_top=1.0
    )
    return f'<h2 id="trend">Failure-rate trend</h2><div class="plots">{plot}</div>'


def _day(x: float) -> str:
    return date.fromordinal(round(x)).isoformat()


def _latency_plots(t: dict[str, Table]) -> str:
    hist: dict[tuple[str, str], list[tuple[float, float, int]]] = defaultdict(list)
    for r in t["latency_histogram"].dicts():
        hist[(r["metric"], r["unit"])].append((r["bin_low"], r["bin_high"], r["count"]))
    plots = [
        svg.histogram(bins=bins, title=f"{m} distribution", unit=unit)
        for (m, unit), bins in sorted(hist.items())
    ]
    sizes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    trend: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in t["latency_by_day"].dicts():
        group = f"{r['target']}/{r['fault_package']}"
        sizes[r["metric"]][group] += r["count"]
        trend[r["metric"]][group].append((date.fromisoformat(r["day"]).toordinal(), r["p95"]))
    lines = []
    for metric, groups in sorted(trend.items()):
        biggest = sorted(groups, key=lambda g: -sizes[metric][g])[:6]
        lines.append(
            svg.lines(
                series={f"p95 {g}": groups[g] for g in biggest},
                title=f"{metric}: p95 by day",
                x_label=_day,
                y_unit="s",
                log_y=True,
            )
        )
    return (
        '<h3>Distributions</h3><div class="plots">' + "".join(plots) + "</div>"
        '<h3>Trend (p95 per day, largest groups)</h3><div class="plots">' + "".join(lines) + "</div>"
    )


def _rejected_section(s: dict[str, Any]) -> str:
    listed = s["rejected"]["listed"]
    if not s["rejected"]["total"]:
        return '<h2 id="rejected">Rejected records</h2><p class="muted">none</p>'
    cols = [("file", "file"), ("line", "line"), ("problems", "problems")]
    note = f"<p>{s['rejected']['total']} rejected; {len(listed)} listed (all in rejected.csv).</p>"
    return '<h2 id="rejected">Rejected records</h2>' + note + _table(listed, cols)


def render(t: dict[str, Table], s: dict[str, Any]) -> str:
    """The whole page."""
    flak = t["flakiness"].dicts()
    regress = [r for r in flak if r["regressed"]]
    reg_cols = [*_FLAKE_COLUMNS[:5], ("baseline_executed", "baseline runs"),
                ("baseline_failure_rate", "baseline rate"), ("current_executed", "current runs"),
                ("current_failure_rate", "current rate"), ("regression_p_value", "p-value")]  # fmt: skip
    by_commit = t["latency_by_commit"].dicts()
    parts = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Run-record report</title>"
        f"<style>{_CSS}</style></head><body>",
        _header(s),
        _flake_section(t),
        '<h2 id="regressions">Regressions against the baseline window</h2>' + _table(regress, reg_cols, _PCT),
        _trend_section(t),
        '<h2 id="flakiness">Flakiness per test / scenario</h2>' + _table(flak, _FLAKE_COLUMNS, _PCT),
        '<h2 id="behaviours">Flakiness per behaviour ID</h2>'
        + _table(
            t["behaviour_flakiness"].dicts(), [("behaviour_id", "behaviour"), *_FLAKE_COLUMNS[2:]], _PCT
        ),
        '<h2 id="latency">Latency per phase metric</h2>' + _table(t["latency"].dicts(), _LAT_COLUMNS),
        _latency_plots(t),
        "<h3>By commit (first seen order)</h3>"
        + _table(by_commit, [("commit", "commit"), ("first_seen", "first seen"), *_LAT_COLUMNS]),
        *decision_sections(t, _table),
        _rejected_section(s),
        '<h2 id="definitions">Definitions</h2>'
        + "".join(
            f"<pre>{escape(m.__doc__ or '')}</pre>" for m in (flakiness, latency, policy, breakdowns, dedup)
        ),
        "</body></html>",
    ]
    return "\n".join(parts)
