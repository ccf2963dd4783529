"""The differential scenario generator and scenario files: seeded, valid, and reaching the hard states."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.diff.generator import generate
from conformance.diff.model import Model, controllers, replay
from conformance.diff.scenario import FORMAT, Scenario, ScenarioError, Step, load_scenario
from conformance.diff.steps import KINDS

pytestmark = pytest.mark.unit


def test_one_seed_and_index_give_one_scenario() -> None:
    assert generate(7, 3).dumps() == generate(7, 3).dumps()
    assert generate(7, 3).key() != generate(7, 4).key()
    assert generate(7, 3).key() != generate(8, 3).key()


def test_a_scenario_file_round_trips(tmp_path: Path) -> None:
    scenario = generate(11, 2)
    path = tmp_path / "s.json"
    path.write_text(scenario.dumps())
    again = load_scenario(path)
    assert again.key() == scenario.key()
    assert again.to_json() == scenario.to_json()
    assert json.loads(path.read_text())["format"] == FORMAT


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31), index=st.integers(min_value=0, max_value=10**6))
def test_generated_scenarios_hold_the_generator_invariants(seed: int, index: int) -> None:
    scenario = generate(seed, index)
    model = replay(scenario)  # every precondition holds, step by step
    assert 3 <= len(scenario.nodes) <= 5
    assert scenario.first_controller in scenario.nodes
    # a motif (at most 6 steps) may finish past the goal; the extensions add at most 3 + 6 + 5 + 7
    # and 4 restarts + 1; v15's tails at most 2 + 3 (registration) and 8 (halt); v16's 4 (removal)
    assert 1 <= len(scenario.steps) <= 9 + 5 + 21 + 5 + 2 + 3 + 8 + 4
    assert not model.paused(), "no pause outlives its motif (sessions never expire by accident)"
    assert scenario.steps[0].op in ("create_topic_zk",), "a topic exists before anything acts on it"
    for step in scenario.steps:
        assert step.op in KINDS
    assert model.state(model.controller) != "down", "the controller always ends on a live node"


def _ops(s: Scenario) -> list[str]:
    return [step.op for step in s.steps]


_DELETIONS = ("delete_topics", "delete_topics_api")


def _model_states(s: Scenario) -> set[str]:
    """States read off an independent walk of the scenario: the model before each step."""
    model, found = Model.of(s), set()
    for step in s.steps:
        if step.op == "add_partitions" and step.params["topic"] in model.deleted:
            found.add("partitions added to a topic whose deletion is pending")
        if step.op == "move_controller" and model.deleted:
            found.add("the controller moves while a deletion is pending")
        replicas = {b for r in step.params.get("assignment", {}).values() for b in r}
        all_down = all(b in model.nodes and model.state(b) == "down" for b in replicas)
        if step.op == "create_topic_zk" and all_down:
            found.add("a topic created with every replica's broker down")
        if (
            step.op == "delete_topics_api"
            and step.params["via"] == model.controller
            and model.controller_config("delete.topic.enable", "true") == "false"
        ):
            found.add("DeleteTopics to the controller of a cluster without topic deletion")
        KINDS[step.op].apply(model, step.params)
    return found


def test_the_generator_reaches_the_states_example_checks_rarely_reach() -> None:
    reached: Counter[str] = Counter()
    for i in range(300):
        s = generate(2026, i)
        ops = _ops(s)
        for a, b in zip(s.steps, s.steps[1:], strict=False):
            if a.op == "pause" and b.op in (
                "controlled_shutdown",
                "kill",
                "preferred_election",
                "move_controller",
            ):
                reached["ISR smaller than the replicas when the leader goes or an election runs"] += 1
            if a.op in _DELETIONS and b.op in _DELETIONS:
                reached["two deletions in a row"] += 1
            if a.op == "reassign" and b.op == "move_controller":
                reached["a reassignment in flight when the controller moves"] += 1
            if (
                a.op == "reassign"
                and b.op == "restart"
                and b.params["node"] in {r for targets in a.params["targets"].values() for r in targets}
            ):
                reached["a reassignment target restarts"] += 1
        for a, b, c in zip(s.steps, s.steps[1:], s.steps[2:], strict=False):
            if (a.op, b.op) == ("pause", "reassign_api") and "cancel_reassign_api" in (c.op, *ops):
                reached["an admin-API reassignment pending on a paused target, then cancelled"] += 1
        reached.update(_model_states(s))
        if any(st.op == "elect_leaders" and st.params["election"] == "unclean" for st in s.steps):
            reached["ElectLeaders UNCLEAN"] += 1
        if "probe" in ops:
            reached["broker probes"] += 1
        for a, b in zip(s.steps, s.steps[1:], strict=False):
            if (
                a.op == "pause"
                and b.op == "shutdown_request"
                and b.params["broker_epoch"] != "stale"
                and b.params["node"] != a.params["node"]
            ):
                reached["a crafted controlled shutdown of a running leader while a follower is paused"] += 1
        shutdowns = [st.params for st in s.steps if st.op == "shutdown_request"]
        if any(sp["broker_epoch"] == "stale" for sp in shutdowns):
            reached["a crafted controlled shutdown with a stale broker epoch"] += 1
        if "create_topics_auto" in ops:
            reached["automatic placement"] += 1
        if any(
            st.op == "create_topics_auto" and -1 in (st.params["partitions"], st.params["replication_factor"])
            for st in s.steps
        ):
            reached["CreateTopics leaving a count to the broker's default (-1)"] += 1
        dynamic = [st.params for st in s.steps if st.op == "broker_config"]
        if any(d["entity"] == str(s.first_controller) for d in dynamic):
            reached["a dynamic broker config of the first controller's own id"] += 1
        if any(d["entity"] == "<default>" for d in dynamic):
            reached["a dynamic cluster-wide default"] += 1
        for a, b, c in zip(s.steps, s.steps[1:], s.steps[2:], strict=False):
            if (a.op, b.op, c.op) == ("pause", "pause", "kill"):
                reached["two replicas paused out of the ISR when the leader dies"] += 1
            if a.op == "pause" and b.op == "elect_leaders" and c.op == "resume":
                reached["ElectLeaders while a replica is out of the ISR"] += 1
        if any(
            c.get("auto.leader.rebalance.enable") == "true" and "leader.imbalance.per.broker.percentage" in c
            for c in s.nodes.values()
        ):
            reached["a rebalance threshold other than the default"] += 1
    for state in (
        "CreateTopics leaving a count to the broker's default (-1)",
        "a dynamic broker config of the first controller's own id",
        "a dynamic cluster-wide default",
        "two replicas paused out of the ISR when the leader dies",
        "ElectLeaders while a replica is out of the ISR",
        "a rebalance threshold other than the default",
        "ISR smaller than the replicas when the leader goes or an election runs",
        "two deletions in a row",
        "a reassignment in flight when the controller moves",
        "a reassignment target restarts",
        "broker probes",
        "automatic placement",
        "an admin-API reassignment pending on a paused target, then cancelled",
        "ElectLeaders UNCLEAN",
        "partitions added to a topic whose deletion is pending",
        "the controller moves while a deletion is pending",
        "a topic created with every replica's broker down",
        "DeleteTopics to the controller of a cluster without topic deletion",
        "a crafted controlled shutdown of a running leader while a follower is paused",
        "a crafted controlled shutdown with a stale broker epoch",
    ):
        assert reached[state] >= 3, (
            f"{state}: reached {reached[state]} times in 300 scenarios ({dict(reached)})"
        )


def _steps_digest(s: Scenario, first: int | None = None) -> str:
    text = json.dumps([st.to_json() for st in s.steps[:first]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_the_extensions_leave_every_other_draw_of_a_seed_as_it_was() -> None:
    # digests of seed 1's scenarios 1-3 as generator v8 drew them (8, 5 and 9 steps, before the
    # extensions existed): scenario 1 draws none, so its steps must be v8's; the later versions
    # only append tails — v11 its listing, v13 a CreatePartitions and v14 a layered config change
    # and requests for a topic whose deletion waits to scenario 2, v13 three CreatePartitions to
    # scenario 3 — so their first steps stay v8's
    assert _steps_digest(generate(1, 1)) == "cb3785d3a4372a61"
    second, third = generate(1, 2), generate(1, 3)
    assert _steps_digest(second, 5) == "1845d5394b19936f"
    assert [st.op for st in second.steps[5:]] == [
        "create_topic_zk", "pause", "reassign_api", "list_reassignments", "list_reassignments", "resume",
        "list_reassignments", "create_partitions_api",
        "create_topic_zk", "alter_configs_api", "create_topic_zk", "kill", "delete_topics",
        "create_partitions_api", "elect_leaders", "list_reassignments", "restart",
    ]  # fmt: skip
    assert _steps_digest(third, 9) == "4ea96a0bb1f0e43d"
    assert [st.op for st in third.steps[9:]] == [
        "create_partitions_api", "create_topic_zk", "create_partitions_api", "create_partitions_api"
    ]  # fmt: skip


def test_the_extensions_reach_a_partial_imbalance_and_opposite_dynamic_layers() -> None:
    imbalance = layers = 0
    for i in range(300):
        s = generate(2026, i)
        confs = list(s.nodes.values())
        percentages = {c.get("leader.imbalance.per.broker.percentage") for c in confs}
        on = all(c.get("auto.leader.rebalance.enable") == "true" for c in confs)
        created = {
            st.params["topic"]: st.params["assignment"] for st in s.steps if st.op == "create_topic_zk"
        }
        for a, b in zip(s.steps, s.steps[1:], strict=False):
            if a.op != "reassign" or b.op != "move_controller" or not on or len(percentages) != 1:
                continue
            for tp, target in a.params["targets"].items():
                topic, p = tp.rsplit("-", 1)
                before = created.get(topic, {}).get(p)
                preferred_elsewhere = [
                    q for q, r in created.get(topic, {}).items() if q != p and r[0] == target[0]
                ]
                if before and list(reversed(before)) == target and preferred_elsewhere:
                    imbalance += 1  # target[0] preferred for several partitions, misled on this one
        after = controllers(s)  # the controller after each step (index 0: at the start)
        for i_step, step in enumerate(s.steps):
            controller = after[i_step]
            if step.op != "broker_config" or i_step + 1 >= len(s.steps):
                continue
            nxt = s.steps[i_step + 1]
            if nxt.op != "broker_config":
                continue
            pair = {step.params["entity"]: step.params["config"], nxt.params["entity"]: nxt.params["config"]}
            values = {e: c.get("unclean.leader.election.enable") for e, c in pair.items()}
            rest = [x.op for x in s.steps[max(0, i_step - 3) : i_step + 5]]
            if (
                set(values) == {str(controller), "<default>"}
                and len(set(values.values())) == 2
                and "pause" in rest
                and "kill" in rest
            ):
                layers += 1
    assert imbalance >= 10, imbalance
    assert layers >= 10, layers


def test_the_extensions_reach_failing_elect_leaders_and_a_check_while_reassigning() -> None:
    failing = while_reassigning = 0
    for i in range(300):
        s = generate(2026, i)
        down: set[int] = set()
        paused: set[int] = set()
        replicas: dict[str, list[int]] = {}
        pending = False
        for step in s.steps:
            p = step.params
            if step.op == "create_topic_zk":
                replicas.update({f"{p['topic']}-{k}": list(r) for k, r in p["assignment"].items()})
            elif step.op in ("kill", "controlled_shutdown"):
                down.add(p["node"])
            elif step.op == "restart":
                down.discard(p["node"])
            elif step.op == "pause":
                paused.add(p["node"])
            elif step.op == "resume":
                paused.discard(p["node"])
            elif step.op == "reassign":
                pending = any(b in paused | down for r in p["targets"].values() for b in r)
            elif step.op == "elect_leaders" and any(
                replicas.get(tp, [None])[0] in down for tp in p["partitions"]
            ):
                failing += 1  # a partition's preferred replica is dead: PREFERRED fails
            elif (
                step.op == "move_controller"
                and pending
                and all(c.get("auto.leader.rebalance.enable") == "true" for c in s.nodes.values())
            ):
                while_reassigning += 1
    assert failing >= 10, failing
    assert while_reassigning >= 5, while_reassigning


def test_the_defaults_extension_leaves_counts_to_brokers_with_defaults_of_their_own() -> None:
    reached = 0
    for i in range(300):
        s = generate(2026, i)
        own = {b for b, c in s.nodes.items() if "num.partitions" in c and "default.replication.factor" in c}
        last = s.steps[-1]
        if (
            own
            and last.op == "create_topics_auto"
            and -1 in (last.params["partitions"], last.params["replication_factor"])
        ):
            reached += 1
            assert Model.of(s).nodes.keys() >= own
            assert not replay(s).down(), "every node is up when the brokers' defaults are used"
    assert reached >= 10, reached


def test_every_operation_of_the_vocabulary_is_generated() -> None:
    seen = {op for i in range(400) for op in _ops(generate(5, i))}
    assert seen == set(KINDS), sorted(set(KINDS) - seen)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="other"), "'format' must be"),
        (lambda d: d.update(nodes={}), "'nodes' must map"),
        (lambda d: d.update(first_controller=9), "first_controller 9 is not a node"),
        (lambda d: d["steps"].append({"op": "explode"}), "unknown operation 'explode'"),
        (lambda d: d["steps"].append({"op": "kill", "node": 1}), "missing ['successor']"),
        (lambda d: d["steps"].append({"op": "pause", "node": "one"}), "pause.node must be a broker id"),
        (lambda d: d["steps"].append({"op": "restart", "node": 1}), "node 1 is up, not down"),
        (
            lambda d: d["steps"].append({"op": "kill", "node": d["first_controller"], "successor": None}),
            "a successor is required",
        ),
        (lambda d: d.update(extra=1), "unknown keys ['extra']"),
        (
            lambda d: d["steps"].append(
                {"op": "move_controller_backlog", "successor": 1, "preferred": [], "deletions": []}
                | {"reassign": {}}
            ),
            "the successor must be another node than the controller",
        ),
        (
            lambda d: d["steps"].append(
                {"op": "move_controller_backlog", "successor": 2, "preferred": [], "deletions": "t"}
                | {"reassign": {}}
            ),
            "move_controller_backlog.deletions must be a list of topic names",
        ),
        (
            lambda d: d["steps"].extend(
                [
                    {"op": "pause", "node": 2},
                    {"op": "shutdown_request", "node": 2, "via": 1, "broker_epoch": "equal"},
                ]
            ),
            "node 2 is paused: its controlled shutdown's requests would wait for its resume",
        ),
        (
            lambda d: d["steps"].append(
                {"op": "shutdown_request", "node": 2, "via": 1, "broker_epoch": "old"}
            ),
            "shutdown_request.broker_epoch must be one of",
        ),
        (
            lambda d: d["steps"].append(
                {"op": "shutdown_request", "node": 7, "via": 1, "broker_epoch": "none"}
            ),
            "node 7 is not in the cluster",
        ),
    ],
)
def test_a_bad_scenario_is_refused_with_the_reason(mutate: object, message: str) -> None:
    data = Scenario(
        {1: {}, 2: {}, 3: {}},
        1,
        (Step("create_topic_zk", {"topic": "t", "assignment": {"0": [1]}, "config": {}}),),
    ).to_json()
    mutate(data)  # type: ignore[operator]
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Scenario.from_json(data, "s.json")


def test_an_unreadable_or_malformed_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read scenario file"):
        load_scenario(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ScenarioError, match=r"bad.json: not JSON"):
        load_scenario(bad)


def test_shrink_candidates_cut_after_the_divergence_first_and_never_empty_the_cluster() -> None:
    from conformance.diff.shrink import candidates  # noqa: PLC0415

    scenario = generate(1, 3)
    first = next(iter(candidates(scenario, 1)))
    assert len(first["steps"]) == 2, "everything after the diverging step goes first"
    one = Scenario(
        {2: {}}, 2, (Step("create_topic_zk", {"topic": "t", "assignment": {"0": [2]}, "config": {}}),)
    )
    assert all(c["nodes"] for c in candidates(one, 0)), "the last node is never removed"
    for data in candidates(scenario, len(scenario.steps) - 1):
        try:
            Scenario.from_json(data)
        except ScenarioError:
            continue  # the shrinker skips a candidate that does not load


def test_the_listing_names_pending_idle_and_unknown_partitions_while_one_is_pending() -> None:
    reached = 0
    for i in range(300):
        steps = generate(2026, i).steps
        for k, step in enumerate(steps):
            if step.op != "list_reassignments" or "nosuch-0" not in step.params["partitions"]:
                continue
            before = [x.op for x in steps[max(0, k - 3) : k]]
            paused = [x.params["node"] for x in steps[:k] if x.op == "pause"]
            (tp,) = steps[k - 1].params["targets"]
            topic = tp.rsplit("-", 1)[0]
            named = set(step.params["partitions"])
            assert before[-2:] == ["pause", "reassign_api"], before
            assert steps[k - 1].params["targets"][tp][-1] == paused[-1]  # pending on the paused target
            assert {tp, f"{topic}-0", f"{topic}-2", f"{topic}-7"} <= named, named
            reached += 1
    assert 30 <= reached <= 70, reached  # about one scenario in six (fewer: no spare broker)


def test_the_backlog_is_written_for_another_node_to_find_at_its_failover() -> None:
    reached = misled = 0
    for i in range(300):
        scenario = generate(2026, i)
        model = Model.of(scenario)
        for k, step in enumerate(scenario.steps):
            if step.op == "move_controller_backlog":
                p = step.params
                assert p["successor"] != model.controller
                assert model.state(p["successor"]) == "up"
                assert p["preferred"] or p["deletions"] or p["reassign"] or not model.live_topics()
                assert not set(p["deletions"]) & {tp.rsplit("-", 1)[0] for tp in p["reassign"]}
                before = [x.op for x in scenario.steps[max(0, k - 3) : k]]
                if before == ["create_topic_zk", "kill", "restart"]:
                    created = scenario.steps[k - 3].params
                    assert created["assignment"]["0"][0] == scenario.steps[k - 2].params["node"]
                    misled += 1
                reached += 1
            KINDS[step.op].apply(model, step.params)
    assert 30 <= reached <= 70, reached  # about one scenario in six
    assert misled >= reached // 4, (misled, reached)


def test_the_edges_name_what_is_absent_and_send_requests_again() -> None:
    absent: Counter[str] = Counter()
    for i in range(400):
        scenario = generate(1, i)
        model = Model.of(scenario)
        steps = scenario.steps
        for k, step in enumerate(steps):
            p = step.params
            live = {t.name: t for t in model.live_topics()}
            if step.op == "alter_configs_api" and p["topic"] not in live:
                absent["config of a missing or deleted topic"] += 1
            if step.op in ("elect_leaders", "cancel_reassign_api"):
                for tp in p["partitions"]:
                    topic, part = tp.rsplit("-", 1)
                    if topic in live and int(part) not in live[topic].assignment:
                        absent[f"{step.op} of a partition the topic lacks"] += 1
            if step.op == "create_topics_api" and p["topic"] in live:
                absent["creation of an existing topic"] += 1
            if step.op == "delete_topics_api" and p["topic"] not in model.topics:
                absent["deletion of a topic never created"] += 1
            if k and step == steps[k - 1]:
                absent[f"{step.op} twice"] += 1
            if (
                step.op == "shutdown_request"
                and [x.op for x in steps[max(0, k - 3) : k]] == ["pause", "shutdown_request", "resume"]
                and steps[k - 2] == step
            ):
                absent["ControlledShutdown retried after the follower caught up"] += 1
            KINDS[step.op].apply(model, p)
    wanted = [
        "config of a missing or deleted topic", "elect_leaders of a partition the topic lacks",
        "cancel_reassign_api of a partition the topic lacks", "creation of an existing topic",
        "deletion of a topic never created", "shutdown_request twice", "elect_leaders twice",
        "reassign_api twice", "preferred_election twice", "delete_topics_api twice",
        "ControlledShutdown retried after the follower caught up",
    ]  # fmt: skip
    assert all(absent[w] >= 2 for w in wanted), absent


def test_shrinking_a_topic_away_keeps_the_rest_of_a_backlog() -> None:
    from conformance.diff.shrink import _without_topic  # noqa: PLC0415

    scenario = Scenario(
        {1: {}, 2: {}, 3: {}},
        1,
        (
            Step("create_topic_zk", {"topic": "a", "assignment": {"0": [2, 3]}, "config": {}}),
            Step("create_topic_zk", {"topic": "b", "assignment": {"0": [3, 2]}, "config": {}}),
            Step(
                "move_controller_backlog",
                {"successor": 2, "preferred": ["a-0", "b-0"], "deletions": ["a"]}
                | {"reassign": {"a-0": [3, 2]}},
            ),
        ),
    )
    smaller = Scenario.from_json(_without_topic(scenario, "a"))
    assert smaller.steps[-1].params == {"successor": 2, "preferred": ["b-0"], "deletions": [], "reassign": {}}


def test_the_model_places_added_partitions_by_kafkas_rack_unaware_rule() -> None:
    from conformance.diff.placement import rack_unaware  # noqa: PLC0415

    # AdminUtilsTest.testReplicaAssignment (Kafka 2.5.1): brokers 0-4, 10 partitions, RF 3, start 0
    kafka = {
        0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
        5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2),
    }  # fmt: skip
    assert rack_unaware([0, 1, 2, 3, 4], 10, 3, start=0, shift=0) == kafka
    # by hand (see test_diff_smoke): CreatePartitions fixes start and shift, numbers from the count
    assert rack_unaware([1, 2, 3], 2, 2, start=1, shift=1, first_id=1) == {1: (3, 2), 2: (1, 3)}


def test_the_model_refuses_the_create_partitions_kafka_refuses() -> None:
    from conformance.diff.steps import create_partitions_outcome  # noqa: PLC0415

    scenario = Scenario(
        {1: {}, 2: {}, 3: {}},
        1,
        (Step("create_topic_zk", {"topic": "t", "assignment": {"0": [2, 3]}, "config": {}}),),
    )
    model = replay(scenario)

    def outcome(**p: object) -> object:
        return create_partitions_outcome(model, {"via": 1, "topic": "t", "count": 2, "assignment": {}} | p)

    assert outcome() == {1: (3, 2)}
    assert outcome(assignment={"1": [1, 3]}) == {1: (1, 3)}
    for refused in (
        {"count": 1}, {"via": 2}, {"topic": "nosuch"}, {"assignment": {"1": [1, 9]}},
        {"assignment": {"1": [1]}}, {"assignment": {"1": [1, 1]}}, {"assignment": {"1": [1, 2], "2": [2, 3]}},
    ):  # fmt: skip
        assert outcome(**refused) is None, refused


def test_the_overlap_deletes_midway_asks_a_waiting_deletion_probes_a_new_epoch_and_layers_configs() -> None:
    seen: Counter[str] = Counter()
    for i in range(400):
        scenario = generate(1, i)
        model = Model.of(scenario)
        expired: set[int] = set()  # nodes whose session expired and that have run since
        for step in scenario.steps:
            p = step.params
            if step.op in ("delete_topics", "delete_topics_api"):
                for name in p.get("topics", [p.get("topic")]):
                    pending = [tp for tp in model.api_original if tp.rsplit("-", 1)[0] == name]
                    if (pending or name in model.reassigning) and model.paused():
                        seen["deletion while the topic's reassignment waits on a paused broker"] += 1
            if step.op in ("reassign_api", "elect_leaders", "create_partitions_api", "list_reassignments"):
                named = list(p["targets"]) if "targets" in p else p.get("partitions", [])
                topics = {tp.rsplit("-", 1)[0] for tp in named} | ({p["topic"]} if "topic" in p else set())
                for name in topics & model.deleted:
                    t = model.topics[name]
                    if any(model.state(b) == "down" for r in t.assignment.values() for b in r):
                        seen[f"{step.op} naming a topic whose deletion waits"] += 1
            if p.get("broker_epoch") == "stale" and p["node"] in expired:
                seen[f"{step.op} with a stale broker epoch after a re-registration"] += 1
            if step.op == "alter_configs_api" and p["incremental"] and p["topic"] in model.topics:
                stored = model.topics[p["topic"]].config
                if stored and not set(stored) & set(p["config"]):
                    seen["a config key set beside another stored one"] += 1
            if step.op == "controlled_shutdown" and p["node"] in expired:
                seen["graceful stop after a re-registration"] += 1
            if step.op == "expire_session":
                expired.add(p["node"])
            elif step.op in ("kill", "controlled_shutdown", "bounce"):
                expired.discard(p["node"])
            KINDS[step.op].apply(model, p)
    wanted = [
        "deletion while the topic's reassignment waits on a paused broker",
        "reassign_api naming a topic whose deletion waits",
        "elect_leaders naming a topic whose deletion waits",
        "create_partitions_api naming a topic whose deletion waits",
        "list_reassignments naming a topic whose deletion waits",
        "probe with a stale broker epoch after a re-registration",
        "shutdown_request with a stale broker epoch after a re-registration",
        "graceful stop after a re-registration",
        "a config key set beside another stored one",
    ]  # fmt: skip
    assert all(seen[w] >= 5 for w in wanted), seen


def test_every_unchecked_expiry_is_followed_by_a_stale_epoch_and_registrations_are_rewritten() -> None:
    """v15: a broker whose session expired and that still runs at the end is sent a request with a
    broker epoch just below its new registration's; registrations are rewritten with a listener, a
    rack or both, then the broker is described again (a topic on it, a bounce, a new controller)."""
    seen: Counter[str] = Counter()
    for seed in (1, 2026):
        for i in range(300):
            scenario = generate(seed, i)
            model = Model.of(scenario)
            due: dict[int, bool] = {}  # expired node -> its new epoch was checked since
            rewritten: int | None = None
            for step in scenario.steps:
                p = step.params
                if step.op == "expire_session":
                    due[p["node"]] = False
                elif step.op in ("kill", "controlled_shutdown", "bounce", "restart"):
                    due.pop(p["node"], None)
                elif p.get("broker_epoch") == "stale" and p.get("node") in due:
                    due[p["node"]] = True
                if step.op == "rewrite_registration":
                    rewritten = p["node"]
                    change = ("listener" if p["listener"] else "") + ("+rack" if p["rack"] != "none" else "")
                    seen[f"rewrite {change.strip('+')}"] += 1
                elif rewritten is not None:
                    if step.op == "create_topic_zk" and any(rewritten in r for r in p["assignment"].values()):
                        seen["then a topic on it"] += 1
                    elif step.op == "bounce" and p["node"] != rewritten:
                        seen["then another broker bounced"] += 1
                    elif step.op == "move_controller":
                        seen["then a new controller"] += 1
                    rewritten = None
                KINDS[step.op].apply(model, p)
            for node, checked in due.items():
                if model.state(node) == "up" and not model.nodes[node].poisoned:
                    assert checked, f"{scenario.name()}: node {node}'s expiry is never checked after"
                    seen["expiry checked"] += 1
    wanted = ["rewrite listener", "rewrite rack", "rewrite listener+rack", "then a topic on it",
              "then another broker bounced", "then a new controller", "expiry checked"]  # fmt: skip
    assert all(seen[w] >= 5 for w in wanted), seen


def test_a_halted_deletion_meets_its_retry_after_each_event_that_halts_or_resumes_it() -> None:
    """v15's halt stream: a replica's broker killed, its topic's partition reassigned onto a paused
    broker and the topic deleted, the broker back, then a second deletion event, a controller move
    or nothing before the paused broker resumes."""
    seen: Counter[str] = Counter()
    for i in range(400):
        ops = [(st.op, st.params) for st in generate(3, i).steps]
        for k in range(len(ops) - 6):
            (o0, p0), (o1, p1), (o2, p2), (o3, _), (o4, p4), (o5, p5) = ops[k : k + 6]
            if (o0, o1, o2, o4, o5) != ("create_topic_zk", "kill", "pause", "delete_topics", "restart"):
                continue
            if p1["node"] not in p0["assignment"]["0"] or p4["topics"] != [p0["topic"]]:
                continue
            if p5["node"] != p1["node"]:
                continue
            assert o3 in ("reassign", "reassign_api")
            rest = [o for o, _ in ops[k + 6 :]]
            then = rest[0] if rest and rest[0] != "resume" else "nothing"
            assert "resume" in rest, rest
            assert ops[k + 6 + rest.index("resume")][1] == p2, "the paused broker is the one resumed"
            seen[then] += 1
    assert all(seen[w] >= 3 for w in ("delete_topics", "move_controller", "nothing")), seen


def test_a_deleted_registration_is_followed_by_the_brokers_refused_shutdown() -> None:
    """v16's removal stream (about one scenario in ten): a running broker that is not the controller
    loses its registration, sometimes a topic is created with a replica on it, then it is stopped
    gracefully (while still unregistered) and mostly started again; nothing in between. The other
    nine in ten are their v15 scenarios unchanged (the tail is drawn from a stream of its own)."""
    seen: Counter[str] = Counter()
    n = 600
    for i in range(n):
        scenario = generate(7, i)
        ops = _ops(scenario)
        if "remove_registration" not in ops:
            continue
        seen["tails"] += 1
        k = ops.index("remove_registration")
        tail = scenario.steps[k:]
        model = Model.of(scenario)
        for step in scenario.steps[:k]:
            KINDS[step.op].apply(model, step.params)
        b = tail[0].params["node"]
        assert b != model.controller
        assert model.state(b) == "up"
        assert not model.nodes[b].poisoned
        rest = tail[1:]
        if rest[0].op == "create_topic_zk":
            assert b in rest[0].params["assignment"]["0"]
            seen["then a topic on it"] += 1
            rest = rest[1:]
        assert (rest[0].op, rest[0].params) == ("controlled_shutdown", {"node": b, "successor": None})
        if rest[1:]:
            assert [(st.op, st.params) for st in rest[1:]] == [("restart", {"node": b})]
            seen["then restarted"] += 1
        else:
            seen["left down"] += 1
    assert n / 20 <= seen["tails"] <= n / 6, seen
    assert all(seen[w] >= 5 for w in ("then a topic on it", "then restarted", "left down")), seen


def test_a_removed_registration_is_refused_as_input_where_it_cannot_happen() -> None:
    """The step's preconditions: the controller's own registration, a node that is down, or one
    already unregistered is a bad scenario (a clear ScenarioError naming the step)."""
    base = generate(7, 0)
    c = base.first_controller
    other = next(b for b in sorted(base.nodes) if b != c)
    for steps, problem in (
        ([Step("remove_registration", {"node": c})], "is the controller"),
        (
            [Step("remove_registration", {"node": other}), Step("remove_registration", {"node": other})],
            "registration was deleted",
        ),
        (
            [Step("remove_registration", {"node": other}),
             Step("rewrite_registration", {"node": other, "listener": True, "rack": "none"})],
            "registration was deleted",
        ),
    ):  # fmt: skip
        bad = Scenario(base.nodes, c, (base.steps[0], *steps), {})
        with pytest.raises(ScenarioError, match=problem):
            replay(bad)
