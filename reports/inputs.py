"""Input discovery and the JUnit XML / allure-result mappings (reports, drivers ring; no Spark).

``discover`` turns the ``--input`` arguments (files, directories, globs, URIs) into three lists,
and counts what it skipped:

- run records, found by the writers' file layout at any depth: ``runs-*.jsonl``,
  ``chaos-runs-*.jsonl``, ``sim-runs-*.jsonl`` (:data:`records.run_record.STREAMS`) and Spark's
  ``part-*.json`` (each optionally ``.gz``); any other JSON-lines file (``*.jsonl``, ``*.ndjson``,
  optionally ``.gz``) only if its first line is a run record (it has ``schema_version``,
  ``kind``, ``run_id`` and ``test_id``), so a kept chaos run's history, transaction records and
  request journals are skipped; a file named explicitly (not through a directory or a glob) that
  is not XML or an allure result is read as records whatever its name; URIs (``hdfs://``,
  ``s3a://`` …) are passed to Spark as they are;
- JUnit XML: ``*.xml``;
- allure results: ``*-result.json`` (containers, attachments and other files are skipped).

JUnit testcases and allure results become rows of the canonical record shape (schema version 2,
``kind = conformance-test``, ``fault_package = none``), with the window in which the execution
happened (``window_start`` / ``window_end``) so the reader can drop the ones a run record
already describes. JUnit has no per-test start: every testcase of a suite starts at the suite's
``timestamp``. The pytest node id is rebuilt from ``classname`` (trailing ``Test*`` parts are
classes) or from allure's ``titlePath`` (path segments, then class names).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from records.run_record import STREAMS, derive_record_id, run_order_key
from reports.errors import InputError

__all__ = ["Defaults", "Inputs", "Rejected", "discover", "locate_lines", "parse_allure", "parse_junit"]

_JSON_LINES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
_STREAM_FILE = re.compile(rf"^(?:{'|'.join(map(re.escape, STREAMS))})-.+\.jsonl(?:\.gz)?$")
_SPARK_PART = re.compile(r"^part-.+\.json(?:\.gz)?$")
_RECORD_KEYS = frozenset({"schema_version", "kind", "run_id", "test_id"})


@dataclass(frozen=True)
class Defaults:
    """Values a JUnit / allure input does not carry (testsuite properties / labels win)."""

    target: str = "reference"
    profile: str = "2.5"


@dataclass(frozen=True)
class Rejected:
    """An input that failed the schema: where (file, line when known) and why."""

    file: str
    line: int | None
    problems: str
    text: str = ""


@dataclass
class Inputs:
    records: list[str] = field(default_factory=list)
    junit: list[Path] = field(default_factory=list)
    allure: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)

    @property
    def files(self) -> int:
        return len(self.records) + len(self.junit) + len(self.allure)

    def record_bytes(self) -> int:
        """Size of the local record files (URIs count 0)."""
        return sum(os.path.getsize(p) for p in self.records if "://" not in p and os.path.isfile(p))

    def skipped_line(self) -> str | None:
        """One line on what was not read: how many files, and one of them (a JSON-lines one if
        any, since those are the ones a reader might take for records)."""
        if not self.skipped:
            return None
        lines = [p for p in self.skipped if p.name.endswith(_JSON_LINES)]
        example = (lines or self.skipped)[0]
        return (
            f"skipped {len(self.skipped)} file(s) that are not run records, JUnit XML or allure "
            f"results (e.g. {example})"
        )


def _first_line_is_a_record(path: Path) -> bool:
    """The first non-blank line of a JSON-lines file is a JSON object with a run record's keys."""
    try:
        for line in _open_text(str(path)):
            if line.strip():
                head = json.loads(line)
                return isinstance(head, dict) and head.keys() >= _RECORD_KEYS
    except (OSError, ValueError, EOFError):
        return False
    return False


def _classify(path: Path, explicit: bool) -> str:
    name = path.name
    if name.endswith("-result.json"):
        return "allure"
    if name.endswith(".xml"):
        return "junit"
    if _STREAM_FILE.match(name) or _SPARK_PART.match(name) or explicit:
        return "records"
    if name.endswith(_JSON_LINES) and _first_line_is_a_record(path):
        return "records"
    return "skipped"


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for f in sorted(filenames):
            if not f.startswith((".", "_")):
                yield Path(dirpath, f)


def _add(inputs: Inputs, path: Path, explicit: bool) -> None:
    kind = _classify(path, explicit)
    if kind == "records":
        inputs.records.append(str(path.resolve()))
    elif kind == "junit":
        inputs.junit.append(path)
    elif kind == "allure":
        inputs.allure.append(path)
    else:
        inputs.skipped.append(path)


def _expand(spec: str) -> tuple[list[Path], bool]:
    """The paths ``spec`` names, and whether it named them itself (not through a glob)."""
    if any(c in spec for c in "*?["):
        matches = sorted(glob.glob(spec, recursive=True))
        if not matches:
            raise InputError(f"input {spec}: no file matches this pattern")
        return [Path(m) for m in matches], False
    path = Path(spec)
    if not path.exists():
        raise InputError(f"input {spec}: no such file or directory")
    return [path], True


def discover(specs: Sequence[str]) -> Inputs:
    """Classify every input file; an input that is missing or yields nothing is an error."""
    if not specs:
        raise InputError("no --input given: name run-record files, directories or globs")
    inputs = Inputs()
    for spec in specs:
        if "://" in spec and not spec.startswith("file://"):
            inputs.records.append(spec)
            continue
        before, skipped_before = inputs.files, len(inputs.skipped)
        paths, named = _expand(spec.removeprefix("file://"))
        for path in paths:
            if path.is_dir():
                for f in _walk(path):
                    _add(inputs, f, explicit=False)
            else:
                _add(inputs, path, explicit=named)
        if inputs.files == before:
            skipped = len(inputs.skipped) - skipped_before
            raise InputError(
                f"input {spec}: no run records ({', '.join(f'{s}-*.jsonl' for s in STREAMS)}, or "
                "part-*.json, each optionally .gz), JUnit XML (*.xml) or allure results "
                f"(*-result.json) in it{f' ({skipped} other file(s) skipped)' if skipped else ''}"
            )
    return inputs


def _row(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": 2,
        "kind": "conformance-test",
        "fault_package": "none",
        "seed": None,
        "phase_metrics": [],
        "commit": None,
        "worker": None,
        "target_version": None,
        "behaviour_ids": [],
        "excused": None,
    }
    row = base | kw
    row["record_id"] = derive_record_id(row["kind"], row["run_id"], row["test_id"], row["seed"])
    return row


def _first_line(text: str | None) -> str | None:
    if not text or not text.strip():
        return None
    return text.strip().splitlines()[0][:500]


def _node_id(classname: str, name: str) -> str:
    parts = classname.split(".")
    classes: list[str] = []
    while len(parts) > 1 and parts[-1][:1].isupper():
        classes.insert(0, parts.pop())
    return "::".join(["/".join(parts) + ".py", *classes, name])


def _ts(text: str | None) -> datetime:
    ts = datetime.fromisoformat(text) if text else datetime(1970, 1, 1, tzinfo=UTC)
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _run(key: str, started: datetime) -> tuple[str, str]:
    run_id = hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:12]
    return run_id, run_order_key(started, run_id)


def _junit_case(case: ET.Element, suite: dict[str, Any]) -> dict[str, Any]:
    outcome, reason = "passed", None
    for tag, verdict in (("skipped", "skipped"), ("error", "error"), ("failure", "failed")):
        el = case.find(tag)
        if el is not None:
            outcome, reason = verdict, _first_line(el.get("message") or el.text)
    duration = float(case.get("time") or 0.0)
    return _row(
        test_id=_node_id(case.get("classname", ""), case.get("name", "")),
        outcome=outcome,
        reason=reason,
        duration_s=duration,
        finished_at=suite["started_at"] + timedelta(seconds=duration),
        **suite,
    )


def parse_junit(path: Path, defaults: Defaults) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """Rows for every testcase of a JUnit XML file (or the reason it cannot be read)."""
    try:
        root = ET.parse(path).getroot()  # noqa: S314 - a local CI artefact the user named
    except (ET.ParseError, OSError) as exc:
        line = exc.position[0] if isinstance(exc, ET.ParseError) else None
        return [], [Rejected(str(path), line, f"not valid JUnit XML: {exc}")]
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    rows: list[dict[str, Any]] = []
    for suite in suites:
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        started = _ts(suite.get("timestamp"))
        run_id, run_order = _run(f"{path.resolve()}|{suite.get('timestamp')}", started)
        common = {
            "run_id": run_id,
            "run_order": run_order,
            "target": props.get("target") or defaults.target,
            "profile": props.get("profile") or defaults.profile,
            "host": suite.get("hostname") or "unknown",
            "started_at": started,
            "window_start": started,
            "window_end": started + timedelta(seconds=float(suite.get("time") or 0.0)),
            "source": "junit",
            "source_file": str(path),
        }
        rows += [_junit_case(case, common) for case in suite.iter("testcase")]
    return rows, []


_ALLURE_STATUS = {"passed": "passed", "failed": "failed", "broken": "error", "skipped": "skipped"}


def _allure_test_id(result: dict[str, Any]) -> str:
    segments = [str(s) for s in result.get("titlePath") or []]
    full = str(result.get("fullName") or "")
    function = full.rsplit("#", 1)[-1]
    name = str(result.get("name") or function)
    if function and not name.startswith(function):
        params = [str(p.get("value")) for p in result.get("parameters") or []]
        name = function + (f"[{'-'.join(params)}]" if params else "")
    py = [i for i, s in enumerate(segments) if s.endswith(".py")]
    if not py:
        return f"{full.rsplit('#', 1)[0]}::{name}" if full else name
    i = py[-1]
    return "::".join(["/".join(segments[: i + 1]), *segments[i + 1 :], name])


def _allure_row(
    result: dict[str, Any], path: Path, run: tuple[str, str], defaults: Defaults
) -> dict[str, Any]:
    labels: dict[str, list[str]] = defaultdict(list)
    for label in result.get("labels") or []:
        labels[str(label.get("name"))].append(str(label.get("value")))
    start = datetime.fromtimestamp(int(result["start"]) / 1000, UTC)
    stop = datetime.fromtimestamp(int(result.get("stop") or result["start"]) / 1000, UTC)
    return _row(
        kind=(labels.get("kind") or ["conformance-test"])[0],
        run_id=run[0],
        run_order=run[1],
        test_id=_allure_test_id(result),
        behaviour_ids=labels.get("feature", []),
        target=(labels.get("target") or [defaults.target])[0],
        profile=(labels.get("profile") or [defaults.profile])[0],
        outcome=_ALLURE_STATUS.get(str(result.get("status")), "error"),
        reason=_first_line((result.get("statusDetails") or {}).get("message")),
        duration_s=max(0.0, (stop - start).total_seconds()),
        host=(labels.get("host") or ["unknown"])[0],
        started_at=start,
        finished_at=stop,
        window_start=start,
        window_end=stop,
        source="allure",
        source_file=str(path),
    )


def parse_allure(paths: Sequence[Path], defaults: Defaults) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """Rows for allure ``*-result.json`` files; one run per results directory."""
    loaded: dict[Path, list[tuple[Path, dict[str, Any]]]] = defaultdict(list)
    rejected: list[Rejected] = []
    for path in paths:
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
            int(result["start"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            rejected.append(Rejected(str(path), None, f"not an allure result with a start time: {exc!r}"))
            continue
        loaded[path.parent.resolve()].append((path, result))
    rows: list[dict[str, Any]] = []
    for directory, results in sorted(loaded.items()):
        first = min(int(r["start"]) for _, r in results)
        run = _run(str(directory), datetime.fromtimestamp(first / 1000, UTC))
        rows += [_allure_row(r, p, run, defaults) for p, r in results]
    return rows, rejected


def _open_text(path: str) -> Iterator[str]:
    local = path.removeprefix("file:")
    opener = gzip.open if local.endswith(".gz") else open
    with opener(local, "rt", encoding="utf-8", errors="replace") as fh:
        yield from fh


def locate_lines(rows: Sequence[tuple[str, str, str]]) -> list[Rejected]:
    """``(file, line text, problems)`` → :class:`Rejected` with 1-based line numbers, found by
    reading the (few) files that have rejected lines; sorted by file and line."""
    wanted: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for file, text, problems in rows:
        wanted[file].append((text, problems))
    out: list[Rejected] = []
    for file, items in wanted.items():
        pending: dict[str, list[str]] = defaultdict(list)
        for text, problems in items:
            pending[text].append(problems)
        try:
            for n, line in enumerate(_open_text(file), 1):
                text = line.rstrip("\r\n")
                if pending.get(text):
                    out.append(Rejected(_display(file), n, pending[text].pop(0), text[:300]))
        except OSError:
            pass
        out += [Rejected(_display(file), None, p, t[:300]) for t, ps in pending.items() for p in ps]
    return sorted(out, key=lambda r: (r.file, r.line or 0))


def _display(uri: str) -> str:
    return uri.removeprefix("file://").removeprefix("file:")
