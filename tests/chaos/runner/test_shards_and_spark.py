"""Campaigns split into shards: ``--shard i/N`` on one machine, and ``--master spark://…`` on a real
Spark standalone cluster (a master and two workers on 127.0.0.1) with real chaos runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from chaos.shard import Shard, ShardError, campaign_id_for, parse_shard
from tests.chaos.runner.support import chaos, cmdline, descendants
from tests.spark_standalone import free_port, group_alive, standalone

pytestmark = pytest.mark.chaos

SEED = 4100
SCENARIO = "process"


# --- pure ---------------------------------------------------------------------------------------------


def test_shards_split_a_campaign_round_robin_without_overlap() -> None:
    parts = [list(Shard(i, 3).indexes(10)) for i in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert parse_shard(" 2/8 ") == Shard(2, 8)
    for bad, why in (("3/2", "not below"), ("2/2", "not below"), ("x", "of the form"), ("1/0", "at least 1")):
        with pytest.raises(ShardError, match=why):
            parse_shard(bad)


def test_a_campaign_id_depends_on_the_whole_definition() -> None:
    base = campaign_id_for(1, 10, ["links"], "", "reference")
    assert base == campaign_id_for(1, 10, ["links"], "", "reference")
    others = {
        campaign_id_for(2, 10, ["links"], "", "reference"),
        campaign_id_for(1, 11, ["links"], "", "reference"),
        campaign_id_for(1, 10, ["process"], "", "reference"),
        campaign_id_for(1, 10, ["links"], "latency", "reference"),
        campaign_id_for(1, 10, ["links"], "", "kafka"),
    }
    assert base not in others
    assert len(others) == 5


# --- bad input: refused at once ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--shard", "3/2", "--seed", "1"], "index 3 is not below the shard count 2"),
        (["--shard", "a/b", "--seed", "1"], "not of the form i/N"),
        (["--shard", "0/2"], "need --seed"),
        (["--master", "spark://127.0.0.1:1", "--seed", "1"], "cannot be reached"),
        (["--master", "spark://127.0.0.1:1"], "need --seed"),
        (["--shard", "0/2", "--master", "spark://127.0.0.1:1", "--seed", "1"], "either --shard"),
        (["--spark-shards", "3", "--seed", "1"], "goes with --master"),
    ],
)
def test_bad_distribution_options_are_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    done = chaos("run", "--runs", "4", "--out", str(tmp_path), *args, timeout_s=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert "campaign " not in done.stderr, "a campaign started before the options were checked"
    assert not list(tmp_path.glob("chaos-runs-*.jsonl"))


# --- real runs ----------------------------------------------------------------------------------------


def _records(out: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for p in sorted(out.glob("chaos-runs-*.jsonl"))
        for line in p.read_text().splitlines()
    ]


def _runs(records: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return sorted((r["test_id"], r["seed"], r["outcome"]) for r in records)


@pytest.fixture(scope="module")
def local_campaign(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The reference: 4 runs of one scenario on this machine, unsharded."""
    out = tmp_path_factory.mktemp("local")
    done = chaos("run", "--runs", "4", "--seed", str(SEED), "--scenario", SCENARIO, "--parallel", "2",
                 "--no-progress", "--out", str(out))  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-3000:]
    records = _records(out)
    assert len(records) == 4
    return records


def test_two_shards_run_exactly_the_runs_of_the_whole_campaign(
    local_campaign: list[dict[str, Any]], tmp_path: Path
) -> None:
    for i in range(2):
        done = chaos("run", "--runs", "4", "--seed", str(SEED), "--scenario", SCENARIO, "--shard", f"{i}/2",
                     "--parallel", "1", "--no-progress", "--out", str(tmp_path))  # fmt: skip
        assert done.returncode in (0, 1), done.stderr[-3000:]
        assert f"shard {i}/2 (2 of 4 runs)" in done.stderr
    records = _records(tmp_path)
    assert _runs(records) == _runs(local_campaign)
    assert len({r["run_id"] for r in records}) == 1, "the shards of one campaign share its id"


def _worker_has_a_shard(worker_pid: int) -> bool:
    """Whether a chaos shard runner is running below this Spark worker (its executor's Python
    workers may start sessions of their own, so the process tree is followed, not the group)."""
    return any("--shard" in cmdline(pid) for pid in descendants(worker_pid))


def _shard_processes(campaign_hint: str) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [
        line
        for line in out.splitlines()
        if "chaos run" in line and "--shard" in line and campaign_hint in line
    ]


def test_a_spark_campaign_gives_the_local_verdicts_and_survives_a_killed_worker(
    local_campaign: list[dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with standalone(tmp_path / "spark", workers=2, cores=1, memory="1g") as cluster:
        env = os.environ | {"PYSPARK_PYTHON": sys.executable}
        proc = subprocess.Popen(
            [sys.executable, "-m", "chaos", "run", "--master", cluster.master_url, "--runs", "4", "--seed",
             str(SEED), "--scenario", SCENARIO, "--parallel", "1", "--spark-shards", "4", "--campaign-id",
             "sparktest0001", "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )  # fmt: skip
        output: list[str] = []
        reader = threading.Thread(
            target=lambda: output.append(proc.stdout.read() if proc.stdout else ""), daemon=True
        )
        reader.start()
        try:
            victim = cluster.workers[1]
            deadline = time.monotonic() + 600
            while not _worker_has_a_shard(victim.proc.pid):
                assert proc.poll() is None, "the campaign ended before the second worker ran a shard"
                assert time.monotonic() < deadline, "no shard ever ran on the second worker"
                time.sleep(0.2)
            victim.kill(first=signal.SIGKILL)  # the worker, its executor and the shard's runner, mid-run
            proc.wait(timeout=1800)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(timeout=60)
        log = "".join(output)
        assert proc.returncode in (0, 1), log[-4000:]
        records = _records(out)
        assert _runs(records) == _runs(local_campaign), log[-4000:]
        assert len({(r["test_id"], r["seed"]) for r in records}) == 4, "a record came back twice"
        assert {r["run_id"] for r in records} == {"sparktest0001"}
        assert "duplicate record(s) dropped" in log
        assert not group_alive(victim.proc.pid)
    assert not _shard_processes("sparktest0001"), "a shard's runner outlived the campaign"


def test_an_executor_without_zookeeper_fails_its_shard_and_says_why(tmp_path: Path) -> None:
    with standalone(tmp_path / "spark", workers=1, cores=1, memory="1g") as cluster:
        env = os.environ | {
            "PYSPARK_PYTHON": sys.executable,
            "KZK_SPARK_EXECUTOR_ENV_ZOOKEEPER_HOME": str(tmp_path / "no-zookeeper-here"),
            "KZK_SPARK_TASK_MAX_FAILURES": "1",
        }
        done = subprocess.run(
            [sys.executable, "-m", "chaos", "run", "--master", cluster.master_url, "--runs", "2", "--seed",
             str(SEED), "--scenario", SCENARIO, "--spark-shards", "1", "--out", str(tmp_path / "out")],
            capture_output=True, text=True, env=env, timeout=600, check=False,
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Java or ZooKeeper is missing" in done.stderr
    assert "missing shard 0/1" in done.stderr
    assert "run it elsewhere: python -m chaos run --shard 0/1" in done.stderr
    assert not _records(tmp_path / "out")


def test_an_unreachable_master_is_reported_before_spark_starts(tmp_path: Path) -> None:
    port = free_port()
    done = chaos(
        "run", "--master", f"spark://127.0.0.1:{port}", "--seed", "1", "--out", str(tmp_path), timeout_s=60
    )
    assert done.returncode == 2
    assert f"Spark master spark://127.0.0.1:{port} cannot be reached" in done.stderr
