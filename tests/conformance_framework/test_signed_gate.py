"""Signed certificates end to end: a real gate run signs its certificate; ``verify`` judges it.

One cheap check (EPOCH-2) runs on a real ZooKeeper with a key made by ``keygen``; every other test
reuses that run's files (a module fixture) and calls the real CLIs in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cluster.targets import REPO_ROOT

CHEAP_ID = "EPOCH-2"


def cli(*args: str, timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KZK_LAUNCHER", "KZK_SIGNING_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


@pytest.fixture(scope="module")
def signed_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("signed")
    keygen = cli("keygen", "--out", str(base / "keys"))
    assert keygen.returncode == 0, keygen.stderr
    results = base / "results"
    run = cli(
        "run",
        "--ids",
        CHEAP_ID,
        "-n",
        "0",
        "--results-dir",
        str(results),
        "--sign-key",
        str(base / "keys/kzk-cert.key"),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (results / "certificate.intoto.json").is_file()
    return {
        "results": results,
        "key": base / "keys/kzk-cert.key",
        "pub": base / "keys/kzk-cert.pub",
        "base": base,
    }


def _verify(*args: str) -> subprocess.CompletedProcess[str]:
    return cli("verify", *args, timeout_s=60)


@pytest.mark.integration
def test_the_signed_run_verifies_as_a_partial_certificate_only(signed_run: dict[str, Path]) -> None:
    ok = _verify(str(signed_run["results"]), "--key", str(signed_run["pub"]), "--selection-only")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "partial certificate" in ok.stdout
    assert ok.stdout.rstrip().endswith("verified")
    full = _verify(str(signed_run["results"]), "--key", str(signed_run["pub"]))
    assert full.returncode == 1, full.stdout
    assert "FAIL  coverage" in full.stdout
    assert "not executed" in full.stdout


@pytest.mark.integration
def test_the_certificate_pins_kit_catalogue_zookeeper_and_target(signed_run: dict[str, Path]) -> None:
    cert: dict[str, Any] = json.loads((signed_run["results"] / "certificate.json").read_text())
    prov = cert["provenance"]
    assert prov["kit"]["name"] == "kafka-zk-controller-kit"
    assert prov["kit"]["commit"]
    assert len(prov["catalogue"]["digest"]) == 64
    assert prov["zookeeper"]["version"].startswith("3.")
    envelope = json.loads((signed_run["results"] / "certificate.intoto.json").read_text())
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert len(envelope["signatures"]) == 1


@pytest.mark.integration
def test_another_key_a_tampered_file_and_another_catalogue_do_not_verify(
    signed_run: dict[str, Path], tmp_path: Path
) -> None:
    other = cli("keygen", "--out", str(tmp_path / "other"))
    assert other.returncode == 0
    wrong_key = _verify(
        str(signed_run["results"]), "--key", str(tmp_path / "other/kzk-cert.pub"), "--selection-only"
    )
    assert wrong_key.returncode == 1
    assert "no signature by this key" in wrong_key.stdout

    envelope = json.loads((signed_run["results"] / "certificate.intoto.json").read_text())
    envelope["payloadType"] = "application/json"
    tampered = tmp_path / "tampered.intoto.json"
    tampered.write_text(json.dumps(envelope))
    bad = _verify(str(tampered), "--key", str(signed_run["pub"]), "--selection-only")
    assert bad.returncode == 1
    assert "FAIL  signature" in bad.stdout

    cert = json.loads((signed_run["results"] / "certificate.json").read_text())
    cert["provenance"]["catalogue"]["digest"] = "0" * 64
    foreign = tmp_path / "foreign" / "certificate.json"
    foreign.parent.mkdir()
    foreign.write_text(json.dumps(cert))
    signed = cli("sign", str(foreign), "--key", str(signed_run["key"]))
    assert signed.returncode == 0, signed.stderr
    other_catalogue = _verify(str(foreign.parent), "--key", str(signed_run["pub"]), "--selection-only")
    assert other_catalogue.returncode == 1
    assert "FAIL  catalogue" in other_catalogue.stdout
    assert "another catalogue" in other_catalogue.stdout


@pytest.mark.unit
def test_bad_inputs_are_exit_2_with_the_file_named(tmp_path: Path) -> None:
    missing = _verify(str(tmp_path / "nothing.intoto.json"), "--key", str(tmp_path / "k.pub"))
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr
    garbage = tmp_path / "garbage.intoto.json"
    garbage.write_text("{not json")
    assert _verify(str(garbage), "--key", str(tmp_path / "k.pub")).returncode == 2
    not_envelope = tmp_path / "plain.intoto.json"
    not_envelope.write_text('{"a": 1}')
    out = _verify(str(not_envelope), "--key", str(tmp_path / "k.pub"))
    assert out.returncode == 2
    assert "not a DSSE envelope" in out.stderr
    assert "Traceback" not in missing.stderr + out.stderr


@pytest.mark.unit
def test_a_bad_signing_key_is_refused_before_anything_runs(tmp_path: Path) -> None:
    key = tmp_path / "not-a-key.pem"
    key.write_text("hello")
    out = cli(
        "run", "--ids", CHEAP_ID, "--results-dir", str(tmp_path / "r"), "--sign-key", str(key), timeout_s=60
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--sign-key" in out.stderr
    assert "not an unencrypted PEM private key" in out.stderr
    assert "running:" not in out.stdout
    assert not (tmp_path / "r" / "certificate.json").exists()
