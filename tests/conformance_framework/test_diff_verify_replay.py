"""The certificate's differential section and ``verify --replay`` agree (conformance framework).

The gate records every differential scenario by its own seed (each is scenario 0 of a seed
``S * 10000 + i``, i < 400, picked for coverage) with its outcome; ``python -m conformance verify --replay K``
reruns K of them as ``python -m conformance diff --scenarios 1 --seed <seed>`` and compares the
exit code (0 same, 1 diverged) with the recorded outcome.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import catalogue
from cluster.targets import REPO_ROOT
from conformance.attestation import generate_keypair
from conformance.certificate import write_signed
from conformance.diff.cli import exit_code, parse_args, scenarios_of
from conformance.diff.gate_section import GATE_POOL, OUTCOME, SEED_STRIDE, scenario_seeds
from conformance.diff.generator import generate

#: a short scenario (3 nodes, 5 steps, no node fault): one replay takes about a minute
SHORT_SEED = 960


@pytest.mark.unit
def test_each_recorded_seed_is_the_scenario_the_diff_command_runs_for_it() -> None:
    seeds = scenario_seeds(2026, 3)
    assert seeds == sorted(set(seeds))
    assert all(2026 * SEED_STRIDE <= s < 2026 * SEED_STRIDE + GATE_POOL for s in seeds), seeds
    for seed in seeds:
        (replayed,) = scenarios_of(parse_args(["--scenarios", "1", "--seed", str(seed), "--no-progress"]))
        assert replayed.key() == generate(seed, 0).key()
    assert len({generate(s, 0).key() for s in seeds}) == 3


@pytest.mark.unit
def test_the_exit_code_is_what_verify_reads_as_the_outcome() -> None:
    def report(**counts: int) -> dict[str, Any]:
        full = {"same": 0, "diverges": 0, "target-error": 0, "unknown": 0, **counts}
        return {"passed": full["same"] == sum(full.values()), "counts": full}

    assert exit_code(report(same=1)) == 0
    assert OUTCOME["same"] == "same"
    assert exit_code(report(diverges=1)) == 1
    assert OUTCOME["diverges"] == "diverged"
    assert exit_code(report(**{"target-error": 1})) == 3, "a target error is never read as a divergence"
    assert exit_code(report(unknown=1)) == 3


def _certificate(outcome: str) -> dict[str, Any]:
    verdicts = {"EPOCH-1": {"verdict": "pass", "reasons": [], "tests": [{"test": "t", "outcome": "passed"}]}}
    return {
        "certificate_version": 3,
        "run_id": "0123456789ab",
        "selection": {"target": "reference", "behaviour_ids": ["EPOCH-1"], "launcher": "process"},
        "target": "reference",
        "target_version": "2.5.1",
        "profile": catalogue.DEFAULT_PROFILE,
        "conformant": True,
        "not_conformant_because": [],
        "verdicts": verdicts,
        "differential": {"count": 1, "seed": 0, "scenarios": [{"seed": SHORT_SEED, "outcome": outcome}]},
        "provenance": {"catalogue": {"digest": catalogue.digest(), "ids": len(catalogue.CATALOGUE)}},
    }


@pytest.mark.integration
@pytest.mark.parametrize(("recorded", "verified"), [("same", True), ("diverged", False)])
def test_verify_replays_a_recorded_seed_against_the_reference(
    tmp_path: Path, recorded: str, verified: bool
) -> None:
    _private, public = generate_keypair(tmp_path / "keys")
    results = tmp_path / "results"
    results.mkdir()
    write_signed(results, _certificate(recorded), tmp_path / "keys" / "kzk-cert.key")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "KZK_DIFF_CACHE": str(tmp_path / "cache")}
    env.pop("KZK_LAUNCHER", None)
    cmd = [sys.executable, "-m", "conformance", "verify", str(results), "--key", str(public)]
    run = subprocess.run(
        [*cmd, "--selection-only", "--replay", "1"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = run.stdout + run.stderr
    assert "Traceback" not in out
    replay_line = next(line for line in run.stdout.splitlines() if "replay" in line)
    if verified:
        assert run.returncode == 0, out
        assert "with the same outcome" in replay_line, replay_line
    else:
        assert run.returncode == 1, out
        assert f"seed {SHORT_SEED}: recorded diverged, replayed same" in replay_line, replay_line
    assert json.loads((results / "certificate.intoto.json").read_text())["signatures"]
