"""The gate's differential section: options, the run, the certificate entry (conformance ring).

``python -m conformance run --diff-scenarios N --diff-seed S`` runs N generated scenarios of seed S
on the gate's target after the checks (:func:`run_section`) and the certificate gains a
``differential`` section. The gate's rule stays strict: a scenario that diverges, that the target
could not run (a node that never started: a target error) or that could not be judged (unknown)
makes the run not conformant (:func:`why_not`). ``--diff-scenarios 0`` leaves the section out.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster.targets import Target
from conformance.diff.cache import ReferenceCache
from conformance.diff.campaign import Sides
from conformance.diff.generator import generate

__all__ = ["DEFAULT_DIFF_SCENARIOS", "DEFAULT_DIFF_SEED", "add_arguments", "run_section", "why_not"]

#: The main job's default: a few minutes on a 2-core machine with the reference's traces cached.
DEFAULT_DIFF_SCENARIOS = 6
DEFAULT_DIFF_SEED = 2026
DIFF_RULE = (
    "with --diff-scenarios N > 0, every one of the N generated scenarios must run on the target and"
    " match the reference's trace (tolerated divergences excepted); a divergence, a target error or"
    " a scenario that could not be judged makes the run not conformant"
)


def _count(raw: str) -> int:
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number >= 0")
    return int(raw)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--diff-scenarios",
        type=_count,
        default=DEFAULT_DIFF_SCENARIOS,
        help=f"differential scenarios after the checks (default {DEFAULT_DIFF_SCENARIOS}; 0 = none)",
    )
    p.add_argument(
        "--diff-seed",
        type=_count,
        default=DEFAULT_DIFF_SEED,
        help=f"their seed (default {DEFAULT_DIFF_SEED})",
    )
    p.add_argument(
        "--diff-shrink-budget-s", type=float, default=300.0, help="shrinking per diverging scenario"
    )


def run_section(
    args: argparse.Namespace,
    target: Target,
    launcher: str,
    results_dir: Path,
    *,
    workers: int,
    say: Callable[[str], None] = print,
) -> dict[str, Any] | None:
    """Run the differential scenarios; the certificate's section (None when not asked for)."""
    if not args.diff_scenarios:
        return None
    from conformance.diff.cli import run_differential  # noqa: PLC0415 - the pool only when asked for

    unavailable = target.unavailable_reason()
    if unavailable:  # nothing can run: never a pass, and no run that would only fail
        counts = {"same": 0, "diverges": 0, "target-error": 0, "unknown": args.diff_scenarios}
        return {
            "scenarios": args.diff_scenarios, "seed": args.diff_seed, "launcher": launcher, "counts": counts,
            "passed": False, "rule": DIFF_RULE, "not_run_because": unavailable,
            "divergences": [], "target_errors": [], "tolerated": [],
            "unknown": [{"scenario": "all", "reason": unavailable}],
        }  # fmt: skip
    scenarios = [generate(args.diff_seed, i) for i in range(args.diff_scenarios)]
    cache = ReferenceCache(args.profile)
    say(f"differential: {len(scenarios)} scenarios of seed {args.diff_seed} on {target.name}")
    report = run_differential(
        scenarios,
        Sides(target, launcher, args.profile),
        workers=max(1, workers),
        out=results_dir / "differential",
        cache=cache,
        shrink_budget_s=args.diff_shrink_budget_s,
        say=say,
    )
    return {
        "scenarios": len(scenarios),
        "seed": args.diff_seed,
        "launcher": launcher,
        "kit_version": report["kit_version"],
        "wall_s": report["wall_s"],
        "counts": report["counts"],
        "passed": report["passed"],
        "rule": DIFF_RULE,
        "report": str(results_dir / "differential" / "diff-report.json"),
        "divergences": [
            {
                "scenario": r["name"],
                "step": (r["divergence"] or {}).get("step"),
                "signature": (r["divergence"] or {}).get("signature"),
                "behaviour_ids": (r["divergence"] or {}).get("ids", []),
                "repro": r["repro"],
            }
            for r in report["results"]
            if r["status"] == "diverges"
        ],
        "target_errors": [
            {"scenario": r["name"], "error": r["reason"]}
            for r in report["results"]
            if r["status"] == "target-error"
        ],
        "unknown": [
            {"scenario": r["name"], "reason": r["reason"]}
            for r in report["results"]
            if r["status"] == "unknown"
        ],
        "tolerated": [t for r in report["results"] for t in r["tolerated"]],
    }


def why_not(section: dict[str, Any] | None) -> list[str]:
    if section is None or section["passed"]:
        return []
    c = section["counts"]
    out = []
    if c["diverges"]:
        out.append(
            f"differential: {c['diverges']} of {section['scenarios']} scenarios diverge from Kafka 2.5.1"
        )
    if c["target-error"]:
        out.append(f"differential: the target could not run {c['target-error']} scenarios (target error)")
    if c["unknown"]:
        out.append(f"differential: {c['unknown']} scenarios could not be judged (unknown)")
    return out
