"""The conformance certificate: what a run selected, what ran and the verdict (conformance ring).

One JSON document per gate run (``<results-dir>/certificate.json``): the selection (target,
topology, profile, areas, IDs, launcher, the IDs not applicable to the topology), the kit's
commit, host and times, the preflight's steps, the catalogue's comparison with the spec, per-ID
verdicts (``pass``, ``fail``, ``target error``, ``skipped``, ``no check``, ``n/a``) with the
tests behind them and their durations, and ``conformant`` with the rule it was judged by and,
when it is false, every reason. A target error (a node of the target could not start or died)
is reported as such, never as a behaviour failure; ``target_error`` then names it.
"""

from __future__ import annotations

import json
import socket
from datetime import datetime
from pathlib import Path
from typing import Any

from cluster.targets import Target
from conformance.plugin import current_commit

CERTIFICATE_VERSION = 3

#: Written into every certificate, so a reader knows what ``conformant`` means.
CONFORMANT_RULE = (
    "conformant is true iff the preflight passed, the selection is non-empty, pytest exited 0, and every"
    " selected behaviour ID has at least one executed check (passed or failed) and no failed or errored"
    " check; an ID whose checks were all skipped, or that had no check at all, makes the run not"
    " conformant, and so does a target error (a node of the target that could not start or died);"
    " IDs that do not apply to the target's topology are listed as n/a and are not part of the verdict"
)


def build_certificate(
    *,
    run_id: str,
    selection: dict[str, Any],
    target: Target,
    profile: str,
    started: datetime,
    finished: datetime,
    pytest_exit_code: int | None,
    why_not: list[str],
    table: dict[str, dict[str, Any]],
    other: list[dict[str, Any]],
    preflight: dict[str, Any] | None = None,
    catalogue_check: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The certificate of one gate run; ``conformant`` iff ``why_not`` is empty (``pytest_exit_code``
    is ``None`` when the preflight stopped the run)."""
    return {
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
        "target_error": target_error(table, preflight),
        "preflight": preflight,
        "catalogue_check": catalogue_check,
        "verdicts": table,
        "other_tests": other,
    }


def target_error(table: dict[str, dict[str, Any]], preflight: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the target error was (the preflight's problem, or the checks that hit one), else ``None``."""
    if preflight is not None and not preflight.get("ok", True):
        return {"where": "preflight", "problem": preflight.get("problem")}
    hit = {bid: v for bid, v in table.items() if v["verdict"] == "target error"}
    if not hit:
        return None
    reasons = sorted({r for v in hit.values() for r in v["reasons"]})
    return {"where": "checks", "ids": list(hit), "problems": reasons}


def write_certificate(results_dir: Path, certificate: dict[str, Any]) -> Path:
    """Write ``certificate.json`` into ``results_dir``; its path."""
    path = results_dir / "certificate.json"
    path.write_text(json.dumps(certificate, indent=2) + "\n", encoding="utf-8")
    return path
