"""Load a kept run's judged inputs back from its directory (ring: drivers).

``history.jsonl``, ``txn-records.jsonl`` and ``final-state.json`` are exactly what the checkers
read at the end of a run (:mod:`chaos.run.artefacts`); ``python -m chaos check RUN_DIR`` feeds them
to the current checkers, so a checker change can be tried on kept failures without a cluster.
Runs kept before these files existed (or that never started a cluster) cannot be judged again:
the error names the missing file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from chaos.checkers.final_state import FinalState, final_state_from_json
from chaos.checkers.txnjson import load_records
from chaos.history import History, Op
from probes.txnrecords import TxnRecord

__all__ = ["JudgedRun", "JudgedRunError", "load_judged_run"]

_T = TypeVar("_T")


class JudgedRunError(ValueError):
    """A directory that does not hold a judged run (the message says which file and why)."""


@dataclass(frozen=True)
class JudgedRun:
    history: tuple[Op, ...]
    txn_records: list[TxnRecord] | None
    final_state: FinalState | None
    recorded: str | None  # the verdict the run recorded


def load_judged_run(run_dir: Path) -> JudgedRun:
    if not run_dir.is_dir():
        raise JudgedRunError(f"{run_dir}: no such directory")
    history_path = run_dir / "history.jsonl"
    if not history_path.is_file():
        raise JudgedRunError(f"{run_dir}: no history.jsonl (not a chaos run directory?)")
    if not (run_dir / "txn-records.jsonl").is_file() and not (run_dir / "final-state.json").is_file():
        raise JudgedRunError(
            f"{run_dir}: neither txn-records.jsonl nor final-state.json (kept by an older runner, "
            "or the cluster never started): nothing to judge"
        )
    try:
        history = tuple(History.load(history_path).ops)
        records = _maybe(run_dir / "txn-records.jsonl", load_records)
        final = _maybe(
            run_dir / "final-state.json", lambda p: final_state_from_json(json.loads(p.read_text()))
        )
        verdict_path = run_dir / "verdict.json"
        recorded = json.loads(verdict_path.read_text()).get("verdict") if verdict_path.is_file() else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JudgedRunError(f"{run_dir}: unreadable ({type(exc).__name__}: {exc})") from None
    return JudgedRun(history, records, final, recorded)


def _load_final_state(path: Path) -> FinalState:
    return final_state_from_json(json.loads(path.read_text()))


def _maybe(path: Path, load: Callable[[Path], _T]) -> _T | None:
    return load(path) if path.is_file() else None
