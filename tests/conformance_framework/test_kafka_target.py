"""The ``kafka`` target end to end, on a Kafka-shaped test distribution whose scripts run the
reference node (``tests/kafka_dist/``): ``$KAFKA_HOME``, ``kafka-server-start.sh``, ``$LOG_DIR``,
the version command, the preflight and a few IDs through the gate. Real processes, real
ZooKeeper; not Apache Kafka (no distribution of it is available here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cluster.targets import REPO_ROOT, load_target

pytestmark = pytest.mark.integration

DIST = Path(__file__).resolve().parent.parent / "kafka_dist" / "kafka_2.13-2.5.1-test"
TIMEOUT_S = 900.0


def run(*args: str, kafka_home: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KZK_LAUNCHER", "KAFKA_HOME")}
    env["KZK_PYTHON"] = sys.executable  # the test distribution runs the node with it
    if kafka_home is not None:
        env["KAFKA_HOME"] = kafka_home
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def certificate(results: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((results / "certificate.json").read_text(encoding="utf-8"))
    return data


def test_the_test_distribution_is_laid_out_like_kafka() -> None:
    for part in ("bin/kafka-server-start.sh", "bin/kafka-run-class.sh", "bin/kafka-topics.sh"):
        assert os.access(DIST / part, os.X_OK), part
    assert "log4j.logger.state.change.logger=TRACE" in (DIST / "config" / "log4j.properties").read_text()
    assert (DIST / "libs").is_dir()


def test_the_preflight_passes_through_kafka_server_start(tmp_path: Path) -> None:
    out = run("doctor", "--target", "kafka", kafka_home=str(DIST))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{DIST}/bin/kafka-server-start.sh" in out.stdout
    assert "healthy" in out.stdout


def test_a_few_ids_through_the_gate_on_the_kafka_target(tmp_path: Path) -> None:
    results = tmp_path / "r"
    out = run(
        "--target", "kafka", "--ids", "EPOCH-1,TOPIC-3,BROKER-1", "-n", "0", "--results-dir", str(results),
        kafka_home=str(DIST),
    )  # fmt: skip
    cert = certificate(results)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert cert["conformant"] is True
    assert cert["target"] == "kafka"
    assert cert["target_version"] == "2.5.1 (test distribution: the kit's reference node, not Apache Kafka)"
    assert {bid: v["verdict"] for bid, v in cert["verdicts"].items()} == dict.fromkeys(
        ["EPOCH-1", "TOPIC-3", "BROKER-1"], "pass"
    )
    assert cert["preflight"]["ok"] is True


def test_without_kafka_home_the_gate_stops_at_once_with_a_target_error(tmp_path: Path) -> None:
    results = tmp_path / "r"
    out = run("--target", "kafka", "--ids", "EPOCH-1", "--results-dir", str(results), kafka_home=None)
    assert out.returncode == 1, out.stdout + out.stderr
    cert = certificate(results)
    assert cert["conformant"] is False
    assert cert["verdicts"]["EPOCH-1"]["verdict"] == "target error"
    assert cert["target_error"] == {
        "where": "preflight",
        "problem": "available: target kafka needs $KAFKA_HOME, which is not set",
    }
    assert not (results / "pytest.log").exists(), "the suite ran although the preflight failed"
    assert "conformant: NO (target error)" in out.stdout


def test_a_kafka_home_without_the_start_script_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "not-kafka"
    empty.mkdir()
    out = run("doctor", "--target", "kafka", kafka_home=str(empty))
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"target kafka needs {empty}/bin/kafka-server-start.sh, which does not exist" in out.stdout


@pytest.mark.unit
def test_the_kafka_target_names_a_2_5_1_release() -> None:
    kafka = load_target("kafka")
    assert "2.5.1" in kafka.description
    assert kafka.container is not None
    assert kafka.container.image == "kzk-kafka:2.5.1"
