"""``python -m chaos``: run chaos campaigns, replay a run, list scenarios and faults (ring: drivers).

::

    python -m chaos run --runs 100 --seed 1 --parallel 3 --scenario links,process --out chaos-results
    python -m chaos replay chaos-results/<campaign>/runs/<run>
    python -m chaos list

Run ``i`` of a campaign with ``--seed S`` has seed ``S + i`` and the scenario ``i mod k`` of the
``k`` selected ones, so ``--seed`` fixes the whole campaign. Exit status: 0 when no run is
invalid, 1 when any is (or the campaign could not complete), 2 for bad arguments (unknown
scenario, fault, target or launcher names list the valid ones).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaos.checkers import check_all
from chaos.checkers.verdict import aggregate
from chaos.generator import Schedule, generate
from chaos.run.judged import JudgedRunError, load_judged_run
from chaos.run.pool import CampaignResult, run_campaign
from chaos.run.reap import reap
from chaos.runner import RunPlan
from chaos.scenarios import FAULTS, SCENARIOS, SCOPES, NameError_, resolve_faults, resolve_scenarios
from chaos.shard import WHOLE, ShardError, campaign_id_for, parse_shard
from cluster.targets import TargetError, load_target
from harness.launcher import LAUNCHERS, LauncherError, launcher_named
from records.run_record import new_run_id

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 with usage; keep that, no traceback
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m chaos", description="Chaos runs of a ZooKeeper-mode Kafka controller.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a chaos campaign")
    run.add_argument("--runs", type=_positive, default=10, help="number of runs (default 10)")
    run.add_argument(
        "--seed", type=_int, default=None, help="campaign seed; run i uses seed+i (default: random)"
    )
    run.add_argument("--parallel", type=_positive, default=2, help="worker processes (default 2)")
    run.add_argument(
        "--scenario", default="", help="comma list of scenarios, or 'all' (default: the default mix)"
    )
    run.add_argument(
        "--faults", default="", help="comma list of faults to keep (default: each scenario's own)"
    )
    run.add_argument("--target", default="reference", help="reference | kafka | path to a target .toml")
    run.add_argument("--launcher", default="process", help=f"where nodes run: {' | '.join(LAUNCHERS)}")
    run.add_argument(
        "--out", type=Path, default=Path("chaos-results"), help="results dir (default chaos-results/)"
    )
    run.add_argument("--keep-all", action="store_true", help="keep the directories of valid runs too")
    run.add_argument("--no-progress", action="store_true", help="no progress bar (one line per run instead)")
    run.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N (0 <= I < N; runs I, I+N, I+2N, …) of the campaign, e.g. a CI "
        "matrix or Kubernetes indexed job; needs --seed",
    )
    run.add_argument(
        "--campaign-id",
        default=None,
        help="id shared by every shard of one campaign (default: derived from --seed, --runs, the "
        "scenarios, faults and target when --shard is given; random otherwise)",
    )
    run.add_argument(
        "--master",
        default=None,
        help="spark://HOST:PORT: fan the campaign out over a Spark cluster's executors, in shards "
        "(see --spark-shards); records and kept runs come back here",
    )
    run.add_argument(
        "--spark-shards",
        type=_positive,
        default=None,
        help="with --master: number of shards (default: one per 10 runs)",
    )
    replay = sub.add_parser("replay", help="run a kept run's schedule again")
    replay.add_argument("run_dir", type=Path, help="a run directory (holds run.json)")
    replay.add_argument(
        "--out", type=Path, default=None, help="results dir (default: <campaign dir>/replays)"
    )
    replay.add_argument("--target", default=None, help="override the run's target")
    check = sub.add_parser("check", help="judge kept runs again with the current checkers (no cluster)")
    check.add_argument(
        "run_dirs", type=Path, nargs="+", help="run directories (hold history.jsonl, txn-records.jsonl, …)"
    )
    check.add_argument("--evidence", action="store_true", help="print each failing checker's evidence")
    sub.add_parser("list", help="list scenarios and faults")
    sub.add_parser("reap", help="remove what killed runs left (processes, temp dirs); never a live run's")
    return p


def cmd_list() -> int:
    print("scenarios (default mix marked *):")
    for s in SCENARIOS.values():
        mark = "*" if s.in_default_mix else " "
        print(f" {mark} {s.name:12} {s.description}")
        scopes = ", ".join(s.scopes)
        print(f"   {'':12} faults: {', '.join(s.faults)}; scopes: {scopes}; zookeeper: {s.zookeeper}")
    print(f"faults: {', '.join(FAULTS)}")
    print(f"link-fault scopes: {', '.join(SCOPES)}")
    return 0


def _usage(message: str) -> int:
    print(f"python -m chaos: error: {message}", file=sys.stderr)
    return USAGE_ERROR


class _Progress:
    """tqdm bar: runs done, verdict counts, ETA (or one line per run with --no-progress)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.bar: Any = None
        if enabled:
            from tqdm import tqdm  # type: ignore[import-untyped]  # noqa: PLC0415

            size = shutil.get_terminal_size((100, 24))  # a pty without a size says 0 x 0
            self.bar = tqdm(total=total, unit="run", ncols=size.columns, nrows=size.lines, file=sys.stderr)

    def __call__(self, done: dict[str, Any], campaign: CampaignResult) -> None:
        counts = campaign.counts
        if self.bar is not None:
            self.bar.set_postfix(valid=counts["valid"], invalid=counts["invalid"], unknown=counts["unknown"])
            self.bar.update(1)
        rec = done["record"]
        line = f"{done['verdict']:8} {rec['test_id']} seed {rec['seed']} {rec['duration_s']:.1f}s"
        if done["verdict"] != "valid":
            why = (done["reason"] or "").splitlines()[0][:300]
            line += f"\n  reason: {why}\n  replay: python -m chaos replay {done['run_dir']}"
            if done["verdict"] == "invalid":
                line += "\n  schedule:\n" + "\n".join(f"    {s}" for s in done["schedule"].splitlines())
        if self.bar is not None:
            if done["verdict"] != "valid":
                self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _summary(campaign: CampaignResult, out: Path, campaign_id: str) -> None:
    total = sum(campaign.counts.values())
    per_hour = total / campaign.elapsed_s * 3600 if campaign.elapsed_s > 0 else 0.0
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{total} runs: {campaign.counts['valid']} valid, {campaign.counts['invalid']} invalid, "
        f"{campaign.counts['unknown']} unknown in {campaign.elapsed_s:.1f}s = {per_hour:.0f} runs/hour "
        f"(load average {load})"
    )
    print(f"records: {out}/chaos-runs-*.jsonl; kept runs: {out / campaign_id / 'runs'}")


def _campaign_id(args: argparse.Namespace, scenarios: list[str]) -> str:
    if args.campaign_id:
        return str(args.campaign_id)
    if args.shard is None:
        return new_run_id()
    return campaign_id_for(args.seed, args.runs, scenarios, args.faults, args.target)


def _plans(args: argparse.Namespace) -> tuple[str, list[RunPlan]]:
    scenarios = resolve_faults(args.faults, resolve_scenarios(args.scenario))
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    shard = parse_shard(args.shard) if args.shard is not None else WHOLE
    campaign_id = _campaign_id(args, [s.name for s in scenarios])
    where = f", shard {shard} ({len(shard.indexes(args.runs))} of {args.runs} runs)" if args.shard else ""
    print(
        f"campaign {campaign_id}: seed {seed}, scenarios {', '.join(s.name for s in scenarios)}{where}",
        file=sys.stderr,
    )
    return campaign_id, [
        RunPlan(
            i, scenarios[i % len(scenarios)], seed + i, campaign_id, args.out / campaign_id, args.keep_all
        )
        for i in shard.indexes(args.runs)
    ]


def _check_target_and_launcher(target: str, launcher: str) -> str | None:
    if launcher not in LAUNCHERS:
        return f"unknown launcher {launcher!r}; valid launchers: {', '.join(LAUNCHERS)}"
    try:
        unavailable = launcher_named(launcher).unavailable_reason()
    except LauncherError as exc:
        unavailable = str(exc)
    if unavailable:
        return f"launcher {launcher} cannot run here: {unavailable}"
    try:
        t = load_target(target)
    except TargetError as exc:
        return str(exc)
    return t.unavailable_reason()


def _check_distribution(args: argparse.Namespace) -> str | None:
    if (args.shard is not None or args.master) and args.seed is None:
        return "--shard and --master need --seed: every shard must draw the same campaign"
    if args.shard is not None and args.master:
        return "give either --shard (this machine runs one shard) or --master (Spark runs them all)"
    if args.spark_shards and not args.master:
        return "--spark-shards goes with --master"
    if args.shard is not None:
        try:
            parse_shard(args.shard)
        except ShardError as exc:
            return str(exc)
    return None


def cmd_run(args: argparse.Namespace) -> int:
    problem = _check_distribution(args) or _check_target_and_launcher(args.target, args.launcher)
    if problem:
        return _usage(problem)
    if args.master:
        from chaos.spark import run_on_spark  # noqa: PLC0415 - pyspark only when asked for

        return run_on_spark(args)
    try:
        campaign_id, plans = _plans(args)
    except NameError_ as exc:
        return _usage(str(exc))
    for done in reap():
        print(f"reaped: {done}", file=sys.stderr)
    progress = _Progress(len(plans), enabled=not args.no_progress and sys.stderr.isatty())
    try:
        campaign = run_campaign(
            plans,
            parallel=args.parallel,
            target=args.target,
            launcher=args.launcher,
            out_dir=args.out,
            on_result=progress,
        )
    except RuntimeError as exc:
        progress.close()
        print(f"python -m chaos: campaign aborted: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        progress.close()
        print("python -m chaos: interrupted; the workers stopped and cleaned up", file=sys.stderr)
        return 130
    progress.close()
    _summary(campaign, args.out, campaign_id)
    return 1 if campaign.counts["invalid"] else 0


def cmd_replay(args: argparse.Namespace) -> int:
    run_json = args.run_dir / "run.json"
    try:
        stored: dict[str, Any] = json.loads(run_json.read_text())
        scenario = replace(SCENARIOS[stored["scenario"]], faults=tuple(stored["faults"]))
    except (OSError, ValueError, KeyError) as exc:
        return _usage(f"{run_json}: not a chaos run directory ({type(exc).__name__}: {exc})")
    schedule = generate(scenario, int(stored["seed"]))
    if schedule != Schedule.from_json(stored["schedule"]):
        print(
            f"{run_json}: the generator no longer gives the stored schedule for seed {stored['seed']}",
            file=sys.stderr,
        )
        return 1
    target = args.target or stored["target"]
    out = args.out or args.run_dir.parent.parent / "replays"
    campaign_id = new_run_id()
    plan = RunPlan(
        int(stored["index"]), scenario, int(stored["seed"]), campaign_id, out / campaign_id, keep_all=True
    )
    print(f"replaying {stored['scenario']} seed {stored['seed']} ({len(schedule.steps)} steps) on {target}")
    for done in reap():
        print(f"reaped: {done}", file=sys.stderr)
    progress = _Progress(1, enabled=False)
    campaign = run_campaign(
        [plan], parallel=1, target=target, launcher="process", out_dir=out, on_result=progress
    )
    _summary(campaign, out, campaign_id)
    verdicts = Counter(r["verdict"] for r in campaign.results)
    return 1 if verdicts["invalid"] else 0


def cmd_check(args: argparse.Namespace) -> int:
    """Re-judge kept runs from their files: 1 if any is invalid, 2 if a directory lacks them."""
    loaded = []
    for run_dir in args.run_dirs:
        try:
            loaded.append((run_dir, load_judged_run(run_dir)))
        except JudgedRunError as exc:
            return _usage(str(exc))
    invalid = False
    for run_dir, judged in loaded:
        verdicts = check_all(judged.history, judged.txn_records, judged.final_state)
        verdict = aggregate(verdicts)
        invalid |= verdict == "invalid"
        was = f" (recorded: {judged.recorded})" if judged.recorded and judged.recorded != verdict else ""
        print(f"{verdict:8} {run_dir}{was}")
        for v in verdicts:
            print(f"  {v.validity:8} {v.checker}: {v.message}")
            if args.evidence and not v.is_valid:
                for item in v.evidence:
                    print(f"           {json.dumps(item, default=str)}")
    return 1 if invalid else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "list":
        return cmd_list()
    if args.command == "check":
        return cmd_check(args)
    if args.command == "reap":
        done = reap()
        for item in done:
            print(f"reaped: {item}")
        print(f"{len(done)} item(s) reaped")
        return 0
    if args.command == "replay":
        return cmd_replay(args)
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
