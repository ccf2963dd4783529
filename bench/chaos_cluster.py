"""``python -m bench.chaos_cluster``: one chaos campaign run locally and on a Spark standalone
cluster on this machine, one after the other, and what the cluster changed (bench app).

The same campaign (``--runs N --seed S``, the default mix unless more ``chaos run`` options follow
``--``) runs twice, each in a fresh process:

1. **locally**: ``python -m chaos run --parallel P``, one runner on this machine;
2. **on a cluster**: a Spark standalone master and ``--workers W`` workers of one core each on
   127.0.0.1 (every daemon dies with this process, even a killed one), and
   ``python -m chaos run --master spark://… --parallel P``; each worker runs one shard at a time,
   with ``P`` runs at once, as the local runner does.

It prints each side's wall time and runs/hour (Spark's start-up and each shard's runner start-up
included: they are what the cluster costs), the cluster's throughput **per worker** and its ratio
to the local one, and compares the records run by run: every ``(test_id, seed)`` of the local
campaign must come back from the cluster exactly once, with the same outcome. On one 2-core
machine the workers share its cores, so per-worker figures above ~2 workers say more about the
machine than about the cluster.

Exit 0: both campaigns ran and the cluster's records match the local ones; 1: a campaign could
not run, or a record is missing, repeated or judged differently (each listed); 2: bad options.
Throughput is printed, never asserted. Figures also go to ``<out>/bench.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Side", "compare", "main"]

#: ``python -m chaos run`` exit codes of a campaign that ran (all valid / some invalid / unknown only)
_RAN = (0, 1, 3)
_TIMEOUT_S = 24 * 3600


@dataclass
class Side:
    """One campaign's figures."""

    where: str
    exit_code: int
    wall_s: float
    records: int
    valid: int
    invalid: int
    unknown: int
    workers: int
    load_before: str
    load_after: str

    @property
    def per_hour(self) -> float:
        return self.records / self.wall_s * 3600 if self.wall_s > 0 else 0.0

    @property
    def per_worker_hour(self) -> float:
        return self.per_hour / max(1, self.workers)


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _records(out: Path) -> list[dict[str, Any]]:
    """Every run record under ``out`` (a line that is not JSON is kept as a problem, not dropped)."""
    rows: list[dict[str, Any]] = []
    for path in sorted(out.glob("chaos-runs-*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                rows.append(
                    {"test_id": f"<unreadable line {n} of {path.name}>", "seed": None, "outcome": None}
                )
    return rows


def compare(local: list[dict[str, Any]], cluster: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Runs of the local campaign missing from the cluster's records, runs the cluster reported
    more than once or that the local campaign did not run, and runs judged differently."""

    def key(r: dict[str, Any]) -> tuple[str, Any]:
        return str(r.get("test_id")), r.get("seed")

    def name(k: tuple[str, Any]) -> str:
        return f"{k[0]} seed {k[1]}"

    here = {key(r): r.get("outcome") for r in local}
    seen = Counter(key(r) for r in cluster)
    there = {key(r): r.get("outcome") for r in cluster}
    return {
        "missing": [name(k) for k in sorted(here, key=str) if k not in there],
        "repeated": [f"{name(k)} ×{n}" for k, n in sorted(seen.items(), key=str) if n > 1],
        "extra": [name(k) for k in sorted(there, key=str) if k not in here],
        "differing": [
            f"{name(k)}: {here[k]} locally, {there[k]} on the cluster"
            for k in sorted(here, key=str)
            if k in there and there[k] != here[k]
        ],
    }


def _die_with_bench() -> None:  # between fork and exec of a campaign: it dies with this process
    import ctypes  # noqa: PLC0415

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _campaign(
    argv: list[str],
    *,
    out: Path,
    where: str,
    workers: int,
    env: dict[str, str],
    during: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Side:
    """Run one campaign in a fresh process (``during`` is called while it runs) and count its
    records."""
    log = out.parent / f"{where}.log"
    load_before = _load()
    t0 = time.monotonic()
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "chaos", "run", *argv, "--no-progress", "--out", str(out)],
            stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            preexec_fn=_die_with_bench,  # noqa: PLW1509 - only prctl
        )  # fmt: skip
        try:
            if during is not None:
                during(proc)
            code = proc.wait(timeout=_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    wall = time.monotonic() - t0
    rows = _records(out)
    count = Counter(str(r.get("outcome")) for r in rows)
    return Side(
        where=where,
        exit_code=code,
        wall_s=round(wall, 1),
        records=len(rows),
        valid=count["passed"],
        invalid=count["failed"],
        unknown=count["error"],
        workers=workers,
        load_before=load_before,
        load_after=_load(),
    )


def _earlier_local(where: Path, args: argparse.Namespace) -> tuple[Side | None, str | None]:
    """The local side of an earlier run of this benchmark, if it ran the same campaign."""
    try:
        earlier = json.loads((where / "bench.json").read_text(encoding="utf-8"))
        side = Side(**earlier["sides"]["local"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"no readable bench.json with a local side there ({type(exc).__name__}: {exc})"
    same = {"runs": args.runs, "seed": args.seed, "parallel": args.parallel, "chaos_args": args.chaos_args}
    differs = [f"{k} {earlier.get(k)!r} there, {v!r} here" for k, v in same.items() if earlier.get(k) != v]
    if differs:
        return None, "another campaign: " + "; ".join(differs)
    if not (where / "local").is_dir():
        return None, "its local/ records are gone"
    return side, None


def _tail(log: Path, lines: int = 15) -> str:
    text = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []
    return "\n".join("    " + t for t in text[-lines:])


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number >= 1")
    return int(raw)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.chaos_cluster",
        description="A chaos campaign locally and on a loopback Spark standalone cluster, side by side.",
    )
    p.add_argument("--runs", type=_positive, default=100, help="runs of the campaign (default 100)")
    p.add_argument("--seed", type=int, default=3000, help="its first seed (default 3000)")
    p.add_argument("--workers", type=_positive, default=2, help="cluster workers, one core each (default 2)")
    p.add_argument(
        "--parallel", type=_positive, default=1, help="runs at once per worker and locally (default 1)"
    )
    p.add_argument(
        "--out", type=Path, default=None, help="results go here (default: results/chaos-cluster-<UTC time>)"
    )
    p.add_argument("--cluster-first", action="store_true", help="run the cluster campaign first")
    p.add_argument(
        "--local-from",
        type=Path,
        default=None,
        metavar="DIR",
        help="take the local side from an earlier run of this benchmark (its --out) with the same campaign",
    )
    p.add_argument(
        "--kill-worker-at",
        type=_positive,
        default=None,
        metavar="S",
        help="SIGKILL the last worker (its executor, the shard it runs) S seconds into the cluster campaign",
    )
    p.add_argument(
        "chaos_args", nargs="*", help="more `chaos run` options, after -- (e.g. -- --scenario links)"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from tests.spark_standalone import standalone  # noqa: PLC0415 - pyspark only when asked for
    except ImportError as exc:
        print(
            f"python -m bench.chaos_cluster: error: {exc}; run it from the checkout with the reports "
            "extras installed (bash scripts/setup_reports.sh)",
            file=sys.stderr,
        )
        return 2
    out = args.out or Path("results", time.strftime("chaos-cluster-%Y%m%dT%H%M%SZ", time.gmtime()))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(
            f"python -m bench.chaos_cluster: error: {out} is not empty; name a new directory", file=sys.stderr
        )
        return 2
    earlier: Side | None = None
    if args.local_from is not None:
        earlier, problem = _earlier_local(args.local_from, args)
        if problem:
            print(
                f"python -m bench.chaos_cluster: error: --local-from {args.local_from}: {problem}",
                file=sys.stderr,
            )
            return 2
    out.mkdir(parents=True, exist_ok=True)
    common = [
        "--runs",
        str(args.runs),
        "--seed",
        str(args.seed),
        "--parallel",
        str(args.parallel),
        *args.chaos_args,
    ]
    env = os.environ | {"PYSPARK_PYTHON": sys.executable}
    print(
        f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}: {args.runs} runs of seed {args.seed}, --parallel "
        f"{args.parallel}; cluster of {args.workers} one-core workers; {os.cpu_count()} CPUs; out {out}",
        flush=True,
    )

    def local() -> Side:
        if earlier is not None:
            shutil.copytree(args.local_from / "local", out / "local")
            print(f"  local: the campaign of {args.local_from}", flush=True)
            return earlier
        return _campaign(common, out=out / "local", where="local", workers=1, env=env)

    def cluster() -> Side:
        try:
            with standalone(out / "spark", workers=args.workers, cores=1, memory="1g") as c:

                def kill_later(proc: subprocess.Popen[bytes]) -> None:
                    if args.kill_worker_at is None:
                        return
                    deadline = time.monotonic() + args.kill_worker_at
                    while proc.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.2)
                    if proc.poll() is None:
                        c.workers[-1].kill(first=signal.SIGKILL)
                        killed.append(c.workers[-1].name)
                        print(f"  killed {c.workers[-1].name} at {args.kill_worker_at} s", flush=True)

                argv = ["--master", c.master_url, *common]
                return _campaign(
                    argv,
                    out=out / "cluster",
                    where="cluster",
                    workers=args.workers,
                    env=env,
                    during=kill_later,
                )
        except AssertionError as exc:  # the helper's word for a daemon that did not come up
            print(f"the Spark standalone cluster did not start: {str(exc)[:2000]}")
            return Side("cluster", -1, 0.0, 0, 0, 0, 0, args.workers, _load(), _load())

    killed: list[str] = []
    sides: dict[str, Side] = {}
    order = (("local", local), ("cluster", cluster))
    for name, run in reversed(order) if args.cluster_first else order:
        sides[name] = run()
        s = sides[name]
        print(f"  {name}: exit {s.exit_code}, {s.records} records in {s.wall_s} s", flush=True)
    failed = [s for s in sides.values() if s.exit_code not in _RAN or not s.records]
    for s in failed:
        tail = _tail(out / f"{s.where}.log")
        print(f"{s.where} campaign did not run (exit {s.exit_code}); its log ends:\n{tail}")
    diff = compare(_records(out / "local"), _records(out / "cluster"))
    lo, cl = sides["local"], sides["cluster"]
    ratio = cl.per_worker_hour / lo.per_hour if lo.per_hour else float("nan")
    head = f"{'':10}{'runs':>6}{'wall s':>9}{'runs/h':>9}{'per worker':>12}"
    print(f"\n{head}  verdicts (valid/invalid/unknown)  load at start → end")
    for s in (lo, cl):
        print(
            f"{s.where:10}{s.records:>6}{s.wall_s:>9.1f}{s.per_hour:>9.0f}{s.per_worker_hour:>12.0f}  "
            f"{s.valid}/{s.invalid}/{s.unknown}{'':24}{s.load_before} → {s.load_after}"
        )
    print(
        f"per-worker throughput on the cluster / local: {ratio:.2f}"
        + (f" (not comparable: {', '.join(killed)} was killed mid-campaign)" if killed else "")
    )
    print(
        f"records: {len(diff['missing'])} missing, {len(diff['repeated'])} repeated, {len(diff['extra'])} "
        f"not in the local campaign, {len(diff['differing'])} judged differently"
    )
    for what, items in diff.items():
        for item in items[:20]:
            print(f"  {what}: {item}")
    (out / "bench.json").write_text(
        json.dumps(
            {"runs": args.runs, "seed": args.seed, "parallel": args.parallel, "workers": args.workers,
             "chaos_args": args.chaos_args, "killed": killed, "per_worker_ratio": round(ratio, 3),
             "sides": {k: asdict(v) for k, v in sides.items()}, "records": diff},
            indent=1,
        ) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    print(f"figures: {out / 'bench.json'}; logs: {out / 'local.log'}, {out / 'cluster.log'}")
    return 1 if failed or any(diff.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
