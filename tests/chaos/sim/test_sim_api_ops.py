"""The simulator's admin-API ops (``chaos/sim/api_ops.py``): each is played through the reference's
own controller events and config handler, its answer is recorded as the real workload records it,
and its effect shows in the simulated ZooKeeper's transaction log (ring: unit tests — the
simulated cluster is the component; expected values are Kafka 2.5.1's, spec §13)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers.txnjson import record_from_json
from chaos.generator import Schedule, Step
from chaos.sim.run import simulate
from probes.txnrecords import TxnRecord

pytestmark = pytest.mark.unit

TP0 = {"topic": "t0", "partition": 0}
CREATE = Step(0.0, "client-0", "create_topic", {"topic": "t0", "assignment": {"0": [1, 2]}})


def _play(steps: tuple[Step, ...], out: Path) -> tuple[str, list[dict[str, Any]], list[TxnRecord]]:
    logging.disable(logging.CRITICAL)
    try:
        result = simulate(Schedule("admin-api", 1, (1, 2, 3), (CREATE, *steps)), out)
    finally:
        logging.disable(logging.NOTSET)
    run = next(out.glob("*/verdict.json")).parent
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    records = [
        record_from_json(json.loads(line)) for line in (run / "txn-records.jsonl").read_text().splitlines()
    ]
    return result.verdict, history, records


def _done(history: list[dict[str, Any]], f: str) -> dict[str, Any]:
    return next(e for e in history if e["f"] == f and e["type"] != "invoke")


def _writes(records: list[TxnRecord], path: str) -> list[tuple[int, Any]]:
    """(time_ms, data as JSON) of each successful create or setData of ``path``, in log order."""
    out = []
    for r in records:
        for op in r.ops if r.op == "multi" else (r.txn,):
            if op.path == path and op.op in ("create", "setData") and not r.failed:
                out.append((r.time_ms, json.loads(op.data or b"null")))
    return out


def test_each_admin_api_op_gets_kafkas_answer_and_leaves_kafkas_writes(tmp_path: Path) -> None:
    steps = (
        Step(0.5, "api-0", "reassign_api", {"topic": "t0", "assignment": {"0": [2, 3]}}),
        Step(3.0, "api-0", "list_reassignments", {"partitions": None}),
        Step(3.2, "api-0", "elect_leaders", {"election_type": "PREFERRED", "partitions": [TP0]}),
        Step(3.5, "api-0", "alter_topic_config", {"topic": "t0", "config": {"retention.ms": "1000"}}),
        Step(3.8, "api-0", "alter_topic_config", {"topic": "nope", "config": {"retention.ms": "1000"}}),
        Step(4.0, "api-0", "cancel_reassignment", {"topic": "t0", "partitions": [0]}),
    )  # fmt: skip
    verdict, history, records = _play(steps, tmp_path)
    assert verdict == "valid"

    reassigned = _done(history, "reassign_api")
    assert reassigned["type"] == "ok", reassigned
    assert reassigned["value"]["results"] == [{"topic": "t0", "partition": 0, "error_code": 0}]
    assert reassigned["value"]["started_ms"] <= reassigned["value"]["ended_ms"]
    topic = [data for _, data in _writes(records, "/brokers/topics/t0")]
    # U1: the target merged with the original replicas, 3 adding and 1 removing; then B6 (§13.1.5)
    assert {
        "partitions": {"0": [2, 3, 1]},
        "adding_replicas": {"0": [3]},
        "removing_replicas": {"0": [1]},
    }.items() <= topic[1].items()
    assert topic[-1]["partitions"] == {"0": [2, 3]}
    assert topic[-1]["adding_replicas"] == {}
    assert not _writes(records, "/admin/reassign_partitions"), "an API reassignment never creates the znode"

    listed = _done(history, "list_reassignments")
    assert listed["type"] == "ok"
    assert listed["value"]["reassigning"] == [], "done by 3 s: nothing listed"

    elected = _done(history, "elect_leaders")  # 2 leads already: ELECTION_NOT_NEEDED
    assert elected["type"] == "fail"
    assert elected["value"]["results"] == [{"topic": "t0", "partition": 0, "error_code": 84}]

    configs = [e for e in history if e["f"] == "alter_topic_config" and e["type"] != "invoke"]
    assert configs[0]["type"] == "ok"
    assert _writes(records, "/config/topics/t0")[-1][1] == {"version": 1, "config": {"retention.ms": "1000"}}
    changes = [
        json.loads(r.txn.data or b"null")
        for r in records
        if r.op == "create" and (r.txn.path or "").startswith("/config/changes/config_change_")
    ]
    assert changes == [{"version": 2, "entity_path": "topics/t0"}]
    # a missing topic: Kafka 2.5.1 answers UNKNOWN_SERVER_ERROR (-1), not a "not done" code: info
    assert configs[1]["type"] == "info"
    assert configs[1]["error"] == 'IncrementalAlterConfigs: error -1: Topic "nope" does not exist.'

    cancelled = _done(history, "cancel_reassignment")
    assert cancelled["type"] == "fail"
    assert cancelled["value"]["results"] == [{"topic": "t0", "partition": 0, "error_code": 85}]


def test_a_slow_answer_times_out_and_the_request_still_takes_effect(tmp_path: Path) -> None:
    """3 s of latency each way on the controller's links: the request arrives after 3 s, the
    answer would come after 6; the client gives up after 5 s of virtual time (``info``: it may
    still happen) and the reassignment is carried out all the same."""
    latency = {"id": "latency-0", "fault": "latency", "scope": "node", "node": "controller"}
    steps = (
        Step(0.4, "nemesis", "start_fault", {**latency, "latency_ms": 3000, "jitter_ms": 0}),
        Step(0.5, "api-0", "reassign_api", {"topic": "t0", "assignment": {"0": [2, 3]}}),
        Step(9.0, "nemesis", "stop_fault", {"id": "latency-0"}),
    )
    verdict, history, records = _play(steps, tmp_path)
    assert verdict == "valid"
    sent = next(e for e in history if e["f"] == "reassign_api" and e["type"] == "invoke")
    done = _done(history, "reassign_api")
    assert done["type"] == "info"
    assert done["error"] == "AlterPartitionReassignments timed out"
    assert 4.99 <= (done["time_ns"] - sent["time_ns"]) / 1e9 <= 5.01
    topic = _writes(records, "/brokers/topics/t0")
    first_ms = records[0].time_ms
    u1_s = (topic[1][0] - first_ms) / 1000
    assert 2.9 <= u1_s - sent["time_ns"] / 1e9 <= 3.2, "U1 is written when the request arrives"
    assert topic[-1][1]["partitions"] == {"0": [2, 3]}


def test_a_controller_paused_past_its_session_loses_the_request(tmp_path: Path) -> None:
    """Paused for longer than the ZooKeeper session (4 s): the controller resigns when it runs
    again, the client has given up, and no reassignment is written — as a Kafka JVM stopped that
    long loses its controllership."""
    steps = (
        Step(0.4, "nemesis", "start_fault", {"id": "pause-0", "fault": "pause", "node": "controller"}),
        Step(0.5, "api-0", "reassign_api", {"topic": "t0", "assignment": {"0": [2, 3]}}),
        Step(7.0, "nemesis", "stop_fault", {"id": "pause-0"}),
    )
    verdict, history, records = _play(steps, tmp_path)
    assert verdict == "valid"
    done = _done(history, "reassign_api")
    assert done["type"] == "info"
    assert done["error"] == "AlterPartitionReassignments timed out"
    assert [data["partitions"] for _, data in _writes(records, "/brokers/topics/t0")] == [{"0": [1, 2]}]


def test_no_controller_to_send_to_fails_at_once(tmp_path: Path) -> None:
    steps = (
        Step(0.4, "nemesis", "start_fault", {"id": "kill-0", "fault": "kill", "node": "controller"}),
        Step(0.45, "api-0", "list_reassignments", {"partitions": None}),
    )
    _, history, _ = _play(steps, tmp_path)
    done = _done(history, "list_reassignments")
    # /controller still names the killed node until its session expires: connection refused
    assert done["type"] == "fail"
    assert done["error"].startswith("not sent: connection refused by node ")


def test_create_topics_is_decided_by_the_controllers_handler_with_the_broker_defaults(tmp_path: Path) -> None:
    """CreateTopics with -1 takes ``num.partitions`` / ``default.replication.factor`` (1 and 1 in
    the speed profile; KIP-464); a replication factor above the live brokers is refused with
    INVALID_REPLICATION_FACTOR (38) and writes nothing; an existing topic gets 36."""
    asked = (("d1", -1, -1), ("d2", 3, -1), ("d3", -1, 3), ("d4", 2, 4), ("t0", 1, 1))
    steps = tuple(
        Step(at, "client-0", "create_topic_admin", {"topic": t, "partitions": n, "replication_factor": rf})
        for at, (t, n, rf) in zip((0.5, 0.6, 0.7, 0.8, 2.0), asked, strict=True)
    )
    verdict, history, records = _play(steps, tmp_path)
    assert verdict == "valid"
    done = [e for e in history if e["f"] == "create_topic_admin" and e["type"] != "invoke"]
    assert [e["type"] for e in done] == ["ok", "ok", "ok", "fail", "fail"], done
    sizes = {}
    for name in ("d1", "d2", "d3"):
        (_, data), *_ = _writes(records, f"/brokers/topics/{name}")
        sizes[name] = sorted((p, len(r)) for p, r in data["partitions"].items())
    assert sizes == {
        "d1": [("0", 1)],
        "d2": [("0", 1), ("1", 1), ("2", 1)],
        "d3": [("0", 3)],
    }
    assert done[3]["error"].startswith("CreateTopics: error 38:"), done[3]
    assert not _writes(records, "/brokers/topics/d4")
    assert done[4]["error"] == "CreateTopics: error 36: Topic 't0' already exists.", done[4]


def _controller_of_seed_1(tmp_path: Path) -> int:
    """The first controller the simulated world of seed 1 elects (the tests below place their
    partition away from it)."""
    _, _, records = _play((), tmp_path / "probe")
    return int(next(data for _, data in _writes(records, "/controller"))["brokerid"])


def _offline_with_live_replica_outside_isr(c: int, then: tuple[Step, ...]) -> tuple[Step, ...]:
    """t9-0 on the two brokers that are not the controller ``c``: the follower paused until the
    leader drops it from the ISR, the leader killed (no ISR member left alive), the follower
    resumed — alive, outside the ISR — then ``then``, then the leader restarted."""
    a, b = (x for x in (1, 2, 3) if x != c)
    return (
        Step(0.1, "client-0", "create_topic", {"topic": "t9", "assignment": {"0": [a, b]}}),
        Step(0.5, "nemesis", "start_fault", {"id": "pause-0", "fault": "pause", "node": b}),
        Step(3.5, "nemesis", "start_fault", {"id": "kill-1", "fault": "kill", "node": a}),
        Step(4.0, "nemesis", "stop_fault", {"id": "pause-0", "fault": "pause"}),
        *then,
        Step(7.0, "nemesis", "stop_fault", {"id": "kill-1", "fault": "kill"}),
    )


def _t9_leaders(records: list[TxnRecord]) -> list[tuple[int, list[int]]]:
    return [(d["leader"], d["isr"]) for _, d in _writes(records, "/brokers/topics/t9/partitions/0/state")]


def test_a_dynamic_default_enabling_unclean_election_elects_the_live_replica_and_is_allowed(
    tmp_path: Path,
) -> None:
    """Kafka 2.5.1: with the cluster-wide dynamic default of unclean.leader.election.enable true,
    the controller elects a live replica from outside the ISR when the ISR's last member dies
    (DynamicBrokerConfig feeds the controller's config, spec §13.4.4); the safety checker allows
    it because that config was in force, not because it ignores such writes."""
    c = _controller_of_seed_1(tmp_path)
    a, b = (x for x in (1, 2, 3) if x != c)  # t9-0's leader and follower
    config = {"entity": "<default>", "config": {"unclean.leader.election.enable": "true"}}
    steps = _offline_with_live_replica_outside_isr(c, (Step(4.5, "api-0", "alter_broker_config", config),))
    verdict, history, records = _play(steps, tmp_path / "run")
    assert _done(history, "alter_broker_config")["type"] == "ok"
    assert _writes(records, "/config/brokers/<default>")[-1][1] == {
        "version": 1,
        "config": {"unclean.leader.election.enable": "true"},
    }
    leaders = _t9_leaders(records)
    assert (b, [b]) in leaders, leaders  # elected from outside the ISR
    assert leaders.index((b, [b])) > leaders.index((a, [a])), leaders  # b had left the ISR
    assert verdict == "valid"


def test_each_brokers_own_dynamic_config_wins_over_the_default(tmp_path: Path) -> None:
    """Every broker's own layer says false, the default says true: nobody elects uncleanly."""
    c = _controller_of_seed_1(tmp_path)
    a, _ = (x for x in (1, 2, 3) if x != c)
    key = "unclean.leader.election.enable"
    own = tuple(
        Step(4.2 + 0.05 * k, "api-0", "alter_broker_config", {"entity": str(k), "config": {key: "false"}})
        for k in (1, 2, 3)
    )
    default = Step(4.5, "api-0", "alter_broker_config", {"entity": "<default>", "config": {key: "true"}})
    steps = _offline_with_live_replica_outside_isr(c, (*own, default))
    verdict, history, records = _play(steps, tmp_path / "run")
    done = [e for e in history if e["f"] == "alter_broker_config" and e["type"] != "invoke"]
    # the killed broker's own config cannot be sent (it is down: the connection is refused)
    assert [e["type"] for e in done] == ["fail" if k == a else "ok" for k in (1, 2, 3)] + ["ok"], done
    leaders = _t9_leaders(records)
    assert all(leader in (-1, a) for leader, _ in leaders), leaders
    assert verdict == "valid"
