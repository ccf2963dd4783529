"""Normalisation, placement rule, comparison and behaviour IDs of the differential suite (pure logic)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import catalogue
from conformance.diff import compare as cmp
from conformance.diff.normalise import RULES, broker_epoch_labels, mask_data, requests_view, zk_view
from conformance.diff.views import placement_problem, relabel_topic, tree_view
from probes.request_proxy import ControllerRequest, PartitionEntry
from probes.txnrecords import TxnOp, TxnRecord

pytestmark = pytest.mark.unit

STATE = "/brokers/topics/t/partitions/0/state"


def _state(leader: int, epoch: int, isr: list[int], cepoch: int = 1) -> bytes:
    return json.dumps(
        {"controller_epoch": cepoch, "leader": leader, "version": 1, "leader_epoch": epoch, "isr": isr}
    ).encode()


def _fenced(zxid: int, session: int, op: TxnOp, epoch_version: int = 1) -> TxnRecord:
    check = TxnOp("check", "/controller_epoch", version=epoch_version)
    return TxnRecord(zxid, session, 0, 0, TxnOp("multi", ops=(check, op)))


def _plain(zxid: int, session: int, op: TxnOp) -> TxnRecord:
    return TxnRecord(zxid, session, 0, 0, op)


def test_open_fields_are_masked_and_the_isr_is_a_set() -> None:
    assert mask_data("/controller", b'{"version":1,"brokerid":2,"timestamp":"17"}')["timestamp"] == "<masked>"
    reg = mask_data(
        "/brokers/ids/3", b'{"endpoints":["CLIENT://127.0.0.1:4242"],"port":4242,"timestamp":"1"}'
    )
    assert reg["endpoints"] == ["CLIENT://127.0.0.1:*"]
    assert reg["port"] == "<masked>"
    assert mask_data(STATE, _state(1, 0, [3, 1, 2]))["isr"] == [1, 2, 3]
    assert mask_data("/brokers/topics/t/partitions", None) is None
    assert mask_data("/brokers/topics/t/partitions", b"") is None  # null and empty are the same
    assert mask_data("/controller_epoch", b"3") == 3


def test_writes_are_per_path_with_their_form_and_isr_joins_collapse() -> None:
    actors = {10: "node-1", 20: "node-2", 99: "harness"}
    records = [
        _fenced(1, 10, TxnOp("create", STATE, _state(1, 0, [1]))),
        _plain(2, 10, TxnOp("setData", STATE, _state(1, 0, [1, 3]), version=1)),  # leader: ISR joins
        _plain(3, 10, TxnOp("setData", STATE, _state(1, 0, [1, 3, 2]), version=2)),
        _plain(
            4,
            10,
            TxnOp(
                "create",
                "/isr_change_notification/isr_change_0000000001",
                b'{"version":1,"partitions":[{"topic":"t","partition":0}]}',
            ),
        ),
        _fenced(5, 20, TxnOp("delete", "/isr_change_notification/isr_change_0000000001")),
        TxnRecord(6, 20, 0, 0, TxnOp("error", error=-110)),
        TxnRecord(7, 30, 0, 0, TxnOp("closeSession", closed_paths=("/brokers/ids/3",))),
    ]
    view = zk_view(records, actors)
    history = view["writes"][STATE]
    assert [w["form"] for w in history] == ["fenced(epoch v1)", "plain"]
    assert history[1]["isr_joins"] == 2
    assert history[1]["data"]["isr"] == [1, 2, 3]
    assert view["isr_notified"] == {"node-1": ["t-0"]}
    assert view["writes"]["/isr_change_notification/<consumed>"] == [
        {"by": "node-2", "form": "fenced(epoch v1)", "op": "delete"}
    ]
    assert view["failed"] == {"node-2": {"NODEEXISTS": 1}}
    assert view["closed"] == {"unknown": [["/brokers/ids/3"]]}


def test_broker_epochs_become_registration_labels() -> None:
    reg = TxnOp(
        "multi",
        ops=(TxnOp("create", "/brokers/ids/2", None, ephemeral=True), TxnOp("setData", "/brokers/ids/2")),
    )
    records = [TxnRecord(500, 1, 0, 0, reg), TxnRecord(900, 2, 0, 0, reg)]
    assert broker_epoch_labels(records) == {500: "2#1", 900: "2#2"}


def _request(
    seq: int, api: str, dest: int, parts: tuple[PartitionEntry, ...], **kw: Any
) -> ControllerRequest:
    keys = {"LeaderAndIsr": 4, "UpdateMetadata": 6, "StopReplica": 5}
    return ControllerRequest(seq, 1, dest, 0.0, keys[api], 0, seq, api, partitions=parts, error_code=0, **kw)


def test_requests_are_per_broker_and_partition_and_metadata_runs_keep_the_last() -> None:
    p = PartitionEntry("t", 0, leader=1, leader_epoch=1, isr=(2, 1), replicas=(1, 2), zk_version=1)
    later = PartitionEntry("t", 0, leader=1, leader_epoch=1, isr=(1,), replicas=(1, 2), zk_version=2)
    reqs = [
        _request(0, "LeaderAndIsr", 2, (p,), broker_epoch=500, controller_epoch=1),
        _request(1, "UpdateMetadata", 2, (p,), broker_epoch=500),
        _request(2, "UpdateMetadata", 2, (later,), broker_epoch=500),
        _request(3, "StopReplica", 2, (PartitionEntry("t", 0, delete_partition=True),)),
    ]
    view = requests_view(reqs, {500: "2#1"})
    seq = view["2"]["partitions"]["t-0"]
    assert [e["api"] for e in seq] == ["LeaderAndIsr", "UpdateMetadata", "StopReplica"]
    assert seq[0]["isr"] == [1, 2]
    assert seq[0]["bepoch"] == "2#1"
    assert seq[1]["zk_version"] == 2, "a run of UpdateMetadata is compared by its last entry"
    assert seq[2]["delete"] is True


def _reassign_data(*tps: tuple[str, int, list[int]]) -> bytes:
    parts = [{"topic": t, "partition": p, "replicas": r} for t, p, r in tps]
    return json.dumps({"version": 1, "partitions": parts}).encode()


def test_reassignments_completing_in_either_order_leave_the_same_writes() -> None:
    """s1-850 of seed 1: t0-0 and t0-1 reassigned together; which one's new replica caught up
    first decided which entry the controller's first rewrite left."""
    path = "/admin/reassign_partitions"
    actors = {10: "node-2", 99: "harness"}
    both = _reassign_data(("t0", 1, [3, 2, 4]), ("t0", 0, [3, 2]))

    def view(first_left: tuple[str, int, list[int]]) -> Any:
        return zk_view(
            [
                _plain(1, 99, TxnOp("create", path, both)),
                _fenced(2, 10, TxnOp("setData", path, _reassign_data(first_left), version=1)),
                _fenced(3, 10, TxnOp("delete", path)),
            ],
            actors,
        )["writes"][path]

    one, other = view(("t0", 1, [3, 2, 4])), view(("t0", 0, [3, 2]))
    assert one == other
    assert one[0]["data"]["partitions"][0]["replicas"] == [3, 2, 4], "the harness's request is compared"
    assert one[1]["data"]["partitions"] == "1 left"
    assert [w["op"] for w in one] == ["create", "setData", "delete"]


Assignment = dict[str, list[int]]


def _topic_data(parts: Assignment, adding: Assignment, removing: Assignment) -> bytes:
    return json.dumps(
        {"version": 2, "partitions": parts, "adding_replicas": adding, "removing_replicas": removing}
    ).encode()


def _s1_850_topic_writes(first_done: str) -> list[TxnRecord]:
    """s1-850 of seed 1 as the topic znode saw it: t0-1 [3, 2] → [3, 2, 4] and t0-0 [3, 4] → [3, 2]
    start (one write each, in one event), then complete in the order their new replicas caught up."""
    path = "/brokers/topics/t0"
    started_1 = _topic_data({"0": [3, 4], "1": [3, 2, 4]}, {"1": [4]}, {})
    started_both = _topic_data({"0": [3, 2, 4], "1": [3, 2, 4]}, {"0": [2], "1": [4]}, {"0": [4]})
    done_0 = _topic_data({"0": [3, 2], "1": [3, 2, 4]}, {"1": [4]}, {})
    done_1 = _topic_data({"0": [3, 2, 4], "1": [3, 2, 4]}, {"0": [2]}, {"0": [4]})
    done_both = _topic_data({"0": [3, 2], "1": [3, 2, 4]}, {}, {})
    middle = done_0 if first_done == "0" else done_1
    return [
        _plain(1, 99, TxnOp("create", path, _topic_data({"0": [3, 4], "1": [3, 2]}, {}, {}))),
        _fenced(2, 10, TxnOp("setData", path, started_1, version=0)),
        _fenced(3, 10, TxnOp("setData", path, started_both, version=1)),
        _fenced(4, 10, TxnOp("setData", path, middle, version=2)),
        _fenced(5, 10, TxnOp("setData", path, done_both, version=3)),
    ]


def test_a_topics_reassignments_completing_in_either_order_leave_the_same_writes() -> None:
    actors = {10: "node-2", 99: "harness"}
    one = zk_view(_s1_850_topic_writes("0"), actors)["writes"]["/brokers/topics/t0"]
    other = zk_view(_s1_850_topic_writes("1"), actors)["writes"]["/brokers/topics/t0"]
    assert one == other
    # the two starts are compared as written; the two completions as one write
    assert [w["op"] for w in one] == ["create", "setData", "setData", "setData"]
    assert one[1]["data"]["adding_replicas"] == {"1": [4]}
    assert one[3]["completions"] == ["0", "1"]
    assert one[3]["version"] == 3
    assert one[3]["data"]["partitions"] == {"0": [3, 2], "1": [3, 2, 4]}
    assert one[3]["data"]["adding_replicas"] == {}
    assert one[3]["data"]["removing_replicas"] == {}


def test_a_completion_that_changes_anything_else_is_still_compared_write_by_write() -> None:
    actors = {10: "node-2", 99: "harness"}
    path = "/brokers/topics/t0"
    records = _s1_850_topic_writes("0")
    # a target whose first completion also drops t0-1's adding entry (two partitions in one write)
    wrong = _topic_data({"0": [3, 2], "1": [3, 2, 4]}, {}, {})
    records[3] = _fenced(4, 10, TxnOp("setData", path, wrong, version=2))
    bad = zk_view(records, actors)["writes"][path]
    good = zk_view(_s1_850_topic_writes("0"), actors)["writes"][path]
    assert bad != good
    assert len(bad) == len(good) + 1, "the two-partition write is not merged into a completion run"
    # the same end state reached through a completion that also moves a third field diverges too
    odd = json.loads(_topic_data({"0": [3, 2], "1": [3, 2, 4]}, {"1": [4]}, {}))
    odd["version"] = 1
    records = _s1_850_topic_writes("0")
    records[3] = _fenced(4, 10, TxnOp("setData", path, json.dumps(odd).encode(), version=2))
    assert zk_view(records, actors)["writes"][path] != good
    # the harness's own writes are never merged
    harness = _s1_850_topic_writes("0")
    harness[3] = _plain(4, 99, harness[3].txn.ops[1])
    harness[4] = _plain(5, 99, harness[4].txn.ops[1])
    hv = zk_view(harness, actors)["writes"][path]
    assert all("completions" not in w for w in hv if w["by"] == "harness")


def test_the_rack_unaware_rule_accepts_kafka_placements_only() -> None:
    assert placement_problem({0: [2, 3], 1: [3, 1], 2: [1, 2]}, [1, 2, 3], 2) is None
    assert placement_problem({0: [3, 1, 2], 1: [1, 2, 3], 2: [2, 3, 1], 3: [3, 2, 1]}, [1, 2, 3], 3) is None
    assert placement_problem({0: [2, 3], 1: [3, 1], 2: [1, 3]}, [1, 2, 3], 2) is not None
    assert placement_problem({0: [2, 2]}, [1, 2, 3], 2) is not None
    assert placement_problem({0: [1, 2], 1: [1]}, [1, 2], 2) is not None


def test_an_automatically_placed_topic_is_relabelled_by_replica_position() -> None:
    entry = {"api": "LeaderAndIsr", "leader": 3, "isr": [1, 3], "replicas": [3, 1]}
    segment: dict[str, Any] = {
        "zk": {"writes": {"/brokers/topics/a/partitions/0/state": [{"data": {"leader": 3, "isr": [1, 3]}}]}},
        "requests": {
            "1": {"partitions": {"a-0": [copy.deepcopy(entry)]}},
            "3": {"partitions": {"a-0": [entry]}},
        },
    }
    relabel_topic(segment, "a", {0: [3, 1]})
    assert segment["zk"]["writes"]["/brokers/topics/a/partitions/0/state"][0]["data"] == {
        "leader": "r0",
        "isr": ["r0", "r1"],
    }
    moved = segment["requests"]["auto-placed"]["partitions"]
    assert set(moved) == {"a-0@r0", "a-0@r1"}
    entries, count = moved["a-0@r0"][0]
    assert entries[0]["replicas"] == ["r0", "r1"]
    assert count == 1


def test_brokers_outside_an_automatic_placement_are_pooled_whatever_they_were_told() -> None:
    """s1-195 of seed 1 (generator v7): two brokers outside the placement got different request
    sequences for the same partition; pooling them must neither crash nor depend on the ids."""
    told = {"api": "UpdateMetadata", "leader": 3, "isr": [3], "replicas": [3]}
    again = {**told, "leader": -1, "isr": [3]}

    def segment(first: str, second: str) -> dict[str, Any]:
        return {
            "zk": {"writes": {}},
            "requests": {
                first: {"partitions": {"a-0": [copy.deepcopy(told), copy.deepcopy(again)]}},
                second: {"partitions": {"a-0": [copy.deepcopy(again)]}},
            },
        }

    one, other = segment("1", "2"), segment("2", "1")
    relabel_topic(one, "a", {0: [3]})
    relabel_topic(other, "a", {0: [3]})
    assert one["requests"] == other["requests"]
    pooled = one["requests"]["auto-placed"]["partitions"]["a-0@other"]
    assert sorted(len(entries) for entries, _ in pooled) == [1, 2]


def test_brokers_outside_an_automatic_placement_are_pooled_without_their_registration() -> None:
    """s1-195 of seed 1: broker 4 had registered twice; which partition it was outside of (and so
    which pool its ``4#2`` requests joined) was the random placement's choice."""

    def segment(placement: dict[int, list[int]]) -> dict[str, Any]:
        def told(b: str, p: int) -> dict[str, Any]:
            replicas = placement[p]
            bepoch = f"{b}#{2 if b == '4' else 1}"
            return {
                "api": "UpdateMetadata",
                "leader": -2,
                "isr": replicas,
                "replicas": replicas,
                "bepoch": bepoch,
            }

        requests = {
            b: {"partitions": {f"a-{p}": [told(b, p)] for p in placement}} for b in ("1", "2", "3", "4")
        }
        return {"zk": {"writes": {}}, "requests": requests}

    placed, swapped = {0: [1], 1: [4]}, {0: [4], 1: [1]}
    one, other = segment(placed), segment(swapped)
    relabel_topic(one, "a", placed)
    relabel_topic(other, "a", swapped)
    assert one["requests"] == other["requests"]
    ((entries, brokers),) = one["requests"]["auto-placed"]["partitions"]["a-0@other"]
    assert entries[0]["bepoch"] == "other"
    assert brokers == 3


def test_tree_view_names_owners_and_pools_pending_notifications() -> None:
    raw = {
        "/controller": (b'{"version":1,"brokerid":1,"timestamp":"5"}', 0, 10),
        "/isr_change_notification/isr_change_0000000003": (
            b'{"version":1,"partitions":[{"topic":"t","partition":1}]}',
            0,
            0,
        ),
    }
    view = tree_view(raw, {10: "node-1"})
    assert view["/controller"] == [{"version": 1, "brokerid": 1, "timestamp": "<masked>"}, 0, "node-1"]
    assert view["/isr_change_notification/<pending>"] == ["t-1"]


def _trace(**segment: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"step": 0, "op": "kill", "action": {}, "barrier": "ok", "zk": {}, "requests": {}}
    return {"status": "ok", "segments": [{**base, **segment}]}


def test_the_first_divergence_names_step_place_and_behaviour_ids() -> None:
    ref = _trace(zk={"writes": {STATE: [{"by": "node-1", "form": "fenced(epoch v1)", "op": "setData"}]}})
    tgt = _trace(zk={"writes": {STATE: [{"by": "node-1", "form": "plain", "op": "setData"}]}})
    d = cmp.compare(ref, tgt).divergence
    assert d is not None
    assert d.step == 0
    assert d.component == "zk"
    assert d.key == f"{STATE}.form"
    assert "FENCE-1" in d.ids
    assert "PSM-2" in d.ids
    assert d.signature == "kill|zk|/brokers/topics/*/partitions/*/state.form"
    assert "Kafka 2.5.1 (reference)" in cmp.render(d, ["kill(node=1)"])


def test_request_field_divergences_name_the_field() -> None:
    entry = {"api": "LeaderAndIsr", "is_new": True, "leader": 1}
    ref = _trace(requests={"2": {"partitions": {"t-0": [entry]}, "brokers": []}})
    tgt = _trace(requests={"2": {"partitions": {"t-0": [{**entry, "is_new": False}]}, "brokers": []}})
    d = cmp.compare(ref, tgt).divergence
    assert d is not None
    assert d.key == "LeaderAndIsr.is_new"
    assert "RSM-3" in d.ids


def test_identical_traces_do_not_diverge_and_a_target_error_does() -> None:
    assert cmp.compare(_trace(), _trace()).divergence is None
    broken = {"status": "target-error", "error": "step 0: node 2 exited with 1", "segments": []}
    d = cmp.compare(_trace(), broken).divergence
    assert d is not None
    assert d.component == "status"
    assert "node 2 exited" in str(d.target)


def test_a_tolerated_divergence_is_listed_not_dropped() -> None:
    ref = _trace(op="elect_leaders", action={"answer": "no answer"})
    tgt = _trace(op="elect_leaders", action={"answer": [{"error": 0}]}, barrier={"timeout": ["x"]})
    result = cmp.compare(ref, tgt)
    assert [t.tolerated for t in result.tolerated] == [cmp.TOLERATED[0].name]
    assert result.divergence is not None
    assert result.divergence.component == "barrier"


def test_the_behaviour_map_names_only_catalogue_ids() -> None:
    known = {b.id for b in catalogue.CATALOGUE}
    assert cmp.ids_for("kill", "requests", "UpdateMetadata.leader")
    assert set(cmp.ids_for("reassign", "zk", "/admin/reassign_partitions")) <= known


def test_every_normalisation_rule_says_why_and_where() -> None:
    for rule in RULES:
        assert rule.what, rule
        assert rule.why, rule
        assert "@" in rule.source or "spec" in rule.source, rule


def _seg(
    writes: dict[str, Any], tree: dict[str, Any], requests: dict[str, Any], notified: dict[str, Any]
) -> Any:
    return {"zk": {"writes": writes, "isr_notified": notified}, "tree": tree, "requests": requests}


def test_a_resumed_leaders_shrink_and_re_expand_is_not_compared_but_its_end_state_is() -> None:
    from conformance.diff.relative import relative_versions, resumed_leader_race  # noqa: PLC0415

    start = {STATE: [{"leader": 1, "leader_epoch": 0, "isr": [1, 2], "controller_epoch": 1}, 3, None]}
    race = _seg(
        {
            STATE: [
                {
                    "by": "node-1",
                    "form": "plain",
                    "op": "setData",
                    "data": start[STATE][0],
                    "version": 5,
                    "isr_joins": 1,
                }
            ]
        },
        {STATE: [{"leader": 1, "leader_epoch": 0, "isr": [1, 2], "controller_epoch": 1}, 5, None]},
        {"2": {"partitions": {"t-0": [{"api": "UpdateMetadata", "zk_version": 5}]}}},
        {"node-1": ["t-0"]},
    )
    quiet = _seg(
        {}, {STATE: [{"leader": 1, "leader_epoch": 0, "isr": [1, 2], "controller_epoch": 1}, 3, None]}, {}, {}
    )
    assert resumed_leader_race(race, start, 1) == ["t-0"]
    assert resumed_leader_race(quiet, start, 1) == ["t-0"], "applied alike where nothing raced"
    relative_versions(race, start)
    relative_versions(quiet, start)
    assert race["zk"] == quiet["zk"]
    assert race["requests"] == {}, "a destination left with nothing is not compared"
    assert race["tree"] == quiet["tree"], "the end state stays compared"


def test_a_resumed_brokers_request_built_before_the_step_is_compared_as_such() -> None:
    """s1-38 of seed 1 (generator v8): the LeaderAndIsr a new controller had built for a paused
    broker carried the state version from before one or two of a running leader's ISR writes."""
    from conformance.diff.relative import BUILT_BEFORE_THE_STEP, relative_versions  # noqa: PLC0415

    start = {STATE: [_pstate([1]), 7, None]}

    def seg(queued: int, other: int, built_in_step: int) -> dict[str, Any]:
        lai = {"api": "LeaderAndIsr", "leader": 1, "leader_epoch": 2}
        requests = {
            "3": {
                "partitions": {"t-0": [{**lai, "zk_version": queued}, {**lai, "zk_version": built_in_step}]}
            },
            "2": {"partitions": {"t-0": [{**lai, "zk_version": other}]}},
        }
        out: dict[str, Any] = _seg({}, {STATE: [_pstate([1]), 7, None]}, requests, {})
        return out

    one, two = seg(5, 5, 8), seg(6, 6, 8)
    for s in (one, two):
        relative_versions(s, start, resumed=3)
    assert [e["zk_version"] for e in one["requests"]["3"]["partitions"]["t-0"]] == [BUILT_BEFORE_THE_STEP, 1]
    assert one["requests"]["3"] == two["requests"]["3"], "the resumed broker's queued request"
    assert one["requests"]["2"] != two["requests"]["2"], "another broker's requests keep their versions"
    three = seg(5, 5, 9)
    relative_versions(three, start, resumed=3)
    assert three["requests"]["3"] != one["requests"]["3"], "a request built in the step is compared"
    plain = seg(5, 5, 8)
    relative_versions(plain, start)
    assert plain["requests"]["3"]["partitions"]["t-0"][0]["zk_version"] == -2, "only in a resume step"


def _pstate(isr: list[int], leader: int = 1, leader_epoch: int = 0) -> dict[str, Any]:
    return {"leader": leader, "leader_epoch": leader_epoch, "isr": isr, "controller_epoch": 1}


def _isr_write(isr: list[int], version: int, leader_epoch: int = 0) -> dict[str, Any]:
    return {
        "by": "node-1",
        "form": "plain",
        "op": "setData",
        "data": _pstate(isr, 1, leader_epoch),
        "version": version,
    }


def test_a_resumed_leaders_shrink_then_re_expansion_compares_as_its_net_change() -> None:
    """s1-33 of seed 1: after the pause one run shrinks [1,2] to [1] and adds 2 and 3 back, the
    other only adds 3: both are the same net change, and the end state is compared."""
    from conformance.diff.relative import relative_versions, resumed_leader_race  # noqa: PLC0415

    start = {STATE: [_pstate([1, 2]), 3, None]}
    end = [_pstate([1, 2, 3]), 6, None]
    um = {"api": "UpdateMetadata", "isr": [1, 2]}
    lai = {"api": "LeaderAndIsr", "leader": 1, "leader_epoch": 0, "zk_version": 3}
    raced = _seg(
        {STATE: [_isr_write([1], 4), _isr_write([1, 2], 5), _isr_write([1, 2, 3], 6)]},
        {STATE: list(end)},
        {
            "1": {"partitions": {"t-0": [lai, um]}, "brokers": []},
            "2": {"partitions": {"t-0": [um]}, "brokers": []},
        },
        {"node-1": ["t-0"]},
    )
    direct = _seg(
        {STATE: [_isr_write([1, 2, 3], 4)]},
        {STATE: [_pstate([1, 2, 3]), 4, None]},
        {"1": {"partitions": {"t-0": [lai]}, "brokers": []}},
        {"node-1": ["t-0"]},
    )
    for seg in (raced, direct):
        assert resumed_leader_race(seg, start, 1) == ["t-0"]
        relative_versions(seg, start)
    assert raced["zk"] == direct["zk"]
    assert raced["tree"] == direct["tree"]
    assert raced["requests"] == direct["requests"] == {"1": {"partitions": {"t-0": [lai]}, "brokers": []}}
    (net,) = raced["zk"]["writes"][STATE]
    assert net["data"]["isr"] == [1, 2, 3]
    assert net["version"] == 1


def test_a_resumed_leaders_net_change_still_diverges_on_its_end_pstate() -> None:
    from conformance.diff.relative import resumed_leader_race  # noqa: PLC0415

    start = {STATE: [_pstate([1, 2]), 3, None]}
    grown = _seg(
        {STATE: [_isr_write([1, 2, 3], 4)]}, {STATE: [_pstate([1, 2, 3]), 4, None]}, {}, {"node-1": ["t-0"]}
    )
    shrunk = _seg({STATE: [_isr_write([1], 4)]}, {STATE: [_pstate([1]), 4, None]}, {}, {"node-1": ["t-0"]})
    assert resumed_leader_race(grown, start, 1) == resumed_leader_race(shrunk, start, 1) == ["t-0"]
    assert grown["zk"]["writes"] != shrunk["zk"]["writes"]
    assert grown["tree"] != shrunk["tree"]


def test_the_resumed_leaders_race_never_covers_a_new_leadership_or_another_writer() -> None:
    from conformance.diff.relative import resumed_leader_race  # noqa: PLC0415

    start = {STATE: [_pstate([1, 2]), 3, None]}
    bumped = _seg(
        {STATE: [_isr_write([1], 4, leader_epoch=1)]}, {STATE: [_pstate([1], 1, 1), 4, None]}, {}, {}
    )
    assert resumed_leader_race(bumped, start, 1) == []
    by_controller = {**_isr_write([1], 4), "by": "node-2", "form": "fenced(epoch v1)"}
    other = _seg({STATE: [by_controller]}, {STATE: [_pstate([1]), 4, None]}, {}, {})
    assert resumed_leader_race(other, start, 1) == []
    assert other["zk"]["writes"][STATE] == [by_controller]
    follower = _seg({STATE: [_isr_write([1], 4)]}, {STATE: [_pstate([1]), 4, None]}, {}, {})
    assert resumed_leader_race(follower, start, 2) == [], "node 2 did not lead the partition"


def test_a_departed_controllers_request_leaves_the_resumed_brokers_answer_open() -> None:
    """s1-70 of seed 1: while broker 3 was paused the controller's former incarnation sent it
    leader epoch 1 of t0-2; the new incarnation sent the same. Broker 3 answers the new one 0 or
    11 as it reads its two connections; any other answer, partition or broker stays compared."""
    from conformance.diff.relative import ACCEPTED_OR_SAME_EPOCH, departed_controller_race  # noqa: PLC0415

    def lai(epoch: int, answer: Any) -> dict[str, Any]:
        return {"api": "LeaderAndIsr", "leader": 3, "leader_epoch": epoch, "answer": answer}

    seg = _seg(
        {},
        {},
        {
            "3": {"partitions": {"t0-2": [lai(1, 11)], "t0-0": [lai(1, 11)], "t0-1": [lai(2, 0)]}},
            "2": {"partitions": {"t0-2": [lai(1, 0)]}},
        },
        {},
    )
    other_answer = _seg({}, {}, {"3": {"partitions": {"t0-2": [lai(1, 56)]}}}, {})
    gone = {(3, "t0-2", 1), (3, "t0-1", 1)}
    assert departed_controller_race(seg, gone) == ["3:t0-2"]
    assert departed_controller_race(other_answer, gone) == []
    parts = seg["requests"]["3"]["partitions"]
    assert parts["t0-2"][0]["answer"] == ACCEPTED_OR_SAME_EPOCH
    assert parts["t0-0"][0]["answer"] == 11
    assert parts["t0-1"][0]["answer"] == 0
    assert seg["requests"]["2"]["partitions"]["t0-2"][0]["answer"] == 0


def test_the_readme_lists_every_normalisation_rule_as_the_code_has_it() -> None:
    from cluster.targets import REPO_ROOT  # noqa: PLC0415

    readme = (REPO_ROOT / "conformance" / "README.md").read_text()
    for rule in RULES:
        assert f"| {rule.name} | {rule.what} | {rule.why} | {rule.source} |" in readme, rule.name


def test_requests_to_a_paused_broker_are_compared_where_it_resumes() -> None:
    from conformance.diff.runner import _paused_until  # noqa: PLC0415
    from conformance.diff.scenario import Scenario, Step  # noqa: PLC0415

    create = Step("create_topic_zk", {"topic": "t", "assignment": {"0": [1, 2]}, "config": {}})
    steps = (create, Step("pause", {"node": 2}), Step("kill", {"node": 3, "successor": None}),
             Step("resume", {"node": 2}), Step("pause", {"node": 3}))  # fmt: skip
    moved = _paused_until(Scenario({1: {}, 2: {}, 3: {}}, 1, steps), segments=6)
    # segment i + 1 is step i: broker 2 is paused in segments 2 and 3 and resumes in segment 4
    assert moved == {(2, 2): 4, (2, 3): 4, (3, 5): 5}


def test_a_mutant_target_runs_the_patched_copy(tmp_path: Path) -> None:
    from cluster.targets import load_target  # noqa: PLC0415
    from conformance.diff.mutation import mutant_target  # noqa: PLC0415

    target = load_target(str(mutant_target(tmp_path, "some-bug")))
    assert target.name == "mutant-some-bug"
    assert target.render_cwd(tmp_path / "node") == tmp_path
    assert target.render_env(tmp_path / "node")["PYTHONPATH"] == str(tmp_path)
    assert target.container is None


def test_requests_to_a_broker_shutting_down_are_not_compared() -> None:
    from conformance.diff.relative import shutting_down  # noqa: PLC0415

    segment: dict[str, Any] = {"requests": {"3": {"partitions": {"t-0": [{"api": "LeaderAndIsr"}]}}, "2": {}}}
    shutting_down(segment, 3)
    assert segment["requests"] == {"2": {}}


def test_requests_of_a_controller_shutting_down_are_not_compared_but_its_successors_are() -> None:
    from types import SimpleNamespace  # noqa: PLC0415

    from conformance.diff.runner import of_others  # noqa: PLC0415

    sent = [
        SimpleNamespace(source=1, seq=0),
        SimpleNamespace(source=3, seq=1),
        SimpleNamespace(source=1, seq=2),
    ]
    assert [r.seq for r in of_others(sent, 1)] == [1]


def test_a_successors_answer_is_open_only_where_the_departing_controller_wrote_the_pstate() -> None:
    from conformance.diff.relative import ACCEPTED_OR_SAME_EPOCH, successor_answers_open  # noqa: PLC0415

    other = "/brokers/topics/t/partitions/1/state"

    def lai(sender: int, answer: int) -> dict[str, Any]:
        return {"api": "LeaderAndIsr", "from": sender, "answer": answer, "leader_epoch": 1}

    def segment(answer: int) -> Any:
        return _seg(
            {STATE: [{"by": "node-2", "form": "fenced(epoch v1)", "op": "setData", "version": 1}],
             other: [{"by": "node-1", "form": "fenced(epoch v2)", "op": "setData", "version": 1}]},
            {},
            {"3": {"partitions": {"t-0": [lai(1, answer)], "t-1": [lai(1, 11)]}}},
            {},
        )  # fmt: skip

    accepted, stale = segment(0), segment(11)
    assert successor_answers_open(accepted, 2) == ["t-0"]
    assert successor_answers_open(stale, 2) == ["t-0"]
    assert accepted == stale, "0 and 11 compare the same where the departing controller wrote the state"
    assert accepted["requests"]["3"]["partitions"]["t-0"][0]["answer"] == ACCEPTED_OR_SAME_EPOCH
    assert accepted["requests"]["3"]["partitions"]["t-1"][0]["answer"] == 11, "its successor's own write"
    refused = segment(0)
    refused["requests"]["3"]["partitions"]["t-0"][0]["answer"] = 77
    successor_answers_open(refused, 2)
    assert refused["requests"]["3"]["partitions"]["t-0"][0]["answer"] == 77, "other answers stay compared"


def test_a_failovers_repeated_leader_and_isr_does_not_stop_the_race_rule_but_a_new_epoch_does() -> None:
    from conformance.diff.relative import resumed_leader_race  # noqa: PLC0415

    begin = {"leader": 1, "leader_epoch": 0, "isr": [1, 2], "controller_epoch": 1}
    start = {STATE: [begin, 3, None]}

    def race(leader_epoch: int) -> Any:
        lai = {"api": "LeaderAndIsr", "leader": 1, "leader_epoch": leader_epoch, "zk_version": 3}
        return _seg(
            {STATE: [{"by": "node-1", "form": "plain", "op": "setData", "data": dict(begin), "version": 5}]},
            {STATE: [dict(begin), 5, None]},
            {"1": {"partitions": {"t-0": [lai, {"api": "UpdateMetadata", "zk_version": 5}]}}},
            {"node-1": ["t-0"]},
        )

    failover = race(0)
    assert resumed_leader_race(failover, start, 1) == ["t-0"]
    assert STATE not in failover["zk"]["writes"]
    assert [e["api"] for e in failover["requests"]["1"]["partitions"]["t-0"]] == ["LeaderAndIsr"], (
        "the failover's LeaderAndIsr stays compared, the UpdateMetadata the race caused does not"
    )
    elected = race(1)
    assert resumed_leader_race(elected, start, 1) == []
    assert STATE in elected["zk"]["writes"]


def test_a_resumed_nodes_stale_conditional_writes_are_dropped_and_no_one_elses() -> None:
    from conformance.diff.relative import resumed_stale_isr_writes  # noqa: PLC0415

    segment = _seg({}, {}, {}, {})
    segment["zk"]["failed"] = {"node-3": {"BADVERSION": 2}, "node-1": {"BADVERSION": 1, "NODEEXISTS": 1}}
    assert resumed_stale_isr_writes(segment, 3) == 2
    assert segment["zk"]["failed"] == {"node-1": {"BADVERSION": 1, "NODEEXISTS": 1}}
    assert resumed_stale_isr_writes(segment, 1) == 1
    assert segment["zk"]["failed"] == {"node-1": {"NODEEXISTS": 1}}, "other failures stay compared"


def _auto_side(assignment: list[int], removal: list[int]) -> dict[str, Any]:
    """A segment of an auto-placed partition created on ``assignment`` and deleted by taking its
    replicas offline in the order ``removal`` (Kafka's broker-id order), as the trace records it."""
    leader, isr = assignment[0], list(assignment)
    created = {"controller_epoch": 1, "leader": leader, "leader_epoch": 0, "isr": list(isr)}
    writes: list[dict[str, Any]] = [{"op": "create", "data": created}]
    for epoch, gone in enumerate(removal, start=1):
        if len(isr) > 1:
            isr.remove(gone)
        leader = -1 if gone == leader else leader
        data = {"controller_epoch": 1, "leader": leader, "leader_epoch": epoch, "isr": list(isr)}
        writes.append({"op": "setData", "data": data, "version": epoch})
    writes.append({"op": "delete", "data": None})
    requests = {
        str(b): {"partitions": {"a-0": [{"api": "StopReplica", "bepoch": f"{b}#1", "delete": False}]}}
        for b in assignment
    }
    return {"zk": {"writes": {"/brokers/topics/a/partitions/0/state": writes}}, "requests": requests}


def test_an_auto_placed_topics_deletion_is_compared_without_the_ids_behind_the_positions() -> None:
    """The same placement rule with two random starts: [1, 2] and [2, 1]. Kafka takes broker 1's
    replicas offline first on both, so one side loses its leader first and the other a follower;
    relabelled, the two segments are the same."""
    one, other = _auto_side([1, 2], [1, 2]), _auto_side([2, 1], [1, 2])
    assert one != other
    relabel_topic(one, "a", {0: [1, 2]})
    relabel_topic(other, "a", {0: [2, 1]})
    assert one == other
    last = one["zk"]["writes"]["/brokers/topics/a/partitions/0/state"][-2]["data"]
    assert last == {"controller_epoch": 1, "leader_epoch": 2, "leader": -1, "isr_size": 1}
    assert set(one["requests"]["auto-placed"]["partitions"]) == {"a-0@r0", "a-0@r1"}
    # a deletion that ends with a leader, or two fewer ISR changes, still differs
    shorter = _auto_side([2, 1], [1])
    relabel_topic(shorter, "a", {0: [2, 1]})
    assert shorter["zk"] != one["zk"]
