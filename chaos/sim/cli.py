"""``python -m chaos sim``: seeded schedules in the deterministic simulator, replay by seed,
shrinking of failures (ring: drivers).

::

    python -m chaos sim --runs 1000 --seed 1 [--scenario process,composed] [-n 2] [--out DIR]
    python -m chaos sim --replay composed:1234@<kit version>
    python -m chaos sim --replay DIR/sim.json
    python -m chaos sim --runs 500 --seed 1 --diff-tree ../my-kit-copy [-n 2]   # differential
    python -m chaos sim --diff-tree ../my-kit-copy --replay DIR/shrunk-7/…/sim.json  # one, both sides

Run ``i`` has seed ``S + i`` and scenario ``i mod k`` of the ``k`` selected ones, as ``chaos run``.
A failing seed prints its reason, the command that replays it and, unless ``--no-shrink``, its
shrunk schedule (written to ``<run dir>/shrunk/``). A seed names a run only with the kit version
it was found on (its code digest included, :mod:`chaos.sim.version`): replaying one recorded by
another version is refused (exit 2), never a silently different run; a ``sim.json`` needs the
same simulator format. Exit status: 0 every run valid, 1 any invalid, 3 none invalid but some unknown,
2 bad input.

Python randomises ``str`` hashes per process, and set iteration order follows them; so that a seed
gives the same run in every process the command runs itself again with ``PYTHONHASHSEED=0`` when
that is not already so.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaos.checkers.verdict import excused_counts
from chaos.generator import Schedule, generate
from chaos.runner import OUTCOME, PROFILE
from chaos.scenarios import (
    MAX_DENSITY,
    SCENARIOS,
    NameError_,
    Scenario,
    dense,
    resolve_faults,
    resolve_scenarios,
    scenario_named,
)
from chaos.shard import SIM_RUNS_PER_SHARD, WHOLE, Shard, ShardError, campaign_id_for, parse_shard
from chaos.sim.pool import RecyclingPool
from chaos.sim.run import SimResult, simulate
from chaos.sim.shrink import shrink
from chaos.sim.version import seed_version, sim_version, token
from records.run_record import RunRecord, new_run_id, run_order_key, utc_now_iso

__all__ = ["SIM_VERSION", "BadInput", "main", "parse_replay", "simulable_scenarios"]

USAGE_ERROR, SOME_UNKNOWN = 2, 3
SIM_VERSION = sim_version()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer seed") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"seed {value} is outside 0 .. 2**63-1")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m chaos sim",
        description="Play seeded chaos schedules against a simulated 3-node cluster in one process, "
        "fast and repeatably: the same checkers judge each run; a failing seed prints the command "
        "that replays it and is shrunk to a smaller schedule that still fails. Exit status: 0 when "
        f"every run is valid, 1 when any is invalid, {SOME_UNKNOWN} when none is invalid but some is "
        "unknown, 2 for bad arguments (unknown scenario or fault, a bad seed range, a replay seed "
        "recorded by another kit version).",
    )
    p.add_argument("--runs", "--seeds", dest="runs", type=_count, default=100, help="how many schedules")
    p.add_argument("--seed", type=_seed, default=1, help="seed of the first schedule (run i: seed + i)")
    p.add_argument(
        "--scenario",
        default="",
        help="comma list of scenarios (default: the default mix; zk-ensemble cannot be simulated)",
    )
    p.add_argument("--faults", default="", help="restrict the scenarios to these fault kinds")
    p.add_argument(
        "--density",
        type=_density,
        default=1,
        metavar="D",
        help=f"D times as many faults in each schedule's duration, holds and gaps D times shorter "
        f"(1 to {MAX_DENSITY}; the scenario is then named <scenario>*D, also in replay seeds)",
    )
    p.add_argument("-n", "--parallel", type=_count, default=1, help="worker processes (at most the cores)")
    p.add_argument("--out", type=Path, default=Path("sim-results"), help="where failing runs are written")
    p.add_argument(
        "--keep-all", action="store_true", help="write every run's directory, not only failing ones"
    )
    p.add_argument("--no-shrink", action="store_true", help="do not shrink failing schedules")
    p.add_argument("--shrink-budget-s", type=float, default=60.0, help="wall-time bound of one shrink")
    p.add_argument("--replay", default=None, metavar="SEED", help="scenario:seed@version, or a sim.json")
    p.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="play only shard I of N (0 <= I < N: schedules I, I+N, I+2N, …) of the campaign, e.g. one "
        "job of a CI matrix",
    )
    p.add_argument(
        "--campaign-id",
        default=None,
        help="the id every shard of one campaign shares (default with --shard: derived from --seed, "
        "--runs, --scenario and --faults)",
    )
    p.add_argument(
        "--diff-tree",
        type=Path,
        default=None,
        metavar="PATH",
        help="a modified copy of this kit: play every schedule on this kit's reference and on PATH and"
        " compare what each run showed (transaction log, requests, clients' results) item by item",
    )
    p.add_argument(
        "--stop-at-first",
        action="store_true",
        help="with --diff-tree: stop at the first schedule that differs",
    )
    p.add_argument(
        "--master",
        default=None,
        metavar="spark://HOST:PORT",
        help="play the campaign's shards on a Spark cluster's executors; records come back here",
    )
    p.add_argument(
        "--spark-shards",
        type=_count,
        default=None,
        help=f"with --master: how many shards (default: one per {SIM_RUNS_PER_SHARD} schedules)",
    )
    return p


def _pin_hash_seed(argv: Sequence[str]) -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, "-m", "chaos", "sim", *argv], env)  # noqa: S606 - ourselves again


class BadInput(ValueError):
    """What the user asked cannot be run; the message says why and what to do."""


def _density(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_DENSITY:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number from 1 to {MAX_DENSITY}")
    return value


def simulable_scenarios(raw: str, faults: str, density: int = 1) -> tuple[Scenario, ...]:
    try:
        chosen = tuple(dense(s, density) for s in resolve_faults(faults, resolve_scenarios(raw)))
    except NameError_ as exc:
        raise BadInput(str(exc)) from None
    ensemble = [s.name for s in chosen if s.zookeeper == "ensemble"]
    if ensemble:
        runnable = ", ".join(n for n, s in SCENARIOS.items() if s.zookeeper != "ensemble")
        raise BadInput(
            f"scenario {', '.join(ensemble)} needs a ZooKeeper ensemble, which the simulator does not "
            f"model; scenarios it runs: {runnable}"
        )
    return chosen


def parse_replay(text: str) -> Schedule:
    """The schedule a replay names; :class:`BadInput` for a bad token or another version (a seed
    token: another code digest; a ``sim.json``: another simulator format — :mod:`chaos.sim.version`)."""
    path = Path(text)
    if text.endswith(".json") or path.is_file():
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            version, schedule = str(body["kit_version"]), Schedule.from_json(body["schedule"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BadInput(f"{text}: not a simulated run's sim.json ({type(exc).__name__}: {exc})") from None
        this = SIM_VERSION
    else:
        scenario, sep, rest = text.partition(":")
        seed_text, at, version = rest.partition("@")
        if not sep or not at or not seed_text.isdigit():
            raise BadInput(
                f"{text!r} is not a replay seed; expected <scenario>:<seed>@<kit version>, as a failing run "
                "prints"
            )
        try:
            schedule = generate(scenario_named(scenario), int(seed_text))
        except NameError_ as exc:
            raise BadInput(str(exc)) from None
        this = seed_version()
    if version != this:
        raise BadInput(
            f"seed recorded by kit version {version}, this is {this}: the same seed would be "
            "a different run; replay it with the kit version that found it"
        )
    return schedule


def _run_one(job: tuple[Schedule, float, str | None, str]) -> dict[str, Any]:
    schedule, duration_s, out, campaign_id = job
    logging.disable(logging.CRITICAL)
    started, t0 = datetime.now(UTC), time.monotonic()
    result = simulate(schedule, Path(out) if out else None, duration_s)
    done = _summary(schedule, result)
    done["record"] = _record(schedule, result, campaign_id, started, time.monotonic() - t0)
    return done


def _record(schedule: Schedule, result: SimResult, campaign_id: str, started: datetime, wall_s: float) -> str:
    """The schedule's run record (``kind="sim-run"``) for the reports: the same fields as a real
    chaos run's, with the wall time the simulation took (its evidence stays wall-clock free)."""
    record = RunRecord(
        kind="sim-run",
        run_id=campaign_id,
        run_order=run_order_key(started, f"{campaign_id}-{schedule.seed}"),
        test_id=f"sim/{schedule.scenario}",
        behaviour_ids=(),
        target="reference",
        target_version=sim_version(),
        profile=PROFILE,
        outcome=OUTCOME[result.verdict],
        reason=result.reason.splitlines()[0][:1000] if result.reason else None,
        duration_s=round(wall_s, 3),
        started_at=started.isoformat(),
        finished_at=utc_now_iso(),
        fault_package="+".join(schedule.fault_kinds) or "none",
        seed=schedule.seed,
        excused=excused_counts(result.verdicts) if result.verdicts else None,
    )
    return record.to_json()


def _summary(schedule: Schedule, result: SimResult) -> dict[str, Any]:
    return {
        "token": token(schedule),
        "verdict": result.verdict,
        "reason": result.reason,
        "run_dir": str(result.run_dir) if result.run_dir else None,
        "schedule": schedule.to_json(),
        "ops": result.ops,
        "faults": result.faults,
    }


def _report(done: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"{done['verdict']:8} {done['token']}  ({done['faults']} faults, {done['ops']} ops)", file=sys.stderr
    )
    if done["verdict"] == "valid":
        return
    print(f"  reason: {(done['reason'] or '').splitlines()[0][:400]}", file=sys.stderr)
    played = Schedule.from_json(done["schedule"])
    if played == generate(played.scenario, played.seed):
        print(f"  replay: python -m chaos sim --replay {done['token']}", file=sys.stderr)
    else:  # --faults narrowed the scenario: the seed alone would draw it unnarrowed
        sim_json = Path(done["run_dir"] or args.out) / "sim.json"
        print(f"  replay: python -m chaos sim --replay {sim_json}", file=sys.stderr)
    if done["verdict"] != "invalid" or args.no_shrink:
        return
    schedule = Schedule.from_json(done["schedule"])
    duration = scenario_named(schedule.scenario).duration_s
    out = Path(done["run_dir"] or args.out) / "shrunk"
    first = simulate(schedule, None, duration)
    shrunk = shrink(schedule, first, lambda s: simulate(s, None, duration), args.shrink_budget_s)
    final = simulate(shrunk.schedule, out, duration)
    print(
        f"  shrunk in {shrunk.seconds:.1f} s ({shrunk.tries} tries): {len(schedule.steps)} → "
        f"{len(shrunk.schedule.steps)} steps, still {final.verdict}; replay: python -m chaos sim --replay "
        f"{final.run_dir}/sim.json",
        file=sys.stderr,
    )
    print("  " + shrunk.schedule.describe().replace("\n", "\n    "), file=sys.stderr)


def _campaign(args: argparse.Namespace, schedules: list[Schedule]) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    keep = str(args.out) if args.keep_all else None
    campaign_id = _campaign_id(args)
    jobs = [(s, scenario_named(s.scenario).duration_s, keep, campaign_id) for s in schedules]
    records_path = args.out / f"sim-runs-{campaign_id}.jsonl"
    counts: Counter[str] = Counter()
    started = time.monotonic()
    workers = min(args.parallel, os.cpu_count() or 1)
    with RecyclingPool(_run_one, workers) as pool:
        for done in pool.imap(jobs):
            counts[done["verdict"]] += 1
            with records_path.open("a", encoding="utf-8") as records:
                records.write(done["record"] + "\n")
            if done["verdict"] != "valid" and not args.keep_all:
                again_schedule = Schedule.from_json(done["schedule"])
                again = simulate(again_schedule, args.out, scenario_named(again_schedule.scenario).duration_s)
                done["run_dir"] = str(again.run_dir)
            _report(done, args)
    elapsed = time.monotonic() - started
    total = sum(counts.values())
    print(
        f"{total} schedules: {counts['valid']} valid, {counts['invalid']} invalid, "
        f"{counts['unknown']} unknown in {elapsed:.1f} s ({total / elapsed:.2f} schedules/s, "
        f"{3600 * total / elapsed:,.0f}/hour)"
    )
    print(f"records: {records_path} (kind sim-run, for python -m reports build)")
    if pool.stats.retired:
        print(
            f"workers: {pool.stats.retired} replaced after growing past {100 * pool.growth_limit:.0f} % of "
            f"their settled {pool.stats.settled_mib:.1f} MiB (largest {pool.stats.largest_mib:.1f} MiB)"
        )
    if counts["invalid"]:
        return 1
    return SOME_UNKNOWN if counts["unknown"] else 0


def _check_spread(args: argparse.Namespace) -> Shard:
    """The shard this process plays (the whole campaign without --shard); :class:`BadInput` for
    flags that do not go together."""
    if args.replay is not None and (args.shard or args.master):
        raise BadInput("--replay plays one schedule here: it goes with neither --shard nor --master")
    if args.shard is not None and args.master:
        raise BadInput(
            "give either --shard (this machine plays one shard) or --master (Spark plays them all)"
        )
    if args.spark_shards and not args.master:
        raise BadInput("--spark-shards goes with --master")
    if args.shard is None:
        return WHOLE
    try:
        return parse_shard(args.shard)
    except ShardError as exc:
        raise BadInput(str(exc)) from None


def _campaign_id(args: argparse.Namespace) -> str:
    if args.campaign_id:
        return str(args.campaign_id)
    if args.shard is None:
        return new_run_id()
    names = [s.name for s in simulable_scenarios(args.scenario, args.faults, args.density)]
    return campaign_id_for(args.seed, args.runs, names, args.faults, "sim")


def _schedules(args: argparse.Namespace) -> list[Schedule]:
    """The schedules the arguments name; :class:`BadInput` says what is wrong with them."""
    if args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out} exists and is not a directory")
    shard = _check_spread(args)
    if args.replay is not None:
        args.keep_all = True
        return [parse_replay(args.replay)]
    if args.seed + args.runs > 2**63:
        last = args.seed + args.runs - 1
        raise BadInput(f"seeds {args.seed} .. {last} go past 2**63-1; lower --seed or --runs")
    chosen = simulable_scenarios(args.scenario, args.faults, args.density)
    return [generate(chosen[i % len(chosen)], args.seed + i) for i in shard.indexes(args.runs)]


def _diff_tree(args: argparse.Namespace) -> Path | None:
    if args.diff_tree is None:
        return None
    given = (("--master", args.master), ("--shard", args.shard))
    clash = ", ".join(o for o, on in given if on)
    if clash:
        raise BadInput(
            f"--diff-tree compares schedules on two kits on this machine; it does not take {clash}"
        )
    from chaos.sim.differential import DiffTreeError, check_tree  # noqa: PLC0415

    try:
        return check_tree(args.diff_tree)
    except DiffTreeError as exc:
        raise BadInput(str(exc)) from None


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    _pin_hash_seed(argv)
    logging.disable(logging.CRITICAL)
    try:
        tree = _diff_tree(args)
        schedules = _schedules(args)
    except BadInput as exc:
        print(f"python -m chaos sim: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if tree is not None:
        from chaos.sim.differential import replay_diff_tree, run_diff_tree  # noqa: PLC0415 - only in that mode

        if args.replay is not None:
            return replay_diff_tree(args, tree, schedules[0])
        return run_diff_tree(args, tree)
    if args.master:
        from chaos.spark import run_on_spark  # noqa: PLC0415 - pyspark only when asked for

        args.command = "sim"
        return run_on_spark(args)
    return _campaign(args, schedules)
