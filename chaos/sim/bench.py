"""``python -m chaos.sim.bench``: the simulator's figures (ring: drivers — a benchmark that prints).

1. **throughput**: ``--schedules`` schedules of the default mix in ``-n`` worker processes: wall
   seconds, schedules/hour, and CPU seconds per schedule (the machine's other load shows in wall
   time, not in CPU time);
2. **memory**: a campaign of one worker (the CLI's :class:`~chaos.sim.pool.RecyclingPool`, which
   replaces a worker grown 5 % past its settled size) plays ``--rss-first`` schedules, then up
   to ``--rss-last``: the playing worker's resident set size (``VmRSS``) after each, the parent's,
   and how many workers were replaced; ``--rss-in-process`` measures one process that plays them
   all instead (no replacement). Every schedule is judged, and one that is not valid on the
   unmodified reference is printed with its replay token (a sweep of the default mix);
3. **mutants**: for each mutant of ``conformance/mutants`` named by ``--mutants`` (default: every
   one), a copy of the kit with the patch applied plays seeds 1, 2, … until the first invalid run
   (at most ``--per-mutant``): simulated schedules to first catch and the seconds it took; and
   the differential column (unless ``--skip diff``): ``python -m chaos sim --diff-tree`` on the
   same copy, schedules to the first one that shows anything other than this kit does, and that
   difference shrunk (steps before and after, seconds; ``--shrink-budget-s``). The real
   chaos column is printed only from ``--real-table`` (a JSON file of measured real runs), never
   made up.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chaos.generator import Schedule, generate
from chaos.scenarios import DEFAULT_MIX
from chaos.sim.pool import RecyclingPool
from chaos.sim.run import simulate
from chaos.sim.version import token

REPO = Path(__file__).resolve().parents[2]
MUTANTS = REPO / "conformance" / "mutants"


def _schedule(seed: int) -> Schedule:
    return generate(DEFAULT_MIX[seed % len(DEFAULT_MIX)], seed)


def _play(seed: int) -> float:
    return _play_judged(seed)[0]


def _play_judged(seed: int) -> tuple[float, str]:
    """CPU seconds and the verdict of the default mix's schedule ``seed``."""
    logging.disable(logging.CRITICAL)
    started = time.process_time()
    result = simulate(_schedule(seed), None)
    return time.process_time() - started, result.verdict


def throughput(schedules: int, workers: int) -> dict[str, float]:
    """The CLI's pool over the default mix: wall seconds and CPU seconds per schedule."""
    started = time.monotonic()
    with RecyclingPool(_play, workers) as pool:
        cpu = sum(pool.imap(range(1, schedules + 1)))
    wall = time.monotonic() - started
    return {
        "schedules": schedules,
        "workers": workers,
        "wall_s": round(wall, 1),
        "per_hour": round(3600 * schedules / wall),
        "cpu_s_per_schedule": round(cpu / schedules, 3),
    }


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _verdict_and_token(seed: int) -> tuple[str, str]:
    return _play_judged(seed)[1], token(_schedule(seed))


def memory(first: int, last: int, *, in_process: bool = False) -> dict[str, Any]:
    """The player's RSS after ``first`` and after ``last`` schedules (see the module docstring);
    every schedule is judged, so the run is also a sweep of the unmodified reference: a seed that
    is not valid is printed (with its replay token) as it happens and listed in the result."""
    not_valid: list[str] = []
    sizes: dict[int, float] = {}
    largest = 0.0
    step = max(1, (last - first) // 10)

    def note(seed: int, verdict: str, name: str, rss: float) -> None:
        nonlocal largest
        largest = max(largest, rss)
        if verdict != "valid":
            not_valid.append(f"{verdict} {name}")
            print(f"memory: seed {seed} {not_valid[-1]}", file=sys.stderr, flush=True)
        if seed == first or (seed > first and ((seed - first) % step == 0 or seed == last)):
            sizes[seed] = rss
            print(f"memory: {seed} schedules, RSS {rss:.1f} MiB", file=sys.stderr, flush=True)

    seeds = range(1, last + 1)
    parent_first = parent_last = _rss_mib()
    retired = 0
    if in_process:
        for seed in seeds:
            verdict, name = _verdict_and_token(seed)
            note(seed, verdict, name, _rss_mib())
    else:
        with RecyclingPool(_verdict_and_token, 1) as pool:
            for seed, (verdict, name) in zip(seeds, pool.imap(seeds), strict=True):
                note(seed, verdict, name, pool.stats.latest_mib)
                if seed == first:
                    parent_first = _rss_mib()
            retired = pool.stats.retired
        parent_last = _rss_mib()
    after_first, after_last = sizes[first], sizes[last]
    return {
        "after_first": round(after_first, 1),
        "first": first,
        "after_last": round(after_last, 1),
        "last": last,
        "growth_pct": round(100 * (after_last - after_first) / after_first, 1),
        "largest": round(largest, 1),
        "parent": (round(parent_first, 1), round(parent_last, 1)),
        "retired": retired,
        "in_process": in_process,
        "not_valid": not_valid,
    }


def _mutant_tree(patch: Path, scratch: Path) -> Path | None:
    tree = scratch / patch.stem
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        source = REPO / name
        if name and source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes(source.read_bytes())
    applied = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", str(patch)], cwd=tree, capture_output=True, check=False
    )
    return tree if applied.returncode == 0 else None


def first_difference(
    patch: Path, tree: Path, limit: int, density: int = 1, shrink_budget_s: float = 60.0
) -> dict[str, Any]:
    """``python -m chaos sim --diff-tree`` on the mutant's tree: schedules to the first one whose
    transaction log, requests or clients' results differ from this kit's (seconds: the campaign's
    wall time), and how that difference shrank."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chaos-sim-diff-") as out:
        cmd = [sys.executable, "-m", "chaos", "sim", "--diff-tree", str(tree), "--runs", str(limit)]
        cmd += ["--density", str(density), "--stop-at-first", "-n", "2", "--out", out]
        cmd += ["--shrink-budget-s", str(shrink_budget_s)]
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
        seconds = round(time.monotonic() - started, 1)
        try:
            report = json.loads((Path(out) / "sim-diff-report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"at": None, "seconds": seconds, "note": (done.stderr.strip() or "no report")[-200:]}
    if report["counts"]["unknown"]:
        return {
            "at": None,
            "seconds": seconds,
            "note": "not compared: " + report["unknown"][0]["reason"][:150],
        }
    first = report["differences"][0] if report["differences"] else None
    if first is None:
        return {"at": None, "seconds": seconds, "note": "", "shrunk": ""}
    where = first["first_differences"][0]["stream"] if first["first_differences"] else "verdict"
    shrunk = first.get("shrunk") or {}
    shrunk_cell = (
        f"{shrunk['steps'][0]} → {shrunk['steps'][1]} steps ({shrunk['seconds']} s)"
        if shrunk.get("shrunk")
        else f"not shrunk: {shrunk.get('reason', 'no shrink recorded')[:100]}"
    )
    return {
        "at": first["index"] + 1,
        "seconds": report.get("wall_s", seconds),
        "note": where,
        "shrunk": shrunk_cell,
    }


def first_catch(
    patch: Path, limit: int, scratch: Path, density: int = 1, tree: Path | None = None
) -> dict[str, Any]:
    tree = tree or _mutant_tree(patch, scratch)
    if tree is None:
        return {"mutant": patch.stem, "caught_at": None, "seconds": None, "note": "patch does not apply"}
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    started = time.monotonic()
    code = (
        "import logging,sys,json\nlogging.disable(logging.CRITICAL)\n"
        "from chaos.generator import generate\nfrom chaos.scenarios import DEFAULT_MIX, SCENARIOS, dense\n"
        "from chaos.sim.run import simulate\n"
        f"for i in range(1, {limit} + 1):\n"
        "    name = DEFAULT_MIX[i % len(DEFAULT_MIX)]\n"
        f"    r = simulate(generate(dense(SCENARIOS[name], {density}), i), None)\n"
        "    if r.verdict == 'invalid':\n"
        "        print(json.dumps({'at': i, 'why': r.reason})); sys.exit(0)\n"
        "print(json.dumps({'at': None}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    seconds = round(time.monotonic() - started, 1)
    try:
        found = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {
            "mutant": patch.stem,
            "caught_at": None,
            "seconds": seconds,
            "note": out.stderr.strip()[-200:],
        }
    why = (found.get("why") or "").split(":")[0]
    return {"mutant": patch.stem, "caught_at": found["at"], "seconds": seconds, "note": why}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m chaos.sim.bench", description=__doc__.split("\n")[0])
    p.add_argument("--schedules", type=int, default=200)
    p.add_argument("-n", "--parallel", type=int, default=2)
    p.add_argument("--rss-first", type=int, default=1000)
    p.add_argument("--rss-last", type=int, default=3000)
    p.add_argument(
        "--rss-in-process", action="store_true", help="memory: one process plays every schedule (no worker)"
    )
    p.add_argument("--mutants", default="", help="comma list of mutant names (default: every one)")
    p.add_argument("--per-mutant", type=int, default=60, help="simulated schedules per mutant at most")
    p.add_argument(
        "--density", type=int, default=1, help="mutant schedules D times as dense (chaos sim --density)"
    )
    p.add_argument(
        "--shrink-budget-s", type=float, default=60.0, help="wall-time bound of shrinking one difference"
    )
    p.add_argument(
        "--real-table", type=Path, default=None, help="JSON: mutant -> {runs, seconds} of real chaos"
    )
    p.add_argument(
        "--skip",
        default="",
        help="comma list of parts to skip: throughput,memory,mutants; checkers,diff (the mutants' columns)",
    )
    args = p.parse_args(argv)
    skip = set(args.skip.split(","))
    os.environ["PYTHONHASHSEED"] = "0"
    if "throughput" not in skip:
        t = throughput(args.schedules, args.parallel)
        print(
            f"throughput: {t['schedules']} schedules, {t['workers']} workers, {t['wall_s']} s wall -> "
            f"{t['per_hour']:,} schedules/hour; {t['cpu_s_per_schedule']} CPU s per schedule"
        )
    if "memory" not in skip:
        if args.rss_last <= args.rss_first:
            p.error("--rss-last must be larger than --rss-first")
        m = memory(args.rss_first, args.rss_last, in_process=args.rss_in_process)
        who = (
            "one process playing them all"
            if m["in_process"]
            else f"the playing worker ({m['retired']} replaced for their size; the parent "
            f"{m['parent'][0]} -> {m['parent'][1]} MiB)"
        )
        print(
            f"memory: RSS {m['after_first']} MiB after {m['first']} schedules, {m['after_last']} MiB after "
            f"{m['last']} ({m['growth_pct']:+} %), at most {m['largest']} MiB after any schedule; {who}; "
            f"schedules not valid: {len(m['not_valid'])}" + "".join(f"\n  {line}" for line in m["not_valid"])
        )
    if "mutants" not in skip:
        real = json.loads(args.real_table.read_text()) if args.real_table else {}
        wanted = {n for n in args.mutants.split(",") if n}
        patches = sorted(q for q in MUTANTS.glob("*.patch") if not wanted or q.stem in wanted)
        print(
            "| mutant | real chaos runs to first catch (s) | simulated schedules to first catch (s)"
            " | first failing checker | differential: schedules to first difference (s) | stream"
            " | difference shrunk |"
        )
        print("|---|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory(prefix="chaos-sim-bench-") as scratch:
            for patch in patches:
                tree = _mutant_tree(patch, Path(scratch))
                if "checkers" in skip:
                    row = {"mutant": patch.stem, "caught_at": None, "seconds": None, "note": ""}
                else:
                    row = first_catch(patch, args.per_mutant, Path(scratch), args.density, tree)
                measured = real.get(patch.stem)
                real_cell = f"{measured['runs']} ({measured['seconds']})" if measured else "not measured"
                sim_cell = (
                    "skipped"
                    if "checkers" in skip
                    else f"{row['caught_at']} ({row['seconds']})"
                    if row["caught_at"]
                    else f"not within {args.per_mutant} ({row['seconds']})"
                )
                diff_cell, stream, shrunk = "skipped", "", ""
                if tree is not None and "diff" not in skip:
                    d = first_difference(patch, tree, args.per_mutant, args.density, args.shrink_budget_s)
                    diff_cell = (
                        f"{d['at']} ({d['seconds']})"
                        if d["at"]
                        else f"not within {args.per_mutant} ({d['seconds']})"
                    )
                    stream, shrunk = d["note"], d.get("shrunk", "")
                cells = (row["mutant"], real_cell, sim_cell, row["note"], diff_cell, stream, shrunk)
                print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
