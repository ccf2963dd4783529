"""Mutation testing tool: the mutants apply to today's tree, and the tool kills, spares and times out.

The unit tests read the mutant patches and apply them with ``git apply --check`` to a scratch copy
(independently of ``conformance.mutate``), so a patch that drifted from the reference is caught
here. The integration tests run ``python -m conformance.mutate`` on mutants written at test time
from the current source (``diff -u`` of an edit), narrowed with ``-k`` to one cheap check.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import catalogue
from cluster.targets import REPO_ROOT
from conformance.mutate import (
    MUTANTS_DIR,
    SCRATCH_PREFIX,
    Killer,
    Mutant,
    MutantResult,
    merged,
    parse_mutant,
    reflag,
    summary,
    write_reports,
)

PATCHES = sorted(MUTANTS_DIR.glob("*.patch"))
ZK_CLIENT = "reference_controller/controller/zk_client.py"
EPOCH_1_CHECK = "test_first_election_sets_epoch_1_at_data_version_1"


@pytest.fixture(scope="module")
def scratch_tree() -> Iterator[Path]:
    """A copy of the working tree (no .git/.venv), as the mutation tool makes one."""
    with tempfile.TemporaryDirectory(prefix="kzk-test-mutants-") as tmp:
        dest = Path(tmp) / "repo"
        shutil.copytree(
            REPO_ROOT,
            dest,
            ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*_cache", "results*"),
        )
        yield dest


# --- the mutant set ------------------------------------------------------------------------------


@pytest.mark.unit
def test_there_are_at_least_20_mutants_across_at_least_10_areas() -> None:
    mutants = [parse_mutant(p) for p in PATCHES]
    assert len(mutants) >= 20, [m.name for m in mutants]
    assert len({a for m in mutants for a in m.areas}) >= 10


@pytest.mark.unit
@pytest.mark.parametrize("patch", PATCHES, ids=[p.stem for p in PATCHES])
def test_mutant_applies_to_the_current_tree(patch: Path, scratch_tree: Path) -> None:
    out = subprocess.run(
        ["git", "apply", "--check", str(patch)],
        cwd=scratch_tree,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, (
        f"{patch.name} no longer applies to the tree (refresh it: python -m conformance.mutate"
        f" --refresh --only {patch.stem}, or redo the edit and diff -u):\n{out.stderr}"
    )


@pytest.mark.unit
@pytest.mark.parametrize("patch", PATCHES, ids=[p.stem for p in PATCHES])
def test_mutant_header_says_what_breaks_and_who_should_catch_it(patch: Path) -> None:
    text = patch.read_text(encoding="utf-8")
    header = text[: text.index("\n--- ")]
    assert re.search(r"^# breaks: .{20,}$", header, re.MULTILINE), header
    areas = re.search(r"^# areas: (.+)$", header, re.MULTILINE)
    ids = re.search(r"^# ids: (.+)$", header, re.MULTILINE)
    assert areas is not None
    assert ids is not None
    known_ids = {b.id for b in catalogue.CATALOGUE}
    assert set(areas.group(1).split(",")) <= set(catalogue.AREAS)
    assert set(ids.group(1).split(",")) <= known_ids
    # a mutant of the reference only: the suite and the harness are never mutated
    touched = re.findall(r"^\+\+\+ b/(\S+)", text, re.MULTILINE)
    assert touched
    assert all(t.startswith("reference_controller/") for t in touched), touched


@pytest.mark.unit
def test_unknown_mutant_name_is_exit_2_listing_the_valid_names() -> None:
    out = _mutate("--only", "no-such-mutant,epoch-not-incremented-on-election", "--list")
    assert out.returncode == 2, out
    assert "unknown mutants no-such-mutant; valid mutants:" in out.stderr
    assert all(p.stem in out.stderr for p in PATCHES)


@pytest.mark.unit
@pytest.mark.parametrize("args", [("-n", "-1"), ("--timeout-s", "0"), ("--timeout-s", "soon")])
def test_bad_numbers_are_exit_2(args: tuple[str, str]) -> None:
    out = _mutate(*args, "--list")
    assert out.returncode == 2, out
    assert "invalid" in out.stderr


@pytest.mark.unit
def test_refresh_rebases_a_patch_whose_lines_moved(tmp_path: Path, scratch_tree: Path) -> None:
    original = MUTANTS_DIR / "epoch-not-incremented-on-election.patch"
    text = original.read_text(encoding="utf-8")
    # the same edit, but written against a file with 9 more lines above it: line numbers drift
    drifted = re.sub(
        r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@",
        lambda m: f"@@ -{int(m[1]) + 9},{m[2]} +{int(m[3]) + 9},{m[4]} @@",
        text,
        flags=re.MULTILINE,
    )
    drifted = drifted.replace("\n     log.info(\n", "\n     log.info(  \n", 1)  # and a context line
    assert drifted != text
    (tmp_path / "m.patch").write_text(drifted, encoding="utf-8")
    check = subprocess.run(
        ["git", "apply", "--check", str(tmp_path / "m.patch")], cwd=scratch_tree, check=False
    )
    assert check.returncode != 0, "the drifted patch should not apply as it is"
    out = _mutate("--mutants-dir", str(tmp_path), "--refresh")
    assert out.returncode == 0, out
    assert "m: refreshed" in out.stdout
    refreshed = (tmp_path / "m.patch").read_text(encoding="utf-8")
    assert refreshed.startswith("# mutant: epoch-not-incremented-on-election\n# breaks:")
    again = subprocess.run(
        ["git", "apply", "--check", str(tmp_path / "m.patch")], cwd=scratch_tree, check=False
    )
    assert again.returncode == 0
    assert "+    new_epoch = max(cur_epoch, 1)" in refreshed


# --- end to end ------------------------------------------------------------------------------------


def _mutate(*args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance.mutate", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _write_mutant(directory: Path, name: str, old: str, new: str, *, areas: str, ids: str) -> None:
    """A patch made the way the real ones are: ``diff -u`` of an edit of the current file."""
    source = (REPO_ROOT / ZK_CLIENT).read_text(encoding="utf-8")
    assert source.count(old) == 1, f"{old!r} is not unique in {ZK_CLIENT}: update this test"
    edited = directory / f"{name}.py.edited"
    edited.write_text(source.replace(old, new), encoding="utf-8")
    diff = subprocess.run(
        [
            "diff",
            "-u",
            "--label",
            f"a/{ZK_CLIENT}",
            "--label",
            f"b/{ZK_CLIENT}",
            REPO_ROOT / ZK_CLIENT,
            edited,
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    edited.unlink()
    header = (
        f"# mutant: {name}\n# breaks: a test mutant made by test_mutate.py\n# areas: {areas}\n# ids: {ids}\n"
    )
    (directory / f"{name}.patch").write_text(header + diff, encoding="utf-8")


def _scratch_dirs_of(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}{pid}-*"))


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if text in cmdline or text in cwd:
            found.append(int(entry.name))
    return found


def _run_campaign(
    mutants: Path, out: Path, *extra: str, timeout_s: float = 600.0
) -> tuple[int, dict[str, Any]]:
    before = (REPO_ROOT / ZK_CLIENT).read_bytes()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "conformance.mutate",
            "--mutants-dir",
            str(mutants),
            "--out",
            str(out),
            *extra,
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    stdout, _ = proc.communicate(timeout=timeout_s)
    assert (REPO_ROOT / ZK_CLIENT).read_bytes() == before, "the working tree was modified"
    assert not _scratch_dirs_of(proc.pid), "scratch dirs outlived the run"
    assert not _processes_mentioning(f"{SCRATCH_PREFIX}{proc.pid}-"), "processes outlived the run"
    assert proc.returncode == 0, stdout
    report: dict[str, Any] = json.loads((out / "mutation.json").read_text(encoding="utf-8"))
    return proc.returncode, report


@pytest.mark.integration
def test_a_mutant_is_killed_a_harmless_edit_survives_and_a_stale_patch_is_not_run(tmp_path: Path) -> None:
    mutants = tmp_path / "mutants"
    mutants.mkdir()
    _write_mutant(
        mutants,
        "a-first-epoch-2",
        "    new_epoch = cur_epoch + 1\n",
        "    new_epoch = cur_epoch + 2\n",
        areas="EPOCH",
        ids="EPOCH-1",
    )
    _write_mutant(
        mutants,
        "b-log-text-only",
        '"Try to create %s and increment controller epoch',
        '"Trying to create %s and increment controller epoch',
        areas="EPOCH",
        ids="EPOCH-1",
    )
    _write_mutant(
        mutants,
        "c-stale",
        "    new_epoch = cur_epoch + 1\n",
        "    new_epoch = cur_epoch\n",
        areas="EPOCH",
        ids="EPOCH-1",
    )
    stale = mutants / "c-stale.patch"
    stale.write_text(stale.read_text().replace(" = cur_epoch + 1", " = cur_epoch + 100"), encoding="utf-8")

    _, report = _run_campaign(mutants, tmp_path / "out", "-n", "0", "-k", EPOCH_1_CHECK)
    by_name = {m["name"]: m for m in report["mutants"]}
    killed = by_name["a-first-epoch-2"]
    assert killed["status"] == "killed", killed
    assert [k["test"].split("::")[-1] for k in killed["killed_by"]] == [EPOCH_1_CHECK]
    assert killed["caught_by_expected_id"] is True
    assert by_name["b-log-text-only"]["status"] == "survived", by_name["b-log-text-only"]
    assert by_name["c-stale"]["status"] == "not applied"
    assert report["summary"]["kill_rate"] == 0.5
    assert report["summary"]["survived"] == ["b-log-text-only"]
    markdown = (tmp_path / "out" / "mutation.md").read_text(encoding="utf-8")
    assert "| `a-first-epoch-2` |" in markdown
    assert "Kill rate: **50%**" in markdown


@pytest.mark.integration
def test_a_hanging_mutant_is_killed_by_timeout_and_leaves_nothing_behind(tmp_path: Path) -> None:
    mutants = tmp_path / "mutants"
    mutants.mkdir()
    _write_mutant(
        mutants,
        "hang-before-election",
        "    current = read_controller_epoch(zk)\n    if current is None:\n",
        "    __import__('time').sleep(3600)\n    current = read_controller_epoch(zk)\n"
        "    if current is None:\n",
        areas="EPOCH",
        ids="EPOCH-1",
    )
    _, report = _run_campaign(mutants, tmp_path / "out", "-n", "0", "-k", EPOCH_1_CHECK, "--timeout-s", "8")
    (result,) = report["mutants"]
    assert result["status"] == "timeout", result
    assert result["pytest_exit_code"] is None
    assert report["summary"]["killed_by_timeout"] == 1
    assert report["summary"]["killed"] == 0


# --- bookkeeping (pure) ------------------------------------------------------------------------------


def _result(
    name: str, status: str, killers: tuple[Killer, ...] = (), ids: tuple[str, ...] = ("EPOCH-1",)
) -> MutantResult:
    return MutantResult(name, "b", ("EPOCH",), ids, status, 1.0, 1, killers)  # type: ignore[arg-type]


@pytest.mark.unit
def test_a_kill_only_by_checks_failing_unmutated_is_a_survivor() -> None:
    flaky = Killer("t.py::flaky", ("EPOCH-3",), "boom")
    real = Killer("t.py::real", ("EPOCH-1",), "boom")
    only_flaky = reflag(_result("m1", "killed", (flaky,)), {"t.py::flaky"})
    assert only_flaky.status == "survived"
    assert only_flaky.killed_by[0].fails_unmutated is True
    not_again = reflag(_result("m5", "killed", (real,)), set(), set())
    assert not_again.status == "survived"
    assert not_again.killed_by[0].reproduced is False
    again = reflag(_result("m6", "killed", (real,)), set(), {"t.py::real"})
    assert again.status == "killed"
    assert again.killed_by[0].reproduced is True
    both = reflag(_result("m2", "killed", (flaky, real)), {"t.py::flaky"})
    assert both.status == "killed"
    assert both.caught_by_expected_id is True
    totals = summary([only_flaky, both, _result("m3", "timeout"), _result("m4", "not applied")])
    assert totals["kill_rate"] == round(2 / 3, 4)
    assert totals["survived"] == ["m1"]
    assert totals["killed_by_timeout"] == 1
    assert totals["not_run"] == {"m4": "not applied"}


@pytest.mark.unit
def test_update_keeps_earlier_results_of_mutants_still_in_the_set(tmp_path: Path) -> None:
    earlier = [_result("a", "killed"), _result("gone", "survived"), _result("b", "survived")]
    write_reports(tmp_path, earlier, summary(earlier))
    current = [
        Mutant(n, tmp_path / f"{n}.patch", "x", ("EPOCH",), ("EPOCH-1",), ("f.py",)) for n in ("a", "b", "c")
    ]
    out = merged(tmp_path / "mutation.json", [_result("b", "killed"), _result("c", "timeout")], current)
    assert [(r.name, r.status) for r in out] == [("a", "killed"), ("b", "killed"), ("c", "timeout")]
