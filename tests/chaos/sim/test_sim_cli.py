"""The simulator's command: determinism, replay by seed with the version check, bad input, the
evidence judged by ``python -m chaos check``, a mutant caught and shrunk (ring: unit tests — the
simulated cluster is the component; no ZooKeeper, node, socket or thread is started).

Each test runs ``python -m chaos sim`` as a user would, in a child process.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from chaos.sim.version import seed_version
from records.run_record import validate
from tests.chaos.sim.kit_copy import copy_kit, run_chaos, seed_version_of

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


_chaos = run_chaos


def _files(root: Path) -> dict[str, bytes]:
    """The run directories' files (the campaign's run records carry wall-clock times: not compared)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("sim-runs-")
    }


def test_every_schedule_gets_one_valid_run_record_for_the_reports(tmp_path: Path) -> None:
    done = _chaos("sim", "--runs", "3", "--seed", "11", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    files = list(tmp_path.glob("sim-runs-*.jsonl"))
    assert len(files) == 1, files
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert sorted(r["seed"] for r in records) == [11, 12, 13]
    assert {r["kind"] for r in records} == {"sim-run"}
    assert {r["outcome"] for r in records} == {"passed"}
    assert len({r["record_id"] for r in records}) == 3
    assert all(validate(r) == [] for r in records), [validate(r) for r in records]
    assert f"records: {files[0]}" in done.stdout


def test_two_runs_of_one_seed_write_byte_identical_files(tmp_path: Path) -> None:
    seed = f"composed:7@{seed_version()}"
    first = _chaos("sim", "--replay", seed, "--out", str(tmp_path / "a"), hash_seed="1")
    second = _chaos("sim", "--replay", seed, "--out", str(tmp_path / "b"), hash_seed="2")
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert {
        "composed-s7/history.jsonl",
        "composed-s7/txn-records.jsonl",
        "composed-s7/final-state.json",
        "composed-s7/manifest.json",
        "composed-s7/requests.txt",
    } <= set(a)
    assert len(a["composed-s7/txn-records.jsonl"].splitlines()) > 100
    assert a == b


def test_a_dense_campaign_has_many_more_faults_in_the_same_time_and_replays_byte_identical(
    tmp_path: Path,
) -> None:
    two_of_process = ("sim", "--runs", "2", "--seed", "3", "--scenario", "process", "--keep-all")
    plain = _chaos(*two_of_process, "--out", str(tmp_path / "p"))
    dense = _chaos(*two_of_process, "--density", "25", "--out", str(tmp_path / "d"))
    assert (plain.returncode, dense.returncode) == (0, 0), plain.stderr + dense.stderr
    assert f"valid    process*25:3@{seed_version()}  (" in dense.stderr
    assert f"valid    process:3@{seed_version()}  (" in plain.stderr

    def fault_times(run: Path) -> list[float]:
        steps = json.loads((run / "sim.json").read_text())["schedule"]["steps"]
        return [s["at_s"] for s in steps if s["f"] == "start_fault"]

    sparse, packed = fault_times(tmp_path / "p" / "process-s3"), fault_times(tmp_path / "d" / "process*25-s3")
    assert 1 <= len(sparse) <= 2  # the scenario's two rounds of one fault
    assert len(packed) >= 40  # 50 rounds asked for; the last may not fit in the duration
    assert max(packed) < 5.0  # the scenario's duration: the same time, 25 times the faults
    assert max(b - a for a, b in itertools.pairwise(packed)) < 0.2  # plain: holds of 1-2.5 s
    again = _chaos("sim", "--replay", f"process*25:3@{seed_version()}", "--out", str(tmp_path / "r"))
    assert again.returncode == 0, again.stderr
    assert _files(tmp_path / "r") == {
        k: v for k, v in _files(tmp_path / "d").items() if k.startswith("process*25-s3/")
    }


def test_a_simulated_run_is_judged_again_unchanged_by_chaos_check(tmp_path: Path) -> None:
    ran = _chaos(
        "sim", "--runs", "2", "--seed", "40", "--scenario", "process", "--keep-all", "--out", str(tmp_path)
    )
    assert ran.returncode == 0, ran.stderr
    assert "2 schedules: 2 valid" in ran.stdout
    dirs = sorted(str(d) for d in tmp_path.iterdir() if d.is_dir())  # not the sim-runs records
    checked = _chaos("check", *dirs)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 run(s): 2 valid" in checked.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--replay", "composed:7@0.0.0+sim1"), "seed recorded by kit version 0.0.0+sim1"),
        (("--replay", f"composed:7@{seed_version()[:-8]}00000000"), "the same seed would be a different run"),
        (("--replay", "composed-7"), "is not a replay seed"),
        (("--scenario", "nope"), "unknown scenario 'nope'"),
        (("--scenario", "zk-ensemble"), "does not model"),
        (("--seed", "-1"), "outside 0"),
        (("--seed", str(2**63 - 2), "--runs", "5"), "go past 2**63-1"),
        (("--runs", "0"), "must be at least 1"),
        (("--faults", "meteor"), "unknown fault 'meteor'"),
        (("--density", "0"), "give a whole number from 1 to 1000"),
        (("--density", "lots"), "give a whole number from 1 to 1000"),
        (("--density", "1001"), "give a whole number from 1 to 1000"),
        (("--replay", f"composed*0:7@{seed_version()}"), "density 0 is out of range"),
        (("--replay", f"composed*x:7@{seed_version()}"), "the density after '*' must be a whole number"),
        (("--replay", f"meteor*5:7@{seed_version()}"), "unknown scenario 'meteor'"),
    ],
)
def test_bad_input_is_a_clear_error_with_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    done = _chaos("sim", *args, "--out", str(tmp_path))
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_mutant_of_the_reference_is_caught_replayed_and_shrunk(tmp_path: Path) -> None:
    tree = copy_kit(tmp_path / "mutant", REPO / "conformance/mutants/epoch-not-incremented-on-election.patch")
    found = _chaos(
        "sim",
        "--runs",
        "1",
        "--seed",
        "1",
        "--scenario",
        "zk-session",
        "--out",
        str(tmp_path / "out"),
        tree=tree,
    )
    assert found.returncode == 1, found.stderr
    assert "controller_epoch_increases" in found.stderr
    # the mutant's seed token carries its own code digest: this kit refuses to replay it
    mutant_version = seed_version_of(tree)
    assert mutant_version != seed_version()
    assert f"replay: python -m chaos sim --replay zk-session:1@{mutant_version}" in found.stderr
    refused = _chaos("sim", "--replay", f"zk-session:1@{mutant_version}", "--out", str(tmp_path / "no"))
    assert refused.returncode == 2, refused.stderr
    assert f"seed recorded by kit version {mutant_version}, this is {seed_version()}" in refused.stderr
    assert "shrunk in" in found.stderr
    shrunk = next((tmp_path / "out").rglob("shrunk/*/sim.json"))
    again = _chaos("sim", "--replay", str(shrunk), "--out", str(tmp_path / "again"), tree=tree)
    assert again.returncode == 1
    clean = _chaos("sim", "--replay", str(shrunk), "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr  # the same schedule on the unmutated reference
