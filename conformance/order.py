"""The order checks run in: the longest first, so the workers finish together (conformance ring).

xdist's load scheduling hands checks out in collection order as workers free up; with the long
checks first, what is left at the end is short and both workers end within a short check of each
other. How long a check takes is taken from what was measured, never guessed:

1. the run records already in the results directory (the previous runs' ``duration_s``, the
   latest record of each check), else
2. :data:`SNAPSHOT`, the durations of a whole-suite run kept in the repository (refresh it with
   ``python -m conformance.order RESULTS_DIR`` after a run; its checks' names only, not its
   verdicts, are used).

A check with no figure in either (a new one) counts as the median of the known ones. The order
is only a schedule: every selected check still runs, and every xdist worker computes the same
order from the same files (they collect before any check of this run writes a record).

    python -m conformance.order RESULTS_DIR     # write SNAPSHOT from that run's records
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from records.run_record import read_records

__all__ = ["SNAPSHOT", "expected_durations", "longest_first", "measured_durations", "write_snapshot"]

SNAPSHOT = Path(__file__).resolve().parent / "check_durations.json"
KIND = "conformance-test"

T = TypeVar("T")


def measured_durations(results_dir: Path) -> dict[str, float]:
    """The latest ``duration_s`` of each check in ``results_dir``'s run records (``{}`` if none)."""
    latest: dict[str, tuple[str, float]] = {}
    paths = sorted(results_dir.glob("runs-*.jsonl")) if results_dir.is_dir() else []
    for record in read_records(paths, strict=False):
        if record.get("kind") != KIND or record.get("outcome") == "skipped":
            continue
        test_id, finished = str(record["test_id"]), str(record.get("finished_at") or "")
        if test_id not in latest or finished >= latest[test_id][0]:
            latest[test_id] = (finished, float(record["duration_s"]))
    return {test_id: duration for test_id, (_, duration) in latest.items()}


def _snapshot(path: Path) -> dict[str, float]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    checks = data.get("checks") if isinstance(data, dict) else None
    if not isinstance(checks, dict):
        return {}
    return {str(k): float(v) for k, v in checks.items() if isinstance(v, int | float)}


def expected_durations(results_dir: Path | None, snapshot: Path = SNAPSHOT) -> tuple[dict[str, float], str]:
    """The durations to order by and where they came from (the results dir or the snapshot)."""
    if results_dir is not None:
        measured = measured_durations(results_dir)
        if measured:
            return measured, f"durations of earlier runs in {results_dir}"
    return _snapshot(snapshot), f"durations in {snapshot.name}"


def longest_first(items: Sequence[T], test_id: Mapping[int, str], durations: Mapping[str, float]) -> list[T]:
    """``items`` sorted by expected duration, longest first (ties keep collection order);
    ``test_id[i]`` names ``items[i]``. Unknown checks count as the median known duration."""
    known = [durations[t] for t in test_id.values() if t in durations]
    default = statistics.median(known) if known else 0.0
    order = sorted(range(len(items)), key=lambda i: -durations.get(test_id[i], default))
    return [items[i] for i in order]


def write_snapshot(durations: Mapping[str, float], path: Path = SNAPSHOT) -> Path:
    body = {
        "about": "seconds per check of one whole-suite run: the order checks run in (conformance/order.py)",
        "checks": {k: round(v, 2) for k, v in sorted(durations.items())},
    }
    path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: Iterable[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not Path(args[0]).is_dir():
        print(
            "usage: python -m conformance.order RESULTS_DIR (a results directory of a gate run)",
            file=sys.stderr,
        )
        return 2
    durations = measured_durations(Path(args[0]))
    if not durations:
        print(
            f"{args[0]}: no check records there; run the gate with --results-dir {args[0]} first",
            file=sys.stderr,
        )
        return 2
    print(f"{write_snapshot(durations)}: {len(durations)} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
