"""``python -m conformance diff``: differential conformance against the Kafka-exact reference (conformance).

::

    python -m conformance diff --target T --scenarios N --seed S [-n P]      # a campaign
    python -m conformance diff --replay FILE [FILE ...] --target T           # repro files again
    python -m conformance diff golden --scenarios N --seed S [-n P]          # ship reference traces
    python -m conformance diff show --seed S --index I                       # print one scenario

Scenario ``i`` of seed ``S`` is ``generate(S, i)`` for i in ``--first-index .. +N``; with
``--pick cover [--pool P]`` the N are instead chosen from the first P (default max(4000, 10 N)) so
that together they reach the most distinct inputs (:mod:`conformance.diff.coverage`), each still
named and replayed by its own (seed, index). The
reference's traces come from the cache when this kit version recorded them before, otherwise the
reference runs too (in parallel). Diverging scenarios are shrunk (``--shrink-budget-s``, 0 = no)
and the smallest is written as ``repro-<name>.json``, which ``--replay`` runs again. Output: a
line per scenario, a summary, ``<out>/diff-report.json`` and ``<out>/scenarios/<name>/`` for each
one that is not the same. Exit 0 when every scenario ran and none diverged; 1 when one diverged from
Kafka 2.5.1; 3 when none diverged but the target could not run one (target error) or one could not
be judged (unknown) — never 0; 2 for bad input (unknown target, launcher, profile, a missing or
malformed scenario file, a bad number) — nothing is run then. ``--no-progress`` leaves out the line
per scenario (the summary stays): ``python -m conformance verify --replay`` runs
``--scenarios 1 --seed S --no-progress`` and reads the exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import catalogue
from cluster.targets import Target, TargetError, load_target, profile_properties
from conformance.diff import coverage
from conformance.diff.cache import GOLDEN_DIR, ReferenceCache, kit_version
from conformance.diff.campaign import Campaign, ScenarioResult, Sides
from conformance.diff.generator import generate
from conformance.diff.pool import Pool
from conformance.diff.scenario import Scenario, ScenarioError, load_scenario
from conformance.diff.shrink import Shrinker
from harness.launcher import LAUNCHERS
from harness.reaper import owned_temp_dir, reap_orphans

__all__ = ["DiffError", "exit_code", "main", "run_differential"]


class DiffError(Exception):
    """Bad input to the diff command: printed, exit 2."""


def _count(raw: str) -> int:
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number >= 0")
    return int(raw)


def _workers(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"invalid worker count {raw!r}: give a number >= 1")
    return int(raw)


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds >= 0")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own usage errors: exit 2 like ours
        self.print_usage(sys.stderr)
        print(f"python -m conformance diff: error: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = _Parser(prog="python -m conformance diff", description=__doc__.split("\n\n")[0])
    p.add_argument("mode", nargs="?", default="run", choices=("run", "golden", "show"))
    p.add_argument("--target", default="reference", help="target name or TOML path (default: reference)")
    p.add_argument("--against", default=None, help="'reference': the target is the reference (determinism)")
    p.add_argument("--scenarios", type=_count, default=10, help="how many generated scenarios (default 10)")
    p.add_argument("--seed", type=_count, default=1, help="campaign seed (default 1)")
    p.add_argument("--first-index", type=_count, default=0, help="index of the first scenario (default 0)")
    p.add_argument(
        "--pick",
        choices=coverage.PICKS,
        default="first",
        help="first: scenarios --first-index .. +N; cover: the N of a pool of generated scenarios that"
        " together reach the most distinct inputs (see conformance/diff/coverage.py)",
    )
    p.add_argument(
        "--pool", type=_count, default=None, help="--pick cover: choose from this many (default 4000 or 10 N)"
    )
    p.add_argument("--index", type=_count, default=0, help="show: which scenario")
    p.add_argument("--min-steps", type=_count, default=5)
    p.add_argument("--max-steps", type=_count, default=9)
    p.add_argument("-n", "--numprocesses", type=_workers, default=2, help="workers, each with a ZooKeeper")
    p.add_argument("--launcher", default=None, help=f"for the target's nodes: {', '.join(LAUNCHERS)}")
    p.add_argument("--profile", default=catalogue.DEFAULT_PROFILE)
    p.add_argument("--replay", nargs="+", type=Path, default=[], help="scenario files to run instead")
    p.add_argument("--no-cache", action="store_true", help="run the reference even when its trace is cached")
    p.add_argument(
        "--shrink-budget-s", type=_seconds, default=300.0, help="per diverging scenario; 0: no shrinking"
    )
    p.add_argument(
        "--out", type=Path, default=Path("results/diff"), help="report directory (default results/diff)"
    )
    p.add_argument(
        "--gate",
        action="store_true",
        help="the scenarios the main job's gate draws by default (its --diff-seed and --diff-scenarios"
        " defaults) instead of --seed/--scenarios: 'golden --gate' ships the gate's reference traces",
    )
    p.add_argument("--stop-at-first", action="store_true", help="stop at the first diverging scenario")
    p.add_argument("--no-progress", action="store_true", help="no line per scenario, only the summary")
    return p.parse_args(list(argv))


def _target(args: argparse.Namespace) -> Target:
    name = args.against or args.target
    if args.against not in (None, "reference"):
        raise DiffError(f"--against takes only 'reference', got {args.against!r}")
    try:
        target = load_target(name)
        profile_properties(args.profile)
    except TargetError as exc:
        raise DiffError(str(exc)) from exc
    why = target.unavailable_reason()
    if why:
        raise DiffError(f"{why}: the target cannot run here")
    return target


def _launcher(args: argparse.Namespace) -> str:
    launcher = args.launcher or os.environ.get("KZK_LAUNCHER") or "process"
    if launcher not in LAUNCHERS:
        raise DiffError(f"unknown launcher {launcher!r}; valid launchers: {', '.join(LAUNCHERS)}")
    if launcher == "docker":
        from harness.launcher import LauncherError, launcher_named  # noqa: PLC0415

        try:
            launcher_named("docker")
        except LauncherError as exc:
            raise DiffError(f"--launcher docker: {exc}") from exc
    return launcher


def scenarios_of(args: argparse.Namespace) -> list[Scenario]:
    if args.gate:
        if args.replay:
            raise DiffError("--gate and --replay name different scenarios: give one of them")
        from conformance.diff import gate_section  # noqa: PLC0415

        seeds = gate_section.scenario_seeds(
            gate_section.DEFAULT_DIFF_SEED, gate_section.DEFAULT_DIFF_SCENARIOS
        )
        return [generate(seed, 0) for seed in seeds]
    if args.replay:
        out = []
        for path in args.replay:
            try:
                out.append(load_scenario(path))
            except ScenarioError as exc:
                raise DiffError(str(exc)) from exc
        return out
    if args.min_steps > args.max_steps:
        raise DiffError(f"--min-steps {args.min_steps} is above --max-steps {args.max_steps}")
    if args.pool is not None and args.pick != "cover":
        raise DiffError("--pool is for --pick cover: give both, or neither")
    count = args.scenarios
    if args.pick == "cover":
        pool = args.pool if args.pool is not None else max(4000, 10 * args.scenarios)
        if pool < args.scenarios:
            raise DiffError(f"--pool {pool} is smaller than --scenarios {args.scenarios}: nothing to choose")
        count = pool
    generated = [
        generate(args.seed, i, min_steps=args.min_steps, max_steps=args.max_steps)
        for i in range(args.first_index, args.first_index + count)
    ]
    return coverage.pick(generated, args.scenarios) if args.pick == "cover" else generated


def _work_root() -> Path:
    """This run's work dir (the pool's workers make theirs inside it); deleted at the end, and by
    the harness's reaper (``python -m harness reap``, every harness start) if the run was killed."""
    return owned_temp_dir("diff")


def run_differential(
    scenarios: Sequence[Scenario],
    sides: Sides,
    *,
    workers: int,
    out: Path,
    cache: ReferenceCache,
    shrink_budget_s: float,
    say: Callable[[str], None],
    stop_at_first: bool = False,
) -> dict[str, Any]:
    """Run, compare, shrink; the report (also written to ``out/diff-report.json``)."""
    reap_orphans()  # what killed runs left: their work dirs, JVMs and run roots
    out.mkdir(parents=True, exist_ok=True)
    root = _work_root()
    started, began = datetime.now(UTC), time.monotonic()
    pool = Pool(workers, root)
    try:
        campaign = Campaign(sides, pool, cache, out, say)
        results = campaign.run(scenarios, stop_at_first=stop_at_first)
        if shrink_budget_s > 0:
            _shrink_all(campaign, scenarios, results, workers=workers, budget_s=shrink_budget_s, say=say)
    finally:
        pool.close()
        shutil.rmtree(root, ignore_errors=True)
    report = _report(results, sides, started, time.monotonic() - began, cache)
    (out / "diff-report.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    return report


def _shrink_all(
    campaign: Campaign,
    scenarios: Sequence[Scenario],
    results: list[ScenarioResult],
    *,
    workers: int,
    budget_s: float,
    say: Callable[[str], None],
) -> None:
    by_name = {s.name(): s for s in scenarios}
    for res in results:
        if res.status != "diverges" or res.divergence is None:
            continue
        scenario = by_name[res.name]
        say(f"shrinking {res.name} ({len(scenario.steps)} steps) ...")
        began = time.monotonic()
        shrinker = Shrinker(campaign, budget_s=budget_s, parallel=max(1, workers // 2), say=say)
        small = shrinker.shrink(scenario, _signature(res), res.divergence["step"])
        origin = {**small.origin, "shrunk_from": res.name, "divergence": _signature(res)}
        small = Scenario(small.nodes, small.first_controller, small.steps, origin)
        path = campaign.out / f"repro-{res.name}.json"
        path.write_text(small.dumps(), encoding="utf-8")
        res.repro = str(path)
        say(
            f"  repro: {path} ({len(small.nodes)} nodes, {len(small.steps)} steps;"
            f" {shrinker.runs} runs in {time.monotonic() - began:.0f} s)"
        )


def _signature(res: ScenarioResult) -> str:
    d = res.divergence or {}
    return str(d.get("signature", ""))


def _report(
    results: list[ScenarioResult], sides: Sides, started: datetime, wall_s: float, cache: ReferenceCache
) -> dict[str, Any]:
    counts = {k: sum(r.status == k for r in results) for k in ("same", "diverges", "target-error", "unknown")}
    return {
        "format": "kzk-diff-report/1",
        "target": sides.target.name,
        "target_source": sides.target.source,
        "launcher": sides.launcher,
        "profile": sides.profile,
        "kit_version": cache.version,
        "started_at": started.isoformat(),
        "wall_s": round(wall_s, 1),
        "scenarios": len(results),
        "counts": counts,
        "passed": bool(results) and counts["same"] == len(results),
        "results": [r.__dict__ for r in results],
    }


def summary_lines(report: dict[str, Any]) -> list[str]:
    c = report["counts"]
    rate = report["scenarios"] / max(report["wall_s"], 1e-6) * 3600
    lines = [
        f"{report['scenarios']} scenarios against {report['target']} ({report['launcher']}):"
        f" {c['same']} same, {c['diverges']} diverging, {c['target-error']} target errors,"
        f" {c['unknown']} unknown — {report['wall_s']:.0f} s, {rate:.0f} scenarios/hour",
    ]
    for r in report["results"]:
        if r["status"] != "same" or r["tolerated"]:
            lines.append(f"  {r['name']}: {r['status']}" + (f" -> {r['repro']}" if r.get("repro") else ""))
            for t in r["tolerated"]:
                lines.append(f"    tolerated: {t['tolerated']} at step {t['step']}")
    return lines


def _golden(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    scenarios = scenarios_of(args)
    golden = args.out if args.out != Path("results/diff") else None
    cache = ReferenceCache(args.profile, enabled=not args.no_cache)
    sides = Sides(load_target("reference"), "process", args.profile)
    root = _work_root()
    pool = Pool(args.numprocesses, root)
    written = 0
    try:
        campaign = Campaign(sides, pool, cache, root / "campaign", say)  # pair() writes nothing there
        for s, (ref, _tgt, reason) in zip(scenarios, campaign.pair(scenarios), strict=True):
            if ref is None:
                say(f"{s.name()}: no reference trace: {reason}")
                continue
            path = cache.put(s.key(), ref, directory=golden or GOLDEN_DIR)
            written += 1
            say(f"{s.name()}: {path}")
    finally:
        pool.close()
        shutil.rmtree(root, ignore_errors=True)
    say(f"{written} of {len(scenarios)} golden reference traces written")
    if golden is None and written:
        for stale in _stale_golden(GOLDEN_DIR, args.profile, cache.version):
            shutil.rmtree(stale, ignore_errors=True)
            say(f"removed the golden traces of an earlier kit version: {stale}")
    return 0 if written == len(scenarios) else 1


def _stale_golden(root: Path, profile: str, version: str) -> list[Path]:
    """The kit's shipped golden dirs of ``profile`` for other kit versions: no lookup can use them
    (the version is part of the key), so the kit ships only the current version's."""
    if not root.is_dir():
        return []
    return sorted(
        d
        for d in root.iterdir()
        if d.is_dir() and d.name.startswith(f"{profile}-") and d.name != f"{profile}-{version}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def say(line: str) -> None:
        print(line, flush=True)

    try:
        if args.mode == "show":
            print(generate(args.seed, args.index, min_steps=args.min_steps, max_steps=args.max_steps).dumps())
            return 0
        if args.mode == "golden":
            return _golden(args, say)
        target, launcher, scenarios = _target(args), _launcher(args), scenarios_of(args)
    except DiffError as exc:
        print(f"python -m conformance diff: error: {exc}", file=sys.stderr)
        return 2
    if not scenarios:
        print("python -m conformance diff: error: no scenario to run (--scenarios 0)", file=sys.stderr)
        return 2
    sides = Sides(target, launcher, args.profile)
    cache = ReferenceCache(args.profile, enabled=not args.no_cache)

    def progress(line: str) -> None:
        if not args.no_progress:
            say(line)

    say(f"differential: {len(scenarios)} scenario(s) on {target.name} ({launcher}), kit {kit_version()}")
    report = run_differential(
        scenarios, sides, workers=args.numprocesses, out=args.out.resolve(), cache=cache,
        shrink_budget_s=args.shrink_budget_s, say=progress, stop_at_first=args.stop_at_first,
    )  # fmt: skip
    for line in summary_lines(report):
        say(line)
    say(f"report: {args.out / 'diff-report.json'}")
    return exit_code(report)


def exit_code(report: dict[str, Any]) -> int:
    """0 all the same, 1 a divergence, 3 no divergence but a target error or an unknown."""
    if report["passed"]:
        return 0
    return 1 if report["counts"]["diverges"] else 3
