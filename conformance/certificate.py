"""The conformance certificate: what a run selected, what ran and the verdict (conformance ring).

One JSON document per gate run (``<results-dir>/certificate.json``): the selection (target,
profile, areas, IDs, launcher), the kit's commit, host and times, per-ID verdicts with the tests
behind them and their durations, and ``conformant`` with the rule it was judged by and, when it
is false, every reason.
"""

from __future__ import annotations

import json
import socket
from datetime import datetime
from pathlib import Path
from typing import Any

from cluster.targets import Target
from conformance.plugin import current_commit

CERTIFICATE_VERSION = 2

#: Written into every certificate, so a reader knows what ``conformant`` means.
CONFORMANT_RULE = (
    "conformant is true iff the selection is non-empty, pytest exited 0, and every selected behaviour"
    " ID has at least one executed check (passed or failed) and no failed or errored check; an ID"
    " whose checks were all skipped, or that had no check at all, makes the run not conformant"
)


def build_certificate(
    *,
    run_id: str,
    selection: dict[str, Any],
    target: Target,
    profile: str,
    started: datetime,
    finished: datetime,
    pytest_exit_code: int,
    why_not: list[str],
    table: dict[str, dict[str, Any]],
    other: list[dict[str, Any]],
    differential: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The certificate of one gate run; ``conformant`` iff ``why_not`` is empty."""
    certificate = {
        "certificate_version": CERTIFICATE_VERSION,
        "run_id": run_id,
        "selection": selection,
        "target": target.name,
        "target_description": target.description,
        "target_version": target.version(),
        "profile": profile,
        "commit": current_commit(),
        "host": socket.gethostname(),
        "started_at": started.isoformat(),
        "finished_at": finished.isoformat(),
        "wall_s": round((finished - started).total_seconds(), 3),
        "pytest_exit_code": pytest_exit_code,
        "conformant": not why_not,
        "conformant_rule": CONFORMANT_RULE,
        "not_conformant_because": why_not,
        "verdicts": table,
        "other_tests": other,
    }
    if differential is not None:  # python -m conformance run --diff-scenarios N (conformance/diff)
        certificate["differential"] = differential
    return certificate


def write_certificate(results_dir: Path, certificate: dict[str, Any]) -> Path:
    """Write ``certificate.json`` into ``results_dir``; its path."""
    path = results_dir / "certificate.json"
    path.write_text(json.dumps(certificate, indent=2) + "\n", encoding="utf-8")
    return path
