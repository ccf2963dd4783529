"""``python -m conformance keygen`` and ``python -m conformance sign`` (conformance ring).

``keygen --out DIR [--name NAME]`` writes an ed25519 key pair for signing certificates:
``NAME.key`` (PKCS#8 PEM, unencrypted, mode 0600: keep it in a secret store — a CI secret, a
vault — never in a repository) and ``NAME.pub`` (hand it to whoever verifies). ``sign CERT --key
KEY`` signs an existing ``certificate.json`` and writes ``certificate.intoto.json`` beside it.
Exit 0 done, 2 bad input (the message says what).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from conformance.attestation import AttestationError, generate_keypair, load_private_key, sign_certificate
from conformance.certificate import SIGNED_NAME


def keygen(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m conformance keygen",
        description="Write an ed25519 key pair for signing conformance certificates.",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for NAME.key and NAME.pub")
    p.add_argument("--name", default="kzk-cert", help="file name stem (default kzk-cert)")
    args = p.parse_args(argv)
    try:
        private, public = generate_keypair(args.out, args.name)
    except (AttestationError, OSError) as exc:
        print(f"python -m conformance keygen: error: {exc}", file=sys.stderr)
        return 2
    print(f"private key: {private} (mode 0600; keep it secret, e.g. as a CI secret)")
    print(f"public key:  {public} (for verifiers: python -m conformance verify CERT --key {public})")
    return 0


def _certificate(path: Path) -> dict[str, object]:
    certificate = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(certificate, dict) or "verdicts" not in certificate:
        raise AttestationError(f"{path} is not a conformance certificate (no verdicts)")
    return certificate


def sign(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m conformance sign",
        description=f"Sign a certificate.json with an ed25519 private key; writes {SIGNED_NAME} beside it.",
    )
    p.add_argument("certificate", type=Path, help="a certificate.json written by python -m conformance run")
    p.add_argument("--key", type=Path, required=True, help="the ed25519 private key (PEM)")
    args = p.parse_args(argv)
    try:
        certificate = _certificate(args.certificate)
        envelope = sign_certificate(certificate, load_private_key(args.key))
        out = args.certificate.with_name(SIGNED_NAME)
        out.write_text(json.dumps(envelope, indent=2) + "\n", encoding="utf-8")
    except (AttestationError, OSError, ValueError) as exc:
        print(f"python -m conformance sign: error: {exc}", file=sys.stderr)
        return 2
    print(f"signed certificate: {out}")
    return 0
