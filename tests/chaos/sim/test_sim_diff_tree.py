"""``python -m chaos sim --diff-tree``: the simulator as a differential oracle (ring: unit tests —
the simulated cluster is the component; each test runs the command as a user would).

A copy of the kit that is not changed shows exactly what the kit shows; a copy with a bug that
keeps the cluster consistent (the checkers pass it) is told apart, with the item that differs, and
the difference is shrunk to a smaller schedule that both trees replay and that still differs; a
copy whose simulator cannot run is never reported as the same; bad input is exit 2.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.sim.kit_copy import REPO, copy_kit, run_chaos, seed_version_of

pytestmark = pytest.mark.unit


def _sim(*args: str) -> subprocess.CompletedProcess[str]:
    return run_chaos("sim", *args)


def _report(out: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((out / "sim-diff-report.json").read_text(encoding="utf-8"))
    return report


@pytest.mark.slow
def test_an_unchanged_copy_shows_the_same_in_every_schedule(tmp_path: Path) -> None:
    tree = copy_kit(tmp_path / "copy")
    out = tmp_path / "o"
    done = _sim("--runs", "40", "--seed", "5", "--diff-tree", str(tree), "-n", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "40 schedules on both sides: 40 the same, 0 differ, 0 could not be compared" in done.stderr
    report = _report(out)
    assert report["counts"] == {"same": 40, "differ": 0, "unknown": 0}


@pytest.mark.slow
def test_a_bug_the_checkers_pass_is_told_apart_with_the_item_that_differs(tmp_path: Path) -> None:
    """The mutant lists a live replica outside the ISR as offline in UpdateMetadata: the cluster
    stays consistent (the checkers pass the run), but the request is not Kafka's."""
    patch = REPO / "conformance/mutants/update-metadata-offline-replicas-from-isr.patch"
    tree = copy_kit(tmp_path / "mutant", patch)
    out = tmp_path / "o"
    done = _sim("--runs", "20", "--seed", "1", "--diff-tree", str(tree), "--stop-at-first", "--out", str(out))
    assert done.returncode == 1, done.stderr
    report = _report(out)
    assert len(report["differences"]) == 1, report
    first = report["differences"][0]
    assert first["reference"]["verdict"] == first["target"]["verdict"] == "valid", first
    stream = first["first_differences"][0]
    assert stream["stream"] == "requests", first
    at = str(stream["item"])
    ref_item = first["shown"]["reference"]["items"].get(at, "")
    tgt_item = first["shown"]["target"]["items"].get(at, "")
    assert "UpdateMetadataRequest" in ref_item, first
    assert "offline_replicas=()" in ref_item
    assert re.search(r"offline_replicas=\(\d", tgt_item), tgt_item  # a live broker listed offline
    assert "replay: python -m chaos sim --replay" in done.stderr
    assert "offline_replicas=" in done.stderr  # the window around the first differing character

    # shrunk: fewer steps, the same stream differs first, and the smaller schedule replays as a
    # difference on both trees (and the same UpdateMetadata field is the one that differs)
    shrunk = first["shrunk"]
    assert shrunk["shrunk"] is True, shrunk
    before, after = shrunk["steps"]
    assert after < before, shrunk
    assert shrunk["first_differences"][0]["stream"] == "requests", shrunk
    sim_json = Path(shrunk["sim_json"])
    assert len(json.loads(sim_json.read_text(encoding="utf-8"))["schedule"]["steps"]) == after
    again = _sim(
        "--diff-tree", str(tree), "--replay", str(sim_json), "--no-shrink", "--out", str(tmp_path / "a")
    )
    assert again.returncode == 1, again.stderr
    replayed = _report(tmp_path / "a")["differences"][0]
    assert replayed["first_differences"] == shrunk["first_differences"], replayed
    at = str(replayed["first_differences"][0]["item"])
    assert "offline_replicas=()" in replayed["shown"]["reference"]["items"][at]
    assert re.search(r"offline_replicas=\(\d", replayed["shown"]["target"]["items"][at])
    # the unchanged kit against itself: the shrunk schedule is the same on both sides
    same = _sim("--diff-tree", str(REPO), "--replay", str(sim_json), "--out", str(tmp_path / "s"))
    assert same.returncode == 0, same.stderr
    assert "the same on both sides" in same.stderr


@pytest.mark.slow
def test_a_copy_whose_simulator_cannot_run_is_never_the_same(tmp_path: Path) -> None:
    tree = copy_kit(tmp_path / "broken")
    run = tree / "chaos" / "sim" / "run.py"
    run.write_text(run.read_text(encoding="utf-8") + '\nraise RuntimeError("this copy is broken")\n')
    out = tmp_path / "o"
    done = _sim("--runs", "4", "--seed", "1", "--diff-tree", str(tree), "--out", str(out))
    assert done.returncode == 3, done.stderr
    report = _report(out)
    assert report["counts"] == {"same": 0, "differ": 0, "unknown": 4}
    assert "this copy is broken" in report["unknown"][0]["reason"]
    assert "Traceback" not in done.stderr
    one = _sim("--diff-tree", str(tree), "--replay", "links:1@" + _version(), "--out", str(tmp_path / "r"))
    assert one.returncode == 3, one.stderr
    assert "could not be compared" in one.stderr
    assert "this copy is broken" in _report(tmp_path / "r")["unknown"][0]["reason"]
    assert "Traceback" not in one.stderr


def _version() -> str:
    return seed_version_of(REPO)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--diff-tree", "/nonexistent/kit"), "--diff-tree /nonexistent/kit: no such directory"),
        (("--diff-tree", "{tmp}"), "not a copy of this kit"),
        (("--diff-tree", str(REPO), "--replay", "composed:1@x"), "seed recorded by kit version x"),
        (("--diff-tree", str(REPO), "--replay", "composed:one@x"), "is not a replay seed"),
        (("--diff-tree", str(REPO), "--shard", "0/2"), "it does not take --shard"),
    ],
)
def test_bad_input_is_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    args = tuple(a.replace("{tmp}", str(tmp_path)) for a in args)
    done = _sim(*args, "--out", str(tmp_path / "o"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o" / "sim-diff-report.json").exists()


@pytest.mark.slow
def test_a_bug_in_the_leaders_isr_bookkeeping_reaches_the_simulated_nodes(tmp_path: Path) -> None:
    """The simulated leaders run the node's own ``IsrManager`` around an ISR write: a leader that
    stamps its ISR change with the latest controller epoch it saw (not the one that made it leader)
    writes a different partition state. Before the simulator used the node's code there, no bug in
    that code could show in a simulated run."""
    patch = REPO / "conformance/mutants/isr-write-uses-latest-controller-epoch.patch"
    tree = copy_kit(tmp_path / "mutant", patch)
    out = tmp_path / "o"
    args = ["--runs", "10", "--seed", "1", "--diff-tree", str(tree), "--stop-at-first", "--no-shrink"]
    done = _sim(*args, "--out", str(out))
    assert done.returncode == 1, done.stderr
    first = _report(out)["differences"][0]
    stream = first["first_differences"][0]
    assert stream["stream"] == "zk", first
    at = str(stream["item"])
    ref_item = first["shown"]["reference"]["items"].get(at, "")
    tgt_item = first["shown"]["target"]["items"].get(at, "")
    assert "/partitions/" in ref_item, first  # a partition state write
    assert '"controller_epoch":' in ref_item, ref_item
    assert ref_item != tgt_item
