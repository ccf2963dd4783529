"""The whole job in-process on synthetic records: numbers recomputed independently in plain
Python from the same files, the output files, and report.html rendered by headless chromium."""

from __future__ import annotations

import csv
import gzip
import html
import itertools
import json
import re
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from reports import synth
from reports.job import BuildOptions, build

pytestmark = pytest.mark.reports

CHROMIUM = "/usr/bin/chromium"
RECORDS = 6_000  # ten runs of the 600 synthetic tests, spread over 4 days
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


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("e2e")
    data = root / "records"
    synth.write(synth.synthetic_records(spark, RECORDS, seed=5, days=4), str(data))
    (data / "extra.jsonl").write_text('{"schema_version": 1}\n', encoding="utf-8")  # one bad record
    out = root / "out"
    summary = build(spark, BuildOptions(inputs=(str(data),), out=out, permissive=True), log=lambda _: None)
    lines = []
    for f in sorted(data.glob("part-*.json.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            lines += [json.loads(x) for x in fh]
    return {"out": out, "summary": summary, "records": lines, "root": root}


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_output_files_and_columns(built: dict[str, Any]) -> None:
    out: Path = built["out"]
    for name in ("report.html", "summary.json", "flakiness.csv", "latency.csv", "behaviour_flakiness.csv",
                 "rejected.csv", "parquet/flakiness", "parquet/latency"):  # fmt: skip
        assert (out / name).exists(), name
    with (out / "flakiness.csv").open(encoding="utf-8") as fh:
        assert next(csv.reader(fh))[: len(FLAKINESS_COLUMNS)] == FLAKINESS_COLUMNS
    with (out / "latency.csv").open(encoding="utf-8") as fh:
        assert next(csv.reader(fh))[: len(LATENCY_COLUMNS)] == LATENCY_COLUMNS
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["records"]["total"] == RECORDS
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
    assert "extra.jsonl" in page  # the rejected record is listed with its file


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
    shot = root / "report.png"
    _chromium(
        ["--screenshot=" + str(shot), "--window-size=1280,2400", (built["out"] / "report.html").as_uri()],
        root / "profile-shot",
    )
    assert shot.is_file()
    assert shot.stat().st_size > 20_000
