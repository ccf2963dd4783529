"""The main job: run the conformance suite, print the matrix, write the certificate (conformance ring).

``python -m conformance [--target reference] [--profile 2.5] [--areas EPOCH,TOPIC] [-n auto]
[--results-dir results/]`` runs ``pytest conformance/checks`` in a subprocess with the plugin's
options and allure results, then reads the run records of this run and

- prints the conformance matrix: behaviour ID → pass / FAIL / skipped (reason) / no check;
- writes ``<results-dir>/certificate.json``: target (+ version), profile, commit, host, times,
  per-ID verdicts with the tests behind them and their durations, and totals;
- exits non-zero if any check failed or errored (or pytest itself failed), else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance import catalogue
from conformance.plugin import current_commit
from conformance.records import new_run_id, read_records
from conformance.targets import REPO_ROOT, Target, TargetError, load_target

CERTIFICATE_VERSION = 1


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="reference", help="target name or TOML path (default reference)")
    p.add_argument("--profile", default=catalogue.DEFAULT_PROFILE)
    p.add_argument("--areas", default="", help="comma list of areas (default: all)")
    p.add_argument("-n", "--numprocesses", default="2", help="xdist workers (a number or auto; 0 = serial)")
    p.add_argument("--results-dir", default="results", type=Path)
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return p.parse_args(argv)


def pytest_command(args: argparse.Namespace, results_dir: Path) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(REPO_ROOT / "conformance" / "checks"),
        "-q",
        "-rs",
        f"--target={args.target}",
        f"--profile={args.profile}",
        f"--results-dir={results_dir}",
        f"--alluredir={results_dir / 'allure-results'}",
        "-p",
        "no:cacheprovider",
    ]
    if args.areas:
        cmd.append(f"--areas={args.areas}")
    if str(args.numprocesses) not in ("0", ""):
        cmd += ["-n", str(args.numprocesses), "--dist", "load"]
    return cmd + list(args.pytest_args)


def target_version(target: Target) -> str | None:
    if not target.version_command or target.unavailable_reason():
        return None
    values = target._vars()
    try:
        out = subprocess.run(
            [target._fmt(c, values) for c in target.version_command],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=REPO_ROOT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0][:200] if out.returncode == 0 and text else None


def verdicts(records: list[dict[str, Any]], ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per behaviour ID: verdict (pass, fail, skipped, no check), reasons, tests, total duration."""
    out: dict[str, dict[str, Any]] = {}
    for bid in ids:
        mine = [r for r in records if bid in r["behaviour_ids"]]
        outcomes = {r["outcome"] for r in mine}
        if not mine:
            verdict = "no check"
        elif outcomes & {"failed", "error"}:
            verdict = "fail"
        elif "passed" in outcomes:
            verdict = "pass"
        else:
            verdict = "skipped"
        reasons = sorted({r["reason"] for r in mine if r.get("reason") and r["outcome"] != "passed"})
        out[bid] = {
            "verdict": verdict,
            "reasons": reasons,
            "tests": [
                {"test": r["test_id"], "outcome": r["outcome"], "duration_s": r["duration_s"]} for r in mine
            ],
            "duration_s": round(sum(r["duration_s"] for r in mine), 3),
        }
    return out


def render_matrix(table: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'behaviour':<13} {'verdict':<9} detail", "-" * 78]
    for bid, v in table.items():
        detail = "; ".join(v["reasons"])[:120] if v["verdict"] != "pass" else f"{len(v['tests'])} check(s)"
        mark = {"pass": "pass", "fail": "FAIL", "skipped": "skipped", "no check": "NO CHECK"}[v["verdict"]]
        lines.append(f"{bid:<13} {mark:<9} {detail}")
    counts: dict[str, int] = {}
    for v in table.values():
        counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
    lines.append("-" * 78)
    lines.append("  ".join(f"{k}: {n}" for k, n in sorted(counts.items())))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        target = load_target(args.target)
    except TargetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results_dir: Path = args.results_dir.resolve()
    results_dir.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id()
    started = datetime.now(UTC)
    env = {**os.environ, "KZK_RUN_ID": run_id, "KZK_RUN_STARTED": started.isoformat()}
    cmd = pytest_command(args, results_dir)
    print("running:", " ".join(cmd), flush=True)
    rc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, check=False).returncode
    finished = datetime.now(UTC)
    records = [
        r
        for r in read_records(sorted(results_dir.glob("runs-*.jsonl")), strict=False)
        if r["run_id"] == run_id
    ]
    ids = catalogue.ids_in_areas([a for a in args.areas.split(",") if a] or None, args.profile)
    table = verdicts(records, ids)
    print(render_matrix(table))
    failed = any(v["verdict"] == "fail" for v in table.values()) or rc not in (0, 5)
    certificate = {
        "certificate_version": CERTIFICATE_VERSION,
        "run_id": run_id,
        "target": target.name,
        "target_description": target.description,
        "target_version": target_version(target),
        "profile": args.profile,
        "areas": args.areas or "all",
        "commit": current_commit(),
        "host": socket.gethostname(),
        "started_at": started.isoformat(),
        "finished_at": finished.isoformat(),
        "wall_s": round((finished - started).total_seconds(), 3),
        "pytest_exit_code": rc,
        "conformant": not failed and all(v["verdict"] == "pass" for v in table.values()),
        "verdicts": table,
    }
    path = results_dir / "certificate.json"
    path.write_text(json.dumps(certificate, indent=2) + "\n", encoding="utf-8")
    print(
        f"certificate: {path}  allure results: {results_dir / 'allure-results'}",
        f"wall: {certificate['wall_s']} s",
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
