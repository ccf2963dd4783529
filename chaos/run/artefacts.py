"""What a run leaves in its directory, and the manifest that seals it (ring: drivers).

==================  ===========================================================================
file                content
==================  ===========================================================================
run.json            campaign, index, scenario, faults, seed, target, the whole schedule
history.jsonl       the op history the checkers judged (:mod:`chaos.history` line format)
txn-records.jsonl   the chroot's transaction-log records the checkers judged
                    (:mod:`chaos.checkers.txnjson`)
final-state.json    the final state the checkers judged (:func:`final_state_to_json`)
verdict.json        run verdict, reason, every checker's verdict with its evidence and the items
                    Kafka 2.5.1's quirks excused, the final phase (time to heal, quiesced), the
                    replay command
schedule.txt        the schedule as text (also printed for failed runs)
txn-log.txt         the transaction-log records as text, one per line (last 2,000)
requests.txt        controller requests as the brokers received them (request journal)
zk-journals.txt     the tail of every node's ZooKeeper request journal
zookeeper.log       the tail of the ZooKeeper server log
node-<id>/          each node's logs (server, state-change, stdout; a split node's controller
                    process's in node-<id>/controller/)
manifest.json       written last: every file above with its size, line count and sha256, and
                    the kit's version and commit (:mod:`chaos.run.manifest`)
==================  ===========================================================================

``history.jsonl``, ``txn-records.jsonl``, ``final-state.json``, ``verdict.json`` and the manifest
are the evidence a verdict stands on: when one cannot be written the run is ``unknown`` (its
record says so), no manifest is written and ``evidence-error.txt`` says what failed. The other
files are diagnostics, written as far as they can be.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaos.checkers.final_state import FinalState, final_state_to_json
from chaos.checkers.txnjson import records_jsonl
from chaos.checkers.verdict import Verdict, excused_items
from chaos.generator import Schedule
from chaos.history import Op
from chaos.run.manifest import write_manifest
from cluster.target_schema import CONTROLLER_LOG_DIR
from probes.txnrecords import TxnRecord

if TYPE_CHECKING:
    from chaos.final_state import Quiescence
    from chaos.links import ChaosCluster

__all__ = ["EVIDENCE_ERROR", "Judged", "Sealed", "write_artefacts"]

TXN_LINES = 2000
EVIDENCE_ERROR = "evidence-error.txt"


@dataclass(frozen=True)
class Judged:
    """Exactly what the checkers judged (None: the run never had it)."""

    ops: tuple[Op, ...]
    records: Sequence[TxnRecord] | None
    final_state: FinalState | None


@dataclass(frozen=True)
class Sealed:
    """The run's verdict and reason once its evidence is written: ``unknown`` when it could not be."""

    verdict: str
    reason: str | None
    problems: tuple[str, ...] = ()


def write_artefacts(  # noqa: PLR0917 - one call site, every part of a run
    run_dir: Path,
    log_tail: Callable[[], str] | None,
    cluster: ChaosCluster | None,
    judged: Judged,
    verdicts: list[Verdict],
    verdict: str,
    quiet: Quiescence | None,
    schedule: Schedule,
    reason: str | None,
    commit: str | None = None,
) -> Sealed:
    """Write every artefact, the evidence first and the manifest last; a failing diagnostic never
    stops the others, a failing piece of evidence makes the run ``unknown``."""
    problems = _write_evidence(run_dir, judged)
    _diagnostics(run_dir, log_tail, cluster, judged, schedule)
    if problems:
        verdict = "unknown"
        reason = f"evidence could not be written: {'; '.join(problems)}"[:1000]
    problems += _attempt(
        run_dir / "verdict.json", lambda: _verdict_json(run_dir, verdicts, verdict, quiet, schedule, reason)
    )
    if not problems:
        try:
            write_manifest(run_dir, commit=commit)
        except OSError as exc:
            problems.append(f"manifest.json: {exc}")
    if problems:
        with contextlib.suppress(OSError):
            (run_dir / EVIDENCE_ERROR).write_text("\n".join(problems) + "\n")
        return Sealed(
            "unknown", f"evidence could not be written: {'; '.join(problems)}"[:1000], tuple(problems)
        )
    return Sealed(verdict, reason)


def _attempt(path: Path, write: Callable[[], str]) -> list[str]:
    try:
        path.write_text(write(), encoding="utf-8")
    except (OSError, ValueError, TypeError) as exc:
        return [f"{path.name}: {type(exc).__name__}: {exc}"]
    return []


def _write_evidence(run_dir: Path, judged: Judged) -> list[str]:
    problems = _attempt(
        run_dir / "history.jsonl",
        lambda: "".join(json.dumps(op.to_json(), allow_nan=False) + "\n" for op in judged.ops),
    )
    if judged.records is not None:
        records = judged.records
        problems += _attempt(run_dir / "txn-records.jsonl", lambda: records_jsonl(records))
    if judged.final_state is not None:
        final = judged.final_state
        problems += _attempt(
            run_dir / "final-state.json", lambda: json.dumps(final_state_to_json(final), indent=1)
        )
    return problems


def _verdict_json(  # noqa: PLR0917 - the parts of verdict.json
    run_dir: Path,
    verdicts: list[Verdict],
    verdict: str,
    quiet: Quiescence | None,
    schedule: Schedule,
    reason: str | None,
) -> str:
    body: dict[str, Any] = {
        "verdict": verdict,
        "reason": reason,
        "scenario": schedule.scenario,
        "seed": schedule.seed,
        "replay": f"python -m chaos replay {run_dir}",
        "final_phase": None
        if quiet is None
        else {
            "time_to_heal_s": quiet.time_to_heal_s,
            "quiesced": quiet.quiesced,
            "waited_s": round(quiet.waited_s, 3),
            "last_problem": quiet.last_problem,
        },
        "excused": excused_items(verdicts),
        "checkers": [v.to_json() for v in verdicts],
    }
    return json.dumps(body, indent=1, default=str)


def _diagnostics(
    run_dir: Path,
    log_tail: Callable[[], str] | None,
    cluster: ChaosCluster | None,
    judged: Judged,
    schedule: Schedule,
) -> None:
    with contextlib.suppress(Exception):
        (run_dir / "schedule.txt").write_text(schedule.describe() + "\n")
    if log_tail is not None:
        with contextlib.suppress(Exception):
            (run_dir / "zookeeper.log").write_text(log_tail())
    if judged.records is not None:
        records = judged.records
        with contextlib.suppress(Exception):
            (run_dir / "txn-log.txt").write_text("".join(f"{r.describe()}\n" for r in records[-TXN_LINES:]))
    if cluster is not None:
        _cluster_files(run_dir, cluster)


def _cluster_files(run_dir: Path, cluster: ChaosCluster) -> None:
    with contextlib.suppress(Exception):
        if cluster.journal is not None:
            (run_dir / "requests.txt").write_text(cluster.journal.dump() + "\n")
    with contextlib.suppress(Exception):
        text = "\n\n".join(f"== {k}\n{v}" for k, v in cluster.zk_evidence().items())
        (run_dir / "zk-journals.txt").write_text(text + "\n")
    for bid, node in cluster.nodes.items():
        dest = run_dir / f"node-{bid}"
        with contextlib.suppress(OSError):
            dest.mkdir(exist_ok=True)
        for src in [node.node_dir / "stdout.log", node.config_path, *(node.node_dir / "logs").glob("*")]:
            with contextlib.suppress(OSError):
                if src.is_file():
                    shutil.copy2(src, dest / src.name)
        if node.split:  # a split topology's controller process: its config, output and logs
            with contextlib.suppress(OSError):
                (dest / "controller").mkdir(exist_ok=True)
            mine = [node.controller_config_path, node.output_of("controller")]
            for src in [*mine, *(node.node_dir / CONTROLLER_LOG_DIR).glob("*")]:
                with contextlib.suppress(OSError):
                    if src.is_file():
                        shutil.copy2(src, dest / "controller" / src.name)
