"""A simulated run's request journals are on its transaction log's clock, as a real run's share the
host's: the checkers place a broker's answer against the log by those times (ring: unit tests —
the simulated cluster is the component)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.sim.version import seed_version

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def _replay(token: str, out: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "chaos", "sim", "--replay", token, "--no-shrink", "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return next(out.glob("*/verdict.json")).parent


def test_every_journalled_request_lies_within_the_transaction_log(tmp_path: Path) -> None:
    run = _replay(f"links:7100@{seed_version()}", tmp_path)
    times = [
        json.loads(line)["time_ms"] / 1000 for line in (run / "txn-records.jsonl").read_text().splitlines()
    ]
    journals = json.loads((run / "final-state.json").read_text())["journals"]
    sent = [r["sent_s"] for requests in journals.values() for r in requests]
    assert len(sent) > 20
    # requests go on after the last ZooKeeper write (the final phase), but never before the first
    # record nor past the run's virtual length (5 s of workload, at most 30 s of final phase)
    assert min(times) <= min(sent), (min(times), min(sent))
    assert max(sent) - min(times) < 60, (min(times), max(sent))


def test_a_deletion_halted_by_a_failed_stop_replica_is_excused_as_in_a_real_run(tmp_path: Path) -> None:
    """composed seed 190 (simulator format 7; 558 in format 6, 327 in formats 4-5, 243 up to 3): a
    broker (1 here), killed and started again, answers a StopReplica(delete) for t0 sent with the
    broker epoch of its previous registration with STALE_BROKER_EPOCH (77), so Kafka 2.5.1 never
    resumes t0's deletion; judged against journals timed from the run's start it was a violation."""
    run = _replay(f"composed:190@{seed_version()}", tmp_path)
    journals = json.loads((run / "final-state.json").read_text())["journals"]
    refused = [
        (broker, p["topic"])
        for broker, requests in journals.items()
        for r in requests
        if r["kind"] == "StopReplica" and r["delete_partitions"] and r["error_code"] == 77
        for p in r["partitions"]
    ]
    assert ("1", "t0") in refused, refused
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["verdict"] == "valid", verdict["reason"]
    excused = {c["checker"]: c["excused"] for c in verdict["checkers"]}
    assert "deletion_halted_by_failed_replica_deletion" in excused["deletions_completed"]
