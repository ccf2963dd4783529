"""The whole job in-process on synthetic records: numbers recomputed independently in plain
Python from the same files (duplicates dropped by the documented rule first), the output files,
and report.html rendered by headless chromium."""

from __future__ import annotations

import csv
import gzip
import html
import itertools
import json
import re
import statistics
import subprocess
from collections import Counter, defaultdict
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from reports import synth
from reports.job import BuildOptions, build

pytestmark = pytest.mark.reports

CHROMIUM = "/usr/bin/chromium"
RECORDS = 6_000  # ten runs of the 600 synthetic tests, spread over 4 days
DUPLICATES = 30  # the last 0.5 % execute earlier records again
FLAKINESS_COLUMNS = [
    "kind",
    "test_id",
    "target",
    "profile",
    "fault_package",
    "runs",
    "passed",
    "failed",
    "error",
    "skipped",
    "failure_rate",
    "wilson_low",
    "wilson_high",
    "flip_rate",
    "classification",
]
LATENCY_COLUMNS = ["metric", "unit", "target", "fault_package", "count", "p50", "p95", "p99", "max"]
NEW_TABLES = ("gate_policies.csv", "policy_backtest.csv", "impact.csv", "failure_clusters.csv",
              "excusals.csv", "behaviour_trend.csv")  # fmt: skip


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("e2e")
    data = root / "records"
    synth.write(synth.synthetic_records(spark, RECORDS, seed=5, days=4, duplicate_rate=0.005), str(data))
    (data / "runs-extra.jsonl").write_text('{"schema_version": 2}\n', encoding="utf-8")  # one bad record
    out = root / "out"
    summary = build(spark, BuildOptions(inputs=(str(data),), out=out, permissive=True), log=lambda _: None)
    lines = []
    for f in sorted(data.glob("part-*.json.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            lines += [json.loads(x) | {"_file": str(f)} for x in fh]
    return {"out": out, "summary": summary, "lines": lines, "records": _first_copies(lines), "root": root}


def _first_copies(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per record_id: the first by start, finish, file, outcome, run order."""
    by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in lines:
        by_id[r["record_id"]].append(r)
    key = itemgetter("started_at", "finished_at", "_file", "outcome", "run_order")
    return [min(copies, key=key) for copies in by_id.values()]


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_output_files_and_columns(built: dict[str, Any]) -> None:
    out: Path = built["out"]
    for name in ("report.html", "summary.json", "flakiness.csv", "latency.csv", "behaviour_flakiness.csv",
                 "rejected.csv", "parquet/flakiness", "parquet/latency", *NEW_TABLES,
                 *[f"parquet/{t.removesuffix('.csv')}" for t in NEW_TABLES]):  # fmt: skip
        assert (out / name).exists(), name
    with (out / "flakiness.csv").open(encoding="utf-8") as fh:
        assert next(csv.reader(fh))[: len(FLAKINESS_COLUMNS)] == FLAKINESS_COLUMNS
    with (out / "latency.csv").open(encoding="utf-8") as fh:
        assert next(csv.reader(fh))[: len(LATENCY_COLUMNS)] == LATENCY_COLUMNS
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["records"]["total"] == RECORDS - DUPLICATES == len(built["records"])
    assert summary["records"]["duplicates"]["dropped"] == DUPLICATES
    assert summary["rejected"]["total"] == 1
    assert summary["rejected"]["listed"][0]["line"] == 1
    assert summary["top_flakes"]
    assert summary["wall_s"] > 0


def test_flakiness_matches_an_independent_recount(built: dict[str, Any]) -> None:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in built["records"]:
        groups[(r["kind"], r["test_id"], r["target"], r["profile"], r["fault_package"])].append(r)
    rows = {tuple(r[k] for k in FLAKINESS_COLUMNS[:5]): r for r in _csv(built["out"] / "flakiness.csv")}
    assert set(rows) == set(groups)
    for key, recs in groups.items():
        recs.sort(key=lambda r: (r["run_order"], r["started_at"]))
        verdicts = [r["outcome"] != "passed" for r in recs if r["outcome"] != "skipped"]
        flips = sum(a != b for a, b in itertools.pairwise(verdicts))
        row = rows[key]
        assert int(row["runs"]) == len(recs)
        assert int(row["failed"]) + int(row["error"]) == sum(verdicts)
        if verdicts:
            assert float(row["failure_rate"]) == pytest.approx(sum(verdicts) / len(verdicts))
        if len(verdicts) > 1:
            assert float(row["flip_rate"]) == pytest.approx(flips / (len(verdicts) - 1))
        flaky = 0 < sum(verdicts) < len(verdicts)
        assert (row["classification"] == "flaky") == flaky


def test_latency_matches_an_independent_computation(built: dict[str, Any]) -> None:
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in built["records"]:
        for m in r["phase_metrics"]:
            values[(m["name"], r["target"], r["fault_package"])].append(m["value"])
    rows = _csv(built["out"] / "latency.csv")
    assert len(rows) == len(values)
    for row in rows:
        vs = values[(row["metric"], row["target"], row["fault_package"])]
        assert int(row["count"]) == len(vs)
        assert float(row["max"]) == max(vs)
        if len(vs) > 1:
            cuts = statistics.quantiles(vs, n=100, method="inclusive")
            assert float(row["p50"]) == pytest.approx(cuts[49], rel=1e-9)
            assert float(row["p99"]) == pytest.approx(cuts[98], rel=1e-9)


def _gates_recount(
    records: list[dict[str, Any]], threshold: float, k: int
) -> dict[tuple[str, str], Counter[str]]:
    """The policy backtest replayed in plain Python: per target × profile, gated runs and gates
    blocked under each policy (the definitions of reports.policy)."""
    history: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    gates: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["kind"] == "conformance-test":
            gates[(r["run_id"], r["target"], r["profile"])].append(r)
            if r["outcome"] != "skipped":
                history[(r["test_id"], r["target"], r["profile"])].append(r)
    blocks: dict[int, set[str]] = defaultdict(set)  # id(record) → policies under which it blocks
    for execs in history.values():
        execs.sort(key=itemgetter("run_order", "started_at", "run_id"))
        fails = [r["outcome"] in ("failed", "error") for r in execs]
        for i, r in enumerate(execs):
            if not fails[i]:
                continue
            before = fails[:i]
            quarantined = 0 < sum(before) < len(before) and sum(before) / len(before) > threshold
            rescued = any(not f for f in fails[i + 1 : i + 1 + k])
            blocks[id(r)] = (
                {"none"}
                | ({"retries"} if not rescued else set())
                | ({"quarantine"} if not quarantined else set())
                | ({"quarantine+retries"} if not quarantined and not rescued else set())
            )
    out: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for (_, target, profile), rs in gates.items():
        counter = out[(target, profile)]
        counter["gated_runs"] += 1
        ran_nothing = all(r["outcome"] == "skipped" for r in rs)
        for policy in ("none", "retries", "quarantine", "quarantine+retries"):
            counter[policy] += ran_nothing or any(policy in blocks[id(r)] for r in rs)
    return out


def test_gate_policies_match_an_independent_replay(built: dict[str, Any]) -> None:
    expected = _gates_recount(built["records"], 0.05, 1)
    rows = _csv(built["out"] / "gate_policies.csv")
    assert len(rows) == 4 * len(expected)
    for row in rows:
        counts = expected[(row["target"], row["profile"])]
        assert int(row["gated_runs"]) == counts["gated_runs"]
        assert int(row["blocked"]) == counts[row["policy"]], row


def test_excusals_match_an_independent_count(built: dict[str, Any]) -> None:
    items: Counter[tuple[str, str, str]] = Counter()
    runs: Counter[tuple[str, str, str]] = Counter()
    for r in built["records"]:
        for quirk, n in (r["excused"] or {}).items():
            items[(quirk, r["target"], r["fault_package"])] += n
            runs[(quirk, r["target"], r["fault_package"])] += n > 0
    rows = _csv(built["out"] / "excusals.csv")
    assert {(r["quirk"], r["target"], r["fault_package"]): int(r["items_excused"]) for r in rows} == items
    assert {(r["quirk"], r["target"], r["fault_package"]): int(r["runs_excused"]) for r in rows} == runs


def test_failure_clusters_explain_every_failure_once(built: dict[str, Any]) -> None:
    failures = Counter(r["kind"] for r in built["records"] if r["outcome"] in ("failed", "error"))
    rows = _csv(built["out"] / "failure_clusters.csv")
    for kind, n in failures.items():
        mine = [r for r in rows if r["kind"] == kind]
        assert sum(int(r["failures"]) for r in mine) == n
        assert float(mine[-1]["cumulative_share"]) == pytest.approx(1.0)
        assert sum(float(r["share"]) for r in mine) == pytest.approx(1.0)


def test_behaviour_trend_adds_up_to_the_behaviour_runs(built: dict[str, Any]) -> None:
    runs = {
        (r["behaviour_id"], r["target"]): int(r["runs"])
        for r in _csv(built["out"] / "behaviour_flakiness.csv")
    }
    for axis in ("commit", "target_version"):
        per: Counter[tuple[str, str]] = Counter()
        for r in _csv(built["out"] / "behaviour_trend.csv"):
            if r["axis"] == axis:
                per[(r["behaviour_id"], r["target"])] += int(r["runs"])
        assert per == runs, axis


_PROBE_HEAD = (
    "<script>window.__errors=[];addEventListener('error',e=>__errors.push(String(e.message)));</script>"
)
_PROBE_TAIL = """<script>
const r = {errors: window.__errors, plots: []};
for (const s of document.querySelectorAll('svg.plot')) {
  const b = s.getBoundingClientRect();
  const marks = [...s.querySelectorAll('.mark')].filter(m => {
    const q = m.getBoundingClientRect(); return q.width > 0 || q.height > 0; }).length;
  r.plots.push({label: s.getAttribute('aria-label'), w: b.width, h: b.height, marks: marks});
}
r.sections = {};
for (const h of document.querySelectorAll('h2[id]')) {
  let rows = 0;
  for (let e = h.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
    const tables = e.tagName === 'TABLE' ? [e] : [...e.querySelectorAll('table')];
    for (const t of tables) {
      rows += [...t.querySelectorAll('tr')].filter(tr => tr.getBoundingClientRect().height > 0).length - 1;
    }
  }
  r.sections[h.id] = rows;
}
const pre = document.createElement('pre'); pre.id = '__probe'; pre.textContent = JSON.stringify(r);
document.body.appendChild(pre);
</script>"""


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def test_report_html_is_self_contained(built: dict[str, Any]) -> None:
    page = (built["out"] / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""\b(src|href)\s*=|url\(|@import|<script""", page)
    assert "runs-extra.jsonl" in page  # the rejected record is listed with its file


def test_report_html_renders_its_plots_in_chromium(built: dict[str, Any]) -> None:
    root: Path = built["root"]
    page = (built["out"] / "report.html").read_text(encoding="utf-8")
    probe = root / "probe.html"
    probe.write_text(
        page.replace("<head>", "<head>" + _PROBE_HEAD, 1).replace("</body>", _PROBE_TAIL + "</body>")
    )
    done = _chromium(["--dump-dom", probe.as_uri()], root / "profile-dom")
    match = re.search(r'<pre id="__probe">(.*?)</pre>', done.stdout, re.S)
    assert match, f"chromium exit {done.returncode}: {done.stderr[-2000:]}"
    result = json.loads(html.unescape(match.group(1)))
    assert result["errors"] == []
    plots = {p["label"]: p for p in result["plots"]}
    assert all(p["w"] > 100 and p["h"] > 50 for p in plots.values()), plots
    assert plots["Worst flakes: failure rate with Wilson 95 % interval"]["marks"] >= 5
    assert plots["Failure rate by day"]["marks"] >= 1
    assert [p for label, p in plots.items() if label.endswith(" distribution") and p["marks"] > 3]
    assert [p for label, p in plots.items() if label.endswith(": p95 by day") and p["marks"] >= 1]
    assert plots["Gated runs blocked under each policy"]["marks"] == 4 * 3  # 4 policies × 3 targets
    sections = result["sections"]
    for section in ("gate-policies", "impact", "policy-backtest", "failure-clusters", "excusals",
                    "behaviour-trend"):  # fmt: skip
        assert sections[section] > 0, (section, sections)
    assert sections["gate-policies"] == 12
    shot = root / "report.png"
    _chromium(
        ["--screenshot=" + str(shot), "--window-size=1280,2400", (built["out"] / "report.html").as_uri()],
        root / "profile-shot",
    )
    assert shot.is_file()
    assert shot.stat().st_size > 20_000
