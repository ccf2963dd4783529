"""Runner worker processes and the campaign loop (ring: drivers).

:func:`run_campaign` starts ``parallel`` workers (:mod:`chaos.run.worker`; each dies with the
runner through ``PR_SET_PDEATHSIG``), hands each its first plan and every further one when the
worker asks for it (shortly before its current run's last step), collects results as they come (a
selector over the workers' result pipes), writes one run record per run as JSON lines under the
output directory and drives the progress bar (runs done, verdict counts, ETA).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import selectors
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from chaos.run.worker import task_of
from chaos.runner import RunPlan
from records.run_record import write_record

__all__ = ["CampaignResult", "run_campaign"]

_PR_SET_PDEATHSIG = 1


def _die_with_runner() -> None:  # in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class CampaignResult:
    counts: Counter[str] = field(default_factory=Counter)
    results: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0


#: Plans a worker is given at the start; each further one it asks for (``{"want": 1}``) when its
#: current run's last step is about due, to begin its set-up ahead
#: (:class:`chaos.run.worker._Pipeline`), so that the campaign's last plans go to the workers that
#: are free first. A worker that holds no plan when a result comes back is sent one too.
DEPTH = 1


@dataclass
class _Worker:
    slot: int
    proc: subprocess.Popen[str]
    held: list[RunPlan] = field(default_factory=list)  # sent, result not back yet; oldest first


def _spawn(slot: int, slots: int, target: str, launcher: str, log: IO[bytes]) -> _Worker:
    argv = [sys.executable, "-m", "chaos.run.worker", "--slot", str(slot), "--slots", str(slots)]
    argv += ["--target", target, "--launcher", launcher]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        bufsize=1,
        preexec_fn=_die_with_runner,  # noqa: PLW1509 - only prctl
    )
    return _Worker(slot, proc)


def _send(worker: _Worker, plan: RunPlan) -> None:
    assert worker.proc.stdin is not None
    worker.held.append(plan)
    worker.proc.stdin.write(json.dumps(task_of(plan)) + "\n")
    worker.proc.stdin.flush()


def _send_none(worker: _Worker) -> None:
    assert worker.proc.stdin is not None
    worker.proc.stdin.write(json.dumps({"none": True}) + "\n")
    worker.proc.stdin.flush()


def run_campaign(
    plans: Sequence[RunPlan],
    *,
    parallel: int,
    target: str,
    launcher: str,
    out_dir: Path,
    on_result: Callable[[dict[str, Any], CampaignResult], None],
) -> CampaignResult:
    """Run every plan on ``parallel`` workers; ``on_result`` sees each result as it lands."""
    result = CampaignResult()
    pending = list(reversed(plans))
    start = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    log = (out_dir / "workers.log").open("ab")
    workers = [_spawn(i, parallel, target, launcher, log) for i in range(min(parallel, len(plans)))]
    selector = selectors.DefaultSelector()
    try:
        for w in workers:
            assert w.proc.stdout is not None
            selector.register(w.proc.stdout, selectors.EVENT_READ, w)
        for _ in range(DEPTH):  # round robin, so that a short campaign still uses every worker
            for w in workers:
                if pending:
                    _send(w, pending.pop())
        while any(w.held for w in workers):
            for key, _ in selector.select(timeout=1.0):
                worker: _Worker = key.data
                line = worker.proc.stdout.readline() if worker.proc.stdout else ""
                if not line:
                    status = worker.proc.poll()
                    raise RuntimeError(
                        f"worker {worker.slot} exited ({status}); see {out_dir / 'workers.log'}"
                    )
                done = json.loads(line)
                if done.get("want"):  # the worker's run is about to end: its next plan, or none
                    if pending:
                        _send(worker, pending.pop())
                    else:
                        _send_none(worker)
                    continue
                _settle(worker, done)
                _record(done, out_dir, result)
                on_result(done, result)
                if pending and not worker.held:
                    _send(worker, pending.pop())
    finally:
        selector.close()
        _stop(workers)
        log.close()
    result.elapsed_s = time.monotonic() - start
    return result


def _settle(worker: _Worker, done: dict[str, Any]) -> None:
    """Drop the plan ``done`` answers from what ``worker`` holds: results come back as runs end,
    not in the order they were sent (a worker concludes several runs side by side)."""
    index = done.get("index")
    for i, plan in enumerate(worker.held):
        if plan.index == index:
            del worker.held[i]
            return
    raise RuntimeError(f"worker {worker.slot} answered run {index!r}, which it was not given")


def _record(done: dict[str, Any], out_dir: Path, result: CampaignResult) -> None:
    from records.run_record import PhaseMetric, RunRecord  # noqa: PLC0415

    rec = dict(done["record"])
    rec.pop("schema_version", None)
    rec["behaviour_ids"] = tuple(rec["behaviour_ids"])
    rec["phase_metrics"] = tuple(PhaseMetric(**m) for m in rec["phase_metrics"])
    write_record(out_dir, RunRecord(**rec), stream="chaos-runs")
    result.counts[done["verdict"]] += 1
    result.results.append(done)


def _stop(workers: list[_Worker]) -> None:
    """Close the task pipes (workers finish and clean up), then SIGTERM, then SIGKILL."""
    for w in workers:
        with contextlib.suppress(Exception):
            assert w.proc.stdin is not None
            w.proc.stdin.close()
    deadline = time.monotonic() + 20.0
    for w in workers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            w.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        if w.proc.poll() is None:
            w.proc.terminate()
            try:
                w.proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
    for w in workers:
        with contextlib.suppress(Exception):
            if w.proc.stdout is not None:
                w.proc.stdout.close()
