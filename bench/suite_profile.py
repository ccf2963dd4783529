"""Where the conformance suite's wall time goes, from the timing records of one run (bench app, pure).

Input: the run's timing records (:mod:`records.timing`: spans the cluster, the waits and the
fixtures recorded while each check ran) and its certificate (the gate's wall time and preflight).
Output: per check and in total, the time of each part, every figure a sum of recorded intervals:

==================  =============================================================================
column              what (spans on the check's own thread, outermost only, so nothing counts twice)
==================  =============================================================================
zk                  starting the worker's ZooKeeper (the first check of each worker pays it)
make                building clusters: configs, recording proxies, the observer session
start               ``Cluster.start`` until every node registered (node processes, imports, the
                    nodes' own start-up, the wait for ``/brokers/ids/<id>``)
adopt               taking over a cluster started ahead of time (what is left of its start)
waits               the check's own waits (``wait_for``) outside cluster starts
stops               controlled shutdowns the check asked for (SIGTERM until exit)
body                the rest of the check's call: its requests, reads, assertions, kills
close               killing the check's clusters and closing their proxies
chroot              deleting the check's ZooKeeper chroot
fixtures            the rest of set-up and teardown (pytest, tmp dirs, evidence)
==================  =============================================================================

Node starts (any thread, also those done ahead of time): *process* = spawn → the first line of
the node's server log (interpreter or JVM start, imports, config), *init* = that line →
``/brokers/ids/<id>`` created (ZooKeeper's ``ctime``). *Ahead* is cluster start time spent on the
pre-start thread while the previous check ran (hidden from the critical path).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from records.timing import CheckTiming, Span

__all__ = ["CheckRow", "SuiteProfile", "profile", "render"]

#: Outermost span name → column.
COLUMNS = {
    "zookeeper-start": "zk",
    "cluster-make": "make",
    "cluster-start": "start",
    "cluster-adopt": "adopt",
    "wait": "waits",
    "node-stop": "stops",
    "cluster-close": "close",
    "chroot-delete": "chroot",
}
ORDER = ("zk", "make", "start", "adopt", "waits", "stops", "body", "close", "chroot", "fixtures")
MAIN_THREAD = "MainThread"


@dataclass
class CheckRow:
    test_id: str
    worker: str
    outcome: str
    total_s: float
    parts: dict[str, float] = field(default_factory=dict)


@dataclass
class SuiteProfile:
    rows: list[CheckRow]
    node_process_s: list[float]
    node_init_s: list[float]
    node_total_s: list[float]
    ahead_s: float
    worker_busy_s: dict[str, float]
    worker_span_s: dict[str, tuple[float, float]]
    wall_s: float | None
    preflight_s: float | None
    started_s: float | None
    notes: list[str]
    clusters_made: int = 0
    clusters_shared: int = 0
    clusters_refused: int = 0
    clusters_adopted: int = 0
    clusters_unused: int = 0

    @property
    def node_starts(self) -> int:
        return len(self.node_total_s)


def _phase_s(timing: CheckTiming, phase: str) -> float:
    start, end = timing.phases.get(phase, (0.0, 0.0))
    return max(0.0, end - start)


def _inside(span: Span, bounds: tuple[float, float]) -> bool:
    mid = (span.start_s + span.end_s) / 2
    return bounds[0] <= mid <= bounds[1]


def _row(timing: CheckTiming) -> CheckRow:
    own = [s for s in timing.spans if s.thread == MAIN_THREAD and s.parent is None and s.name in COLUMNS]
    parts: dict[str, float] = defaultdict(float)
    call = timing.phases.get("call", (0.0, 0.0))
    in_call = 0.0
    for s in own:
        parts[COLUMNS[s.name]] += s.duration_s
        if _inside(s, call):
            in_call += s.duration_s
    parts["body"] = max(0.0, _phase_s(timing, "call") - in_call)
    fixtures = _phase_s(timing, "setup") + _phase_s(timing, "teardown")
    parts["fixtures"] = max(0.0, fixtures - (sum(parts.values()) - parts["body"] - in_call))
    return CheckRow(timing.test_id, timing.worker, timing.outcome, timing.duration_s, dict(parts))


def _node_starts(spans: Iterable[Span]) -> tuple[list[float], list[float], list[float]]:
    process, init, total = [], [], []
    for s in spans:
        if s.name != "node-start":
            continue
        total.append(s.duration_s)
        first = s.attrs.get("first_log")
        if isinstance(first, int | float) and s.start_s <= first <= s.end_s + 1.0:
            process.append(first - s.start_s)
            init.append(max(0.0, s.end_s - first))
    return process, init, total


def _count(spans: Iterable[Span], name: str, **attrs: Any) -> int:
    return sum(1 for s in spans if s.name == name and all(s.attrs.get(k) == v for k, v in attrs.items()))


def profile(timings: Sequence[CheckTiming], certificate: Mapping[str, Any] | None = None) -> SuiteProfile:
    """The profile of one run (module docstring)."""
    spans = [s for t in timings for s in t.spans]
    process, init, total = _node_starts(spans)
    busy: dict[str, float] = defaultdict(float)
    bounds: dict[str, tuple[float, float]] = {}
    for t in timings:
        busy[t.worker] += t.duration_s
        lo, hi = bounds.get(t.worker, (t.start_s, t.end_s))
        bounds[t.worker] = (min(lo, t.start_s), max(hi, t.end_s))
    ahead = sum(s.duration_s for s in spans if s.name == "cluster-start" and s.thread != MAIN_THREAD)
    cert = certificate or {}
    preflight = (cert.get("preflight") or {}).get("wall_s")
    notes = [str(s.attrs.get("why")) for s in spans if s.name == "cluster-not-shared" and s.attrs.get("why")]
    started = cert.get("started_at")
    return SuiteProfile(
        rows=sorted((_row(t) for t in timings), key=lambda r: -r.total_s),
        node_process_s=process,
        node_init_s=init,
        node_total_s=total,
        ahead_s=ahead,
        worker_busy_s=dict(busy),
        worker_span_s=bounds,
        wall_s=cert.get("wall_s"),
        preflight_s=float(preflight) if preflight is not None else None,
        started_s=_epoch(started) if isinstance(started, str) else None,
        notes=notes,
        clusters_made=_count(spans, "cluster-make"),
        clusters_shared=_count(spans, "cluster-adopt", how="shared", as_found=True),
        clusters_refused=_count(spans, "cluster-share-refused"),
        clusters_adopted=_count(spans, "cluster-adopt", how="pre-started"),
        clusters_unused=_count(spans, "cluster-discard", used=False),
    )


def _epoch(iso: str) -> float:
    from datetime import datetime  # noqa: PLC0415 - only here

    return datetime.fromisoformat(iso).timestamp()


def _short(test_id: str, width: int) -> str:
    name = test_id.rsplit("/", maxsplit=1)[-1]
    return name if len(name) <= width else name[: width - 1] + "…"


def _fmt_row(label: str, total: float, parts: Mapping[str, float], width: int) -> str:
    cells = "".join(f"{parts.get(c, 0.0):>9.1f}" for c in ORDER)
    return f"{label:<{width}} {total:>7.1f}{cells}"


def _mean(values: Sequence[float]) -> str:
    return f"{statistics.fmean(values):.2f}" if values else "-"


def render(p: SuiteProfile, *, top: int = 0, width: int = 60) -> str:
    """The table (every check, or the ``top`` longest) and the totals."""
    head = f"{'check':<{width}} {'total':>7}" + "".join(f"{c:>9}" for c in ORDER)
    lines = [head, "-" * len(head)]
    rows = p.rows[:top] if top else p.rows
    for r in rows:
        lines.append(_fmt_row(_short(r.test_id, width), r.total_s, r.parts, width))
    if top and len(p.rows) > top:
        lines.append(f"… {len(p.rows) - top} more checks")
    totals: dict[str, float] = defaultdict(float)
    for r in p.rows:
        for k, v in r.parts.items():
            totals[k] += v
    all_s = sum(r.total_s for r in p.rows)
    lines += ["-" * len(head), _fmt_row(f"sum of {len(p.rows)} checks", all_s, totals, width)]
    share = "".join(f"{100 * totals.get(c, 0.0) / all_s if all_s else 0:>8.0f}%" for c in ORDER)
    lines.append(f"{'share':<{width}} {'100%':>7}{share}")
    lines += ["", *_summary(p)]
    return "\n".join(lines)


def _summary(p: SuiteProfile) -> list[str]:
    out = [
        f"node starts: {p.node_starts} (process start mean {_mean(p.node_process_s)} s, node init mean"
        f" {_mean(p.node_init_s)} s, spawn→registered mean {_mean(p.node_total_s)} s)",
        f"clusters: {p.clusters_made} built, {p.clusters_adopted} started ahead and adopted,"
        f" {p.clusters_unused} started ahead and unused, {p.clusters_shared} lent again to a next check"
        f" (conformance.sharing; {p.clusters_refused} not given back: changed or failed);"
        f" cluster start time spent ahead of its check: {p.ahead_s:.1f} s",
    ]
    if p.wall_s is not None:
        out.append(f"gate wall: {p.wall_s:.1f} s (preflight {p.preflight_s or 0:.1f} s)")
    for worker in sorted(p.worker_busy_s):
        lo, hi = p.worker_span_s[worker]
        idle = (p.wall_s - p.worker_busy_s[worker]) if p.wall_s is not None else None
        before = (lo - p.started_s) if p.started_s is not None else None
        after = (p.started_s + p.wall_s - hi) if p.started_s is not None and p.wall_s is not None else None
        out.append(
            f"worker {worker}: busy {p.worker_busy_s[worker]:.1f} s"
            + (f", idle {idle:.1f} s" if idle is not None else "")
            + (
                f" ({before:.1f} s before its first check, {after:.1f} s after its last)"
                if after is not None and before is not None
                else ""
            )
        )
    out += [f"not shared: {n}" for n in p.notes[:20]]
    return out
