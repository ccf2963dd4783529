"""Differential conformance on real clusters: the reference agrees with itself, a mutant is caught,
shrunk and replayed, a target that cannot start is a target error (the CI smoke of ``conformance diff``).

Every run is ``python -m conformance diff`` as a user types it, on real ZooKeeper servers and real
reference nodes; the reference-trace cache is private to this module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster.targets import REPO_ROOT
from conformance.diff import mutation
from conformance.diff.scenario import Scenario, Step
from conformance.mutate import MUTANTS_DIR, apply_patch, copy_tree

pytestmark = pytest.mark.integration

SAME = [
    Scenario(
        {1: {}, 2: {}, 3: {"unclean.leader.election.enable": "true"}},
        2,
        (
            Step("create_topic_zk", {"topic": "t0", "assignment": {"0": [1, 2], "1": [3, 1]}, "config": {}}),
            Step("kill", {"node": 1, "successor": None}),
            Step("delete_topics", {"topics": ["t0"]}),
            Step("restart", {"node": 1}),
        ),
    ),
    Scenario(
        {1: {}, 2: {}, 3: {}},
        1,
        (
            Step("create_topic_zk", {"topic": "t0", "assignment": {"0": [2, 3]}, "config": {}}),
            Step("move_controller", {"successor": 3}),
            Step(
                "probe",
                {
                    "node": 2,
                    "api": "LeaderAndIsr",
                    "partition": "phantom",
                    "controller_epoch": "equal",
                    "leader_epoch": "newer",
                    "broker_epoch": "equal",
                    "heal": False,
                },
            ),
            Step("preferred_election", {"partitions": ["t0-0", "nosuch-0"]}),
        ),
    ),
    # the controller re-elected while a broker is paused: the request its former incarnation sent
    # to that broker is never answered (its channel closed at the resignation), which the barrier
    # must not wait for; else the reference never quiesces and the scenario is `unknown`
    Scenario(
        {1: {}, 2: {}, 3: {}},
        2,
        (
            Step(
                "create_topic_zk", {"topic": "t0", "assignment": {"0": [1, 3, 2], "1": [3, 1]}, "config": {}}
            ),
            Step("pause", {"node": 3}),
            Step("move_controller", {"successor": 2}),
            Step("resume", {"node": 3}),
            # a crafted ControlledShutdown for 3, which keeps running: refused with a stale broker
            # epoch, then acted on (3 gives up t0-1 to 1 and follows it; it leaves t0-0's ISR)
            Step("shutdown_request", {"node": 3, "via": 2, "broker_epoch": "stale"}),
            Step("shutdown_request", {"node": 3, "via": 2, "broker_epoch": "equal"}),
        ),
    ),
]
#: broker-accepts-equal-leader-epoch answers 0 where Kafka answers 11 (step 2); steps 0 and 3 are noise
CAUGHT = Scenario(
    {1: {}, 2: {}, 3: {}},
    1,
    (
        Step("create_topic_zk", {"topic": "noise", "assignment": {"0": [3]}, "config": {}}),
        Step("create_topic_zk", {"topic": "t0", "assignment": {"0": [1, 2]}, "config": {}}),
        Step(
            "probe",
            {
                "node": 2,
                "api": "LeaderAndIsr",
                "partition": "t0-0",
                "controller_epoch": "equal",
                "leader_epoch": "equal",
                "broker_epoch": "equal",
                "heal": False,
            },
        ),
        Step("create_topic_zk", {"topic": "late", "assignment": {"0": [2]}, "config": {}}),
    ),
)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("diff-cache")


def _diff(cache: Path, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "KZK_DIFF_CACHE": str(cache),
        "KZK_LAUNCHER": "process",
    }
    return subprocess.run(
        [sys.executable, "-m", "conformance", "diff", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _write(path: Path, scenario: Scenario) -> Path:
    path.write_text(scenario.dumps())
    return path


def _report(out: Path, run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    path = out / "diff-report.json"
    assert path.is_file(), f"no report: {run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(path.read_text())
    return report


def test_the_reference_never_diverges_from_itself(cache_dir: Path, tmp_path: Path) -> None:
    files = [str(_write(tmp_path / f"s{i}.json", s)) for i, s in enumerate(SAME)]
    out = tmp_path / "out"
    run = _diff(
        cache_dir, "--replay", *files, "--target", "reference", "--no-cache", "-n", "2", "--out", str(out)
    )
    report = _report(out, run)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert report["counts"] == {"same": 3, "diverges": 0, "target-error": 0, "unknown": 0}, report["results"]
    assert "same as Kafka 2.5.1" in run.stdout
    # the crafted ControlledShutdowns were answered as Kafka 2.5.1 answers them (on both sides)
    answers = [
        seg["action"]["answer"]
        for trace in cache_dir.rglob("*.json")
        for seg in json.loads(trace.read_text()).get("segments", [])
        if "remaining" in str(seg.get("action", {}).get("answer"))
    ]
    assert answers == [{"error": 77, "remaining": []}, {"error": 0, "remaining": []}], answers


@pytest.fixture(scope="module")
def mutant_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tree = copy_tree(tmp_path_factory.mktemp("mutant") / "repo")
    problem = apply_patch(MUTANTS_DIR / "broker-accepts-equal-leader-epoch.patch", tree)
    assert problem is None, problem
    yield mutation.mutant_target(tree, "broker-accepts-equal-leader-epoch")
    shutil.rmtree(tree, ignore_errors=True)


def test_a_mutant_is_caught_shrunk_and_its_repro_replays(
    cache_dir: Path, mutant_target: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    scenario = str(_write(tmp_path / "caught.json", CAUGHT))
    run = _diff(
        cache_dir, "--replay", scenario, "--target", str(mutant_target), "-n", "2", "--out", str(out),
        "--shrink-budget-s", "240",
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    (result,) = _report(out, run)["results"]
    d = result["divergence"]
    assert result["status"] == "diverges", result
    assert (d["step"], d["op"]) == (2, "probe"), d
    assert d["reference"]["partitions"] == {"t0-0": 11}
    assert d["target"]["partitions"] == {"t0-0": 0}
    assert "FENCE-2" in d["ids"]
    divergence = (Path(result["directory"]) / "divergence.txt").read_text()
    assert "Kafka 2.5.1 (reference)" in divergence
    assert "step 2 (probe)" in divergence
    repro = Path(result["repro"])
    small = json.loads(repro.read_text())
    assert len(small["steps"]) < len(CAUGHT.steps), small
    assert small["origin"]["divergence"] == d["signature"]
    again = _diff(cache_dir, "--replay", str(repro), "--target", str(mutant_target), "-n", "2",
                  "--out", str(tmp_path / "again"), "--shrink-budget-s", "0")  # fmt: skip
    assert again.returncode == 1, again.stdout[-2000:]
    assert _report(tmp_path / "again", again)["results"][0]["divergence"]["signature"] == d["signature"]
    clean = _diff(
        cache_dir, "--replay", str(repro), "--target", "reference", "-n", "1", "--out", str(tmp_path / "c")
    )
    assert clean.returncode == 0, (
        "the repro shows the mutant's bug, not the reference's: " + clean.stdout[-2000:]
    )


def test_a_target_whose_nodes_do_not_start_is_a_target_error(cache_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "broken.toml"
    target.write_text(
        'name = "broken"\ncommand = ["{python}", "-c", "import sys; sys.exit(3)", "{config}"]\n'
        '[env]\nLOG_DIR = "{log_dir}"\n'
    )
    scenario = str(_write(tmp_path / "s.json", SAME[0]))
    out = tmp_path / "out"
    run = _diff(cache_dir, "--replay", scenario, "--target", str(target), "-n", "1", "--out", str(out))
    assert run.returncode == 3, run.stdout[-2000:] + run.stderr[-2000:]
    (result,) = _report(out, run)["results"]
    assert result["status"] == "target-error", result
    assert "exited with 3" in result["reason"], result["reason"]
    assert "TARGET-ERROR" in run.stdout
    assert "Traceback" not in run.stdout


#: admin work written while no controller runs (generator v12's ``backlog``): the successor's
#: failover finds a preferred election naming a partition led by another replica (t0-0, preferred
#: 2 came back after its kill) and one led by its preferred replica (t0-1), a deletion marker for t1
#: and a reordering reassignment of t2-0
BACKLOG = Scenario(
    {1: {}, 2: {}, 3: {}},
    1,
    (
        Step("create_topic_zk", {"topic": "t0", "assignment": {"0": [2, 3], "1": [3, 2]}, "config": {}}),
        Step("create_topic_zk", {"topic": "t1", "assignment": {"0": [3, 1]}, "config": {}}),
        Step("create_topic_zk", {"topic": "t2", "assignment": {"0": [1, 2]}, "config": {}}),
        Step("kill", {"node": 2, "successor": None}),
        Step("restart", {"node": 2}),
        Step(
            "move_controller_backlog",
            {"successor": 3, "preferred": ["t0-0", "t0-1"], "deletions": ["t1"]}
            | {"reassign": {"t2-0": [2, 1]}},
        ),
    ),
)


def _state(tree: dict[str, Any], tp: str) -> dict[str, Any]:
    topic, p = tp.rsplit("-", 1)
    state: dict[str, Any] = tree[f"/brokers/topics/{topic}/partitions/{p}/state"][0]
    return state


def _reference_segments(cache: Path, tmp_path: Path, scenario: Scenario) -> list[dict[str, Any]]:
    """Run ``scenario`` on the reference as a user would; its trace's segments, from the cache."""
    run = _diff(cache, "--replay", str(_write(tmp_path / "s.json", scenario)), "--target", "reference",
                "--no-cache", "-n", "1", "--out", str(tmp_path / "out"))  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (trace_file,) = list(cache.rglob(f"{scenario.key()}.json"))
    segments: list[dict[str, Any]] = json.loads(trace_file.read_text())["segments"]
    return segments


def test_a_failover_reads_the_backlog_written_unseen(cache_dir: Path, tmp_path: Path) -> None:
    segments = _reference_segments(cache_dir, tmp_path, BACKLOG)
    before, after = segments[-2]["tree"], segments[-1]["tree"]
    assert segments[-1]["op"] == "move_controller_backlog"
    assert segments[-1]["action"]["elected"] is True, segments[-1]["action"]
    assert after["/controller"][0]["brokerid"] == 3
    # the election moved t0-0 back to its preferred replica; t0-1, already led by its preferred
    # replica, was left alone (fetchPendingPreferredReplicaElections drops it): same leader epoch
    assert (_state(before, "t0-0")["leader"], _state(after, "t0-0")["leader"]) == (3, 2)
    assert _state(after, "t0-0")["leader_epoch"] == _state(before, "t0-0")["leader_epoch"] + 1
    assert _state(after, "t0-1") == _state(before, "t0-1")
    # every znode of the backlog was acted on and removed
    for gone in ("/admin/preferred_replica_election", "/admin/delete_topics/t1", "/brokers/topics/t1",
                 "/config/topics/t1", "/admin/reassign_partitions"):  # fmt: skip
        assert gone not in after, gone
    assert after["/brokers/topics/t2"][0]["partitions"] == {"0": [2, 1]}


#: CreatePartitions (generator v13's ``grow``): automatic placement from Kafka's fixed start, an
#: explicit assignment, a count that is not above the current one, a broker that is not the controller
GROW = Scenario(
    {1: {}, 2: {}, 3: {}},
    1,
    (
        Step("create_topic_zk", {"topic": "t0", "assignment": {"0": [2, 3]}, "config": {}}),
        Step("create_partitions_api", {"via": 1, "topic": "t0", "count": 3, "assignment": {}}),
        Step("create_partitions_api", {"via": 1, "topic": "t0", "count": 4, "assignment": {"3": [1, 2]}}),
        Step("create_partitions_api", {"via": 1, "topic": "t0", "count": 4, "assignment": {}}),
        Step("create_partitions_api", {"via": 2, "topic": "t0", "count": 5, "assignment": {}}),
    ),
)


def test_create_partitions_places_as_kafka_and_refuses_as_kafka(cache_dir: Path, tmp_path: Path) -> None:
    segments = _reference_segments(cache_dir, tmp_path, GROW)
    answers = [seg["action"]["answer"] for seg in segments[2:]]
    partitions = [seg["tree"]["/brokers/topics/t0"][0]["partitions"] for seg in segments[2:]]
    # AdminZkClient.addPartitions over brokers [1, 2, 3]: start index 1 (broker 2, the first id
    # >= partition 0's first replica), partition 1 at (1 + 1) % 3 -> broker 3 then 2, partition 2
    # at (2 + 1) % 3 -> broker 1 then 3 (worked by hand from AdminUtils.assignReplicasToBrokers)
    assert partitions[0] == {"0": [2, 3], "1": [3, 2], "2": [1, 3]}
    assert answers[0] == [{"topic": "t0", "error": 0, "message": None}]
    assert partitions[1] == {**partitions[0], "3": [1, 2]}
    assert answers[2] == [{"topic": "t0", "error": 37, "message": "Topic already has 4 partitions."}]
    assert answers[3][0]["error"] == 41  # NOT_CONTROLLER
    assert partitions[3] == partitions[1]
    # each new partition got its state from the controller
    tree = segments[-1]["tree"]
    assert all(f"/brokers/topics/t0/partitions/{p}/state" in tree for p in range(4))


#: generator v14's ``overlap``: a deletion while the topic's reassignment waits on a paused broker,
#: an ElectLeaders meanwhile, a controller move, then broker 1's session expires and requests carry
#: an epoch below its new one
OVERLAP = Scenario(
    {1: {}, 2: {}, 3: {}},
    1,
    (
        Step("create_topic_zk", {"topic": "t0", "assignment": {"0": [1, 2]}, "config": {}}),
        Step("pause", {"node": 3}),
        Step("reassign_api", {"via": 1, "targets": {"t0-0": [1, 2, 3]}}),
        Step("delete_topics", {"topics": ["t0"]}),
        Step("elect_leaders", {"via": 1, "partitions": ["t0-0"], "election": "preferred"}),
        Step("move_controller", {"successor": 2}),
        Step("resume", {"node": 3}),
        Step("expire_session", {"node": 1, "successor": None}),
        Step(
            "probe",
            {"node": 1, "api": "UpdateMetadata", "partition": "phantom", "controller_epoch": "equal"}
            | {"leader_epoch": "equal", "broker_epoch": "stale", "heal": False},
        ),
        Step("shutdown_request", {"node": 1, "via": 2, "broker_epoch": "stale"}),
    ),
)


def test_a_deletion_meets_a_reassignment_as_in_kafka_and_a_new_registration_fences_the_old_epoch(
    cache_dir: Path, tmp_path: Path
) -> None:
    segments = _reference_segments(cache_dir, tmp_path, OVERLAP)
    ops = [seg["op"] for seg in segments[3:]]
    assert ops == ["reassign_api", "delete_topics", "elect_leaders", "move_controller", "resume",
                   "expire_session", "probe", "shutdown_request"]  # fmt: skip
    reassigned, deleting, electing, resumed, reregistered = (segments[i]["tree"] for i in (3, 4, 5, 7, 8))
    # KafkaController.processTopicDeletion marks a topic with a partition being reassigned
    # ineligible, but markTopicIneligibleForDeletion only halts topics already queued
    # (topicsToBeDeleted & topics) and the topic is enqueued after it: a first request is not
    # halted. The deletion starts in the middle of the reassignment: the partition goes offline
    # (leader -1) and each replica's OfflineReplica transition takes it out of the ISR (two
    # writes: leader epoch 1 -> 3; the last member, 2, stays)
    assert "/admin/delete_topics/t0" in deleting
    assert (_state(reassigned, "t0-0")["leader"], _state(reassigned, "t0-0")["isr"]) == (1, [1, 2])
    state = _state(deleting, "t0-0")
    assert (state["leader"], state["isr"], state["leader_epoch"]) == (-1, [2], 3), state
    assert deleting["/brokers/topics/t0"] == reassigned["/brokers/topics/t0"]
    # processReplicaLeaderElection answers a topic queued for deletion INVALID_TOPIC_EXCEPTION (17)
    answer = segments[5]["action"]["answer"]
    assert answer["partitions"] == {"t0-0": [17, "The topic is being deleted"]}, answer
    assert _state(electing, "t0-0") == state
    # the next controller's TopicDeletionManager.init halts the topic (its partition is being
    # reassigned; the replicas start Online, so nothing is retried): broker 3 running again
    # changes nothing, the topic and its marker stay
    assert segments[6]["tree"]["/controller"][0]["brokerid"] == 2
    for kept in ("/brokers/topics/t0", "/admin/delete_topics/t0"):
        assert kept in resumed, kept
    # broker 1 registers again: onBrokerStartup resumes the deletion of topics with a replica on
    # it (resumeDeletionForTopics lifts the halt), and the deletion completes
    for gone in ("/brokers/topics/t0", "/config/topics/t0", "/admin/delete_topics/t0"):
        assert gone not in reregistered, gone
    # after the re-registration the broker's epoch is the new czxid: one below it is stale (77),
    # on the broker (KafkaApis.isBrokerEpochStale) and on the controller (doControlledShutdown)
    assert segments[9]["action"]["answer"]["error"] == 77, segments[9]["action"]
    assert segments[10]["action"]["answer"] == {"error": 77, "remaining": []}, segments[10]["action"]


def _halted_retry(second: list[Step]) -> Scenario:
    """Broker 2's replica of t0 fails to delete (2 is down when the deletion starts, mid-way through
    a reassignment onto the paused broker 4); 2 comes back; ``second``; then 4 answers."""
    return Scenario(
        {1: {}, 2: {}, 3: {}, 4: {}},
        1,
        (
            Step("create_topic_zk", {"topic": "t0", "assignment": {"0": [2, 3]}, "config": {}}),
            Step("kill", {"node": 2, "successor": None}),
            Step("pause", {"node": 4}),
            Step("reassign", {"targets": {"t0-0": [2, 3, 4]}, "replace": False}),
            Step("delete_topics", {"topics": ["t0"]}),
            Step("restart", {"node": 2}),
            *second,
            Step("resume", {"node": 4}),
        ),
    )


def test_a_failed_replica_deletion_is_retried_only_while_nothing_halts_the_topic(
    cache_dir: Path, tmp_path: Path
) -> None:
    """Worked from TopicDeletionManager.resumeDeletions@2.5.1: once broker 4 answers its
    StopReplica, broker 2's failed replica is moved back to OfflineReplica, and a new StopReplica is
    sent only if the topic is not halted (isTopicEligibleForDeletion). Broker 2's start lifted the
    halt its failure had set (onBrokerStartup → resumeDeletionForTopics). With nothing after it the
    deletion completes; a second deletion event (a marker for a name never created) halts the topic
    again — processTopicDeletion marks a queued topic with a partition being reassigned ineligible —
    so the topic and its marker stay, as they do in the reassignment's own halt."""
    for second, completes in (([], True), ([Step("delete_topics", {"topics": ["ghost"]})], False)):
        run_dir = tmp_path / ("nothing" if completes else "marker")
        run_dir.mkdir()
        segments = _reference_segments(cache_dir, run_dir, _halted_retry(second))
        started, restarted, resumed = (segments[i]["tree"] for i in (5, 6, len(segments) - 1))
        for tree in (started, restarted):  # broker 4's StopReplica waits: the deletion cannot end
            assert "/admin/delete_topics/t0" in tree
            assert "/brokers/topics/t0" in tree
        assert "/admin/delete_topics/ghost" not in resumed  # a name never created: marker removed
        for path in ("/brokers/topics/t0", "/config/topics/t0", "/admin/delete_topics/t0"):
            assert (path not in resumed) is completes, (path, second)
