"""The report over what the kit really leaves behind: a chaos results directory with kept valid
(``--keep-all``), invalid (a mutant reference whose controller writes are not fenced) and unknown
(a target whose nodes never start) runs — each run directory full of JSON-lines files that are
not run records (history, transaction records, request journals, manifests) — and a
conformance results directory (records, allure results, certificate). Built strictly, it reads the
run records only, says in one line what it skipped, and counts once a copy of the chaos records
rewritten as an older kit wrote them (schema version 1: no ``record_id``, no ``excused``)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.reports

ROOT = Path(__file__).resolve().parents[2]
MUTANT = ROOT / "conformance" / "mutants" / "fenced-writes-without-epoch-check.patch"
TIMEOUT_S = 1800  # ceilings for a loaded 2-core machine; each step takes about a minute when idle


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, check=False
    )


def _mutant_target(root: Path) -> Path:
    """The reference with one known bug, as a target: a patched copy of ``reference_controller``
    that the nodes import first (their cwd)."""
    copy = root / "mutant"
    shutil.copytree(ROOT / "reference_controller", copy / "reference_controller",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    subprocess.run(["git", "apply", "-p1", str(MUTANT)], cwd=copy, check=True, capture_output=True)
    reference = (ROOT / "cluster" / "target_defs" / "reference.toml").read_text(encoding="utf-8")
    toml = reference.split("\n[container]")[0].replace('name = "reference"', 'name = "reference-mutant"')
    toml = toml.replace('cwd = "{repo_root}"', f'cwd = "{copy}"')
    path = root / "mutant.toml"
    path.write_text(toml, encoding="utf-8")
    return path


def _broken_target(root: Path) -> Path:
    path = root / "broken.toml"
    path.write_text('name = "broken"\ncommand = ["{python}", "-c", "raise SystemExit(3)", "{config}"]\n'
                    'cwd = "{node_dir}"\n', encoding="utf-8")  # fmt: skip
    return path


def _chaos(out: Path, seed: int, target: str, status: int, *extra: str) -> str:
    """One run; ``status``: 0 valid, 1 invalid, 3 could not be judged (the runner's exit codes)."""
    done = _run(
        "-m", "chaos", "run", "--runs", "1", "--seed", str(seed), "--parallel", "1", "--scenario", "links",
        "--target", target, "--out", str(out), "--no-progress", *extra,
    )  # fmt: skip
    assert done.returncode == status, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real")
    chaos = root / "chaos-results"
    _chaos(chaos, 7, "reference", 0, "--keep-all")
    _chaos(chaos, 8, str(_mutant_target(root)), 1)
    _chaos(chaos, 9, str(_broken_target(root)), 3)
    done = _run("-m", "conformance", "-n", "2", "--ids", "EPOCH-1", "--results-dir", str(root / "results"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def _lines(paths: list[Path]) -> list[dict[str, object]]:
    return [
        json.loads(line) for p in paths for line in p.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def test_the_chaos_results_hold_kept_valid_invalid_and_unknown_runs(results: Path) -> None:
    records = _lines(sorted((results / "chaos-results").glob("chaos-runs-*.jsonl")))
    assert Counter((r["target"], r["outcome"]) for r in records) == {
        ("reference", "passed"): 1, ("reference-mutant", "failed"): 1, ("broken", "error"): 1,
    }  # fmt: skip
    assert all(r["schema_version"] == 2 for r in records)
    kept = [d for d in (results / "chaos-results").glob("*/runs/*") if d.is_dir()]
    assert len(kept) == 3
    assert all((d / "manifest.json").is_file() for d in kept)


def test_each_chaos_record_carries_what_its_verdict_excused(results: Path) -> None:
    """``excused`` is the quirk registry's count per quirk from the run's own verdict (an empty
    object when it excused nothing); null when no checker ran (the nodes never started)."""
    records = _lines(sorted((results / "chaos-results").glob("chaos-runs-*.jsonl")))
    verdicts = {
        json.loads((d / "run.json").read_text(encoding="utf-8"))["seed"]: json.loads(
            (d / "verdict.json").read_text(encoding="utf-8")
        )
        for d in (results / "chaos-results").glob("*/runs/*")
        if (d / "verdict.json").is_file()
    }
    for r in records:
        if r["target"] == "broken":
            assert r["excused"] is None, r
            continue
        excused = verdicts[r["seed"]]["excused"]
        assert r["excused"] == {quirk: len(items) for quirk, items in excused.items()}, r
    artefacts = list((results / "chaos-results").glob("*/runs/*/**/*.jsonl"))
    assert len(artefacts) >= 8  # histories, txn records, request journals: what issue 20 tripped on


def _not_read(inputs: list[Path]) -> list[Path]:
    """Every file under ``inputs`` that is not a run record, JUnit XML or allure result, listed
    independently of the reader (hidden and ``_`` paths are never walked)."""
    out = []
    for d in inputs:
        for p in d.rglob("*"):
            if not p.is_file() or any(part.startswith((".", "_")) for part in p.relative_to(d).parts):
                continue
            if not p.name.startswith(("runs-", "chaos-runs-")) and not p.name.endswith(
                ("-result.json", ".xml")
            ):
                out.append(p)
    return out


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _as_version_1(record: dict[str, object]) -> dict[str, object]:
    old = {k: v for k, v in record.items() if k not in ("record_id", "excused")}
    return old | {"schema_version": 1}


def test_the_report_reads_run_records_only_and_counts_a_copy_once(results: Path) -> None:
    copy = results / "copy"
    copy.mkdir(exist_ok=True)
    for f in (results / "chaos-results").glob("chaos-runs-*.jsonl"):
        old = [json.dumps(_as_version_1(r)) + "\n" for r in _lines([f])]
        (copy / f.name).write_text("".join(old), encoding="utf-8")
    out = results / "report"
    inputs = [results / "chaos-results", results / "results", copy]
    done = _run("-m", "reports", "build", "--input", *map(str, inputs), "--out", str(out),
                "--driver-memory", "1g")  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    conformance = _lines(sorted((results / "results").glob("runs-*.jsonl")))
    assert conformance
    assert all(r["schema_version"] == 2 for r in conformance)
    assert all(r["record_id"] == f"{r['run_id']}:{r['test_id']}" for r in conformance)
    skipped = _not_read(inputs)
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("reports: skipped "))
    assert line.startswith(
        f"reports: skipped {len(skipped)} file(s) that are not run records, JUnit XML or allure "
        "results (e.g. "
    )
    example = Path(line.rsplit("(e.g. ", 1)[1].rstrip(")"))
    assert example in skipped
    assert example.name.endswith(".jsonl")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["records"]["by_source_and_kind"] == {
        "records/chaos-run": 3,
        "records/conformance-test": len(conformance),
    }
    assert summary["records"]["duplicates"] == {"dropped": 3, "ids": 3, "conflicting": 0}
    assert summary["rejected"]["total"] == 0
    assert summary["inputs"]["skipped_files"] == len(skipped)
    assert f"records: {3 + len(conformance)}  rejected: 0" in done.stdout
    assert "3 duplicate record(s) dropped" in done.stdout
    rows = {(r["kind"], r["test_id"], r["target"]): r for r in _csv(out / "flakiness.csv")}
    for target, outcome in (("reference", "passed"), ("reference-mutant", "failed"), ("broken", "error")):
        row = rows[("chaos-run", "chaos/links", target)]
        assert (row["runs"], row[outcome]) == ("1", "1"), row  # once, though given twice
    for r in conformance:
        row = rows[("conformance-test", str(r["test_id"]), "reference")]
        assert (row["runs"], row[str(r["outcome"])]) == ("1", "1"), row


def test_the_old_way_of_reading_everything_would_have_rejected_the_artefacts(results: Path) -> None:
    """The JSON-lines files the report skipped hold no run record: reading every ``*.jsonl`` as
    records (what the report did before) rejects every one of their lines."""
    artefacts = sorted((results / "chaos-results").glob("*/runs/*/**/*.jsonl"))
    lines = _lines(artefacts)
    assert lines
    assert not [d for d in lines if {"schema_version", "kind", "run_id", "test_id"} <= d.keys()]
