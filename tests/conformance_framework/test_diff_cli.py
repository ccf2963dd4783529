"""``python -m conformance diff``: bad input is exit 2 with the reason, before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.targets import REPO_ROOT
from conformance.diff.gate_section import why_not

pytestmark = pytest.mark.unit


def _diff(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "KZK_DIFF_CACHE": str(tmp / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "conformance", "diff", *args, "--out", str(tmp / "out")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--target", "nosuch"], "no target 'nosuch': the built-in targets are 'kafka', 'reference'"),
        (["--launcher", "vm"], "unknown launcher 'vm'; valid launchers: process, docker"),
        (["--against", "kafka"], "--against takes only 'reference'"),
        (["--profile", "9.9"], "unknown profile '9.9'"),
        (["--scenarios", "0"], "no scenario to run"),
        (["-n", "0"], "invalid worker count '0'"),
        (["--scenarios", "many"], "'many' is not a number"),
        (["--min-steps", "9", "--max-steps", "3"], "--min-steps 9 is above --max-steps 3"),
        (["--pool", "100"], "--pool is for --pick cover"),
        (["--pick", "cover", "--pool", "5", "--scenarios", "10"], "--pool 5 is smaller than --scenarios 10"),
        (["--pick", "best"], "argument --pick: invalid choice: 'best'"),
        (["--replay", "/nonexistent/repro.json"], "cannot read scenario file /nonexistent/repro.json"),
        (
            ["--target", "kafka"],
            "target kafka needs $KAFKA_HOME, which is not set: the target cannot run here",
        ),
    ],
)
def test_bad_input_is_exit_2_and_says_what_is_wrong(tmp_path: Path, args: list[str], says: str) -> None:
    env_kafka = os.environ.pop("KAFKA_HOME", None)
    try:
        out = _diff(*args, tmp=tmp_path)
    finally:
        if env_kafka is not None:
            os.environ["KAFKA_HOME"] = env_kafka
    assert out.returncode == 2, out.stdout + out.stderr
    assert says in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "out" / "diff-report.json").exists(), "nothing may run on bad input"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not JSON (Expecting property name"),
        (
            '{"format": "kzk-diff-scenario/1", "nodes": {"1": {}}, "first_controller": 1,'
            ' "steps": [{"op": "nuke"}]}',
            "unknown operation 'nuke'",
        ),
        (
            '{"format": "kzk-diff-scenario/1", "nodes": {"1": {}, "2": {}}, "first_controller": 1,'
            ' "steps": [{"op": "restart", "node": 2}]}',
            "node 2 is up, not down",
        ),
    ],
)
def test_a_malformed_scenario_file_is_exit_2_naming_the_file(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "repro.json"
    path.write_text(content)
    out = _diff("--replay", str(path), tmp=tmp_path)
    assert out.returncode == 2, out.stderr
    assert says in out.stderr, out.stderr
    assert str(path) in out.stderr


def test_show_prints_the_scenario_of_a_seed_and_index(tmp_path: Path) -> None:
    first, again = (
        _diff("show", "--seed", "4", "--index", "2", tmp=tmp_path),
        _diff("show", "--seed", "4", "--index", "2", tmp=tmp_path),
    )
    assert first.returncode == 0
    assert first.stdout == again.stdout
    assert json.loads(first.stdout)["origin"] == {"seed": 4, "index": 2, "generator": 16}


def test_the_gate_is_not_conformant_when_the_differential_part_fails() -> None:
    counts = {"same": 3, "diverges": 1, "target-error": 1, "unknown": 1}
    section = {"passed": False, "count": 6, "counts": counts}
    reasons = why_not(section)
    assert len(reasons) == 3
    assert "1 of 6 scenarios diverge" in reasons[0]
    assert "target error" in reasons[1]
    assert "unknown" in reasons[2]
    assert why_not(None) == []
    assert why_not({**section, "passed": True}) == []


def test_golden_gate_names_the_scenarios_the_gate_draws() -> None:
    """``diff golden --gate`` writes the traces the main job's gate looks up: for gate seed 2026 the
    10 of the candidates (scenario 0 of seed 2026 * 10000 + i, i < 400) that together reach the most
    inputs; the seeds are pinned here (generator v16): they are what certificates record."""
    from conformance.diff.cli import parse_args, scenarios_of  # noqa: PLC0415
    from conformance.diff.generator import generate  # noqa: PLC0415

    drawn = scenarios_of(parse_args(["golden", "--gate"]))
    pinned = [
        20260115,
        20260161,
        20260165,
        20260194,
        20260205,
        20260272,
        20260341,
        20260362,
        20260378,
        20260389,
    ]
    assert [s.key() for s in drawn] == [generate(seed, 0).key() for seed in pinned]


def test_golden_gate_with_replay_is_exit_2(tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text("{}", encoding="utf-8")
    out = _diff("golden", "--gate", "--replay", str(scenario), tmp=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--gate and --replay name different scenarios" in out.stderr
    assert "Traceback" not in out.stderr


def test_only_other_versions_of_the_profile_are_stale_golden(tmp_path: Path) -> None:
    from conformance.diff.cli import _stale_golden  # noqa: PLC0415

    for name in ("2.5-aaaa", "2.5-bbbb", "2.4-aaaa", "2.5-cccc"):
        (tmp_path / name).mkdir()
    assert [p.name for p in _stale_golden(tmp_path, "2.5", "bbbb")] == ["2.5-aaaa", "2.5-cccc"]
    assert _stale_golden(tmp_path / "none", "2.5", "bbbb") == []
