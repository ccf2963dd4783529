"""Which files are run records: the writers' layout at any depth, JSON-lines files whose first
line is a record, files named explicitly — and one line on everything skipped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from reports.errors import InputError
from reports.inputs import discover
from tests.reports.conftest import record

pytestmark = pytest.mark.unit

LINE = json.dumps(record()) + "\n"


def _tree(root: Path) -> dict[str, Path]:
    """A results tree as the conformance suite and the chaos runner leave it (kept run dirs)."""
    files = {
        "conformance": root / "conformance" / "runs-gw0.jsonl",
        "chaos": root / "chaos" / "chaos-runs-w0.jsonl",
        "chaos_gz": root / "chaos" / "old" / "chaos-runs-w1.jsonl.gz",
        "sim": root / "sim" / "sim-runs-s0.jsonl",
        "renamed": root / "exports" / "nightly-2026-01.jsonl",  # records under another name
        "part": root / "exports" / "part-00000-abc.json.gz",
        "history": root / "chaos" / "camp" / "runs" / "links-00000-s7" / "history.jsonl",
        "txn": root / "chaos" / "camp" / "runs" / "links-00000-s7" / "txn-records.jsonl",
        "journal": root
        / "chaos"
        / "camp"
        / "runs"
        / "links-00000-s7"
        / "node-1"
        / "controller-requests.jsonl",
        "log": root / "chaos" / "camp" / "runs" / "links-00000-s7" / "node-1" / "server.log",
        "verdict": root / "chaos" / "camp" / "runs" / "links-00000-s7" / "verdict.json",
        "empty": root / "chaos" / "camp" / "empty.jsonl",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    for key in ("conformance", "chaos", "sim", "renamed"):
        files[key].write_text(LINE, encoding="utf-8")
    for key in ("chaos_gz", "part"):
        with gzip.open(files[key], "wt", encoding="utf-8") as fh:
            fh.write(LINE)
    files["history"].write_text('{"type":"invoke","f":"create_topic","process":0}\n', encoding="utf-8")
    files["txn"].write_text('{"zxid":1,"type":"create","path":"/controller"}\n', encoding="utf-8")
    files["journal"].write_text('{"api":"LeaderAndIsr","controller_epoch":1}\n', encoding="utf-8")
    files["log"].write_text("INFO started\n", encoding="utf-8")
    files["verdict"].write_text('{"verdict":"valid"}', encoding="utf-8")
    files["empty"].write_text("\n", encoding="utf-8")
    return files


def test_a_results_tree_yields_its_run_records_and_skips_run_artefacts(tmp_path: Path) -> None:
    files = _tree(tmp_path)
    inputs = discover([str(tmp_path)])
    readable = {"conformance", "chaos", "chaos_gz", "sim", "renamed", "part"}
    assert sorted(inputs.records) == sorted(str(files[k].resolve()) for k in readable)
    assert sorted(inputs.skipped) == sorted(files[k] for k in files if k not in readable)
    line = inputs.skipped_line()
    assert line is not None
    assert line.startswith("skipped 6 file(s) that are not run records, JUnit XML or allure results (e.g. ")
    assert line.endswith(".jsonl)")  # the example is one a reader could mistake for records


def test_a_glob_is_filtered_like_a_directory(tmp_path: Path) -> None:
    files = _tree(tmp_path)
    inputs = discover([f"{tmp_path}/chaos/**/*.jsonl"])
    assert inputs.records == [str(files["chaos"].resolve())]
    assert files["history"] in inputs.skipped


def test_a_file_named_explicitly_is_read_whatever_its_name(tmp_path: Path) -> None:
    files = _tree(tmp_path)
    assert discover([str(files["history"])]).records == [str(files["history"].resolve())]


def test_a_directory_of_run_artefacts_only_is_an_error_that_says_what_was_skipped(tmp_path: Path) -> None:
    files = _tree(tmp_path)
    run_dir = files["history"].parent
    with pytest.raises(InputError) as err:
        discover([str(run_dir)])
    text = str(err.value)
    assert text.startswith(
        f"input {run_dir}: no run records (runs-*.jsonl, chaos-runs-*.jsonl, sim-runs-*.jsonl"
    )
    assert text.endswith("in it (5 other file(s) skipped)")  # history, txn, verdict, journal, log
