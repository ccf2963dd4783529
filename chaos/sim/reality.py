"""``python -m chaos.sim.reality``: play a sample of seeded schedules both ways — in the simulator
(as ``chaos sim``) and on real processes (as ``chaos run``: real ZooKeeper, real reference nodes,
Toxiproxy) — and compare the verdicts (ring: drivers).

::

    python -m chaos.sim.reality --runs 20 --seed 5000 [-n 2] [--scenario process,links] [--out DIR]

Schedule ``i`` is ``generate(scenario i mod k, seed S + i)`` on both sides, exactly as ``chaos sim``
and ``chaos run`` draw it; the real run's stored schedule is checked equal to the simulated one
before anything is compared. Each schedule prints its scenario and seed, the real and the
simulated verdict with their failing checkers, and whether they agree (every checker the same
validity: :mod:`chaos.sim.agreement`), then what of the schedule the simulator models differently
(link delays, admin-API ops, process starts) and how far the real steps' timing and outcomes
drifted from the simulated ones. A real run that is ``unknown`` (a target error, missing
evidence) is counted apart, never as a disagreement.

Everything goes under ``<out>/<campaign>/``: ``real/runs/<run>`` and ``sim/<run>`` (kept for
disagreements and real unknowns, every pair with ``--keep-all``), the real runs' records, and
``comparison.json``. Exit status: 0 every judged pair agrees, 1 any disagrees (or a schedule
differs), 3 nothing could be compared, 2 bad input. As ``chaos sim``, the command runs itself
again with ``PYTHONHASHSEED=0`` so that a seed's simulation is the one ``chaos sim`` plays.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from chaos.checkers.events import BrokerRegistered
from chaos.checkers.timeline import Timeline
from chaos.generator import Schedule, generate
from chaos.run.judged import HISTORY, TXN_RECORDS, VERDICT, load_history, load_txn_records
from chaos.run.manifest import EvidenceError, verify
from chaos.run.outdir import out_problem
from chaos.run.pool import CampaignResult, run_campaign
from chaos.run.reap import reap
from chaos.runner import RunPlan
from chaos.scenarios import scenario_named
from chaos.sim.agreement import NOTHING_COMPARED, Pair, Side, compare, exit_status
from chaos.sim.cli import BadInput, _count, _Parser, _seed, simulable_scenarios
from chaos.sim.reality_report import print_pair, print_summary, to_json
from chaos.sim.run import simulate
from cluster.targets import TargetError, load_target
from harness.launcher import LauncherError, launcher_named
from probes.txnrecords import TxnRecord
from records.run_record import new_run_id

__all__ = ["main", "parser"]

USAGE_ERROR = 2
PROG = "python -m chaos.sim.reality"


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Play seeded chaos schedules both in the simulator and on real processes (real "
        "ZooKeeper, reference nodes, Toxiproxy) and compare the verdicts, checker by checker. Exit "
        "status: 0 when every judged pair agrees, 1 when any disagrees, "
        f"{NOTHING_COMPARED} when nothing could be compared (every real run unknown), 2 for bad input.",
    )
    p.add_argument("--runs", type=_count, default=10, help="how many schedules (default 10)")
    p.add_argument("--seed", type=_seed, default=1, help="seed of the first schedule (run i: seed + i)")
    p.add_argument(
        "--scenario",
        default="",
        help="comma list of scenarios (default: the default mix; zk-ensemble cannot be simulated)",
    )
    p.add_argument("--faults", default="", help="restrict the scenarios to these fault kinds")
    p.add_argument(
        "-n", "--parallel", type=_count, default=2, help="real runs (and simulations) at a time (default 2)"
    )
    p.add_argument("--out", type=Path, default=Path("reality-results"), help="results directory")
    p.add_argument(
        "--keep-all", action="store_true", help="keep every pair's run directories, not only disagreements"
    )
    return p


def _pin_hash_seed(argv: Sequence[str]) -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, "-m", "chaos.sim.reality", *argv], env)  # noqa: S606 - ourselves again


def _schedules(args: argparse.Namespace) -> list[Schedule]:
    """Schedule i of the sample, as both ``chaos sim`` and ``chaos run`` draw it; :class:`BadInput`."""
    if args.seed + args.runs > 2**63:
        raise BadInput(
            f"seeds {args.seed} .. {args.seed + args.runs - 1} go past 2**63-1; lower --seed or --runs"
        )
    chosen = simulable_scenarios(args.scenario, args.faults)
    if problem := out_problem(args.out, ".reality-write-probe-"):
        raise BadInput(problem)
    return [generate(chosen[i % len(chosen)], args.seed + i) for i in range(args.runs)]


def _target_problem() -> str | None:
    """Why real reference runs cannot happen on this machine (None: they can)."""
    try:
        return launcher_named("process").unavailable_reason() or load_target("reference").unavailable_reason()
    except (LauncherError, TargetError) as exc:
        return str(exc)


# --- the simulated side ----------------------------------------------------------------------------


def _simulate_one(job: tuple[Schedule, str]) -> tuple[str | None, str | None]:
    """Play one schedule and write its run directory: (directory, None) or (None, why not)."""
    schedule, out = job
    logging.disable(logging.CRITICAL)
    try:
        result = simulate(schedule, Path(out), scenario_named(schedule.scenario).duration_s)
    except Exception as exc:  # one schedule's simulator failure is that side's unknown, not the batch's
        return None, f"simulator error: {type(exc).__name__}: {exc}".splitlines()[0]
    return str(result.run_dir), None


def _simulate_all(schedules: Sequence[Schedule], out: Path, parallel: int) -> list[Side]:
    jobs = [(s, str(out)) for s in schedules]
    workers = min(parallel, os.cpu_count() or 1, len(jobs))
    if workers > 1:
        with get_context("fork").Pool(workers) as pool:
            done = pool.map(_simulate_one, jobs)
    else:
        done = [_simulate_one(job) for job in jobs]
    return [load_side(Path(run_dir)) if run_dir else Side("unknown", reason=error) for run_dir, error in done]


# --- evidence --------------------------------------------------------------------------------------


def load_side(run_dir: Path) -> Side:
    """A played schedule's verdict, checkers and history from its verified run directory; its
    ``unknown`` with the reason when the evidence is missing or damaged."""
    try:
        listed = verify(run_dir, required=(HISTORY, VERDICT))
        body = json.loads((run_dir / VERDICT).read_text(encoding="utf-8"))
        checkers = {str(c["checker"]): str(c["validity"]) for c in body.get("checkers", [])}
        ops = load_history(run_dir / HISTORY)
        records = load_txn_records(run_dir / TXN_RECORDS) if TXN_RECORDS in listed else []
    except (EvidenceError, OSError, ValueError, KeyError, TypeError) as exc:
        return Side("unknown", reason=f"evidence of {run_dir}: {exc}", run_dir=str(run_dir))
    return Side(str(body["verdict"]), checkers, body.get("reason"), str(run_dir), ops, _controllers(records))


def _controllers(records: Sequence[TxnRecord]) -> tuple[int | None, ...]:
    """The broker each controller election of the transaction log made controller, in order
    (None: a session no broker registered with). The first election writes ``/controller_epoch``
    twice (created, then set): one session's consecutive writes are one election."""
    timeline = Timeline.of(records)
    broker_of = {e.session: e.broker for e in timeline.of_type(BrokerRegistered)}
    sessions = [e.session for e in timeline.elections]
    return tuple(broker_of.get(s) for i, s in enumerate(sessions) if i == 0 or sessions[i - 1] != s)


def _stored_schedule(run_dir: Path, name: str) -> Schedule | None:
    try:
        return Schedule.from_json(json.loads((run_dir / name).read_text(encoding="utf-8"))["schedule"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _real_side(done: dict[str, Any]) -> tuple[Side, Schedule | None]:
    if not done.get("run_dir"):  # the worker could not set up: no directory at all
        return Side("unknown", reason=done.get("reason") or "the real run left no directory"), None
    run_dir = Path(done["run_dir"])
    side = load_side(run_dir)
    if side.verdict == "unknown" and side.reason is None:
        side = Side("unknown", side.checkers, done.get("reason"), side.run_dir, side.ops)
    return side, _stored_schedule(run_dir, "run.json")


# --- the campaign ------------------------------------------------------------------------------------


def _compare_all(
    args: argparse.Namespace, schedules: list[Schedule], sims: list[Side], root: Path
) -> list[Pair]:
    campaign_id, chosen = root.name, simulable_scenarios(args.scenario, args.faults)
    plans = [
        RunPlan(i, chosen[i % len(chosen)], args.seed + i, campaign_id, root / "real", keep_all=True)
        for i in range(len(schedules))
    ]
    index_of = {s.seed: i for i, s in enumerate(schedules)}
    pairs: list[Pair] = []

    def landed(done: dict[str, Any], _campaign: CampaignResult) -> None:
        i = index_of[int(done["record"]["seed"])]
        real, stored = _real_side(done)
        pair = compare(i, schedules[i], stored, real, sims[i])
        pairs.append(pair)
        print_pair(pair, len(schedules))

    run_campaign(
        plans, parallel=args.parallel, target="reference", launcher="process", out_dir=root, on_result=landed
    )
    return sorted(pairs, key=lambda p: p.index)


def _prune(pairs: Sequence[Pair]) -> None:
    """Remove the directories of agreeing pairs (the evidence of the others stays)."""
    for pair in pairs:
        if pair.outcome == "agree":
            for run_dir in (pair.real.run_dir, pair.sim.run_dir):
                if run_dir:
                    shutil.rmtree(run_dir, ignore_errors=True)


def _run(args: argparse.Namespace, schedules: list[Schedule]) -> int:
    root = args.out / new_run_id()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    names = ", ".join(dict.fromkeys(s.scenario for s in schedules))
    print(
        f"{len(schedules)} schedules, seeds {args.seed} .. {args.seed + len(schedules) - 1} ({names}); {root}"
    )
    sims = _simulate_all(schedules, root / "sim", args.parallel)
    print(f"simulated: {sum(s.verdict == 'valid' for s in sims)} valid of {len(sims)}; now the real runs")
    for item in reap():
        print(f"reaped: {item}", file=sys.stderr)
    try:
        pairs = _compare_all(args, schedules, sims, root)
    except RuntimeError as exc:
        print(f"{PROG}: the real campaign aborted: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the workers stopped and cleaned up", file=sys.stderr)
        return 130
    status = exit_status(pairs)
    command = " ".join([PROG, *sys.argv[1:]])
    (root / "comparison.json").write_text(
        json.dumps(to_json(pairs, command, started, status), indent=1) + "\n"
    )
    if not args.keep_all:
        _prune(pairs)
    print_summary(pairs, root)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    _pin_hash_seed(argv)
    logging.disable(logging.CRITICAL)
    try:
        schedules = _schedules(args)
    except BadInput as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if problem := _target_problem():
        print(f"{PROG}: nothing compared: real runs cannot happen here: {problem}", file=sys.stderr)
        return NOTHING_COMPARED
    return _run(args, schedules)


if __name__ == "__main__":
    sys.exit(main())
