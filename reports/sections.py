"""The report page's decision sections: gate policies, impact, policy backtest, failure clusters,
excused quirks, behaviour trends across versions (reports, decisions ring: tables in, HTML out).

Each function renders one ``<h2>`` section from collected tables with :func:`reports.page.table`
semantics (long tables cut; the CSV files hold everything).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Final

from reports import svg
from reports.table import Table

__all__ = ["decision_sections"]

TableFn = Callable[[Sequence[dict[str, Any]], Sequence[tuple[str, str]], set[str] | None], str]
_TREND_SERIES: Final = 50
_TREND_VERSIONS: Final = 8
_SERIES_KEYS: Final = ("kind", "behaviour_id", "target", "profile", "fault_package", "axis")


def _gates(t: dict[str, Table], table: TableFn) -> str:
    rows = t["gate_policies"].dicts()
    plot = svg.bars(
        [
            svg.Bar(
                f"{r['target']}/{r['profile']}: {r['policy']}",
                100 * r["blocked_rate"],
                100 * r["blocked_rate"],
                100 * r["blocked_rate"],
                f"{r['blocked']} of {r['gated_runs']} gated runs",
            )
            for r in rows
        ],
        "Gated runs blocked under each policy",
    )
    cols = [("target", "target"), ("profile", "profile"), ("policy", "policy"),
            ("gated_runs", "gated runs"), ("blocked", "blocked"), ("blocked_rate", "blocked %"),
            ("ran_nothing", "ran nothing"), ("unblocked", "let through vs none"),
            ("failures_ignored", "failing executions ignored")]  # fmt: skip
    return (
        '<h2 id="gate-policies">Gate policies: backtest over the recorded runs</h2>'
        f'<div class="plots">{plot}</div>' + table(rows, cols, {"blocked_rate"})
    )


def _impact(t: dict[str, Table], table: TableFn) -> str:
    cols = [("test_id", "test"), ("target", "target"), ("profile", "profile"),
            ("gates_blocked", "gates blocked"), ("gates_blocked_alone", "blocked alone"),
            ("share_of_blocked_gates", "share of blocked gates"), ("share_alone", "share alone"),
            ("classification", "classification"), ("failure_rate", "failure rate"),
            ("flip_rate", "flip rate")]  # fmt: skip
    pct = {"share_of_blocked_gates", "share_alone", "failure_rate"}
    return '<h2 id="impact">Impact: gates blocked per check</h2>' + table(t["impact"].dicts(), cols, pct)


def _backtest(t: dict[str, Table], table: TableFn) -> str:
    rows = t["policy_backtest"].dicts()
    cols = [("id", "id"), ("target", "target"), ("profile", "profile"), ("gated_runs", "gated runs"),
            ("failing_runs", "failing runs"), ("blocked_none", "blocks: none"),
            ("blocked_retries", "retries"), ("blocked_quarantine", "quarantine"),
            ("blocked_quarantine_retries", "quarantine+retries")]  # fmt: skip
    parts = ['<h2 id="policy-backtest">Policy backtest per test and behaviour ID</h2>']
    for level, title in (("test", "Tests"), ("behaviour", "Behaviour IDs")):
        chosen = [r for r in rows if r["level"] == level and r["failing_runs"]]
        parts.append(f"<h3>{title} that failed a gated run</h3>" + table(chosen, cols, None))
    return "".join(parts)


def _clusters(t: dict[str, Table], table: TableFn) -> str:
    cols = [("kind", "kind"), ("rank", "#"), ("signature", "signature"), ("failures", "failures"),
            ("share", "share of failures"), ("cumulative_share", "cumulative"), ("tests", "tests"),
            ("first_seen", "first seen"), ("last_seen", "last seen"), ("example", "example")]  # fmt: skip
    return '<h2 id="failure-clusters">Failure clusters by signature</h2>' + table(
        t["failure_clusters"].dicts(), cols, {"share", "cumulative_share"}
    )


def _excusals(t: dict[str, Table], table: TableFn) -> str:
    cols = [("kind", "kind"), ("quirk", "Kafka quirk"), ("target", "target"),
            ("fault_package", "fault package"), ("runs_reporting", "runs reporting"),
            ("runs_excused", "runs with excusals"), ("items_excused", "items excused"),
            ("share_of_runs", "share of runs")]  # fmt: skip
    return '<h2 id="excusals">Excused Kafka quirks (chaos and simulator runs)</h2>' + table(
        t["excusals"].dicts(), cols, {"share_of_runs"}
    )


def _rate(version: dict[str, Any]) -> str:
    rate = version["failure_rate"]
    return "–" if rate is None else f"{100 * rate:.1f} %"


def _trend_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per behaviour × target × profile × fault package × axis whose failure rate moved
    across versions: the spread and the last versions' rates, largest spread first."""
    series: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        series[tuple(r[k] for k in _SERIES_KEYS)].append(r)
    out: list[dict[str, Any]] = []
    for series_key, versions in series.items():
        rates = [v["failure_rate"] for v in versions if v["failure_rate"] is not None]
        if len(rates) < 2 or max(rates) == min(rates):
            continue
        text = " → ".join(f"{str(v['version'])[:12]}: {_rate(v)}" for v in versions[-_TREND_VERSIONS:])
        out.append(
            dict(zip(_SERIES_KEYS, series_key, strict=True))
            | {"versions": len(versions), "spread": max(rates) - min(rates), "rates": text}
        )
    return sorted(out, key=lambda r: (-r["spread"], r["behaviour_id"]))[:_TREND_SERIES]


def _trend(t: dict[str, Table], table: TableFn) -> str:
    cols = [("behaviour_id", "behaviour"), ("target", "target"), ("fault_package", "fault package"),
            ("axis", "across"), ("versions", "versions"), ("spread", "max − min rate"),
            ("rates", f"failure rate of the last {_TREND_VERSIONS} versions")]  # fmt: skip
    return (
        '<h2 id="behaviour-trend">Behaviour IDs across commits and target versions</h2>'
        f'<p class="muted">The {_TREND_SERIES} series whose failure rate moved most; every version '
        "of every behaviour ID is in behaviour_trend.csv.</p>"
        + table(_trend_rows(t["behaviour_trend"].dicts()), cols, {"spread"})
    )


def decision_sections(t: dict[str, Table], table: TableFn) -> list[str]:
    """The sections in page order."""
    return [f(t, table) for f in (_gates, _impact, _backtest, _clusters, _excusals, _trend)]
