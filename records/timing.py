"""Where a check's wall time went: the timing record (shared data contract: the conformance plugin
writes it, the suite benchmark reads it).

One record per check execution, one JSON line in ``<results>/timings-<worker>.jsonl``, written
by the process that ran the check next to its run record. Every figure is a timestamp the kit
recorded when the thing happened (``time.time()`` of one host, or a ZooKeeper ``ctime`` of the
same host, or the first line of a node's own log), never an estimate:

=============  ===========  =====================================================================
field          type         meaning
=============  ===========  =====================================================================
run_id         str          the suite run (as the run records)
test_id        str          pytest node id
worker         str          xdist worker (``main`` without xdist)
outcome        str          as the run record's
phases         obj          ``setup`` / ``call`` / ``teardown``: ``[start, end]`` epoch seconds
spans          list[obj]    :class:`Span`: named intervals the kit's code recorded while the
                            check ran (cluster make/start/close, node spawns and stops, waits,
                            ZooKeeper start, chroot deletion, pre-starts for the next check)
=============  ===========  =====================================================================
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CheckTiming", "Span", "read_timings", "write_timing"]

STREAM = "timings"


@dataclass(frozen=True)
class Span:
    """One interval: ``name`` from ``start_s`` to ``end_s`` (epoch seconds); ``parent`` is the
    span it was recorded inside on the same thread (``None`` at the top), ``thread`` names the
    thread (a pre-start runs on its own), ``attrs`` what it was about (node id, wait description)."""

    name: str
    start_s: float
    end_s: float
    parent: str | None = None
    thread: str = "main"
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["attrs"] = dict(self.attrs)
        d["start_s"], d["end_s"] = round(self.start_s, 4), round(self.end_s, 4)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Span:
        return cls(
            str(d["name"]),
            float(d["start_s"]),
            float(d["end_s"]),
            d.get("parent"),
            str(d.get("thread", "main")),
            dict(d.get("attrs") or {}),
        )


@dataclass(frozen=True)
class CheckTiming:
    run_id: str
    test_id: str
    worker: str
    outcome: str
    phases: Mapping[str, tuple[float, float]]
    spans: tuple[Span, ...] = ()

    @property
    def start_s(self) -> float:
        return min(s for s, _ in self.phases.values()) if self.phases else 0.0

    @property
    def end_s(self) -> float:
        return max(e for _, e in self.phases.values()) if self.phases else 0.0

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def to_json(self) -> str:
        return json.dumps(
            {
                "run_id": self.run_id,
                "test_id": self.test_id,
                "worker": self.worker,
                "outcome": self.outcome,
                "phases": {k: [round(a, 4), round(b, 4)] for k, (a, b) in self.phases.items()},
                "spans": [s.to_dict() for s in self.spans],
            }
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckTiming:
        phases = {str(k): (float(v[0]), float(v[1])) for k, v in dict(d["phases"]).items()}
        spans = tuple(Span.from_dict(s) for s in d.get("spans", ()))
        return cls(str(d["run_id"]), str(d["test_id"]), str(d["worker"]), str(d["outcome"]), phases, spans)


def write_timing(results_dir: Path, timing: CheckTiming) -> Path:
    """Append ``timing`` to ``<results_dir>/timings-<worker>.jsonl`` (one file per writer)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{STREAM}-{timing.worker}.jsonl"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(timing.to_json() + "\n")
    return path


def read_timings(paths: Iterable[Path], run_id: str | None = None) -> Iterator[CheckTiming]:
    """The timing records of ``paths`` (of run ``run_id`` only when given); a line cut short by a
    killed writer is skipped."""
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                timing = CheckTiming.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue
            if run_id is None or timing.run_id == run_id:
                yield timing
