"""The differential mode of mutation testing: a mutant as a target (conformance ring).

``python -m conformance.mutate --mode diff|both`` runs each mutant (a patched scratch copy of the
tree) through the differential suite as well as (``both``) or instead of (``diff``) the checks:
:func:`mutant_target` writes a target definition whose nodes run the *copy's* reference
(``cwd`` and ``PYTHONPATH`` = the copy), and :func:`run_diff` runs ``python -m conformance diff``
from the working tree against it — the oracle stays the unmutated reference, its traces cached by
the working tree's kit version. The mutant is killed by the first scenario that diverges or that
the mutant cannot run (a node that does not start); ``--stop-at-first`` ends the campaign there.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster.targets import BUILTIN_DIR, REPO_ROOT

__all__ = ["DiffKill", "confirmed", "diff_summary", "diff_text", "mutant_target", "run_diff"]


@dataclass(frozen=True)
class DiffKill:
    status: str  # killed | survived | timeout | unknown
    detail: str
    wall_s: float
    scenarios_run: int = 0
    scenario: str | None = None
    signature: str | None = None
    ids: tuple[str, ...] = ()
    repro: str | None = None


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def mutant_target(tree: Path, name: str) -> Path:
    """A target definition for the reference of ``tree`` (a patched copy), written into ``tree``."""
    with (BUILTIN_DIR / "reference.toml").open("rb") as fh:
        data = tomllib.load(fh)
    data.pop("container", None)  # the mutant runs as local processes of the copy
    data["name"], data["cwd"] = f"mutant-{name}", str(tree)
    data["description"] = f"the reference with mutant {name} applied ({tree})"
    data["env"] = {**data.get("env", {}), "PYTHONPATH": str(tree)}
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for section, table in ((k, v) for k, v in data.items() if isinstance(v, dict)):
        lines.append(f"\n[{section}]")
        lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in table.items()]
    path = tree / "mutant-target.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(args: list[str], out: Path, timeout_s: float) -> bool:
    """``python -m conformance diff <args> --out out`` from the working tree; False on timeout."""
    cmd = [sys.executable, "-m", "conformance", "diff", *args, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "KZK_LAUNCHER": "process"}
    out.mkdir(parents=True, exist_ok=True)
    with (out / "diff.log").open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, before exec
        )
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return False
    return True


def run_diff(
    target_file: Path,
    out: Path,
    *,
    scenarios: int,
    seed: int,
    workers: int,
    timeout_s: float,
    shrink_budget_s: float,
    pick: str = "first",
) -> DiffKill:
    """``python -m conformance diff`` against the mutant, from the working tree; its verdict. A kill
    counts only if the reference, run afresh on the killing scenario, agrees with its cached trace,
    and the mutant, run again on it, diverges again with the same signature (otherwise the
    divergence may be the harness's, the machine's or a race's, not the mutant's): ``unknown``."""
    began = time.monotonic()
    args = ["--target", str(target_file), "--scenarios", str(scenarios), "--seed", str(seed)]
    args += ["-n", str(workers), "--stop-at-first", "--shrink-budget-s", str(shrink_budget_s)]
    args += ["--pick", pick]
    if not _run(args, out, timeout_s):
        return DiffKill(
            "timeout", f"the differential run exceeded {timeout_s:.0f} s", time.monotonic() - began
        )
    verdict = _verdict(out / "diff-report.json", time.monotonic() - began)
    if verdict.status != "killed" or verdict.scenario is None:
        return verdict
    again = out / "reference-again"
    scenario = out / "scenarios" / verdict.scenario / "scenario.json"
    _run(
        ["--replay", str(scenario), "--target", "reference", "--no-cache", "--shrink-budget-s", "0"],
        again,
        timeout_s,
    )
    check = _verdict(again / "diff-report.json", 0.0)
    repeat = None
    if check.status == "survived":
        # the mutant again on the same scenario: a divergence that does not come back (timing the
        # normalisation has no rule for yet) is no kill
        target_again = out / "target-again"
        _run(
            ["--replay", str(scenario), "--target", str(target_file), "--shrink-budget-s", "0"],
            target_again,
            timeout_s,
        )
        repeat = _verdict(target_again / "diff-report.json", 0.0)
    return dataclasses.replace(confirmed(verdict, check, repeat), wall_s=time.monotonic() - began)


def confirmed(kill: DiffKill, reference_again: DiffKill, mutant_again: DiffKill | None) -> DiffKill:
    """``kill`` if the reference run afresh on its scenario was the same as its cached trace
    (``survived``) and the mutant run again diverged again with the same signature; else ``unknown``
    saying which of the two did not hold."""
    if reference_again.status != "survived":
        ref = reference_again
        why = f"not confirmed: the reference run afresh on it: {ref.status} ({ref.detail})"
        return dataclasses.replace(kill, status="unknown", detail=f"{kill.detail}; {why}")
    if mutant_again is None or mutant_again.status != "killed" or mutant_again.signature != kill.signature:
        seen = "not run" if mutant_again is None else mutant_again.status
        if mutant_again is not None and mutant_again.signature:
            seen += f" at {mutant_again.signature}"
        detail = f" ({mutant_again.detail})" if mutant_again is not None else ""
        why = f"not confirmed: the mutant run again on it: {seen}{detail}"
        return dataclasses.replace(kill, status="unknown", detail=f"{kill.detail}; {why}")
    return kill


def _die_with_parent() -> None:  # runs in the forked child before exec: the run dies with the tool
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _verdict(report_path: Path, wall_s: float) -> DiffKill:
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DiffKill("unknown", f"no report ({report_path}); see diff.log beside it", wall_s)
    results = report.get("results", [])
    for r in results:
        if r["status"] in ("diverges", "target-error"):
            d = r.get("divergence") or {}
            detail = f"{r['name']}: {d.get('signature') or r['reason']}"
            return DiffKill(
                "killed",
                detail,
                wall_s,
                len(results),
                r["name"],
                d.get("signature"),
                tuple(d.get("ids", [])),
                r.get("repro"),
            )
    unknown = [r for r in results if r["status"] == "unknown"]
    if unknown or not results:
        return DiffKill("unknown", f"{len(unknown)} scenarios could not be judged", wall_s, len(results))
    return DiffKill("survived", f"{len(results)} scenarios, no divergence", wall_s, len(results))


def diff_text(diff: dict[str, Any] | None) -> str:
    """One mutant's differential verdict, for the kill table."""
    if diff is None:
        return "-"
    if diff["status"] != "killed":
        return f"{diff['status'].upper()} ({diff['detail']})"
    return f"{diff['detail']} [{','.join(diff['ids'][:4])}] after {diff['scenarios_run']} scenario(s)"


def diff_summary(results: list[tuple[str, str, dict[str, Any] | None]]) -> dict[str, Any]:
    """Kill rates of the differential mode and of checks + differential together, from (mutant,
    checks status, differential verdict) triples."""
    judged = [
        (n, s, d) for n, s, d in results if d is not None and d["status"] in ("killed", "timeout", "survived")
    ]
    if not judged:
        return {}
    diff_killed = [n for n, _, d in judged if d is not None and d["status"] in ("killed", "timeout")]
    both = [(n, s) for n, s, _ in judged if s in ("killed", "timeout", "survived", "not run")]
    either = [n for n, s in both if s in ("killed", "timeout") or n in diff_killed]
    checks_ran = [n for n, s in both if s != "not run"]
    return {
        "diff_ran": len(judged),
        "diff_killed": len(diff_killed),
        "diff_kill_rate": round(len(diff_killed) / len(judged), 4),
        "diff_survived": [n for n, _, _ in judged if n not in diff_killed],
        "diff_unknown": [n for n, _, d in results if d is not None and n not in {j[0] for j in judged}],
        "combined_kill_rate": round(len(either) / len(both), 4) if checks_ran else None,
        "combined_survived": [n for n, _ in both if n not in either] if checks_ran else [],
    }
