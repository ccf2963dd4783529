"""Check a signed conformance certificate with the signer's public key: signature, statement, catalogue,
coverage and, on request, a replay of recorded scenarios.

``python -m conformance verify CERT --key PUB`` (conformance ring).

``CERT`` is a ``certificate.intoto.json`` (or the results folder holding one). Each check prints
one line; the certificate is verified (exit 0) only when every check holds:

1. **signature** — the DSSE envelope carries a signature by ``PUB`` over its payload and payload type;
2. **statement** — an in-toto Statement v1 with a test-result predicate whose subject, result and
   passed/failed IDs agree with the certificate it embeds (and its digest);
3. **catalogue** — the certificate's catalogue digest is this kit's (a certificate from another
   catalogue does not certify this kit's behaviours);
4. **coverage** — every behaviour ID the kit's catalogue has for the certificate's profile was
   selected, executed and passed, and the run was conformant (``--selection-only``: only the IDs
   the certificate selected, reported as a partial certificate);
5. **replay** (``--replay K``) — K of the recorded differential-scenario seeds, drawn at random, run
   again against the target (``--target``, default the certificate's) with the same outcome.

Exit 0 verified, 1 not verified (the failing checks are named), 2 bad input (an unreadable file,
not a DSSE envelope, a key that is not an ed25519 public key).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import catalogue
from cluster.targets import REPO_ROOT
from conformance.attestation import (
    AttestationError,
    KeyFileError,
    VerificationFailed,
    load_public_key,
    open_envelope,
)
from conformance.certificate import SIGNED_NAME


class BadInput(Exception):
    """Input that cannot be verified at all: exit 2."""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _envelope(path: Path) -> dict[str, Any]:
    if path.is_dir():
        path = path / SIGNED_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BadInput(
            f"{path} does not exist (sign a certificate with --sign-key or `conformance sign`)"
        ) from exc
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise BadInput(f"{path} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or not {"payload", "payloadType", "signatures"} <= set(data):
        raise BadInput(f"{path} is not a DSSE envelope (payload, payloadType, signatures)")
    return data


def _some(ids: list[str], shown: int = 8) -> str:
    return ", ".join(ids[:shown]) + (f", … (+{len(ids) - shown} more)" if len(ids) > shown else "")


def coverage(certificate: dict[str, Any], *, selection_only: bool) -> Check:
    """Every required ID selected, executed and passed, and the run conformant."""
    profile = str(certificate.get("profile") or catalogue.DEFAULT_PROFILE)
    verdicts: dict[str, Any] = certificate.get("verdicts") or {}
    if selection_only:
        required = list((certificate.get("selection") or {}).get("behaviour_ids") or verdicts)
    else:
        required = catalogue.ids_in_areas(None, profile)
    missing = [i for i in required if i not in verdicts]
    not_passed = [i for i in required if i in verdicts and verdicts[i].get("verdict") != "pass"]
    problems = []
    if not required:
        problems.append("no behaviour ID is required: nothing was certified")
    if missing:
        problems.append(f"{len(missing)} not executed: {_some(missing)}")
    if not_passed:
        problems.append("not passed: " + ", ".join(f"{i} ({verdicts[i].get('verdict')})" for i in not_passed))
    if certificate.get("conformant") is not True:
        problems.append(
            "the run was not conformant: " + "; ".join(certificate.get("not_conformant_because") or [])
        )
    scope = "the certificate's selection" if selection_only else f"every ID of profile {profile}"
    if problems:
        return Check("coverage", False, "; ".join(problems))
    partial = (
        " (partial certificate)"
        if selection_only and len(required) < len(catalogue.ids_in_areas(None, profile))
        else ""
    )
    return Check("coverage", True, f"{len(required)} IDs, {scope}, all passed{partial}")


def _catalogue(certificate: dict[str, Any]) -> Check:
    theirs = ((certificate.get("provenance") or {}).get("catalogue") or {}).get("digest")
    ours = catalogue.digest()
    if theirs == ours:
        return Check("catalogue", True, f"sha256 {ours[:16]}… is this kit's")
    return Check(
        "catalogue",
        False,
        f"made with another catalogue (sha256 {str(theirs)[:16]}…, this kit's {ours[:16]}…)",
    )


def recorded_seeds(certificate: dict[str, Any]) -> list[int]:
    """The differential-scenario seeds the certificate records (its ``differential`` section)."""
    section = certificate.get("differential") or {}
    return [int(s["seed"]) for s in section.get("scenarios", []) if isinstance(s, dict) and "seed" in s]


def replay(certificate: dict[str, Any], count: int, target: str, rng: random.Random) -> Check:
    """Run ``count`` recorded differential seeds again; each must end as recorded."""
    section = certificate.get("differential") or {}
    scenarios = [s for s in section.get("scenarios", []) if isinstance(s, dict) and "seed" in s]
    if not scenarios:
        return Check("replay", False, "the certificate records no differential scenarios to replay")
    chosen = rng.sample(scenarios, min(count, len(scenarios)))
    problems = []
    for scenario in chosen:
        cmd = [
            sys.executable, "-m", "conformance", "diff", "--target", target,
            "--scenarios", "1", "--seed", str(scenario["seed"]), "--no-progress",
        ]  # fmt: skip
        rc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False).returncode
        outcome = {0: "same", 1: "diverged"}.get(rc, f"error (exit {rc})")
        if outcome != scenario.get("outcome"):
            problems.append(
                f"seed {scenario['seed']}: recorded {scenario.get('outcome')}, replayed {outcome}"
            )
    if problems:
        return Check("replay", False, "; ".join(problems))
    return Check(
        "replay", True, f"{len(chosen)} recorded seed(s) replayed against {target} with the same outcome"
    )


def run_checks(args: argparse.Namespace) -> list[Check]:
    envelope = _envelope(args.certificate)
    try:
        key = load_public_key(args.key)
    except KeyFileError as exc:
        raise BadInput(str(exc)) from exc
    try:
        opened = open_envelope(envelope, key)
    except VerificationFailed as exc:
        return [Check("signature", False, str(exc))]
    except AttestationError as exc:
        return [Check("signature", True, "valid"), Check("statement", False, str(exc))]
    cert = opened.certificate
    checks = [
        Check("signature", True, f"by key {opened.keyid[:16]}…"),
        Check(
            "statement",
            True,
            f"in-toto test-result for target {cert.get('target')} {cert.get('target_version') or ''}",
        ),
        _catalogue(cert),
        coverage(cert, selection_only=args.selection_only),
    ]
    if args.replay:
        checks.append(
            replay(cert, args.replay, args.target or str(cert.get("target")), random.Random(args.seed))
        )
    return checks


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m conformance verify", description=__doc__.split("\n\n")[0])
    p.add_argument("certificate", type=Path, help=f"{SIGNED_NAME}, or the results folder that holds it")
    p.add_argument("--key", type=Path, required=True, help="the signer's ed25519 public key (PEM)")
    p.add_argument(
        "--selection-only", action="store_true", help="require only the IDs the certificate selected"
    )
    p.add_argument("--replay", type=int, default=0, metavar="K", help="replay K recorded scenario seeds")
    p.add_argument("--target", default=None, help="target to replay against (default: the certificate's)")
    p.add_argument("--seed", type=int, default=None, help="seed of the replay sample (default random)")
    args = p.parse_args(argv)
    if args.replay < 0:
        p.error("--replay must be >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        checks = run_checks(args)
    except BadInput as exc:
        print(f"python -m conformance verify: error: {exc}", file=sys.stderr)
        return 2
    for check in checks:
        print(f"{'ok  ' if check.ok else 'FAIL'}  {check.name:<10} {check.detail}")
    verified = all(c.ok for c in checks)
    print("verified" if verified else "NOT verified: " + ", ".join(c.name for c in checks if not c.ok))
    return 0 if verified else 1
