"""Signed certificates (unit: real ed25519 signatures through securesystemslib, no servers).

The certificate is a hand-written example of the shape the gate writes; every check below signs it
for real and then tampers with the envelope, the statement or the embedded certificate.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from securesystemslib.dsse import Envelope

import catalogue
from conformance.attestation import (
    AttestationError,
    KeyFileError,
    VerificationFailed,
    canonical_json,
    generate_keypair,
    load_private_key,
    load_public_key,
    open_envelope,
    sign_certificate,
    statement_for,
)
from conformance.verify import coverage

pytestmark = pytest.mark.unit


def _certificate() -> dict[str, Any]:
    verdicts = {
        bid: {"verdict": "pass", "reasons": [], "tests": [{"test": f"t::{bid}", "outcome": "passed"}]}
        for bid in ("EPOCH-1", "FENCE-1")
    }
    return {
        "certificate_version": 3,
        "run_id": "0123456789ab",
        "selection": {"target": "reference", "behaviour_ids": ["EPOCH-1", "FENCE-1"], "launcher": "process"},
        "target": "reference",
        "target_version": "2.5.1 (reference_controller 0.1.0)",
        "profile": "2.5",
        "commit": "09e5b09caa136304b9bdb88bebf4658de9c01123",
        "conformant": True,
        "not_conformant_because": [],
        "verdicts": verdicts,
        "differential": {"seed": 7, "scenarios": [{"seed": 7001, "outcome": "same"}]},
        "provenance": {
            "kit": {"name": "kafka-zk-controller-kit", "version": "0.1.0", "commit": "09e5b09"},
            "catalogue": {"digest": catalogue.digest(), "ids": len(catalogue.CATALOGUE)},
            "zookeeper": {"launcher": "process", "version": "3.8.0"},
            "node_image": None,
        },
    }


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    return generate_keypair(tmp_path / "keys")


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path


def _flip(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    return "tampered" if value is None else None


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        doc = doc[step]
    doc[path[-1]] = value


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def test_a_signed_certificate_opens_with_its_public_key(keys: tuple[Path, Path]) -> None:
    cert = _certificate()
    envelope = sign_certificate(cert, load_private_key(keys[0]))
    opened = open_envelope(json.loads(json.dumps(envelope)), load_public_key(keys[1]))
    assert opened.certificate == cert
    assert opened.statement["_type"] == "https://in-toto.io/Statement/v1"
    assert opened.statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert opened.statement["predicate"]["result"] == "PASSED"
    assert opened.statement["predicate"]["passedTests"] == ["EPOCH-1", "FENCE-1"]
    assert opened.statement["subject"][0]["name"] == "target/reference"


def test_every_tampered_field_of_the_certificate_breaks_the_signature(keys: tuple[Path, Path]) -> None:
    cert = _certificate()
    envelope = sign_certificate(cert, load_private_key(keys[0]))
    public = load_public_key(keys[1])
    paths = list(_leaves(cert))
    assert len(paths) > 25
    for path in paths:
        forged = copy.deepcopy(cert)
        _set(forged, path, _flip(_get(cert, path)))
        assert forged != cert
        tampered = dict(envelope, payload=base64.b64encode(canonical_json(statement_for(forged))).decode())
        with pytest.raises(VerificationFailed):
            open_envelope(tampered, public)


def test_every_tampered_field_of_the_envelope_fails(keys: tuple[Path, Path]) -> None:
    envelope = sign_certificate(_certificate(), load_private_key(keys[0]))
    public = load_public_key(keys[1])
    for path in _leaves(envelope):
        tampered = copy.deepcopy(envelope)
        original = _get(envelope, path)
        if path[-1] in ("payload", "sig"):  # flip one bit of the decoded bytes, keep valid base64
            raw = bytearray(base64.b64decode(original))
            raw[len(raw) // 2] ^= 0x01
            _set(tampered, path, base64.b64encode(bytes(raw)).decode())
        else:
            _set(tampered, path, _flip(original))
        with pytest.raises(AttestationError):
            open_envelope(tampered, public)


def test_a_certificate_signed_by_another_key_is_refused(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    other_private, _ = generate_keypair(tmp_path / "other")
    envelope = sign_certificate(_certificate(), load_private_key(other_private))
    with pytest.raises(VerificationFailed, match="no signature by this key"):
        open_envelope(envelope, load_public_key(keys[1]))


def test_a_statement_that_disagrees_with_its_certificate_is_refused_even_when_signed(
    keys: tuple[Path, Path],
) -> None:
    """A signer that summarises wrongly (a failed ID listed as passed) is caught by the statement check."""

    cert = _certificate()
    statement = statement_for(cert)
    statement["predicate"]["passedTests"] = ["EPOCH-1", "FENCE-1", "REASSIGN-1"]
    envelope = Envelope(canonical_json(statement), "application/vnd.in-toto+json", {})
    envelope.sign(load_private_key(keys[0]))
    with pytest.raises(AttestationError, match="predicate disagrees"):
        open_envelope(envelope.to_dict(), load_public_key(keys[1]))


def test_coverage_requires_every_id_of_the_profile_unless_told_the_selection() -> None:
    cert = _certificate()
    full = coverage(cert, selection_only=False)
    assert not full.ok
    assert f"{len(catalogue.CATALOGUE) - 2} not executed" in full.detail
    partial = coverage(cert, selection_only=True)
    assert partial.ok
    assert "partial certificate" in partial.detail
    cert["verdicts"]["FENCE-1"]["verdict"] = "fail"
    cert["conformant"] = False
    failed = coverage(cert, selection_only=True)
    assert not failed.ok
    assert "FENCE-1 (fail)" in failed.detail


def test_keygen_never_overwrites_and_bad_key_files_are_named(tmp_path: Path) -> None:
    private, public = generate_keypair(tmp_path)
    assert private.stat().st_mode & 0o777 == 0o600
    with pytest.raises(KeyFileError, match="refusing to overwrite"):
        generate_keypair(tmp_path)
    with pytest.raises(KeyFileError, match="not an unencrypted PEM private key"):
        load_private_key(public)
    with pytest.raises(KeyFileError, match="cannot read"):
        load_public_key(tmp_path / "missing.pub")
