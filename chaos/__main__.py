"""``python -m chaos``: run chaos campaigns, replay a run, judge kept runs again, list scenarios,
faults and Kafka 2.5.1's quirks (ring: drivers).

::

    python -m chaos run --runs 100 --seed 1 --parallel 3 --scenario links,process --out chaos-results
    python -m chaos replay chaos-results/<campaign>/runs/<run>
    python -m chaos check chaos-results/<campaign>/runs/*
    python -m chaos list
    python -m chaos quirks [--markdown]
    python -m chaos sim --runs 1000 --seed 1 [-n 2]     (the deterministic simulator: chaos.sim.cli)

Run ``i`` of a campaign with ``--seed S`` has seed ``S + i`` and the scenario ``i mod k`` of the
``k`` selected ones, so ``--seed`` fixes the whole campaign. Exit status of ``run``: 0 when every
run is valid, 1 when any is invalid (or the campaign could not complete), 3 when none is invalid
but some could not be judged (unknown), 2 for bad arguments (unknown
scenario, fault, target or launcher names list the valid ones; an ``--out`` that is not a
writable directory). Exit status of ``check``: 0 when every run is valid, 1 when any is invalid,
3 when none is invalid but some could not be judged (unknown), 2 for bad arguments.
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

from chaos.checkers.quirks import QUIRKS, markdown_table
from chaos.generator import Schedule, generate
from chaos.run.judged import Judgement, judge_run_dir
from chaos.run.outdir import out_problem
from chaos.run.pool import CampaignResult, run_campaign
from chaos.run.reap import reap
from chaos.runner import PHASES, RunPlan
from chaos.scenarios import FAULTS, SCENARIOS, SCOPES, NameError_, Scenario, resolve_faults, resolve_scenarios
from chaos.shard import WHOLE, ShardError, campaign_id_for, parse_shard
from cluster.targets import TargetError, load_target
from harness.launcher import LAUNCHERS, LauncherError, launcher_named
from records.run_record import new_run_id

USAGE_ERROR = 2
#: ``check``: no run invalid, but at least one could not be judged.
SOME_UNKNOWN = 3


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
    p = _Parser(
        prog="python -m chaos",
        description="Break a 3-node ZooKeeper-mode Kafka cluster with seeded faults while an admin "
        "workload runs, then judge whether its controller kept its guarantees.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser(
        "run",
        help="run chaos runs and judge each one",
        description="Run chaos runs and judge each one: valid, invalid (a guarantee broken) or unknown "
        "(the run could not be judged). Exit status: 0 when every run is valid, 1 when any is "
        f"invalid, {SOME_UNKNOWN} when none is invalid but some could not be judged, 2 for bad arguments.",
    )
    run.add_argument("--runs", type=_positive, default=10, help="how many runs (default 10)")
    run.add_argument(
        "--seed",
        type=_int,
        default=None,
        help="campaign seed: run i uses seed SEED+i, so one seed repeats the campaign (default: random)",
    )
    run.add_argument(
        "--parallel",
        type=_positive,
        default=2,
        help="runs at a time, each with its own ZooKeeper (default 2)",
    )
    run.add_argument(
        "--scenario",
        default="",
        help="comma-separated scenarios, or 'all' (default: the default mix; see 'python -m chaos list')",
    )
    run.add_argument(
        "--faults", default="", help="keep only these faults of the chosen scenarios (default: all of them)"
    )
    run.add_argument(
        "--target",
        default="reference",
        help="what to test: reference, kafka (needs $KAFKA_HOME) or a target .toml file (default reference)",
    )
    run.add_argument(
        "--launcher",
        default="process",
        help=f"where the nodes run: {' or '.join(LAUNCHERS)} (default process)",
    )
    run.add_argument(
        "--out", type=Path, default=Path("chaos-results"), help="results directory (default chaos-results/)"
    )
    run.add_argument(
        "--keep-all",
        action="store_true",
        help="also keep the directories of valid runs (by default only invalid and unknown runs are kept)",
    )
    run.add_argument(
        "--no-progress", action="store_true", help="print one line per run instead of a progress bar"
    )
    run.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N (0 <= I < N: runs I, I+N, I+2N, …) of the campaign, e.g. one job "
        "of a CI matrix or a Kubernetes indexed job; needs --seed",
    )
    run.add_argument(
        "--campaign-id",
        default=None,
        help="the id every shard of one campaign shares (default with --shard: derived from --seed, "
        "--runs, the scenarios, faults and target; pass e.g. the CI pipeline id to tell repeats apart)",
    )
    run.add_argument(
        "--master",
        default=None,
        help="spark://HOST:PORT: run the campaign's shards on a Spark cluster's executors; records and "
        "kept runs come back here (needs --seed)",
    )
    run.add_argument(
        "--spark-shards",
        type=_positive,
        default=None,
        help="with --master: how many shards (default: one per 10 runs)",
    )
    replay = sub.add_parser(
        "replay",
        help="run a kept run's schedule again",
        description="Run a kept run's schedule again: the same seed, faults, targets and times.",
    )
    replay.add_argument("run_dir", type=Path, help="a kept run's directory (it holds run.json)")
    replay.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results directory (default: the campaign's replays/ directory)",
    )
    replay.add_argument("--target", default=None, help="test another target than the run's")
    check = sub.add_parser(
        "check",
        help="judge kept runs again with this kit's checkers, without a cluster",
        description="Judge kept run directories again with this kit's checkers, without a cluster. A "
        "directory whose evidence is missing, damaged or was never finished is judged unknown with the "
        f"reason. Exit status: 0 when every run is valid, 1 when any is invalid, {SOME_UNKNOWN} when none "
        "is invalid but some is unknown, 2 for bad arguments.",
    )
    check.add_argument("run_dirs", type=Path, nargs="+", help="kept run directories")
    check.add_argument(
        "--evidence", action="store_true", help="also print each checker's evidence and what was excused"
    )
    sub.add_parser("list", help="list scenarios and faults")
    sub.add_parser(
        "sim", help="seeded schedules in the deterministic one-process simulator (see: sim --help)"
    )
    quirks = sub.add_parser(
        "quirks",
        help="list the Kafka 2.5.1 behaviours the checkers excuse",
        description="List the Kafka 2.5.1 behaviours that break a naive guarantee, which the checkers "
        "excuse and report as excused.",
    )
    quirks.add_argument("--markdown", action="store_true", help="print the table the chaos README holds")
    sub.add_parser(
        "reap", help="remove what killed runs left behind (processes, temporary files); never a live run's"
    )
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


def _summary(campaign: CampaignResult, out: Path, campaign_id: str, keep_all: bool) -> None:
    total = sum(campaign.counts.values())
    per_hour = total / campaign.elapsed_s * 3600 if campaign.elapsed_s > 0 else 0.0
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{total} runs: {campaign.counts['valid']} valid, {campaign.counts['invalid']} invalid, "
        f"{campaign.counts['unknown']} unknown in {campaign.elapsed_s:.1f}s = {per_hour:.0f} runs/hour "
        f"(load average {load})"
    )
    timed = [r for r in campaign.results if r.get("phases")]
    if timed:
        ahead = sum(1 for r in timed if r.get("began_ahead"))
        means = ", ".join(
            f"{phase} {sum(r['phases'].get(phase, 0.0) for r in timed) / len(timed):.2f}" for phase in PHASES
        )
        print(
            f"where a run's time went (mean seconds of {len(timed)} runs): {means}; the set-up of {ahead}"
            " began while its worker's previous run was still going (its last ops, heal, checks or teardown)"
        )
    kept = sum(1 for r in campaign.results if r.get("run_dir"))
    runs = out / campaign_id / "runs"
    if kept:
        which = "" if keep_all else " (invalid and unknown; valid runs were pruned)"
        where = f"{kept} run director{'y' if kept == 1 else 'ies'} kept{which}: {runs}"
    else:
        where = "no run directory kept: valid runs are pruned (run with --keep-all to keep them)"
    print(f"records: {out}/chaos-runs-*.jsonl; {where}")


def _campaign_id(args: argparse.Namespace, scenarios: Sequence[Scenario]) -> str:
    if args.campaign_id:
        return str(args.campaign_id)
    if args.shard is None:
        return new_run_id()
    names = [s.name for s in scenarios]
    return campaign_id_for(args.seed, args.runs, names, args.faults, args.target)


def _plans(args: argparse.Namespace, campaign_id: str, scenarios: Sequence[Scenario]) -> list[RunPlan]:
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    shard = parse_shard(args.shard) if args.shard is not None else WHOLE
    part = f", shard {shard} ({len(shard.indexes(args.runs))} of {args.runs} runs)" if args.shard else ""
    print(
        f"campaign {campaign_id}: seed {seed}, scenarios {', '.join(s.name for s in scenarios)}{part}",
        file=sys.stderr,
    )
    return [
        RunPlan(
            i, scenarios[i % len(scenarios)], seed + i, campaign_id, args.out / campaign_id, args.keep_all
        )
        for i in shard.indexes(args.runs)
    ]


def _distribution_problem(args: argparse.Namespace) -> str | None:
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


def cmd_run(args: argparse.Namespace) -> int:
    problem = _distribution_problem(args) or _check_target_and_launcher(args.target, args.launcher)
    if problem:
        return _usage(problem)
    try:
        scenarios = resolve_faults(args.faults, resolve_scenarios(args.scenario))
    except NameError_ as exc:
        return _usage(str(exc))
    if problem := out_problem(args.out):
        return _usage(problem)
    if args.master:
        from chaos.spark import run_on_spark  # noqa: PLC0415 - pyspark only when asked for

        return run_on_spark(args)
    campaign_id = _campaign_id(args, scenarios)
    plans = _plans(args, campaign_id, scenarios)
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
    _summary(campaign, args.out, campaign_id, args.keep_all)
    return _exit_status(campaign.counts)


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
    if problem := out_problem(out):
        return _usage(problem)
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
    _summary(campaign, out, campaign_id, keep_all=True)
    verdicts = Counter(r["verdict"] for r in campaign.results)
    return 1 if verdicts["invalid"] else 0


def _print_judgement(j: Judgement, evidence: bool) -> None:
    was = f" (recorded: {j.recorded})" if j.recorded and j.recorded != j.verdict else ""
    print(f"{j.verdict:8} {j.run_dir}{was}")
    if j.reason is not None:
        print(f"  reason: {j.reason}")
    for v in j.verdicts:
        print(f"  {v.validity:8} {v.checker}: {v.message}")
        if evidence and not v.is_valid:
            for item in v.evidence:
                print(f"           {json.dumps(item, default=str)}")
        if evidence:
            for quirk, items in v.excused.items():
                print(f"           excused by {quirk}: {', '.join(items)}")


def cmd_check(args: argparse.Namespace) -> int:
    """Judge every directory (never stopping at a bad one), one summary line each, then the counts."""
    counts: Counter[str] = Counter()
    for run_dir in args.run_dirs:
        judgement = judge_run_dir(run_dir)
        counts[judgement.verdict] += 1
        _print_judgement(judgement, args.evidence)
    print(
        f"{sum(counts.values())} run(s): {counts['valid']} valid, {counts['invalid']} invalid, "
        f"{counts['unknown']} unknown"
    )
    return _exit_status(counts)


def _exit_status(counts: Counter[str]) -> int:
    """0 every run valid, 1 any invalid, 3 none invalid but some unknown (never 0 for unknown)."""
    if counts["invalid"]:
        return 1
    return SOME_UNKNOWN if counts["unknown"] else 0


def cmd_quirks(markdown: bool) -> int:
    if markdown:
        print(markdown_table(), end="")
        return 0
    print(f"{len(QUIRKS)} Kafka 2.5.1 behaviours the checkers excuse:")
    for q in QUIRKS:
        print(f"\n{q.name}  (checkers: {', '.join(q.checkers)}; seen in {q.seen_in})")
        print(f"  {q.behaviour}")
        print(f"  Kafka source: {'; '.join(q.kafka_source)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sim"]:  # its own parser: python -m chaos sim --help
        from chaos.sim.cli import main as sim_main  # noqa: PLC0415 - the simulator only when asked

        return sim_main(argv[1:])
    args = parser().parse_args(argv)
    if args.command == "list":
        return cmd_list()
    if args.command == "check":
        return cmd_check(args)
    if args.command == "quirks":
        return cmd_quirks(args.markdown)
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
