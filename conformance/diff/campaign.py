"""A differential campaign: scenarios on the target, compared with the reference (conformance ring).

For every scenario the target's trace is recorded, the reference's is taken from the cache (or
recorded too, in parallel, and cached), and :func:`~conformance.diff.compare.compare` decides:

==================  ===========================================================================
status              meaning
==================  ===========================================================================
``same``            no divergence (tolerated ones are listed)
``diverges``        the first divergence is reported, with the behaviour IDs
``target-error``    a node of the target did not start or exited when the scenario needed it
``unknown``         the reference run failed, or the harness did (the reason is given): no verdict
==================  ===========================================================================

Diverging scenarios are then shrunk (:mod:`conformance.diff.shrink`) and get a directory with
the scenario, both traces, the divergence side by side, the target's evidence and the repro file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster.targets import Target, load_target
from conformance.diff.cache import ReferenceCache
from conformance.diff.compare import Comparison, compare, render
from conformance.diff.coverage import estimated_s
from conformance.diff.pool import Job, JobResult, Pending, Pool
from conformance.diff.scenario import Scenario

__all__ = ["Campaign", "ScenarioResult"]


def reference_stuck(trace: dict[str, Any]) -> tuple[int, str, str] | None:
    """(step, op, what did not hold) of the reference's first barrier timeout, or None.

    The reference is Kafka-exact, so a step after which it never quiesces is one the barrier's
    rules do not fit (a kit defect, or a wait longer than the deadline): what happens next — a paused
    node's session running out during the wait, say — is timing, not behaviour. A divergence before
    that step still counts; from that step on the scenario has no verdict (``unknown``)."""
    for seg in trace.get("segments", ()):
        barrier = seg.get("barrier")
        if isinstance(barrier, dict) and "timeout" in barrier:
            return int(seg.get("step", -1)), str(seg.get("op")), ", ".join(map(str, barrier["timeout"]))
    return None


@dataclass
class ScenarioResult:
    name: str
    key: str
    status: str
    steps: int
    wall_s: float = 0.0
    reason: str = ""
    divergence: dict[str, Any] | None = None
    tolerated: list[dict[str, Any]] = field(default_factory=list)
    repro: str | None = None
    directory: str | None = None

    def line(self) -> str:
        head = f"{self.name} ({self.steps} steps, {self.wall_s:.0f} s)"
        if self.status == "same":
            extra = f", {len(self.tolerated)} tolerated" if self.tolerated else ""
            return f"{head}: same as Kafka 2.5.1{extra}"
        if self.status == "diverges" and self.divergence:
            d = self.divergence
            where = "setup" if d["step"] == -1 else f"step {d['step']} ({d['op']})"
            return (
                f"{head}: DIVERGES at {where}: {d['component']} {d['location']} [{', '.join(d['ids'][:4])}]"
            )
        return f"{head}: {self.status.upper()}: {self.reason}"


@dataclass
class Sides:
    """Who is compared with whom: the target, the reference, and the launchers they run on."""

    target: Target
    launcher: str = "process"
    profile: str = "2.5"
    reference: Target = field(default_factory=lambda: load_target("reference"))


class Campaign:
    def __init__(
        self, sides: Sides, pool: Pool, cache: ReferenceCache, out: Path, say: Callable[[str], None]
    ) -> None:
        self.sides, self.pool, self.cache, self.out, self.say = sides, pool, cache, out, say

    def jobs(self, scenario: Scenario) -> tuple[Job | None, Job]:
        cached = self.cache.get(scenario.key())
        profile = self.sides.profile
        ref = None if cached else Job(scenario.to_json(), self.sides.reference, "process", profile=profile)
        return ref, Job(
            scenario.to_json(), self.sides.target, self.sides.launcher, keep_evidence=True, profile=profile
        )

    def pair(self, scenarios: Sequence[Scenario]) -> list[tuple[dict[str, Any] | None, JobResult, str]]:
        """(reference trace or None, target result, reason the reference is missing) per scenario."""
        submitted = []
        for s in scenarios:
            ref_job, tgt_job = self.jobs(s)
            ref_future = self.pool.submit(ref_job) if ref_job else None
            submitted.append((s, ref_future, self.pool.submit(tgt_job)))
        out = []
        for s, ref_future, tgt_future in submitted:
            ref_trace, reason = self.cache.get(s.key()), ""
            if ref_future is not None:
                ref_result = ref_future.result()
                ref_trace, reason = self._reference(s, ref_result)
            out.append((ref_trace, tgt_future.result(), reason))
        return out

    def _reference(self, s: Scenario, result: JobResult) -> tuple[dict[str, Any] | None, str]:
        if result.trace is None:
            return None, f"the reference run failed in the harness: {result.error.strip().splitlines()[-1:]}"
        if result.trace.get("status") != "ok":
            return None, f"the reference itself could not run it: {result.trace.get('error')}"
        self.cache.put(s.key(), result.trace)
        return result.trace, ""

    def judge(
        self, s: Scenario, ref: dict[str, Any] | None, tgt: JobResult, reason: str
    ) -> tuple[ScenarioResult, Comparison | None]:
        res = ScenarioResult(s.name(), s.key(), "unknown", len(s.steps), tgt.wall_s)
        if ref is None:
            res.reason = reason
            return res, None
        if tgt.trace is None:
            res.reason = f"the harness failed on the target: {tgt.error.strip().splitlines()[-1:]}"
            return res, None
        comparison = compare(ref, tgt.trace)
        res.tolerated = [t.to_json() for t in comparison.tolerated]
        stuck = reference_stuck(ref)
        if tgt.trace.get("status") == "target-error":
            res.status, res.reason = "target-error", str(tgt.trace.get("error"))
        elif comparison.divergence is not None and (stuck is None or comparison.divergence.step < stuck[0]):
            res.status, res.divergence = "diverges", comparison.divergence.to_json()
        elif stuck is not None:
            res.reason = (
                f"the reference did not quiesce after step {stuck[0]} ({stuck[1]}): {stuck[2]}; from there"
                " on its trace is a matter of timing, so nothing after it is judged"
            )
        else:
            res.status = "same"
        return res, comparison

    def run(self, scenarios: Sequence[Scenario], *, stop_at_first: bool = False) -> list[ScenarioResult]:
        """Every scenario (in order of results); ``stop_at_first``: none after the first that is not
        the same (the mutation tool only needs one kill)."""
        results: list[ScenarioResult] = []
        began = time.monotonic()
        jobs = [(s, *self.jobs(s)) for s in scenarios]
        # handed to the pool longest first (by estimated run time), so that its workers end
        # together; judged and reported in the scenarios' order. To stop at the first divergence
        # they go in the scenarios' order instead: the earliest are judged as soon as they ran,
        # not after every longer one
        order = list(range(len(jobs)))
        if not stop_at_first:
            order = sorted(order, key=lambda i: -estimated_s(jobs[i][0]))
        handles: dict[int, tuple[Pending | None, Pending]] = {}
        for i in order:
            _s, r, t = jobs[i]
            handles[i] = (self.pool.submit(r) if r else None, self.pool.submit(t))
        futures = [(s, *handles[i]) for i, (s, _r, _t) in enumerate(jobs)]
        for i, (s, ref_f, tgt_f) in enumerate(futures, 1):
            ref, reason = (
                (self.cache.get(s.key()), "") if ref_f is None else self._reference(s, ref_f.result())
            )
            tgt = tgt_f.result()
            res, comparison = self.judge(s, ref, tgt, reason)
            if res.status != "same":
                self.keep(s, ref, tgt, res, comparison)
            results.append(res)
            rate = i / max(time.monotonic() - began, 1e-6) * 3600
            self.say(f"[{i}/{len(scenarios)}] {res.line()}  ({rate:.0f} scenarios/h)")
            if stop_at_first and res.status in ("diverges", "target-error"):
                for _s, r_f, t_f in futures[i:]:
                    for f in (r_f, t_f):
                        if f is not None:
                            f.cancel()
                break
        return results

    def keep(
        self,
        s: Scenario,
        ref: dict[str, Any] | None,
        tgt: JobResult,
        res: ScenarioResult,
        comparison: Comparison | None,
    ) -> Path:
        """The scenario's directory: scenario, both traces, the divergence side by side, evidence."""
        d = self.out / "scenarios" / s.name()
        d.mkdir(parents=True, exist_ok=True)
        (d / "scenario.json").write_text(s.dumps(), encoding="utf-8")
        if ref is not None:
            (d / "reference-trace.json").write_text(json.dumps(ref, indent=1, default=str), encoding="utf-8")
        if tgt.trace is not None:
            (d / "target-trace.json").write_text(
                json.dumps(tgt.trace, indent=1, default=str), encoding="utf-8"
            )
        steps = [st.describe() for st in s.steps]
        text = render(comparison.divergence, steps) if comparison and comparison.divergence else res.line()
        (d / "divergence.txt").write_text(text + "\n", encoding="utf-8")
        for name, body in (tgt.evidence or {}).items():
            (d / "evidence").mkdir(exist_ok=True)
            (d / "evidence" / f"{name}.txt").write_text(body, encoding="utf-8")
        if tgt.error:
            (d / "harness-error.txt").write_text(tgt.error, encoding="utf-8")
        res.directory = str(d)
        return d
