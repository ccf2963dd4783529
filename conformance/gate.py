"""The gate: run the conformance suite, print the matrix, write the certificate (conformance ring).

``python -m conformance [run] [--target reference] [--profile 2.5] [--areas EPOCH,TOPIC]
[--ids EPOCH-1,REASSIGN-13] [--launcher process] [-n 2] [--results-dir results/]``:

1. validates the input: an unknown target, profile, area, ID or launcher, an option given empty,
   a bad ``-n``, a target file that is missing, unreadable or malformed, or a results directory
   that is a file or not writable, is exit 2 with the reason and nothing is run;
2. runs the preflight (:mod:`conformance.doctor`): one node of the target must start, register
   with its bound ports, log state changes and stop; if not, the run stops within seconds with
   exit 1 and a certificate saying **target error** and why;
3. runs ``pytest conformance/checks`` in a subprocess (its output in ``<results>/pytest.log``),
   printing progress by behaviour ID and one line per failing check (its whole evidence in
   ``<results>/evidence/``);
4. prints the matrix (behaviour ID → pass / FAIL / target error / skipped / no check / n/a),
   writes ``<results>/certificate.json`` and exits 0 only when the run is conformant
   (:data:`~conformance.certificate.CONFORMANT_RULE`), 1 otherwise.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import catalogue
from cluster.startup import TARGET_ERROR_PREFIX
from cluster.targets import REPO_ROOT, Target, TargetError, builtin_targets, load_target
from conformance.attestation import AttestationError, load_private_key
from conformance.certificate import build_certificate, run_provenance, write_certificate, write_signed
from conformance.diff import gate_section as diff_section
from conformance.doctor import PreflightReport, preflight
from conformance.progress import Progress
from conformance.pytest_run import plugin_args, plugin_env
from conformance.selection import Selection, SelectionError, resolve_selection
from harness.launcher import LAUNCHERS
from records.run_record import new_run_id, read_records

PROG = "python -m conformance"


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
    p = argparse.ArgumentParser(
        prog=f"{PROG} [run]",
        description="Certify a ZooKeeper-mode controller: run the conformance checks of the selected"
        " behaviour IDs against a target, print the matrix, write certificate.json. Exit 0"
        " conformant, 1 not conformant (a failure, a target error, an ID without an executed check),"
        " 2 bad input. First run one ID: --ids EPOCH-1.",
    )
    p.add_argument(
        "--target",
        default="reference",
        help=f"built-in target ({', '.join(builtin_targets())}) or a target file's path (default reference)",
    )
    p.add_argument("--profile", default=catalogue.DEFAULT_PROFILE, help="behaviour profile (default 2.5)")
    p.add_argument(
        "--areas", default=None, help=f"comma list of areas (default: all): {', '.join(catalogue.AREAS)}"
    )
    p.add_argument(
        "--ids", default=None, help="comma list of behaviour IDs, e.g. EPOCH-1,REASSIGN-13 (added to --areas)"
    )
    p.add_argument(
        "--launcher",
        default=None,
        help=f"where nodes and ZooKeeper run: {', '.join(LAUNCHERS)} (default: $KZK_LAUNCHER or process)",
    )
    p.add_argument(
        "-n",
        "--numprocesses",
        default="2",
        type=workers,
        help="parallel workers (a number, auto; 0 = serial)",
    )
    p.add_argument("--results-dir", default="results", type=Path, help="where results go (default results/)")
    p.add_argument(
        "--skip-preflight",
        action="store_true",
        help="do not start one node first (a node that cannot start then fails each check as a target error)",
    )
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
        *plugin_args(),
        # private tmp_path root: concurrent pytest sessions of one user share /tmp/pytest-of-<user>
        # and, with tmp_path_retention_policy = none, delete each other's numbered dirs
        f"--basetemp={results_dir / 'pytest-tmp'}",
    ]
    if args.areas is not None:
        cmd.append(f"--areas={args.areas}")
    if args.ids is not None:
        cmd.append(f"--ids={args.ids}")
    if str(args.numprocesses) not in ("0", ""):
        cmd += ["-n", str(args.numprocesses), "--dist", "load"]
    return cmd + list(args.pytest_args)


def _is_target_error(record: dict[str, Any]) -> bool:
    return record["outcome"] == "error" and str(record.get("reason") or "").startswith(TARGET_ERROR_PREFIX)


def _verdict(mine: list[dict[str, Any]]) -> str:
    outcomes = {r["outcome"] for r in mine}
    if not mine:
        return "no check"
    if any(r["outcome"] in ("failed", "error") and not _is_target_error(r) for r in mine):
        return "fail"
    if any(_is_target_error(r) for r in mine):
        return "target error"
    return "pass" if "passed" in outcomes else "skipped"


def verdicts(records: list[dict[str, Any]], ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per behaviour ID: verdict (pass, fail, target error, skipped, no check), title, reasons,
    tests, total duration."""
    out: dict[str, dict[str, Any]] = {}
    for bid in ids:
        mine = [r for r in records if bid in r["behaviour_ids"]]
        reasons = sorted({r["reason"] for r in mine if r.get("reason") and r["outcome"] != "passed"})
        out[bid] = {
            "verdict": _verdict(mine),
            "title": catalogue.by_id(bid).title,
            "reasons": reasons,
            "tests": [
                {"test": r["test_id"], "outcome": r["outcome"], "duration_s": r["duration_s"]} for r in mine
            ],
            "duration_s": round(sum(r["duration_s"] for r in mine), 3),
        }
    return out


_MARK = {
    "pass": "pass",
    "fail": "FAIL",
    "target error": "TARGET ERR",
    "skipped": "skipped",
    "no check": "NO CHECK",
    "n/a": "n/a",
}


def render_matrix(table: dict[str, dict[str, Any]]) -> str:
    reasons = {r for v in table.values() for r in v["reasons"]}
    if table and {v["verdict"] for v in table.values()} == {"target error"} and len(reasons) == 1:
        return f"every selected behaviour ID ({len(table)}): TARGET ERR — {reasons.pop()}"
    lines = [f"{'behaviour':<13} {'verdict':<10} detail", "-" * 100]
    for bid, v in table.items():
        if v["verdict"] == "pass":
            detail = f"{len(v['tests'])} check(s)  {v.get('title', '')}"
        else:
            detail = "; ".join(v["reasons"])
        lines.append(f"{bid:<13} {_MARK[v['verdict']]:<10} {detail[:140]}")
    counts: dict[str, int] = {}
    for v in table.values():
        counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
    lines.append("-" * 100)
    lines.append("  ".join(f"{k}: {n}" for k, n in sorted(counts.items())))
    return "\n".join(lines)


def check_results_dir(path: Path) -> Path:
    """``path`` made and writable, or :class:`UsageError` saying why not."""
    resolved = path.expanduser().resolve()
    if resolved.exists() and not resolved.is_dir():
        raise UsageError(f"--results-dir {path}: is a file, not a directory; give a directory")
    try:
        resolved.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=resolved, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise UsageError(
            f"--results-dir {path}: cannot write there ({exc.strerror or exc}); give a writable directory"
        ) from None
    return resolved


def validate(args: argparse.Namespace) -> tuple[Target, Selection, str, Path]:
    """Target, selection, launcher and results dir of the run, or :class:`UsageError`."""
    try:
        target = load_target(args.target)
        selection = resolve_selection(args.areas, args.ids, args.profile, target.topology)
    except (TargetError, SelectionError) as exc:
        raise UsageError(str(exc)) from exc
    launcher = args.launcher or os.environ.get("KZK_LAUNCHER") or "process"
    if launcher not in LAUNCHERS:
        raise UsageError(f"unknown launcher {launcher!r}; valid launchers: {', '.join(LAUNCHERS)}")
    if launcher != "process" and target.controller is not None:
        raise UsageError(
            f"target {target.name} is a split topology: its controller processes need --launcher process"
        )
    if not selection.behaviour_ids:
        na = (
            f" ({len(selection.not_applicable)} selected IDs do not apply to a {selection.topology} topology)"
        )
        raise UsageError(
            f"the selection is empty: no behaviour ID applies to profile {args.profile}"
            + (na if selection.not_applicable else "")
        )
    if args.sign_key is not None:
        try:  # a bad key is found before the run, not after it
            load_private_key(args.sign_key)
        except AttestationError as exc:
            raise UsageError(f"--sign-key: {exc}") from exc
    return target, selection, launcher, check_results_dir(args.results_dir)


def why_not_conformant(table: dict[str, dict[str, Any]], pytest_exit_code: int | None) -> list[str]:
    """Every way the run breaks the rule; empty iff the run is conformant."""
    judged = {bid: v for bid, v in table.items() if v["verdict"] != "n/a"}
    why = [] if judged else ["the selection is empty"]
    errors = [bid for bid, v in judged.items() if v["verdict"] == "target error"]
    if errors:
        first = next(r for bid in errors for r in judged[bid]["reasons"] if r.startswith(TARGET_ERROR_PREFIX))
        which = f"IDs {', '.join(errors)}" if len(errors) < len(judged) else f"all {len(errors)} selected IDs"
        why.append(f"target error (a node of the target did not start or died), {which}: {first}")
    if pytest_exit_code not in (0, None) and not errors:
        why.append(f"pytest exited {pytest_exit_code} (a failing or erroring test, or none collected)")
    for verdict in ("fail", "skipped", "no check"):
        bad = [bid for bid, v in judged.items() if v["verdict"] == verdict]
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
        "topology": selection.topology,
        "profile": selection.profile,
        "areas": list(selection.areas) or ("all" if selection.everything else []),
        "ids": list(selection.ids),
        "launcher": launcher,
        "launcher_given": args.launcher is not None or "KZK_LAUNCHER" in os.environ,
        "pytest_args": list(args.pytest_args),
        "behaviour_ids": list(selection.behaviour_ids),
        "not_applicable": dict(selection.not_applicable),
    }


def _with_not_applicable(table: dict[str, dict[str, Any]], selection: Selection) -> dict[str, dict[str, Any]]:
    for bid, why in selection.not_applicable:
        table[bid] = {
            "verdict": "n/a",
            "title": catalogue.by_id(bid).title,
            "reasons": [f"not applicable to a {selection.topology} topology: {why}"],
            "tests": [],
            "duration_s": 0.0,
        }
    order = [b.id for b in catalogue.CATALOGUE]
    return {bid: table[bid] for bid in order if bid in table}


def _run_pytest(
    args: argparse.Namespace, results_dir: Path, run_id: str, selection: Selection, env: dict[str, str]
) -> int:
    cmd = pytest_command(args, results_dir)
    log = results_dir / "pytest.log"
    print(f"running the checks (pytest output: {log})", flush=True)
    with log.open("w", encoding="utf-8") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        say = _printer()
        with Progress(results_dir, run_id, list(selection.behaviour_ids), say):
            try:
                return subprocess.run(
                    cmd,
                    cwd=REPO_ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    check=False,
                    preexec_fn=_die_with_the_gate,
                ).returncode
            finally:
                shutil.rmtree(results_dir / "pytest-tmp", ignore_errors=True)


def _die_with_the_gate() -> None:
    """In the pytest child before exec: SIGTERM when the gate dies (a killed gate leaves no suite
    running; its nodes and ZooKeeper die with their pytest workers in turn)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


_PR_SET_PDEATHSIG = 1


def _printer() -> Any:
    def say(line: str) -> None:
        print(line, flush=True)

    return say


_SUMMARY = re.compile(r"\b\d+ (passed|failed|errors?|skipped|deselected)\b.* in [\d.]+s")


def _pytest_summary(results_dir: Path) -> str:
    """pytest's closing line (``101 passed in 173.2s``) from its log."""
    lines = (results_dir / "pytest.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return next((ln.strip("= ") for ln in reversed(lines) if _SUMMARY.search(ln)), lines[-1] if lines else "")


def _preflight_failed(report: PreflightReport, selection: Selection) -> dict[str, dict[str, Any]]:
    reason = f"{TARGET_ERROR_PREFIX}preflight: {report.problem}"
    table = {
        bid: {
            "verdict": "target error",
            "title": catalogue.by_id(bid).title,
            "reasons": [reason],
            "tests": [],
            "duration_s": 0.0,
        }
        for bid in selection.behaviour_ids
    }
    return _with_not_applicable(table, selection)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        target, selection, launcher, results_dir = validate(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    run_id = new_run_id()
    started = datetime.now(UTC)
    spec = catalogue.compare_with_spec()
    print(
        f"target {target.name} ({target.topology} topology, {launcher} launcher),"
        f" profile {selection.profile}: {len(selection.behaviour_ids)} behaviour IDs selected"
        + (f", {len(selection.not_applicable)} not applicable" if selection.not_applicable else "")
    )
    print(f"catalogue: {spec.describe()}")
    report: PreflightReport | None = None
    rc: int | None = None
    if not args.skip_preflight:
        print("preflight: starting one node of the target …", flush=True)
        report = preflight(target, launcher)
        print(report.render(), flush=True)
    workers = int(args.numprocesses) if str(args.numprocesses).isdigit() else 2
    alongside: diff_section.Alongside | None = None
    if report is not None and not report.ok:
        table = _preflight_failed(report, selection)
        records: list[dict[str, Any]] = []
    else:
        # beside the checks under the process launcher only (as clusters are started ahead): a
        # container scenario next to container checks would only contend for the engine
        if launcher == "process":
            alongside = diff_section.start_alongside(args, target, launcher, results_dir, workers=workers)
        if alongside is not None:
            print(
                f"differential: {diff_section.scenario_count(args)} scenarios of seed {args.diff_seed},"
                " run beside the checks; reported after them",
                flush=True,
            )
        env = {
            **os.environ,
            "KZK_RUN_ID": run_id,
            "KZK_RUN_STARTED": started.isoformat(),
            "KZK_LAUNCHER": launcher,
            **plugin_env(),
        }
        rc = _run_pytest(args, results_dir, run_id, selection, env)
        print(f"pytest: {_pytest_summary(results_dir)}")
        records = [
            r
            for r in read_records(sorted(results_dir.glob("runs-*.jsonl")), strict=False)
            if r["run_id"] == run_id
        ]
        table = _with_not_applicable(verdicts(records, list(selection.behaviour_ids)), selection)
    finished = datetime.now(UTC)
    print(render_matrix(table))
    preflight_problem = report.problem if report is not None and not report.ok else None
    differential = (
        alongside.result()
        if alongside is not None
        else diff_section.run_section(
            args, target, launcher, results_dir, workers=workers, target_error=preflight_problem
        )
    )
    finished = datetime.now(UTC)
    why_not = why_not_conformant(table, rc) + diff_section.why_not(differential)
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
        preflight=report.to_dict() if report is not None else None,
        catalogue_check={
            "status": spec.status,
            "summary": spec.describe(),
        },
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
    verdict = (
        "yes"
        if not why_not
        else "NO (target error)"
        if any(v["verdict"] == "target error" for v in table.values())
        or diff_section.had_target_error(differential)
        else "NO"
    )
    print(f"certificate: {path}")
    if (results_dir / "evidence").is_dir():
        print(f"evidence of each failing check: {results_dir / 'evidence'}/")
    print(f"conformant: {verdict}  (wall {certificate['wall_s']:.0f} s)")
    return 0 if not why_not else 1
