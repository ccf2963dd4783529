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

import importlib.metadata
import json
import os
import socket
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

from cluster.targets import Target
from conformance.attestation import load_private_key, provenance, sign_certificate
from conformance.plugin import current_commit
from harness.zookeeper import ZooKeeperHarnessError
from harness.zookeeper.jars import find_zookeeper

#: The signed form of ``certificate.json`` beside it (written when a signing key is given).
SIGNED_NAME = "certificate.intoto.json"

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
    provenance: dict[str, Any] | None = None,
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
        "provenance": provenance,
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


def _image_id(name: str) -> str | None:
    inspect = ["docker", "image", "inspect", "--format", "{{.Id}}", name]
    out = subprocess.run(inspect, capture_output=True, text=True, check=False)
    return out.stdout.strip() or None


def node_image(target: Target, launcher: str) -> dict[str, Any] | None:
    """Under the docker launcher, the node image the run used (name and image id); else ``None``."""
    if launcher != "docker":
        return None
    from harness.containers import images  # noqa: PLC0415 - docker only

    named = os.environ.get("KZK_NODE_IMAGE") or (target.container.image if target.container else "")
    name = named or images.ensure_node_image().tag
    out = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", name],
        capture_output=True,
        text=True,
        check=False,
    )
    return {"name": name, "id": out.stdout.strip() or None}


def zookeeper_of_run(launcher: str) -> dict[str, Any]:
    """ZooKeeper as the run used it: the version of the local install, or the docker image."""
    if launcher == "docker":
        from harness.containers import images  # noqa: PLC0415 - docker only

        name = os.environ.get("KZK_ZOOKEEPER_IMAGE") or images.ensure_zookeeper_image().tag
        out = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", name],
            capture_output=True,
            text=True,
            check=False,
        )
        return {"launcher": launcher, "image": name, "image_id": out.stdout.strip() or None}
    try:
        install = find_zookeeper()
    except ZooKeeperHarnessError as exc:
        return {"launcher": launcher, "version": None, "error": str(exc)}
    return {"launcher": launcher, "version": install.version(), "source": install.source}


def kit_version() -> str:
    try:
        return importlib.metadata.version("kafka-zk-controller-kit")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def run_provenance(target: Target, launcher: str) -> dict[str, Any]:
    """The kit, catalogue, ZooKeeper and node image a certificate pins (:func:`attestation.provenance`)."""
    return provenance(
        commit=current_commit(),
        kit_version=kit_version(),
        zookeeper=zookeeper_of_run(launcher),
        node_image=node_image(target, launcher),
    )


def write_certificate(results_dir: Path, certificate: dict[str, Any]) -> Path:
    """Write ``certificate.json`` into ``results_dir``; its path."""
    path = results_dir / "certificate.json"
    path.write_text(json.dumps(certificate, indent=2) + "\n", encoding="utf-8")
    return path


def write_signed(results_dir: Path, certificate: dict[str, Any], key_path: Path) -> Path:
    """Sign the certificate with the ed25519 private key at ``key_path``; write and return
    ``certificate.intoto.json`` (a DSSE envelope; :mod:`conformance.attestation`)."""
    envelope = sign_certificate(certificate, load_private_key(key_path))
    path = results_dir / SIGNED_NAME
    path.write_text(json.dumps(envelope, indent=2) + "\n", encoding="utf-8")
    return path
