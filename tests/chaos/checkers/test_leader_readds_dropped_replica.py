"""A leader expands the ISR between a cancellation's topic znode write and the controller's removal
of the adding replica it dropped: adding that replica back, or another one beside it.

``data/leader-readds-dropped-replica`` is the kept chaos run ``admin-api`` seed 3843 of ``python
-m chaos run --runs 300 --seed 3700 --parallel 2`` (2026-11-28, reference target; trimmed to the
files below and sealed again). A znode reassignment of t1-1 from [3, 1] to [2] made it [1, 2, 3]
adding [2]; cancelled, the controller wrote the topic znode back to [1, 3] (zxid 0x3ab7) and only
then takes the dropped replica 2 out of the ISR (KafkaController.updateCurrentReassignment@2.5.1:
the topic znode at L613-614 before stopping the removed replicas at L620-622). In between, leader
3 — which still counts 2 among the replicas of its last LeaderAndIsr
(Partition.updateAssignmentAndIsr@2.5.1 L647-662) — saw 2 caught up and wrote ISR [3, 1, 2]
(maybeExpandIsr L679-700, expandIsr L1180-1184: a conditional update at the zkVersion it knows,
which no controller write had moved; zxid 0x3ab8). The controller's removal then read that ISR
and wrote [3, 1] with the next leader epoch (0x3aba). For two zxids the ISR held a replica the
topic no longer listed: Kafka 2.5.1's behaviour, part of ``isr_keeps_replicas_a_cancellation_dropped``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from chaos.checkers import check_all
from chaos.history import History
from probes.txnrecords import TxnRecord
from tests.chaos.checkers.builders import load_capture, verdict_of

pytestmark = pytest.mark.unit

RUN = Path(__file__).parent / "data" / "leader-readds-dropped-replica"
QUIRK = "isr_keeps_replicas_a_cancellation_dropped"
STATES = "partition_states_valid"
EXPANSION, REMOVAL = 0x3AB8, 0x3ABA


def _json(data: bytes | None) -> dict[str, object]:
    assert data is not None
    out: dict[str, object] = json.loads(data)
    return out


def test_the_evidence_is_a_leaders_expansion_between_the_topic_write_and_the_removal() -> None:
    _, records, _ = load_capture(RUN)
    by_zxid = {r.zxid: r for r in records}
    topic, expansion, removal = by_zxid[0x3AB7], by_zxid[EXPANSION], by_zxid[REMOVAL]
    assert topic.txn.op == "multi"  # the controller's fenced topic znode write
    assert _json(topic.txn.ops[1].data)["partitions"] == {"0": [3, 2, 1], "1": [1, 3]}
    assert (expansion.txn.op, expansion.txn.path) == ("setData", "/brokers/topics/t1/partitions/1/state")
    assert expansion.session_id != topic.session_id  # the leader's, not the controller's
    assert _json(expansion.txn.data)["isr"] == [3, 1, 2]
    assert _json(removal.txn.ops[1].data) == {
        "controller_epoch": 1, "leader": 3, "version": 1, "leader_epoch": 2, "isr": [3, 1],
    }  # fmt: skip
    log = (RUN / "node-3" / "server.log").read_text(encoding="utf-8")
    assert "[Partition t1-1 broker=3] Expanding ISR from 3,1 to 3,1,2" in log
    assert json.loads((RUN / "verdict.json").read_text(encoding="utf-8"))["verdict"] == "invalid"


def test_the_run_is_valid_with_the_expansion_excused() -> None:
    history, records, state = load_capture(RUN)
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []
    (states,) = [v for v in verdicts if v.checker == STATES]
    assert states.excused == {QUIRK: ("state write t1-1 at 0x3ab8",)}


def test_without_the_controllers_removal_after_it_the_expansion_is_a_violation() -> None:
    """The window closes with the controller's removal of that replica; a leader's write that no
    such removal follows is not this behaviour."""
    _, records, state = load_capture(RUN)
    verdict = verdict_of(RUN, STATES, [r for r in records if r.zxid != REMOVAL], state)
    assert verdict.validity == "invalid"
    assert "t1-1 at zxid 0x3ab8: ISR [3, 1, 2] not within replicas [1, 3]" in verdict.message


def test_a_leader_adding_a_replica_that_was_never_adding_is_a_violation() -> None:
    """The same write adding broker 4, which no reassignment ever added: not excused."""
    _, records, state = load_capture(RUN)

    def to_four(r: TxnRecord) -> TxnRecord:
        if r.zxid != EXPANSION:
            return r
        data = _json(r.txn.data)
        return dataclasses.replace(
            r, txn=dataclasses.replace(r.txn, data=json.dumps({**data, "isr": [3, 1, 4]}).encode())
        )

    verdict = verdict_of(RUN, STATES, [to_four(r) for r in records], state)
    assert verdict.validity == "invalid"
    assert "ISR [3, 1, 4] not within replicas [1, 3]" in verdict.message


# --- the leader adds another replica while the dropped one is still in the ISR ------------------

BESIDE = Path(__file__).parent / "data" / "leader-expands-beside-dropped-replica"


def test_an_expansion_beside_a_dropped_replica_is_excused_when_its_removal_follows() -> None:
    """``data/leader-expands-beside-dropped-replica``: the kept run ``zk-session`` seed 3991 of the
    same campaign. t1-1 was being reassigned from [3, 1] to [2, 1] (adding 2, removing 3) with ISR
    [1, 2]; the cancellation wrote the topic znode back to [1, 3] (0x79a6); leader 1 then added 3,
    caught up again, to an ISR still holding the dropped 2 (0x79a9: [1, 2, 3]); the controller's
    removal of 2 came next (0x79ae: [1, 3], leader epoch 3)."""
    history, records, state = load_capture(BESIDE)
    by_zxid = {r.zxid: r for r in records}
    assert _json(by_zxid[0x79A9].txn.data)["isr"] == [1, 2, 3]
    assert _json(by_zxid[0x79AE].txn.ops[1].data)["isr"] == [1, 3]
    assert "[Partition t1-1 broker=1] Expanding ISR from 1,2 to 1,2,3" in (
        BESIDE / "node-1" / "server.log"
    ).read_text(encoding="utf-8")
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []
    (states,) = [v for v in verdicts if v.checker == STATES]
    assert states.excused == {QUIRK: ("state write t1-1 at 0x79a9",)}
    without_removal = [r for r in records if r.zxid != 0x79AE]
    history2 = History.load(BESIDE / "history.jsonl")
    (again,) = [v for v in check_all(history2, without_removal, state) if v.checker == STATES]
    assert again.validity == "invalid"
    assert "t1-1 at zxid 0x79a9: ISR [1, 2, 3] not within replicas [1, 3]" in again.message
