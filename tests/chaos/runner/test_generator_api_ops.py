"""The generator draws the admin-API ops: each with its vocabulary's value shape, at the
scenario's share, in the default mix and the ``admin-api`` scenario; and the workload's outcome
rule for Kafka's per-partition answers."""

from __future__ import annotations

from collections import Counter

import pytest

from chaos.generator import TOPIC_CONFIGS, Step, generate
from chaos.history import WORKLOAD_FS
from chaos.scenarios import API_OPS, DEFAULT_MIX, SCENARIOS, WORKLOAD_OPS
from chaos.workload_api import outcome as outcome_of

pytestmark = pytest.mark.unit


def client_ops(scenario: str, seeds: range, prefix: str = "api-") -> list[tuple[str, dict[str, object]]]:
    return [
        (s.f, dict(s.value))
        for seed in seeds
        for s in generate(scenario, seed).steps
        if s.process.startswith(prefix) and s.at_s > 0
    ]


def test_the_api_ops_are_history_vocabulary_and_the_old_ops_are_kept() -> None:
    assert set(API_OPS) <= WORKLOAD_FS
    assert set(WORKLOAD_OPS) <= WORKLOAD_FS
    assert not set(API_OPS) & set(WORKLOAD_OPS)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_api_ops_come_only_from_the_api_processes(scenario: str) -> None:
    for seed in range(10):
        for s in generate(scenario, seed).steps:
            assert (s.f in API_OPS) == s.process.startswith("api-"), s
        processes = generate(scenario, seed).processes
        assert {p for p in processes if p.startswith("api-")} == {
            f"api-{c}" for c in range(SCENARIOS[scenario].api_clients)
        }


def test_the_admin_api_scenario_is_in_the_default_mix_and_draws_every_api_op() -> None:
    assert "admin-api" in DEFAULT_MIX
    drawn = Counter(f for f, _ in client_ops("admin-api", range(40)))
    assert set(API_OPS) <= set(drawn)
    others = len(client_ops("admin-api", range(40), "client-"))
    assert 0.35 < sum(drawn.values()) / (sum(drawn.values()) + others) < 0.65, (drawn, others)


@pytest.mark.parametrize("scenario", [s for s in DEFAULT_MIX if s != "admin-api"])
def test_every_default_scenario_draws_api_ops_at_about_a_fifth(scenario: str) -> None:
    api = len(client_ops(scenario, range(60)))
    others = len(client_ops(scenario, range(60), "client-"))
    assert 0.1 < api / (api + others) < 0.3, (api, others)


def test_api_op_values_have_the_documented_shapes() -> None:
    ids = {1, 2, 3}
    names = {name for name, _ in TOPIC_CONFIGS}
    seen: set[str] = set()
    for f, value in client_ops("admin-api", range(40)):
        if f == "reassign_api":
            ((p, target),) = value["assignment"].items()  # type: ignore[attr-defined]
            assert p.isdigit()
            assert target
            assert set(target) <= ids
            assert len(set(target)) == len(target)
            seen.add(f"size {len(target)}")
        elif f == "cancel_reassignment":
            assert isinstance(value["topic"], str)
            assert value["partitions"]
            assert all(isinstance(p, int) for p in value["partitions"])  # type: ignore[attr-defined]
        elif f == "list_reassignments":
            seen.add("all" if value["partitions"] is None else "named")
        elif f == "elect_leaders":
            assert value["election_type"] in ("PREFERRED", "UNCLEAN")
            seen.add(str(value["election_type"]))
            assert len(value["partitions"]) == 1  # type: ignore[arg-type]
        elif f == "alter_topic_config":
            ((name, setting),) = value["config"].items()  # type: ignore[attr-defined]
            assert name in names
            seen.add("delete" if setting is None else "set")
        elif f == "alter_broker_config":
            ((name, setting),) = value["config"].items()  # type: ignore[attr-defined]
            assert name == "unclean.leader.election.enable"
            assert setting in ("true", "false", None)
            entity = str(value["entity"])
            assert entity == "<default>" or int(entity) in ids
            seen.add("default layer" if entity == "<default>" else "own layer")
    # grows, shrinks and moves (1..3 replicas), both listing forms, both elections, SET and DELETE,
    # both dynamic broker config layers
    assert seen >= {
        "size 1", "size 2", "size 3", "all", "named", "PREFERRED", "UNCLEAN", "delete", "set",
        "default layer", "own layer",
    }  # fmt: skip


def test_a_cancellation_mostly_names_the_latest_api_reassignment_drawn() -> None:
    hits = total = 0
    for seed in range(60):
        schedule = generate("admin-api", seed)
        for process in schedule.processes:
            hit, seen = _latest_hits(schedule.for_process(process))
            hits, total = hits + hit, total + seen
    assert total > 20
    assert hits / total > 0.5


def _latest_hits(steps: list[Step]) -> tuple[int, int]:
    hits = total = 0
    latest: tuple[object, object] | None = None
    for s in steps:
        if s.f == "reassign_api":
            latest = (s.value["topic"], int(next(iter(s.value["assignment"]))))
        elif s.f == "cancel_reassignment" and latest is not None:
            total += 1
            hits += (s.value["topic"], s.value["partitions"][0]) == latest
    return hits, total


@pytest.mark.parametrize(
    ("codes", "outcome"),
    [
        ([0], "ok"),
        ([0, 0], "ok"),
        ([85], "fail"),  # NO_REASSIGNMENT_IN_PROGRESS
        ([84, 39], "fail"),  # ELECTION_NOT_NEEDED, INVALID_REPLICA_ASSIGNMENT
        ([7], "info"),  # REQUEST_TIMED_OUT: the election may be done
        ([-1], "info"),  # UNKNOWN_SERVER_ERROR: the topic znode may hold the reassignment
        ([0, 85], "info"),  # some done, some not
        ([], "info"),  # no answer for the partitions asked
    ],
)
def test_the_outcome_of_per_partition_answers(codes: list[int], outcome: str) -> None:
    assert outcome_of(codes) == outcome
