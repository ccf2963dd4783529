"""Signed certificates: an in-toto statement in a DSSE envelope, ed25519 (conformance ring).

A gate run writes ``certificate.json`` (:mod:`conformance.certificate`). Signed with the user's key
it also becomes ``certificate.intoto.json``: a DSSE envelope (payload type
``application/vnd.in-toto+json``) around an in-toto Statement v1 whose

- **subject** is the target: ``target/<name>`` with the SHA-256 of its version string (and, under
  the docker launcher, the node image with its image id);
- **predicate** is a test-result v0.1 predicate: ``result`` PASSED/FAILED (= conformant), the
  behaviour IDs that passed / did not pass, and as ``configuration`` the kit (version, commit), the
  catalogue (its digest) and the whole certificate (content and digest), so the profile, the
  selected IDs, the seeds of the differential and chaos parts, ZooKeeper's version and every
  verdict are under the signature.

Signing and verifying use securesystemslib's DSSE envelope and ``CryptoSigner`` (ed25519 through
``cryptography``); this module only builds and checks the statement. Keys are the user's:
``python -m conformance keygen`` writes a pair (private key mode 0600); keep the private key out of
the repository, e.g. in the CI system's secret store, and hand out the public one.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import CryptoSigner, SSlibKey

import catalogue

__all__ = [
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "AttestationError",
    "KeyFileError",
    "Opened",
    "VerificationFailed",
    "canonical_json",
    "certificate_from_statement",
    "generate_keypair",
    "load_private_key",
    "load_public_key",
    "open_envelope",
    "provenance",
    "sign_certificate",
    "statement_for",
]

PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://in-toto.io/attestation/test-result/v0.1"
CERTIFICATE_NAME: Final = "certificate.json"
KIT_NAME: Final = "kafka-zk-controller-kit"


class AttestationError(Exception):
    """A certificate, envelope or statement is malformed; the message says what and where."""


class KeyFileError(AttestationError):
    """A key file is missing, unreadable or not an ed25519 key."""


class VerificationFailed(AttestationError):
    """The envelope's signature does not hold for the given key."""


def canonical_json(value: Any) -> bytes:
    """The one byte form that is hashed and signed: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the statement ---------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a statement is built from untrusted input
    when it is verified, and must then fail on comparison, not crash)."""
    return value if isinstance(value, Mapping) else {}


def _subjects(cert: Mapping[str, Any]) -> list[dict[str, Any]]:
    version = str(cert.get("target_version") or "")
    subjects: list[dict[str, Any]] = [
        {
            "name": f"target/{cert.get('target')}",
            "digest": {"sha256": _sha256(version.encode())},
            "annotations": {"version": version or None},
        }
    ]
    image = _mapping(_mapping(cert.get("provenance")).get("node_image"))
    if image.get("id"):
        digest = str(image["id"]).removeprefix("sha256:")
        subjects.append({"name": str(image.get("name")), "digest": {"sha256": digest}})
    return subjects


def _passed_failed(cert: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    verdicts = _mapping(cert.get("verdicts"))
    passed = sorted(bid for bid, v in verdicts.items() if _mapping(v).get("verdict") == "pass")
    failed = sorted(bid for bid, v in verdicts.items() if _mapping(v).get("verdict") != "pass")
    return passed, failed


def _catalogue_digest(provenance: Mapping[str, Any]) -> Any:
    return _mapping(provenance.get("catalogue")).get("digest")


def statement_for(cert: Mapping[str, Any]) -> dict[str, Any]:
    """The in-toto statement of a certificate (see the module docstring)."""
    body = canonical_json(cert)
    passed, failed = _passed_failed(cert)
    provenance = _mapping(cert.get("provenance"))
    kit = _mapping(provenance.get("kit"))
    return {
        "_type": STATEMENT_TYPE,
        "subject": _subjects(cert),
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "result": "PASSED" if cert.get("conformant") is True else "FAILED",
            "configuration": [
                {
                    "name": CERTIFICATE_NAME,
                    "digest": {"sha256": _sha256(body)},
                    "mediaType": "application/json",
                    "content": base64.b64encode(body).decode(),
                },
                {
                    "name": KIT_NAME,
                    "digest": {"gitCommit": cert.get("commit") or ""},
                    "annotations": {"version": kit.get("version")},
                },
                {
                    "name": "catalogue",
                    "digest": {"sha256": (provenance.get("catalogue") or {}).get("digest")},
                },
            ],
            "passedTests": passed,
            "warnedTests": [],
            "failedTests": failed,
        },
    }


def _resource(statement: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for item in statement["predicate"]["configuration"]:
        if item.get("name") == name:
            return dict(item)
    raise AttestationError(f"the statement's predicate has no configuration entry {name!r}")


def certificate_from_statement(statement: Mapping[str, Any]) -> dict[str, Any]:
    """The certificate embedded in a statement, after checking that the statement is ours and that
    every summary it carries (digest, subject, result, passed and failed IDs) agrees with it."""
    try:
        if statement.get("_type") != STATEMENT_TYPE:
            raise AttestationError(f"not an in-toto Statement v1 (_type {statement.get('_type')!r})")
        if statement.get("predicateType") != PREDICATE_TYPE:
            raise AttestationError(
                f"predicateType {statement.get('predicateType')!r}, expected {PREDICATE_TYPE}"
            )
        entry = _resource(statement, CERTIFICATE_NAME)
        body = base64.b64decode(entry["content"], validate=True)
        if _sha256(body) != entry["digest"]["sha256"]:
            raise AttestationError("the embedded certificate does not match its digest")
        cert = json.loads(body)
        if not isinstance(cert, dict):
            raise AttestationError("the embedded certificate is not a JSON object")
    except (KeyError, TypeError, ValueError) as exc:
        raise AttestationError(f"malformed statement: {exc!r}") from exc
    expected = statement_for(cert)
    for key in ("subject", "predicate"):
        if statement[key] != expected[key]:
            raise AttestationError(f"the statement's {key} disagrees with the certificate it embeds")
    return cert


# --- keys and the envelope -------------------------------------------------------------------------


def generate_keypair(directory: Path, name: str = "kzk-cert") -> tuple[Path, Path]:
    """Write ``<name>.key`` (PKCS#8 PEM, mode 0600) and ``<name>.pub`` into ``directory``; never
    overwrite an existing key."""
    private_path, public_path = directory / f"{name}.key", directory / f"{name}.pub"
    for path in (private_path, public_path):
        if path.exists():
            raise KeyFileError(
                f"{path} exists; refusing to overwrite a key (remove it or pick another --name)"
            )
    directory.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = private_path.open("xb")
    private_path.chmod(0o600)
    with fd:
        fd.write(pem)
    public_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private_path, public_path


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc


def load_private_key(path: Path) -> CryptoSigner:
    """A signer from an unencrypted PKCS#8 PEM ed25519 private key file."""
    try:
        key = serialization.load_pem_private_key(_read(path, "private key"), password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path} is not an unencrypted PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an ed25519 key")
    return CryptoSigner(key)


def load_public_key(path: Path) -> SSlibKey:
    """A verification key from a PEM (SubjectPublicKeyInfo) ed25519 public key file."""
    try:
        key = serialization.load_pem_public_key(_read(path, "public key"))
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path} is not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an ed25519 key")
    return SSlibKey.from_crypto(key)


def sign_certificate(cert: Mapping[str, Any], signer: CryptoSigner) -> dict[str, Any]:
    """The DSSE envelope (as a JSON-ready dict) of the certificate's statement, signed by ``signer``."""
    envelope = Envelope(canonical_json(statement_for(cert)), PAYLOAD_TYPE, {})
    envelope.sign(signer)
    return dict(envelope.to_dict())


@dataclass(frozen=True)
class Opened:
    """A verified envelope: the key that signed it, the statement, the certificate it embeds."""

    keyid: str
    statement: dict[str, Any]
    certificate: dict[str, Any]


def open_envelope(data: Mapping[str, Any], key: SSlibKey) -> Opened:
    """Verify the envelope's signature with ``key`` and return what it holds.

    :class:`VerificationFailed` when no signature is by ``key`` or it does not verify (a changed
    payload, signature or payload type); :class:`AttestationError` when the envelope or its
    statement is malformed or inconsistent.
    """
    try:
        envelope = Envelope.from_dict(copy.deepcopy(dict(data)))  # from_dict pops what it reads
    except (KeyError, TypeError, ValueError) as exc:
        raise AttestationError(f"not a DSSE envelope: {exc!r}") from exc
    if envelope.payload_type != PAYLOAD_TYPE:
        raise VerificationFailed(f"payload type {envelope.payload_type!r}, expected {PAYLOAD_TYPE}")
    if not envelope.signatures:
        raise VerificationFailed("the envelope carries no signature")
    if key.keyid not in envelope.signatures:
        raise VerificationFailed(
            f"no signature by this key (key id {key.keyid[:16]}…); signed by "
            + ", ".join(k[:16] + "…" for k in envelope.signatures)
        )
    try:
        envelope.verify([key], 1)
    except VerificationError as exc:
        raise VerificationFailed(f"bad signature: {exc}") from exc
    try:
        statement = json.loads(envelope.payload)
    except ValueError as exc:
        raise AttestationError(f"the signed payload is not JSON: {exc}") from exc
    return Opened(key.keyid, statement, certificate_from_statement(statement))


def provenance(
    *,
    commit: str | None,
    kit_version: str,
    zookeeper: Mapping[str, Any],
    node_image: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """What a certificate pins besides its verdicts: the kit, the catalogue, ZooKeeper, the image."""
    return {
        "kit": {"name": KIT_NAME, "version": kit_version, "commit": commit},
        "catalogue": {"digest": catalogue.digest(), "ids": len(catalogue.CATALOGUE)},
        "zookeeper": dict(zookeeper),
        "node_image": dict(node_image) if node_image else None,
    }
