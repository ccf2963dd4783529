"""The gate's differential section: options, the run, the certificate entry (conformance ring).

``python -m conformance run --diff-scenarios N --diff-seed S`` runs N generated scenarios
(each is scenario 0 of its own seed ``S * 10000 + i``, so it replays alone by that seed; the N are
the ones of the first 400 candidates that together reach the most distinct inputs) on the gate's
target, beside its checks under the process launcher (:func:`start_alongside`: on
``--diff-workers`` workers from the start, reported after the checks' matrix; under the docker
launcher after the checks, :func:`run_section`), and the certificate gains a
``differential`` section. The gate's rule stays strict: a scenario that diverges, that the target
could not run (a node that never started: a target error) or that could not be judged (unknown)
makes the run not conformant (:func:`why_not`). ``--diff-scenarios 0`` leaves the section out.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster.targets import Target
from conformance.diff import coverage
from conformance.diff.cache import ReferenceCache
from conformance.diff.campaign import Sides
from conformance.diff.generator import generate

__all__ = [
    "DEFAULT_DIFF_SCENARIOS",
    "DEFAULT_DIFF_SEED",
    "GATE_POOL",
    "OUTCOME",
    "Alongside",
    "add_arguments",
    "had_target_error",
    "run_section",
    "scenario_count",
    "scenario_seeds",
    "start_alongside",
    "why_not",
]

#: The main job's default: about two minutes of scenarios beside the checks on a 2-core machine
#: (the pick weighs what each reaches against its estimated run time, so they are short ones).
DEFAULT_DIFF_SCENARIOS = 10
DEFAULT_DIFF_SEED = 2026
DIFF_RULE = (
    "with --diff-scenarios N > 0, every one of the N generated scenarios must run on the target and"
    " match the reference's trace (tolerated divergences excepted); a divergence, a target error or"
    " a scenario that could not be judged makes the run not conformant"
)


#: The gate's candidates for seed S are scenario 0 of seeds ``S * SEED_STRIDE + i``, so that each
#: recorded seed replays alone as ``python -m conformance diff --scenarios 1 --seed <seed>``
#: (verify --replay); it runs the N of the first GATE_POOL that together reach the most inputs.
SEED_STRIDE = 10_000
GATE_POOL = 400

#: The diff report's status → the certificate's outcome (``same``/``diverged``: verify's vocabulary,
#: the diff command's exit 0/1).
OUTCOME = {"same": "same", "diverges": "diverged", "target-error": "target error", "unknown": "unknown"}


def _count(raw: str) -> int:
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number >= 0")
    return int(raw)


def _scenario_count(raw: str) -> int:
    count = _count(raw)
    if count > SEED_STRIDE:
        raise argparse.ArgumentTypeError(f"at most {SEED_STRIDE} differential scenarios, got {count}")
    return count


def _workers(raw: str) -> int:
    count = _count(raw)
    if not 1 <= count <= 16:
        raise argparse.ArgumentTypeError(f"differential workers: 1 to 16, got {count}")
    return count


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--diff-scenarios",
        type=_scenario_count,
        default=None,
        help=(
            f"differential scenarios after the checks (default {DEFAULT_DIFF_SCENARIOS} for a whole"
            " profile, 0 when --ids or --areas narrow the run; 0 = none)"
        ),
    )
    p.add_argument(
        "--diff-workers",
        type=_workers,
        default=None,
        help="workers of the differential section (default: the checks' -n; each has its own ZooKeeper)",
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


def scenario_seeds(seed: int, count: int) -> list[int]:
    """The per-scenario seeds of a gate run of ``count`` scenarios of seed ``seed``: of the
    candidates ``seed * SEED_STRIDE + i`` for i below ``max(GATE_POOL, count)``, the ``count`` that
    together reach the most distinct inputs (:func:`conformance.diff.coverage.pick`), in order."""
    if count > SEED_STRIDE:
        raise ValueError(f"at most {SEED_STRIDE} differential scenarios per gate run, got {count}")
    pool = [generate(seed * SEED_STRIDE + i, 0) for i in range(max(GATE_POOL, count))]
    return [int(s.origin["seed"]) for s in coverage.pick(pool, count)]


def _not_run(args: argparse.Namespace, launcher: str, reason: str, status: str) -> dict[str, Any]:
    """Nothing could run: every scenario is a target error (``status``) or unknown, never a pass."""
    seeds = scenario_seeds(args.diff_seed, scenario_count(args))
    counts = {"same": 0, "diverges": 0, "target-error": 0, "unknown": 0, status: len(seeds)}
    entry = {"scenario": "all", "error" if status == "target-error" else "reason": reason}
    return {
        "count": len(seeds), "seed": args.diff_seed, "launcher": launcher, "counts": counts,
        "passed": False, "rule": DIFF_RULE, "not_run_because": reason,
        "scenarios": [{"seed": s, "outcome": OUTCOME[status]} for s in seeds],
        "divergences": [], "tolerated": [],
        "target_errors": [entry] if status == "target-error" else [],
        "unknown": [entry] if status == "unknown" else [],
    }  # fmt: skip


def scenario_count(args: argparse.Namespace) -> int:
    """``--diff-scenarios``, or its default: a run narrowed to some IDs or areas asked for those only."""
    if args.diff_scenarios is not None:
        return int(args.diff_scenarios)
    narrowed = getattr(args, "ids", None) is not None or getattr(args, "areas", None) is not None
    return 0 if narrowed else DEFAULT_DIFF_SCENARIOS


class Alongside:
    """The section run on a thread while the gate's checks run (:func:`start_alongside`).

    Its scenarios run on all its workers from the start, beside the checks (most of a scenario's
    time is Kafka's own delays and waits for quiescence, not CPU: side by side on a 2-core machine the
    main job took 92 s this way against 122–128 s with one scenario at a time until the checks
    ended); its lines are held and printed after the checks' matrix (:meth:`result`)."""

    def __init__(
        self, args: argparse.Namespace, target: Target, launcher: str, results_dir: Path, workers: int
    ):
        self._lock = threading.Lock()
        self._held: list[str] | None = []
        self._section: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run,
            args=(args, target, launcher, results_dir, workers),
            name="differential-section",
            daemon=True,  # its pool's workers die with the gate (they watch their parent)
        )
        self._thread.start()

    def _say(self, line: str) -> None:
        with self._lock:
            if self._held is not None:
                self._held.append(line)
                return
        print(line, flush=True)

    def _run(
        self, args: argparse.Namespace, target: Target, launcher: str, results_dir: Path, workers: int
    ) -> None:
        try:
            self._section = run_section(args, target, launcher, results_dir, workers=workers, say=self._say)
        except BaseException as exc:  # re-raised on the gate's thread by result()
            self._error = exc

    def result(self) -> dict[str, Any] | None:
        """Print what was held, then the rest as it comes; the section once it ended."""
        with self._lock:
            held, self._held = self._held or [], None
        for line in held:
            print(line, flush=True)
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._section


def start_alongside(
    args: argparse.Namespace, target: Target, launcher: str, results_dir: Path, *, workers: int
) -> Alongside | None:
    """Start the section beside the checks; None when it is not asked for."""
    if not scenario_count(args):
        return None
    return Alongside(args, target, launcher, results_dir, workers)


def run_section(
    args: argparse.Namespace,
    target: Target,
    launcher: str,
    results_dir: Path,
    *,
    workers: int,
    target_error: str | None = None,
    say: Callable[[str], None] = print,
) -> dict[str, Any] | None:
    """Run the differential scenarios; the certificate's section (None when not asked for).

    ``workers``: the checks' (``--diff-workers`` overrides it). ``target_error``: why the target
    cannot start (the preflight's problem); nothing is run then and every scenario is recorded as a
    target error."""
    if not scenario_count(args):
        return None
    from conformance.diff.cli import run_differential  # noqa: PLC0415 - the pool only when asked for

    unavailable = target.unavailable_reason()
    if unavailable:  # nothing can run: never a pass, and no run that would only fail
        return _not_run(args, launcher, unavailable, "unknown")
    if target_error:
        return _not_run(args, launcher, f"the preflight failed: {target_error}", "target-error")
    seeds = scenario_seeds(args.diff_seed, scenario_count(args))
    scenarios = [generate(s, 0) for s in seeds]
    cache = ReferenceCache(args.profile)
    say(f"differential: {len(scenarios)} scenarios of seed {args.diff_seed} on {target.name}")
    report = run_differential(
        scenarios,
        Sides(target, launcher, args.profile),
        workers=max(1, workers if args.diff_workers is None else args.diff_workers),
        out=results_dir / "differential",
        cache=cache,
        shrink_budget_s=args.diff_shrink_budget_s,
        say=say,
    )
    by_name = {r["name"]: r for r in report["results"]}
    return {
        "count": len(scenarios),
        "seed": args.diff_seed,
        "launcher": launcher,
        "kit_version": report["kit_version"],
        "wall_s": report["wall_s"],
        "counts": report["counts"],
        "passed": report["passed"],
        "rule": DIFF_RULE,
        "report": str(results_dir / "differential" / "diff-report.json"),
        "scenarios": [
            {"seed": seed, "name": s.name(), "outcome": OUTCOME[by_name[s.name()]["status"]]}
            for seed, s in zip(seeds, scenarios, strict=True)
        ],
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


def had_target_error(section: dict[str, Any] | None) -> bool:
    return section is not None and bool(section["counts"]["target-error"])


def why_not(section: dict[str, Any] | None) -> list[str]:
    if section is None or section["passed"]:
        return []
    c = section["counts"]
    out = []
    if c["diverges"]:
        out.append(f"differential: {c['diverges']} of {section['count']} scenarios diverge from Kafka 2.5.1")
    if c["target-error"]:
        out.append(f"differential: the target could not run {c['target-error']} scenarios (target error)")
    if c["unknown"]:
        out.append(f"differential: {c['unknown']} scenarios could not be judged (unknown)")
    return out
