"""Judge a kept run again from its directory, after verifying its evidence (ring: drivers).

``history.jsonl``, ``txn-records.jsonl`` and ``final-state.json`` are exactly what the checkers
read at the end of a run (:mod:`chaos.run.artefacts`); ``python -m chaos check RUN_DIR`` feeds them
to the current checkers, so a checker change can be tried on kept runs without a cluster. Before
anything is judged the directory is checked against its manifest (:mod:`chaos.run.manifest`) and
every judged file is parsed: a directory that fails either is judged ``unknown`` with the reason
(the file, and the line for a bad line) — never valid, never invalid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from chaos.checkers import Verdict, aggregate, check_all
from chaos.checkers.final_state import FinalState, final_state_from_json
from chaos.checkers.txnjson import record_from_json
from chaos.history import HistoryError, Op, validate
from chaos.run.artefacts import EVIDENCE_ERROR
from chaos.run.manifest import NO_MANIFEST, EvidenceError, verify
from probes.txnrecords import TxnRecord

__all__ = [
    "FINAL_STATE",
    "HISTORY",
    "TXN_RECORDS",
    "JudgedRun",
    "Judgement",
    "judge_run_dir",
    "load_history",
    "load_judged_run",
    "load_txn_records",
]

HISTORY = "history.jsonl"
TXN_RECORDS = "txn-records.jsonl"
FINAL_STATE = "final-state.json"
VERDICT = "verdict.json"


@dataclass(frozen=True)
class JudgedRun:
    history: tuple[Op, ...]
    txn_records: list[TxnRecord] | None
    final_state: FinalState | None
    recorded: str | None  # the verdict the run recorded


@dataclass(frozen=True)
class Judgement:
    """A run directory judged again: ``reason`` says why it is unknown when its evidence could
    not be trusted (then ``verdicts`` is empty)."""

    run_dir: Path
    verdict: str
    verdicts: tuple[Verdict, ...] = ()
    recorded: str | None = None
    reason: str | None = None


def load_txn_records(path: Path) -> list[TxnRecord]:
    """The records of a ``txn-records.jsonl``; a bad line is an :class:`EvidenceError` naming it."""
    records = []
    for lineno, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(record_from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EvidenceError(
                f"{path.name} line {lineno}: not a transaction record ({type(exc).__name__}: {exc})"
            ) from None
    return records


def load_history(path: Path) -> tuple[Op, ...]:
    """The ops of a ``history.jsonl``; a bad line is an :class:`EvidenceError` naming it."""
    ops = []
    for lineno, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ops.append(Op.from_json(json.loads(line)))
        except ValueError as exc:  # HistoryError and json's errors alike
            raise EvidenceError(f"{path.name} line {lineno}: not a history op ({exc})") from None
    try:
        validate(ops)
    except HistoryError as exc:
        raise EvidenceError(f"{path.name}: {exc}") from None
    return tuple(ops)


def load_judged_run(run_dir: Path) -> JudgedRun:
    """The judged inputs of ``run_dir``, verified; :class:`EvidenceError` says why they cannot be."""
    try:
        listed = verify(run_dir, required=(HISTORY,))
    except EvidenceError as exc:
        failed = run_dir / EVIDENCE_ERROR
        if str(exc) == NO_MANIFEST and failed.is_file():
            written = "; ".join(_text(failed).splitlines())
            raise EvidenceError(f"evidence could not be written: {written}") from None
        raise
    if TXN_RECORDS not in listed and FINAL_STATE not in listed:
        raise EvidenceError(
            f"neither {TXN_RECORDS} nor {FINAL_STATE} (the run's cluster never started): nothing to judge"
        )
    for name in (HISTORY, TXN_RECORDS, FINAL_STATE):
        if name in listed and listed[name].bytes == 0:
            raise EvidenceError(f"{name}: empty (a run with a cluster never writes it empty)")
    history = load_history(run_dir / HISTORY)
    records = load_txn_records(run_dir / TXN_RECORDS) if TXN_RECORDS in listed else None
    final = _final_state(run_dir / FINAL_STATE) if FINAL_STATE in listed else None
    return JudgedRun(history, records, final, _recorded(run_dir / VERDICT) if VERDICT in listed else None)


def judge_run_dir(run_dir: Path) -> Judgement:
    """``run_dir`` judged with the current checkers, or ``unknown`` with the reason its evidence
    cannot be trusted; never raises."""
    try:
        run = load_judged_run(run_dir)
    except EvidenceError as exc:
        return Judgement(run_dir, "unknown", reason=str(exc))
    except Exception as exc:  # one broken directory must not stop a batch
        return Judgement(run_dir, "unknown", reason=f"could not be read: {type(exc).__name__}: {exc}")
    verdicts = tuple(check_all(run.history, run.txn_records, run.final_state))
    return Judgement(run_dir, aggregate(verdicts), verdicts, run.recorded)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path.name}: unreadable ({exc})") from None


def _final_state(path: Path) -> FinalState:
    text = _text(path)
    try:
        return final_state_from_json(json.loads(text))
    except ValueError as exc:
        raise EvidenceError(f"{path.name}: not a final state ({exc})") from None


def _recorded(path: Path) -> str | None:
    text = _text(path)
    try:
        verdict = json.loads(text).get("verdict")
    except (ValueError, AttributeError) as exc:
        raise EvidenceError(f"{path.name}: not a verdict ({exc})") from None
    return verdict if isinstance(verdict, str) else None
