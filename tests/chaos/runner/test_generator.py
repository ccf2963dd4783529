"""The generator is a pure function of (scenario, seed): the whole schedule replays from the seed."""

from __future__ import annotations

import json

import pytest

from chaos.generator import Schedule, generate, link_names
from chaos.scenarios import (
    DEFAULT_MIX,
    FAULTS,
    SCENARIOS,
    NameError_,
    resolve_faults,
    resolve_scenarios,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_seed_gives_the_same_schedule(scenario: str) -> None:
    first, second = generate(scenario, 1234), generate(scenario, 1234)
    assert first == second
    assert first.describe() == second.describe()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_different_seeds_give_different_schedules(scenario: str) -> None:
    schedules = {json.dumps(generate(scenario, seed).to_json(), sort_keys=True) for seed in range(20)}
    assert len(schedules) == 20


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_schedule_survives_a_json_round_trip(scenario: str) -> None:
    schedule = generate(scenario, 99)
    text = json.dumps(schedule.to_json())
    assert Schedule.from_json(json.loads(text)) == schedule


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_started_fault_is_stopped_later_by_the_nemesis(scenario: str) -> None:
    for seed in range(30):
        schedule = generate(scenario, seed)
        starts = {s.value["id"]: s.at_s for s in schedule.steps if s.f == "start_fault"}
        stops = {s.value["id"]: s.at_s for s in schedule.steps if s.f == "stop_fault"}
        assert starts, f"{scenario} seed {seed} starts no fault"
        assert starts.keys() == stops.keys()
        assert all(stops[f] >= starts[f] for f in starts)
        assert all(s.process == "nemesis" for s in schedule.steps if s.f in ("start_fault", "stop_fault"))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_faults_come_from_the_scenario_and_name_real_targets(scenario: str) -> None:
    sc = SCENARIOS[scenario]
    links = set(link_names(range(1, sc.brokers + 1), 3 if sc.zookeeper == "ensemble" else 1))
    for seed in range(30):
        for step in generate(scenario, seed).steps:
            if step.f != "start_fault":
                continue
            assert step.value["fault"] in sc.faults
            if "link" in step.value:
                assert step.value["link"] in links
            if "node" in step.value:
                assert step.value["node"] == "controller" or 1 <= step.value["node"] <= sc.brokers
            if "minority" in step.value:
                assert 0 < len(step.value["minority"]) < sc.brokers / 2


def test_each_process_steps_are_in_time_order() -> None:
    schedule = generate("composed", 5)
    for process in schedule.processes:
        times = [s.at_s for s in schedule.for_process(process)]
        assert times == sorted(times)


def test_link_names_cover_each_directed_link_once() -> None:
    names = link_names([1, 2, 3])
    assert len(names) == len(set(names)) == 3 + 9 + 6 + 3
    assert {"ZK_1", "CTRL_1_1", "CTRL_2_3", "FROM_3_1", "CLIENT_2"} <= set(names)
    assert "FROM_1_1" not in names
    assert "ZK_2_3" in link_names([1, 2, 3], zk_servers=3)


def test_unknown_scenario_lists_the_valid_ones() -> None:
    with pytest.raises(NameError_, match="valid scenarios: links, partition"):
        resolve_scenarios("links,nope")


def test_unknown_fault_lists_the_valid_ones() -> None:
    with pytest.raises(NameError_, match="unknown fault 'kil'; valid faults: " + ", ".join(FAULTS)):
        resolve_faults("kil", resolve_scenarios(""))


def test_faults_narrow_scenarios_and_drop_those_without_them() -> None:
    narrowed = resolve_faults("kill", resolve_scenarios("all"))
    assert {s.name for s in narrowed} == {"process", "composed", "admin-api", "zk-ensemble"}
    assert all(s.faults == ("kill",) for s in narrowed)
    with pytest.raises(NameError_, match="scenarios that do: process"):
        resolve_faults("restart", resolve_scenarios("links"))


def test_default_mix_is_every_shared_zookeeper_scenario() -> None:
    assert resolve_scenarios("") == tuple(SCENARIOS[n] for n in DEFAULT_MIX)
    assert all(SCENARIOS[n].zookeeper == "shared" for n in DEFAULT_MIX)
