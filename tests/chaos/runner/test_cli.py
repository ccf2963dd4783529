"""Bad input to ``python -m chaos`` is a clear message and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from chaos.__main__ import _summary
from chaos.run.manifest import write_manifest
from chaos.run.pool import CampaignResult
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
        (["--target", "nope"], "no target 'nope': the built-in targets are 'kafka', 'reference', "),
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


def test_check_of_directories_without_a_judged_run_is_unknown_for_each_and_exits_3(tmp_path: Path) -> None:
    empty, history_only, file = tmp_path / "empty", tmp_path / "history-only", tmp_path / "a-file"
    empty.mkdir()
    history_only.mkdir()
    (history_only / "history.jsonl").write_text('{"index": 0}\n')
    write_manifest(history_only)
    file.write_text("")
    missing = tmp_path / "missing"
    out = chaos("check", *map(str, (empty, history_only, file, missing)))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        f"unknown  {empty}",
        "  reason: no manifest: the run did not finish or was written by an older kit",
        f"unknown  {history_only}",
        "  reason: neither txn-records.jsonl nor final-state.json (the run's cluster never started): "
        "nothing to judge",
        f"unknown  {file}",
        "  reason: not a directory",
        f"unknown  {missing}",
        "  reason: no such directory",
        "4 run(s): 0 valid, 0 invalid, 4 unknown",
    ]


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_an_out_that_is_not_a_writable_directory_exits_2_before_anything_starts(
    where: str, tmp_path: Path
) -> None:
    file = tmp_path / "results"
    file.write_text("")
    out_dir = file if where == "file" else file / "sub"
    out = chaos("run", "--runs", "1", "--out", str(out_dir))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert f"--out {out_dir}" in out.stderr
    assert "give a directory" in out.stderr
    assert "campaign" not in out.stderr  # nothing started
    assert [p.name for p in tmp_path.iterdir()] == ["results"]


def test_help_speaks_to_users_and_documents_the_exit_statuses() -> None:
    check = chaos("check", "--help").stdout
    assert "0 when every run is valid, 1 when any is invalid, 3 when none" in " ".join(check.split())
    run = " ".join(chaos("run", "--help").stdout.split())
    statuses = "0 when every run is valid, 1 when any is invalid, 3 when none is invalid but some could"
    assert f"{statuses} not be judged, 2 for bad arguments" in run
    assert "--keep-all also keep the directories of valid runs" in run


def test_the_summary_says_where_kept_runs_are_or_that_valid_runs_were_pruned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pruned = CampaignResult(Counter(valid=2), [{"run_dir": None}, {"run_dir": None}], 10.0)
    _summary(pruned, tmp_path, "c1", keep_all=False)
    assert (
        "no run directory kept: valid runs are pruned (run with --keep-all to keep them)"
        in capsys.readouterr().out
    )
    kept = CampaignResult(Counter(valid=1, invalid=1), [{"run_dir": None}, {"run_dir": "x"}], 10.0)
    _summary(kept, tmp_path, "c1", keep_all=False)
    text = capsys.readouterr().out
    assert (
        f"1 run directory kept (invalid and unknown; valid runs were pruned): {tmp_path / 'c1' / 'runs'}"
        in text
    )


def test_unknown_command_exits_2() -> None:
    out = chaos("explode")
    assert out.returncode == 2
    assert "invalid choice" in out.stderr
