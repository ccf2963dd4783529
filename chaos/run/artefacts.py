"""What a run leaves in its directory (ring: drivers).

==================  ===========================================================================
file                content
==================  ===========================================================================
run.json            campaign, index, scenario, faults, seed, target, the whole schedule
history.jsonl       the op history (:mod:`chaos.history` line format)
verdict.json        run verdict, reason, every checker's verdict with its evidence, the final
                    phase (time to heal, quiesced), the replay command
schedule.txt        the schedule as text (also printed for failed runs)
txn-log.txt         the chroot's transaction-log records, one per line (last 2,000)
txn-records.jsonl   all of them, machine-readable (:mod:`chaos.checkers.txnjson`)
final-state.json    the final state the checkers judged (:func:`final_state_to_json`)
requests.txt        controller requests as the brokers received them (request journal)
zk-journals.txt     the tail of every node's ZooKeeper request journal
zookeeper.log       the tail of the ZooKeeper server log

``history.jsonl``, ``txn-records.jsonl`` and ``final-state.json`` are what the checkers read:
``python -m chaos check RUN_DIR`` judges a kept run again with the current checkers.
node-<id>/          each node's logs (server, state-change, stdout; a split node's controller
                    process's in node-<id>/controller/)
==================  ===========================================================================
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaos.checkers.final_state import final_state_to_json
from chaos.checkers.txnjson import dump_records
from chaos.checkers.verdict import Verdict
from chaos.generator import Schedule
from chaos.history import History
from chaos.run.env import RunEnv
from cluster.target_schema import CONTROLLER_LOG_DIR

if TYPE_CHECKING:
    from chaos.final_state import Quiescence
    from chaos.links import ChaosCluster

__all__ = ["write_artefacts"]

TXN_LINES = 2000


def write_artefacts(  # noqa: PLR0917 - one call site, every part of a run
    run_dir: Path,
    env: RunEnv,
    cluster: ChaosCluster | None,
    history: History,
    verdicts: list[Verdict],
    verdict: str,
    quiet: Quiescence | None,
    schedule: Schedule,
    reason: str | None,
) -> None:
    """Write every artefact that can be written; a failing one never stops the others."""
    history.dump(run_dir / "history.jsonl")
    (run_dir / "schedule.txt").write_text(schedule.describe() + "\n")
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
        "checkers": [v.to_json() for v in verdicts],
    }
    (run_dir / "verdict.json").write_text(json.dumps(body, indent=1, default=str))
    if quiet is not None and quiet.final_state is not None:
        with contextlib.suppress(Exception):
            text = json.dumps(final_state_to_json(quiet.final_state), indent=1)
            (run_dir / "final-state.json").write_text(text)
    with contextlib.suppress(Exception):
        (run_dir / "zookeeper.log").write_text(env.zk_log_tail())
    if cluster is not None:
        _cluster_files(run_dir, cluster)


def _cluster_files(run_dir: Path, cluster: ChaosCluster) -> None:
    with contextlib.suppress(Exception):
        records = cluster.history()
        dump_records(records, run_dir / "txn-records.jsonl")
        (run_dir / "txn-log.txt").write_text("".join(f"{r.describe()}\n" for r in records[-TXN_LINES:]))
    with contextlib.suppress(Exception):
        if cluster.journal is not None:
            (run_dir / "requests.txt").write_text(cluster.journal.dump() + "\n")
    with contextlib.suppress(Exception):
        text = "\n\n".join(f"== {k}\n{v}" for k, v in cluster.zk_evidence().items())
        (run_dir / "zk-journals.txt").write_text(text + "\n")
    for bid, node in cluster.nodes.items():
        dest = run_dir / f"node-{bid}"
        dest.mkdir(exist_ok=True)
        for src in [node.node_dir / "stdout.log", node.config_path, *(node.node_dir / "logs").glob("*")]:
            with contextlib.suppress(OSError):
                if src.is_file():
                    shutil.copy2(src, dest / src.name)
        if node.split:  # a split topology's controller process: its config, output and logs
            (dest / "controller").mkdir(exist_ok=True)
            mine = [node.controller_config_path, node.output_of("controller")]
            for src in [*mine, *(node.node_dir / CONTROLLER_LOG_DIR).glob("*")]:
                with contextlib.suppress(OSError):
                    if src.is_file():
                        shutil.copy2(src, dest / "controller" / src.name)
