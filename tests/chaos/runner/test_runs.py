"""Real chaos runs of every scenario: records that validate, kept artefacts, replay, verdicts."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from chaos.generator import Schedule
from chaos.history import History
from chaos.run.manifest import write_manifest
from chaos.scenarios import SCENARIOS
from records.run_record import METRICS, read_records
from tests.chaos.runner.support import chaos

pytestmark = pytest.mark.chaos

SEED = 7


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """One run of each scenario (``--scenario all``), every run dir kept."""
    out = tmp_path_factory.mktemp("campaign")
    n = len(SCENARIOS)
    done = chaos(
        "run", "--runs", str(n), "--seed", str(SEED), "--parallel", "2", "--scenario", "all",
        "--out", str(out), "--keep-all", "--no-progress",
    )  # fmt: skip
    return out, done.returncode, done.stdout + done.stderr


def _records(out: Path) -> list[dict[str, object]]:
    return list(read_records(sorted(out.glob("chaos-runs-*.jsonl")), strict=True))


def _run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.glob("*/runs/*") if p.is_dir())


def test_each_scenario_leaves_one_schema_valid_record(campaign: tuple[Path, int, str]) -> None:
    out, _, log = campaign
    records = _records(out)
    assert sorted(str(r["test_id"]) for r in records) == sorted(f"chaos/{s}" for s in SCENARIOS), log
    for r in records:
        assert r["kind"] == "chaos-run"
        assert r["seed"] in range(SEED, SEED + len(SCENARIOS))
        assert r["fault_package"] != "none"
        assert r["target"] == "reference"
        assert r["outcome"] in ("passed", "failed"), f"run could not be judged: {r['reason']}\n{log}"
        metrics = {m["name"]: m for m in r["phase_metrics"]}  # type: ignore[attr-defined]
        assert set(metrics) <= set(METRICS)
        assert "controller_election" in metrics, r
        assert "checkers: controller_epoch_increases=" in str(r["reason"])


def test_exit_status_says_whether_any_run_was_invalid(campaign: tuple[Path, int, str]) -> None:
    out, code, log = campaign
    failed = [r for r in _records(out) if r["outcome"] == "failed"]
    assert code == (1 if failed else 0), log
    assert "runs/hour (load average" in log


def test_a_workers_next_run_is_set_up_while_its_current_run_is_judged(
    campaign: tuple[Path, int, str],
) -> None:
    """Each worker holds two plans; shortly before a run's last step is due, the next run's
    cluster starts (in its own chroot, on its own ports), and it plays while the run's last ops
    end and it is healed, quiesced and checked: the next run's record starts before the previous
    one's ends. Not for the ensemble scenario, whose ZooKeeper ensemble is made on first use."""
    _, _, log = campaign
    by_worker: dict[str, list[dict[str, object]]] = {}
    for r in _records(campaign[0]):
        by_worker.setdefault(str(r["worker"]), []).append(r)
    in_order = [sorted(runs, key=lambda r: str(r["started_at"])) for runs in by_worker.values()]
    pairs = [
        (earlier, later)
        for runs in in_order
        for earlier, later in itertools.pairwise(runs)
        if SCENARIOS[str(later["test_id"]).removeprefix("chaos/")].zookeeper != "ensemble"
    ]
    assert pairs, f"no worker ran two shared-ZooKeeper runs in a row: {by_worker}\n{log}"
    summary = next((line for line in log.splitlines() if line.startswith("where a run's time went")), "")
    for phase in ("set-up", "workload", "heal", "quiescence", "checks", "evidence", "teardown"):
        assert f" {phase} " in summary, f"no {phase} in the summary line: {summary!r}"
    assert f"the set-up of {len(pairs)} began while" in summary, (summary, [p[1]["test_id"] for p in pairs])
    for earlier, later in pairs:
        assert str(later["started_at"]) < str(earlier["finished_at"]), (
            f"{later['test_id']} started at {later['started_at']}, after {earlier['test_id']} ended at"
            f" {earlier['finished_at']} on the same worker"
        )


def test_each_kept_run_dir_holds_history_verdict_logs(campaign: tuple[Path, int, str]) -> None:
    out, _, _ = campaign
    dirs = _run_dirs(out)
    assert len(dirs) == len(SCENARIOS)
    for run_dir in dirs:
        history = History.load(run_dir / "history.jsonl")
        fs = {op.f for op in history}
        assert {"create_topic", "start_fault", "stop_fault", "heal", "quiesce"} <= fs
        verdict = json.loads((run_dir / "verdict.json").read_text())
        assert verdict["verdict"] in ("valid", "invalid")
        healed = verdict["final_phase"]["time_to_heal_s"]
        record = next(
            r for r in _records(out) if r["seed"] == json.loads((run_dir / "run.json").read_text())["seed"]
        )
        metric = [m["value"] for m in record["phase_metrics"] if m["name"] == "time_to_heal"]  # type: ignore[attr-defined]
        assert metric == ([] if healed is None else [round(healed, 4)])
        assert {c["checker"] for c in verdict["checkers"]} >= {
            "controller_epoch_increases",
            "admin_znodes_cleaned",
        }
        assert verdict["replay"] == f"python -m chaos replay {run_dir}"
        for bid in (1, 2, 3):
            assert (run_dir / f"node-{bid}" / "server.log").stat().st_size > 0
        assert "/controller" in (run_dir / "txn-log.txt").read_text()
        assert "UpdateMetadata" in (run_dir / "requests.txt").read_text()


def test_replay_runs_the_same_schedule_again(campaign: tuple[Path, int, str], tmp_path: Path) -> None:
    out, _, _ = campaign
    original = next(d for d in _run_dirs(out) if d.name.startswith("process-"))
    done = chaos("replay", str(original), "--out", str(tmp_path))
    assert done.returncode in (0, 1), done.stderr
    replayed = [p for p in tmp_path.glob("*/runs/*") if p.is_dir()]
    assert len(replayed) == 1
    before = Schedule.from_json(json.loads((original / "run.json").read_text())["schedule"])
    after = Schedule.from_json(json.loads((replayed[0] / "run.json").read_text())["schedule"])
    assert after == before
    replay_faults = [
        op.value
        for op in History.load(replayed[0] / "history.jsonl")
        if op.f == "start_fault" and op.is_invoke
    ]
    assert [v["id"] for v in replay_faults] == [s.value["id"] for s in before.steps if s.f == "start_fault"]


def test_check_judges_kept_runs_again_from_their_files(campaign: tuple[Path, int, str]) -> None:
    """``python -m chaos check`` reads history, txn records and final state back and gives the
    verdict the run gave; a final state tampered with to break an invariant is judged invalid."""
    out, _, _ = campaign
    dirs = _run_dirs(out)
    done = chaos("check", *map(str, dirs))
    recorded = {str(d): json.loads((d / "verdict.json").read_text())["verdict"] for d in dirs}
    verdict_lines = [line.split() for line in done.stdout.splitlines() if not line.startswith(" ")]
    judged = {words[1]: words[0] for words in verdict_lines[:-1]}
    assert judged == recorded, done.stdout + done.stderr
    assert verdict_lines[-1][:2] == [str(len(dirs)), "run(s):"]
    assert done.returncode == (1 if "invalid" in recorded.values() else 0)
    for d in dirs:
        assert (d / "txn-records.jsonl").stat().st_size > 0
        assert json.loads((d / "final-state.json").read_text())["live_brokers"]

    tampered = dirs[0].parent / "tampered"
    shutil.copytree(dirs[0], tampered)
    state = json.loads((tampered / "final-state.json").read_text())
    partition = next(iter(state["partition_states"].values()))
    partition["isr"] = []  # an empty ISR breaks partition_states_valid
    (tampered / "final-state.json").write_text(json.dumps(state))
    done = chaos("check", str(tampered))
    assert done.returncode == 3, done.stdout + done.stderr  # altered evidence is never judged
    assert done.stdout.startswith(f"unknown  {tampered}\n  reason: final-state.json: ")
    write_manifest(tampered)  # vouch for the tampered files: now they are judged
    done = chaos("check", str(tampered), "--evidence")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith(f"invalid  {tampered} (recorded: ")
    assert "invalid  partition_states_valid: " in done.stdout
    assert "empty ISR" in done.stdout
