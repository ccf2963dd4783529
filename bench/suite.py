"""The conformance suite's benchmark: where its wall time goes, how fast and how steady it is (bench app).

    python -m bench.suite                        # one gate run (-n 2): the table of where time goes
    python -m bench.suite --from-results DIR     # the table of a run already made (its results dir)
    python -m bench.suite --runs 20              # 20 runs in a row: wall times, loads, every failure
    python -m bench.suite --compare-with /work/main --runs 3   # that tree's code vs this one, in turns

Each run is the real gate (``python -m conformance -n N --results-dir DIR``) in a subprocess; the
table comes from the timing records it wrote (:mod:`bench.suite_profile`). With
``--compare-with PATH`` the runs alternate between PATH's code (``PYTHONPATH=PATH``, run from
PATH) and this tree's (both compiled to bytecode first, as ``scripts/setup.sh`` compiles a
checkout), and each pair is printed as a ratio with the load averages around it, so
a figure taken on a shared machine is compared with one taken under the same load. The machine's
load average (1/5/15 min) is printed with every figure. A figure, not a test: nothing here fails
because the suite is slow; the exit code is 0 unless the arguments are bad (2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.suite_profile import profile, render
from records.run_record import read_records
from records.timing import read_timings

__all__ = ["GateRun", "compile_tree", "main"]

HERE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class GateRun:
    tree: Path
    results: Path
    exit_code: int
    wall_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    certificate: dict[str, Any]

    def failures(self) -> list[str]:
        """Checks that did not pass (failed, errored) in this run."""
        run_id = self.certificate.get("run_id")
        records = read_records(sorted(self.results.glob("runs-*.jsonl")), strict=False)
        return sorted(
            f"{r['test_id']}: {r['outcome']}: {_first_line(r.get('reason'))}"
            for r in records
            if r["run_id"] == run_id and r["outcome"] in ("failed", "error")
        )

    def checks(self) -> int:
        run_id = self.certificate.get("run_id")
        records = read_records(sorted(self.results.glob("runs-*.jsonl")), strict=False)
        return sum(1 for r in records if r["run_id"] == run_id)

    def durations_sum_s(self) -> float:
        run_id = self.certificate.get("run_id")
        records = read_records(sorted(self.results.glob("runs-*.jsonl")), strict=False)
        return sum(float(r["duration_s"]) for r in records if r["run_id"] == run_id)


def _first_line(text: str | None) -> str:
    return text.splitlines()[0][:160] if text else ""


def _load() -> tuple[float, float, float]:
    return os.getloadavg()


def _fmt_load(load: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.1f}" for v in load)


def run_gate(tree: Path, results: Path, gate_args: Sequence[str]) -> GateRun:
    """One run of ``tree``'s gate with its own code (``PYTHONPATH=tree``, cwd ``tree``)."""
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "conformance", "--results-dir", str(results), *gate_args]
    before, t0 = _load(), time.monotonic()
    with (results.parent / f"{results.name}.gate.log").open("w", encoding="utf-8") as log:
        code = subprocess.run(
            cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, check=False
        ).returncode
    wall, after = time.monotonic() - t0, _load()
    cert_path = results / "certificate.json"
    cert = json.loads(cert_path.read_text(encoding="utf-8")) if cert_path.is_file() else {}
    return GateRun(tree, results, code, wall, before, after, cert)


def describe(run: GateRun) -> str:
    verdict = "conformant" if run.certificate.get("conformant") else f"NOT conformant (exit {run.exit_code})"
    return (
        f"{run.tree}: {run.wall_s:.1f} s wall, {run.checks()} checks, sum of check durations"
        f" {run.durations_sum_s():.1f} s{differential(run)}, {verdict}; load"
        f" {_fmt_load(run.load_before)} before, {_fmt_load(run.load_after)} after"
    )


def differential(run: GateRun) -> str:
    """The gate's differential section in one phrase (empty when the run had none)."""
    section = run.certificate.get("differential")
    if not isinstance(section, dict):
        return ""
    counts = section.get("counts") or {}
    same = counts.get("same", 0)
    return f", differential {same} of {section.get('count')} same in {section.get('wall_s', 0):.1f} s"


def table_of(results: Path, *, top: int = 0) -> str:
    cert_path = results / "certificate.json"
    cert = json.loads(cert_path.read_text(encoding="utf-8")) if cert_path.is_file() else None
    run_id = cert.get("run_id") if cert else None
    timings = list(read_timings(sorted(results.glob("timings-*.jsonl")), run_id))
    if not timings:
        return f"{results}: no timing records (a tree without the suite's timing, or no check ran)"
    return render(profile(timings, cert), top=top)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.suite", description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=1, help="gate runs (default 1)")
    p.add_argument("--compare-with", type=Path, default=None, help="another tree: runs alternate with it")
    p.add_argument("--from-results", type=Path, default=None, help="only print the table of this results dir")
    p.add_argument("--out", type=Path, default=Path("/tmp/bench-suite"), help="results dirs go under here")
    p.add_argument("--top", type=int, default=0, help="table rows: the N longest checks (default all)")
    p.add_argument("-n", default="2", help="xdist workers of each gate run (default 2)")
    p.add_argument("gate_args", nargs="*", help="more gate arguments, after -- (e.g. -- --ids EPOCH-1)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs {args.runs}: give 1 or more")
    if args.compare_with is not None and not (args.compare_with / "conformance").is_dir():
        p.error(f"--compare-with {args.compare_with}: not a tree of this kit (no conformance/ there)")
    if args.from_results is not None and not args.from_results.is_dir():
        p.error(f"--from-results {args.from_results}: not a directory")
    return args


def compile_tree(tree: Path) -> None:
    """Compile ``tree``'s packages to bytecode, as ``scripts/setup.sh`` does for a checkout: a
    tree unpacked with ``git archive`` has none, and where ``PYTHONDONTWRITEBYTECODE`` is set
    every process of its runs would compile its modules again (about 12 % of the suite's wall
    time), so two trees would not be timed on equal terms."""
    packages = sorted(p.name for p in tree.iterdir() if (p / "__init__.py").is_file() and p.name != ".venv")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *packages],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        check=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_results is not None:
        print(table_of(args.from_results, top=args.top))
        return 0
    gate_args = ["-n", str(args.n), *args.gate_args]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    command = f"python -m conformance {' '.join(gate_args)}"
    print(
        f"{now}: {args.runs} run(s) of `{command}`, {os.cpu_count()} CPUs, load {_fmt_load(_load())}",
        flush=True,
    )
    trees = [args.compare_with.resolve(), HERE] if args.compare_with else [HERE]
    for tree in trees:
        compile_tree(tree)
    mine: list[GateRun] = []
    failures: Counter[str] = Counter()
    for i in range(args.runs):
        pair: list[GateRun] = []
        for j, tree in enumerate(trees):
            run = run_gate(tree, args.out / f"run{i:02d}-{j}", gate_args)
            print(f"run {i + 1}/{args.runs} " + describe(run), flush=True)
            for f in run.failures():
                print(f"    not passed: {f}", flush=True)
            if tree == HERE:
                mine.append(run)
                failures.update(f.split(": ")[0] for f in run.failures())
            pair.append(run)
        if len(pair) == 2:
            print(f"    ratio this tree / {trees[0]}: {pair[1].wall_s / pair[0].wall_s:.2f}", flush=True)
    _closing(mine, failures, args.top)
    return 0


def _closing(mine: list[GateRun], failures: Counter[str], top: int) -> None:
    walls = sorted(r.wall_s for r in mine)
    failed_runs = sum(1 for r in mine if r.failures())
    not_conformant = sum(1 for r in mine if not r.certificate.get("conformant"))
    median = walls[len(walls) // 2]
    print(f"\nthis tree: {len(mine)} run(s), wall min {walls[0]:.1f} s, median {median:.1f} s,")
    print(f"    max {walls[-1]:.1f} s;")
    print(f"    runs with a check not passed: {failed_runs}")
    print(f"    runs not conformant (checks, differential section, or no certificate): {not_conformant}")
    for test, n in failures.most_common():
        print(f"    {n}x not passed: {test}")
    print("\nwhere the time went (the last run of this tree):")
    print(table_of(mine[-1].results, top=top))


if __name__ == "__main__":
    sys.exit(main())
