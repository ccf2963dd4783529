"""A deletion notice still queued for a broker when the broker's session ends is dropped with the
broker's queue, and the broker keeps the deleted topic in its metadata cache.

Kept chaos run ``data/deletion-notice-dropped-with-broker-queue`` (``python -m chaos run --runs
100 --seed 4000 --parallel 2``, 2026-11-29, reference target: ``partition`` seed 4001, trimmed and
sealed again), first judged invalid by ``metadata_agrees_with_zookeeper`` ("broker 2: shows topic
't4' that ZooKeeper does not have"). Broker 2's links were cut (0.76–3.41 s); controller 1 deleted
t4 while broker 2 was still registered (0x9a–0xa1) and queued the notice (UpdateMetadata, leader
-2) behind the requests already waiting for broker 2. After the heal the queue drained up to a
StopReplica that was never answered: broker 2's session had ended (0xa5), and
``processBrokerChange`` removed broker 2's channel, whose ``removeExistingBroker`` clears the queue
(KafkaController.scala@2.5.1 L1383-1385; ControllerChannelManager.scala@2.5.1 L184-196). Broker 2
registered again (0xa9) and got the states of existing partitions only (onBrokerStartup), so t4
stays in its cache (MetadataCache.updateMetadata drops a partition only on leader -2).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.checkers import check_all
from tests.chaos.checkers.builders import load_capture, verdict_of

pytestmark = pytest.mark.unit

RUN = Path(__file__).parent / "data" / "deletion-notice-dropped-with-broker-queue"
CHECKER = "metadata_agrees_with_zookeeper"
SESSION_END, REGISTERED_AGAIN = 0xA5, 0xA9


def test_the_run_is_valid_and_the_quirk_named() -> None:
    history, records, state = load_capture(RUN)
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []
    (verdict,) = [v for v in verdicts if v.checker == CHECKER]
    assert "deleted_topic_kept_by_absent_broker" in verdict.message
    assert "broker 2: t4" in verdict.message


def test_broker_2_was_registered_through_the_deletion_and_left_after_it() -> None:
    _, records, state = load_capture(RUN)
    by_zxid = {r.zxid: r for r in records}
    deletion = [r.zxid for r in records if "/admin/delete_topics/t4" in r.paths()]
    topic_gone = [
        r.zxid
        for r in records
        if any(o.op == "delete" and o.path == "/brokers/topics/t4" for o in (r.txn, *r.txn.ops))
    ]
    assert deletion
    assert topic_gone
    assert by_zxid[SESSION_END].txn.op == "closeSession"
    assert deletion[0] < topic_gone[0] < SESSION_END < REGISTERED_AGAIN
    assert any(op.path == "/brokers/ids/2" for op in by_zxid[REGISTERED_AGAIN].txn.ops)
    told = [
        r
        for r in state.journals[2]
        if r.kind == "UpdateMetadata" and any(p.topic == "t4" and p.leader == -2 for p in r.partitions)
    ]
    assert told == []  # the notice never reached broker 2
    assert any(
        r.kind == "StopReplica" and r.error_code is None for r in state.journals[2]
    )  # cut off unanswered
    log = (RUN / "node-1" / "server.log").read_text(encoding="utf-8")
    assert log.index("Deletion of topic t4 successfully completed") < log.index("deleted brokers: 2")


def test_a_broker_that_never_left_must_be_told() -> None:
    """The same run without broker 2's departure and return: the controller kept its channel to
    broker 2, so the queued notice had to arrive; a broker still showing t4 is a violation."""
    _, records, state = load_capture(RUN)
    stayed = [r for r in records if r.zxid not in (SESSION_END, REGISTERED_AGAIN)]
    verdict = verdict_of(RUN, CHECKER, stayed, state)
    assert verdict.validity == "invalid"
    assert "broker 2: shows topic 't4' that ZooKeeper does not have" in verdict.message
