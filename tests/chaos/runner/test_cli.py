"""Bad input to ``python -m chaos`` is a clear message and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaos.scenarios import FAULTS, SCENARIOS

pytestmark = pytest.mark.unit


def chaos(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def test_list_names_every_scenario_and_fault() -> None:
    out = chaos("list")
    assert out.returncode == 0, out.stderr
    for name in [*SCENARIOS, *FAULTS]:
        assert name in out.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--scenario", "links,nope"], "unknown scenario 'nope'; valid scenarios: " + ", ".join(SCENARIOS)),
        (["--faults", "kil"], "unknown fault 'kil'; valid faults: " + ", ".join(FAULTS)),
        (["--target", "nope"], "no target 'nope': built-ins are ['kafka', 'reference']"),
        (["--launcher", "vm"], "unknown launcher 'vm'; valid launchers: process, docker"),
        (["--runs", "0"], "must be at least 1"),
        (["--seed", "x"], "is not an integer"),
    ],
)
def test_bad_run_arguments_exit_2_with_the_valid_values(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    out = chaos("run", *args, "--out", str(tmp_path / "out"))
    assert out.returncode == 2
    assert expected in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "out").exists()


def test_replay_of_a_directory_without_a_run_exits_2(tmp_path: Path) -> None:
    out = chaos("replay", str(tmp_path))
    assert out.returncode == 2
    assert "not a chaos run directory" in out.stderr
    assert "Traceback" not in out.stderr


def test_check_of_a_directory_without_a_judged_run_exits_2(tmp_path: Path) -> None:
    out = chaos("check", str(tmp_path))
    assert out.returncode == 2
    assert "no history.jsonl" in out.stderr
    (tmp_path / "history.jsonl").write_text("")
    out = chaos("check", str(tmp_path))
    assert out.returncode == 2
    assert "nothing to judge" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_command_exits_2() -> None:
    out = chaos("explode")
    assert out.returncode == 2
    assert "invalid choice" in out.stderr
