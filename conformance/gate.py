"""The gate: run the conformance suite, print the matrix, write the certificate (conformance ring).

``python -m conformance [run] [--target reference] [--profile 2.5] [--areas EPOCH,TOPIC]
[--ids EPOCH-1,REASSIGN-13] [--launcher process] [-n 2] [--results-dir results/]`` validates the
selection (an unknown target, profile, area, ID or launcher, or a bad ``-n``, is exit 2 with the
valid values and nothing is run), runs ``pytest conformance/checks`` in a subprocess with the
plugin's options and allure results, then reads the run records of this run and

- prints the conformance matrix: behaviour ID → pass / FAIL / skipped (reason) / no check;
- writes ``<results-dir>/certificate.json``: the selection (target, profile, areas, IDs, launcher),
  commit, host, times, per-ID verdicts with the tests behind them and their durations;
- exits 0 only when the run is conformant (:data:`CONFORMANT_RULE`), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import catalogue
from cluster.targets import REPO_ROOT, Target, TargetError, load_target
from conformance.attestation import AttestationError, load_private_key
from conformance.certificate import build_certificate, run_provenance, write_certificate, write_signed
from conformance.diff import gate_section as diff_section
from conformance.plugin import Selection, SelectionError, resolve_selection
from harness.launcher import LAUNCHERS
from records.run_record import new_run_id, read_records


class UsageError(Exception):
    """Bad command-line input: printed with the usage hint, exit 2."""


def workers(raw: str) -> str:
    """``-n`` value: a non-negative integer, ``auto`` or ``logical``."""
    value = raw.strip().lower()
    if value in ("auto", "logical") or (value.isdigit() and int(value) >= 0):
        return value
    raise argparse.ArgumentTypeError(
        f"invalid worker count {raw!r}: give a number >= 0 (0 = serial), 'auto' or 'logical'"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m conformance [run]", description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="reference", help="target name or TOML path (default reference)")
    p.add_argument("--profile", default=catalogue.DEFAULT_PROFILE, help="behaviour profile (default 2.5)")
    p.add_argument(
        "--areas", default="", help=f"comma list of areas (default: all): {', '.join(catalogue.AREAS)}"
    )
    p.add_argument(
        "--ids", default="", help="comma list of behaviour IDs, e.g. EPOCH-1,REASSIGN-13 (added to --areas)"
    )
    p.add_argument(
        "--launcher",
        default=None,
        help=f"where nodes and ZooKeeper run: {', '.join(LAUNCHERS)} (default: $KZK_LAUNCHER or process)",
    )
    p.add_argument(
        "-n", "--numprocesses", default="2", type=workers, help="xdist workers (a number, auto; 0 = serial)"
    )
    p.add_argument("--results-dir", default="results", type=Path)
    p.add_argument(
        "--sign-key",
        type=Path,
        default=os.environ.get("KZK_SIGNING_KEY") or None,
        help="ed25519 private key (PEM) to sign the certificate with: writes certificate.intoto.json"
        " beside certificate.json ($KZK_SIGNING_KEY; make one with `python -m conformance keygen`)",
    )
    diff_section.add_arguments(p)
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
        # private tmp_path root: concurrent pytest sessions of one user share /tmp/pytest-of-<user>
        # and, with tmp_path_retention_policy = none, delete each other's numbered dirs
        f"--basetemp={results_dir / 'pytest-tmp'}",
    ]
    if args.areas:
        cmd.append(f"--areas={args.areas}")
    if args.ids:
        cmd.append(f"--ids={args.ids}")
    if str(args.numprocesses) not in ("0", ""):
        cmd += ["-n", str(args.numprocesses), "--dist", "load"]
    return cmd + list(args.pytest_args)


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


def validate(args: argparse.Namespace) -> tuple[Target, Selection, str]:
    """Target, selection and launcher of the run, or :class:`UsageError` saying what is wrong."""
    try:
        target = load_target(args.target)
        selection = resolve_selection(args.areas, args.ids, args.profile)
    except (TargetError, SelectionError) as exc:
        raise UsageError(str(exc)) from exc
    launcher = args.launcher or os.environ.get("KZK_LAUNCHER") or "process"
    if launcher not in LAUNCHERS:
        raise UsageError(f"unknown launcher {launcher!r}; valid launchers: {', '.join(LAUNCHERS)}")
    if not selection.behaviour_ids:
        raise UsageError(f"the selection is empty: no behaviour ID applies to profile {args.profile}")
    if args.sign_key is not None:
        try:  # a bad key is found before the run, not after it
            load_private_key(args.sign_key)
        except AttestationError as exc:
            raise UsageError(f"--sign-key: {exc}") from exc
    return target, selection, launcher


def why_not_conformant(table: dict[str, dict[str, Any]], pytest_exit_code: int) -> list[str]:
    """Every way the run breaks :data:`CONFORMANT_RULE`; empty iff the run is conformant."""
    why = [] if table else ["the selection is empty"]
    if pytest_exit_code != 0:
        why.append(f"pytest exited {pytest_exit_code} (a failing or erroring test, or none collected)")
    for verdict in ("fail", "skipped", "no check"):
        bad = [bid for bid, v in table.items() if v["verdict"] == verdict]
        if bad:
            why.append(f"{_WHY[verdict]}: {', '.join(bad)}")
    return why


_WHY = {
    "fail": "failed or errored checks",
    "skipped": "no executed check (every check skipped)",
    "no check": "no check ran",
}


def other_tests(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tests of the run that name no behaviour ID (the suite's meta-checks)."""
    return [
        {"test": r["test_id"], "outcome": r["outcome"], "reason": r.get("reason")}
        for r in records
        if not r["behaviour_ids"]
    ]


def selection_record(
    args: argparse.Namespace, target: Target, selection: Selection, launcher: str
) -> dict[str, Any]:
    return {
        "target": target.name,
        "target_source": target.source,
        "profile": selection.profile,
        "areas": list(selection.areas) or ("all" if selection.everything else []),
        "ids": list(selection.ids),
        "launcher": launcher,
        "launcher_given": args.launcher is not None or "KZK_LAUNCHER" in os.environ,
        "pytest_args": list(args.pytest_args),
        "behaviour_ids": list(selection.behaviour_ids),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        target, selection, launcher = validate(args)
    except UsageError as exc:
        print(f"python -m conformance: error: {exc}", file=sys.stderr)
        return 2
    results_dir: Path = args.results_dir.resolve()
    results_dir.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id()
    started = datetime.now(UTC)
    env = {
        **os.environ,
        "KZK_RUN_ID": run_id,
        "KZK_RUN_STARTED": started.isoformat(),
        "KZK_LAUNCHER": launcher,
    }
    cmd = pytest_command(args, results_dir)
    print("running:", " ".join(cmd), flush=True)
    try:
        rc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, check=False).returncode
    finally:
        shutil.rmtree(results_dir / "pytest-tmp", ignore_errors=True)
    finished = datetime.now(UTC)
    records = [
        r
        for r in read_records(sorted(results_dir.glob("runs-*.jsonl")), strict=False)
        if r["run_id"] == run_id
    ]
    table = verdicts(records, list(selection.behaviour_ids))
    print(render_matrix(table))
    workers = int(args.numprocesses) if str(args.numprocesses).isdigit() else 2
    differential = diff_section.run_section(args, target, launcher, results_dir, workers=workers)
    finished = datetime.now(UTC)
    why_not = why_not_conformant(table, rc) + diff_section.why_not(differential)
    conformant = not why_not
    certificate = build_certificate(
        run_id=run_id,
        selection=selection_record(args, target, selection, launcher),
        target=target,
        profile=args.profile,
        started=started,
        finished=finished,
        pytest_exit_code=rc,
        why_not=why_not,
        table=table,
        other=other_tests(records),
        provenance=run_provenance(target, launcher),
        differential=differential,
    )
    for line in why_not:
        print(f"not conformant: {line}")
    path = write_certificate(results_dir, certificate)
    if args.sign_key is not None:
        try:
            print(f"signed certificate: {write_signed(results_dir, certificate, args.sign_key)}")
        except AttestationError as exc:
            print(f"python -m conformance: error: the certificate was not signed: {exc}", file=sys.stderr)
            return 2
    print(
        f"certificate: {path}  allure results: {results_dir / 'allure-results'}",
        f"wall: {certificate['wall_s']} s",
        f"conformant: {'yes' if conformant else 'NO'}",
    )
    return 0 if conformant else 1
