"""A run's evidence is sealed by a manifest written last; evidence that cannot be written makes the
run unknown (real files on a real file system; the judged inputs are hand-made)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.checkers import aggregate, check_all
from chaos.generator import generate
from chaos.run.artefacts import EVIDENCE_ERROR, Judged, write_artefacts
from chaos.run.judged import judge_run_dir
from chaos.run.manifest import MANIFEST, verify
from chaos.scenarios import SCENARIOS
from tests.chaos.checkers.builders import SESSION_A, Log, final_state, history_of

pytestmark = [pytest.mark.unit, pytest.mark.chaos]


def judged() -> Judged:
    log = Log()
    log.elect(SESSION_A, 1)
    ops = history_of(("client-0", "create_topic", {"topic": "t"}, "fail")).ops
    return Judged(ops, log.records, final_state())


def seal(run_dir: Path, what: Judged) -> tuple[str, str | None]:
    verdicts = check_all(what.ops, what.records, what.final_state)
    schedule = generate(SCENARIOS["process"], 1)
    verdict = aggregate(verdicts)
    sealed = write_artefacts(run_dir, None, None, what, verdicts, verdict, None, schedule, None, "abc123")
    return sealed.verdict, sealed.reason


def test_a_sealed_run_directory_verifies_and_is_judged_as_it_was(tmp_path: Path) -> None:
    verdict, reason = seal(tmp_path, judged())
    assert (verdict, reason) == ("unknown", None)  # no request journals: that checker is unknown
    listed = verify(tmp_path)
    assert set(listed) == {
        "history.jsonl",
        "txn-records.jsonl",
        "final-state.json",
        "verdict.json",
        "schedule.txt",
        "txn-log.txt",
    }
    assert json.loads((tmp_path / MANIFEST).read_text())["kit"]["commit"] == "abc123"
    body = json.loads((tmp_path / "verdict.json").read_text())
    assert body["excused"] == {}
    assert all("excused" in c for c in body["checkers"])
    again = judge_run_dir(tmp_path)
    assert (again.verdict, again.reason, again.recorded) == (verdict, None, verdict)
    assert [v.to_json() for v in again.verdicts] == body["checkers"]


def test_evidence_that_cannot_be_written_makes_the_run_unknown_and_leaves_no_manifest(tmp_path: Path) -> None:
    (tmp_path / "txn-records.jsonl").mkdir()  # the records cannot be written there
    verdict, reason = seal(tmp_path, judged())
    assert verdict == "unknown"
    assert reason is not None
    assert reason.startswith("evidence could not be written: txn-records.jsonl: IsADirectoryError")
    assert not (tmp_path / MANIFEST).exists()
    assert "txn-records.jsonl" in (tmp_path / EVIDENCE_ERROR).read_text()
    assert json.loads((tmp_path / "verdict.json").read_text())["verdict"] == "unknown"
    again = judge_run_dir(tmp_path)
    assert again.verdict == "unknown"
    assert again.reason is not None
    assert "evidence could not be written: txn-records.jsonl" in again.reason
