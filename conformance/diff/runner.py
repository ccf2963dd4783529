"""Play one scenario on a target and record its trace (conformance ring).

:func:`run_scenario` starts the scenario's cluster in a fresh chroot of the worker's ZooKeeper,
brings it up (segment 0, ``setup``: the first election and registrations), then for every step
runs its executor (:mod:`conformance.diff.actions`) and the quiescence barrier
(:mod:`conformance.diff.barrier`), snapshots the znode tree and every running broker's Metadata,
and marks where the step's transaction-log records and controller requests end. Segments are
built when the scenario is over (:func:`build_segments`), so answers that arrive late (a request
to a paused broker) are in. A node that will not start is a :class:`RunResult` with status
``target-error`` — the target's error, never a pass.
"""

from __future__ import annotations

import contextlib
import copy
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cluster.targets import Target
from conformance.diff import actions
from conformance.diff.barrier import quiesce
from conformance.diff.live import DiffCluster, Mark, TargetStartError
from conformance.diff.model import controllers
from conformance.diff.normalise import broker_epoch_labels, requests_view, shutdowns_view, zk_view
from conformance.diff.relative import (
    departed_controller_race,
    relative_versions,
    resumed_leader_race,
    resumed_stale_isr_writes,
    shutting_down,
    successor_answers_open,
)
from conformance.diff.scenario import Scenario
from conformance.diff.views import metadata_view, relabel_topic, tree_view
from harness.launcher import Launcher

__all__ = ["TRACE_FORMAT", "RunResult", "ZooKeeperLike", "run_scenario"]

TRACE_FORMAT = "kzk-diff-trace/1"


class ZooKeeperLike(Protocol):
    """What a run needs of the worker's ZooKeeper (a :class:`harness.zookeeper.ZooKeeperServer`)."""

    connect_string: str
    txn_log_dir: Path

    def four_letter(self, command: str, timeout_s: float = 2.0) -> str: ...


@dataclass
class RunResult:
    status: str  # "ok" | "target-error"
    segments: list[dict[str, Any]]
    wall_s: float
    error: str = ""
    evidence: dict[str, str] = field(default_factory=dict)
    timings: list[float] = field(default_factory=list)  # wall time at the end of each segment

    def trace(self, scenario: Scenario, target: str) -> dict[str, Any]:
        return {
            "format": TRACE_FORMAT,
            "scenario": scenario.key(),
            "target": target,
            "status": self.status,
            "error": self.error,
            "wall_s": self.wall_s,
            "timings": self.timings,  # seconds from the start to the end of each segment (not compared)
            "segments": self.segments,
        }


@dataclass
class _Step:
    op: str
    action: Any
    barrier: Any
    end: Mark
    tree: dict[str, Any]
    metadata: dict[str, Any]


def _snapshot(dc: DiffCluster) -> tuple[dict[str, Any], dict[str, Any]]:
    actors = dc.actors()
    tree = tree_view(dc.tree(), actors)
    metadata = {b: metadata_view(r) if not isinstance(r, str) else r for b, r in dc.metadata().items()}
    return tree, metadata


def _record(dc: DiffCluster, op: str, action: Any, barrier: Any) -> _Step:
    tree, metadata = _snapshot(dc)
    return _Step(op, action, barrier, dc.mark(), tree, metadata)


def _paused_until(scenario: Scenario, segments: int) -> dict[tuple[int, int], int]:
    """(broker, segment) → the segment that resumes the broker, for every segment it is paused in
    (segment i + 1 is step i). Requests sent to a paused broker are compared there (RULES "requests
    to a paused broker")."""
    out: dict[tuple[int, int], int] = {}
    paused: dict[int, int] = {}
    for i, step in enumerate(scenario.steps):
        if step.op == "pause":
            paused[step.params["node"]] = i + 1
        elif step.op == "resume" and step.params["node"] in paused:
            b = step.params["node"]
            out.update({(b, k): i + 1 for k in range(paused.pop(b), i + 1)})
    for b, first in paused.items():
        out.update({(b, k): segments - 1 for k in range(first, segments)})
    return out


def incarnations(requests: list[Any], bounds: list[int], controller: list[int]) -> dict[int, int]:
    """Segment → the highest controller epoch its controller had sent a request with by the
    segment's end. A controller re-elected on the same node is another incarnation: what its
    former one sent to a paused broker is as gone as a dead controller's (RULES "requests to a
    paused broker")."""
    out: dict[int, int] = {}
    for k in range(len(bounds) - 1):
        seen = [
            r.controller_epoch
            for r in requests
            if r.seq < bounds[k + 1] and r.source == controller[k] and r.controller_epoch is not None
        ]
        if seen:
            out[k] = max(seen)
    return out


def of_others(requests: list[Any], node: int) -> list[Any]:
    """The requests not sent by ``node``: in the step of its own controlled shutdown, a controller's
    requests are not compared (RULES "requests of a controller shutting down")."""
    return [r for r in requests if r.source != node]


def build_segments(dc: DiffCluster, start: Mark, steps: list[_Step]) -> list[dict[str, Any]]:
    records = dc.cluster.history()
    journalled = dc.cluster.journal.requests() if dc.cluster.journal else []
    requests = [r for r in journalled if r.api != "ControlledShutdown"]
    leaving = [r for r in journalled if r.api == "ControlledShutdown"]
    labels, actors = broker_epoch_labels(records), dc.actors()
    bounds = [start.requests, *(s.end.requests for s in steps)]
    moved, controller = _paused_until(dc.scenario, len(steps)), controllers(dc.scenario)
    epochs = incarnations(requests, bounds, controller)
    by_segment: dict[int, list[Any]] = {}
    gone: dict[int, set[tuple[int, str, int | None]]] = {}  # segment → (broker, partition, leader epoch)
    for r in requests:
        k = next((i for i in range(len(steps)) if bounds[i] <= r.seq < bounds[i + 1]), None)
        if k is None:
            continue
        resumed = moved.get((r.dest, k), k)
        if resumed != k and (
            r.source != controller[resumed] or (r.controller_epoch or 0) < epochs.get(resumed, 0)
        ):
            # sent to a paused broker by a controller gone by its resumption (RULES); what it told
            # the broker of a partition may still reach it first (RULES "a departed controller's
            # request to a resumed broker")
            if r.api == "LeaderAndIsr":
                gone.setdefault(resumed, set()).update(
                    (r.dest, f"{e.topic}-{e.partition}", e.leader_epoch) for e in r.partitions
                )
            continue
        by_segment.setdefault(resumed, []).append(r)
    out, before, told, tree_before = [], start, dict[Any, Any](), dict[str, Any]()
    for i, s in enumerate(steps):
        step = dc.scenario.steps[i - 1] if i > 0 else None
        window = sorted(by_segment.get(i, []), key=lambda r: r.seq)
        if step is not None and step.op == "controlled_shutdown":
            window = of_others(window, step.params["node"])
        segment: dict[str, Any] = {
            "step": i - 1,
            "op": s.op,
            "action": s.action,
            "barrier": s.barrier,
            "zk": zk_view(records[before.records : s.end.records], actors),
            "requests": requests_view(window, labels, told),
            "tree": s.tree,
            "metadata": s.metadata,
        }
        asked = [r for r in leaving if bounds[i] <= r.seq < bounds[i + 1]]
        if asked:  # only where a broker asked to leave: other segments keep their shape
            segment["shutdowns"] = shutdowns_view(asked, labels)
        if i - 1 in dc.auto_placed:
            topic, assignment = dc.auto_placed[i - 1]
            relabel_topic(segment, topic, assignment)
        absolute = copy.deepcopy(s.tree)  # where the next step starts, before the rules below
        if step is not None and step.op in ("resume", "expire_session"):
            resumed_leader_race(segment, tree_before, step.params["node"])
            resumed_stale_isr_writes(segment, step.params["node"])
        if gone.get(i):
            departed_controller_race(segment, gone[i])
        if step is not None and step.op == "controlled_shutdown":
            shutting_down(segment, step.params["node"])
            if step.params.get("successor") is not None:  # the controller's own shutdown
                successor_answers_open(segment, step.params["node"])
        resumed_node = int(step.params["node"]) if step is not None and step.op == "resume" else None
        relative_versions(segment, tree_before, resumed_node)
        tree_before = absolute
        out.append(segment)
        before = s.end
    return out


def _evidence(dc: DiffCluster) -> dict[str, str]:
    out = {"txn-log": "\n".join(r.describe() for r in dc.cluster.history())}
    if dc.cluster.journal is not None:
        out["requests"] = dc.cluster.journal.dump()
    for b, text in dc.node_logs().items():
        out[f"node-{b}-server.log"] = text
    return out


def run_scenario(
    scenario: Scenario,
    target: Target,
    zk: ZooKeeperLike,
    work_dir: Path,
    *,
    launcher: Launcher | None = None,
    keep_evidence: bool = False,
    profile: str = "2.5",
) -> RunResult:
    """Run every step of ``scenario`` on ``target``; the nodes are gone when this returns."""
    began = time.monotonic()
    chroot = f"/diff-{scenario.key()}-{uuid.uuid4().hex[:8]}"
    base = work_dir / chroot.strip("/")
    dc = DiffCluster(
        scenario,
        target,
        zk_connect=zk.connect_string,
        txn_log_dir=zk.txn_log_dir,
        chroot=chroot,
        base_dir=base,
        launcher=launcher,
        four_letter=zk.four_letter,
        profile=profile,
    )
    steps: list[_Step] = []
    timings: list[float] = []
    start = dc.mark()
    status, error = "ok", ""
    try:
        dc.start(lambda: quiesce(dc))
        steps.append(_record(dc, "setup", {}, quiesce(dc)))
        timings.append(round(time.monotonic() - began, 2))
        for i, step in enumerate(scenario.steps):
            dc.current_step, dc.triggers = i, []
            action = actions.EXECUTORS[step.op](dc, step.params, lambda: quiesce(dc))
            steps.append(_record(dc, step.op, action, quiesce(dc)))
            timings.append(round(time.monotonic() - began, 2))
    except TargetStartError as exc:
        status, error = "target-error", f"step {len(steps) - 1}: {exc}"
    try:
        segments = build_segments(dc, start, steps)
        evidence = _evidence(dc) if keep_evidence or status != "ok" else {}
    finally:
        dc.close()
        with contextlib.suppress(OSError):
            shutil.rmtree(base, ignore_errors=True)
    return RunResult(status, segments, round(time.monotonic() - began, 2), error, evidence, timings)
