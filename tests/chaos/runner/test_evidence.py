"""``python -m chaos check`` never judges damaged evidence: real run directories, damaged.

One real campaign (two runs, every directory kept) gives run directories sealed by their
manifests. Copies of one are damaged the ways evidence gets damaged — emptied, truncated at a line
boundary or mid-line, one byte altered, a garbage line, a file or the manifest missing, the
directory unreadable — and judged in one batch with the intact runs: each damaged copy is
``unknown`` naming the file (and the line for a bad line), the intact ones keep their recorded
verdicts, and the exit status says unknown (3) unless something is invalid (1).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chaos.run.manifest import write_manifest
from tests.chaos.runner.support import chaos

pytestmark = pytest.mark.chaos


@pytest.fixture(scope="module")
def kept_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("evidence")
    done = chaos(
        "run", "--runs", "2", "--seed", "31", "--parallel", "2", "--scenario", "process",
        "--out", str(out), "--keep-all", "--no-progress",
    )  # fmt: skip
    runs = sorted(p for p in out.glob("*/runs/*") if p.is_dir())
    assert len(runs) == 2, done.stdout + done.stderr
    assert f"2 run directories kept: {runs[0].parent}" in done.stdout
    for run in runs:
        manifest = json.loads((run / "manifest.json").read_text())
        assert {"history.jsonl", "txn-records.jsonl", "final-state.json", "verdict.json"} <= set(
            manifest["files"]
        )
        assert manifest["kit"]["version"]
    return runs


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _cut_last_line(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


def _cut_mid_line(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 10])


def _flip_a_digit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    i = next(i for i in range(len(data) // 2, len(data)) if chr(data[i]).isdigit())
    data[i] = ord("1") if data[i] != ord("1") else ord("2")
    path.write_bytes(bytes(data))


def _garbage_line(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([*lines[:4], "this is not json\n", *lines[4:]]))


def _garbage_line_sealed(run: Path) -> None:
    """A garbage line the manifest agrees with (the kit wrote it): the parse must name the line."""
    _garbage_line(run / "txn-records.jsonl")
    write_manifest(run)


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "empty-history": (lambda r: _empty(r / "history.jsonl"), "history.jsonl: empty"),
    "history-cut-at-a-line": (
        lambda r: _cut_last_line(r / "history.jsonl"),
        "history.jsonl: truncated or altered: ",
    ),
    "records-cut-mid-line": (
        lambda r: _cut_mid_line(r / "txn-records.jsonl"),
        "txn-records.jsonl: truncated or altered: ",
    ),
    "one-byte-altered": (
        lambda r: _flip_a_digit(r / "final-state.json"),
        "final-state.json: altered: its sha256",
    ),
    "garbage-line": (lambda r: _garbage_line(r / "txn-records.jsonl"), "txn-records.jsonl: altered: "),
    "garbage-line-sealed": (_garbage_line_sealed, "txn-records.jsonl line 5: not a transaction record"),
    "final-state-missing": (lambda r: (r / "final-state.json").unlink(), "final-state.json: missing"),
    "no-manifest": (
        lambda r: (r / "manifest.json").unlink(),
        "no manifest: the run did not finish or was written by an older kit",
    ),
    "unreadable": (lambda r: r.chmod(0), "unreadable directory (Permission denied)"),
}


def _without_dac_override() -> list[str]:
    """Root reads any directory: the judging process drops that power (as any user lacks it)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a directory unreadable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def damaged(kept_runs: list[Path], tmp_path: Path) -> Iterator[dict[str, Path]]:
    batch = tmp_path / "batch"
    batch.mkdir()
    out = {}
    for name, (damage, _) in DAMAGE.items():
        copy = batch / name
        shutil.copytree(kept_runs[0], copy)
        damage(copy)
        out[name] = copy
    yield out
    out["unreadable"].chmod(stat.S_IRWXU)


def test_every_damaged_directory_is_unknown_naming_the_file_and_the_batch_judges_the_rest(
    kept_runs: list[Path], damaged: dict[str, Path]
) -> None:
    dirs = [kept_runs[0], *damaged.values(), kept_runs[1]]
    done = subprocess.run(
        [*_without_dac_override(), sys.executable, "-m", "chaos", "check", *map(str, dirs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = done.stdout + done.stderr
    assert "Traceback" not in report, report
    lines = done.stdout.splitlines()
    summary: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for i, line in enumerate(lines):
        words = line.split()
        if words and words[0] in ("valid", "invalid", "unknown"):
            summary[words[1]] = words[0]
            reasons[words[1]] = lines[i + 1] if i + 1 < len(lines) else ""
    recorded = [json.loads((d / "verdict.json").read_text())["verdict"] for d in kept_runs]
    assert summary[str(kept_runs[0])] == recorded[0], report
    assert summary[str(kept_runs[1])] == recorded[1], report
    for name, path in damaged.items():
        assert summary[str(path)] == "unknown", f"{name}: {report}"
        reason = reasons[str(path)]
        assert reason.startswith("  reason: "), f"{name}: {report}"
        assert DAMAGE[name][1] in reason, f"{name}: {reason}"
    invalid = "invalid" in recorded
    assert lines[-1] == (
        f"{len(dirs)} run(s): {recorded.count('valid')} valid, {recorded.count('invalid')} invalid, "
        f"{len(damaged)} unknown"
    ), report
    assert done.returncode == (1 if invalid else 3), report


def test_intact_runs_alone_keep_their_verdicts_and_a_valid_batch_exits_0(kept_runs: list[Path]) -> None:
    done = chaos("check", *map(str, kept_runs))
    recorded = [json.loads((d / "verdict.json").read_text())["verdict"] for d in kept_runs]
    judged = [
        line.split()[0]
        for line in done.stdout.splitlines()
        if line.startswith(("valid", "invalid", "unknown"))
    ]
    assert judged == recorded, done.stdout
    expected = 1 if "invalid" in recorded else 3 if "unknown" in recorded else 0
    assert done.returncode == expected, done.stdout + done.stderr
