"""A new partition Kafka 2.5.1 never announces: its state znode's creation succeeded, the reply was
lost with the controller's ZooKeeper connection, and the retry failed with NODEEXISTS.

``data/new-partition-reply-lost`` is the kept chaos run ``partition`` seed 3001 of a 100-run
campaign on a two-worker Spark standalone cluster (``python -m bench.chaos_cluster --runs 100
--seed 3000 --kill-worker-at 150``, 2026-11-28; reference target; trimmed to the files below and
sealed again). Broker 3, the controller, created ``/brokers/topics/t1/partitions/3/state``
(zxid 0xb0, cxid 184); a blackhole then cut it from ZooKeeper before the reply arrived. Kafka's
``KafkaZkClient.retryRequestsUntilConnected`` (L1691-1719) sends a request whose answer was
CONNECTIONLOSS again once connected; the second create finds the znode (NODEEXISTS), and
``PartitionStateMachine.initializeLeaderAndIsrForPartitions`` (L294-316) treats any code but OK as
a failed NewPartition → OnlinePartition change: no LeaderAndIsr, no UpdateMetadata, the partition
stays NewPartition, and every later ``triggerOnlinePartitionStateChange`` (L56-59, on broker
changes) fails the same way until a controller failover reads the state znode. The controller's
state-change log shows both failures (``NodeExistsException``).

So the brokers never show t1-3 while ZooKeeper has it led by broker 3: the naive
``metadata_agrees_with_zookeeper`` calls the run invalid although the reference did what Kafka
2.5.1 does. The quirk ``new_partition_unannounced_after_a_lost_reply`` explains it where the log
shows the reconnect (here the session's cxids restart, as kazoo's do); the tests below take each
piece of that evidence away in turn.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from chaos.checkers import check_all
from chaos.checkers.final_state import FinalState, ReceivedRequest, RequestPartition
from chaos.checkers.timeline import Election, StateWritten, Timeline
from chaos.checkers.verdict import Verdict
from chaos.history import History
from probes.txnrecords import TxnRecord
from tests.chaos.checkers.builders import load_capture, set_data, verdict_of

pytestmark = pytest.mark.unit

RUN = Path(__file__).parent / "data" / "new-partition-reply-lost"
NODE_EXISTS = -110


def test_the_evidence_shows_a_created_state_then_failed_creates_on_a_new_connection() -> None:
    history, records, state = load_capture(RUN)
    timeline = Timeline.of(records)
    (created,) = [
        w for w in timeline.of_type(StateWritten) if (w.topic, w.partition) == ("t1", 3) and w.created
    ]
    assert created.fenced
    assert created.state is not None
    assert (created.state.leader, created.state.isr) == (3, (3,))
    controller = created.record.session_id
    later_failures = [
        r
        for r in records
        if r.session_id == controller
        and r.zxid > created.record.zxid
        and r.failed
        and any(op.error == NODE_EXISTS for op in (r.txn, *r.txn.ops))
    ]
    assert later_failures, "no failed create of the controller's session after the state's creation"
    assert min(r.cxid for r in later_failures) < created.record.cxid  # a new connection (kazoo)
    assert not [e for e in timeline.of_type(Election) if e.record.zxid > created.record.zxid]
    named = [
        (broker, request.seq)
        for broker, journal in state.journals.items()
        for request in journal
        for p in request.partitions
        if (p.topic, p.partition) == ("t1", 3)
    ]
    assert named == [], "a broker was told of t1-3"
    log = (RUN / "node-3" / "state-change.log").read_text(encoding="utf-8")
    assert log.count("failed to change state for partition t1-3 from NewPartition to OnlinePartition") == 2
    assert "NodeExistsException" in log
    verdict = json.loads((RUN / "verdict.json").read_text(encoding="utf-8"))
    assert verdict["verdict"] == "invalid"
    assert len(history) == 60


QUIRK = "new_partition_unannounced_after_a_lost_reply"
METADATA = "metadata_agrees_with_zookeeper"


def test_the_run_is_judged_valid_with_the_unannounced_partition_excused() -> None:
    history, records, state = load_capture(RUN)
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []
    excused = {v.checker: v.excused for v in verdicts if v.excused}
    assert excused == {
        METADATA: {QUIRK: tuple(f"partition shown differently broker {b}: t1-3" for b in (1, 2, 3))}
    }


def test_without_the_failed_creates_it_is_a_missing_announcement() -> None:
    _, records, state = load_capture(RUN)
    applied = [r for r in records if not r.failed]
    verdict = verdict_of(RUN, METADATA, applied, state)
    assert (verdict.validity, verdict.excused) == ("invalid", {})
    assert "broker 1: does not show t1-3" in verdict.message


def test_a_failed_create_on_the_same_connection_is_no_evidence() -> None:
    """The same failures with cxids above the create's: no reconnect shown, nothing excused."""
    _, records, state = load_capture(RUN)
    moved = [dataclasses.replace(r, cxid=r.cxid + 1000) if r.failed else r for r in records]
    verdict = verdict_of(RUN, METADATA, moved, state)
    assert (verdict.validity, verdict.excused) == ("invalid", {})
    assert "broker 1: does not show t1-3" in verdict.message


def test_a_partition_some_broker_was_told_of_is_not_excused() -> None:
    _, records, state = load_capture(RUN)
    told = ReceivedRequest(999, 3, "UpdateMetadata", 1, None, 0, (RequestPartition("t1", 3, 3, 0),))
    journals = {**state.journals, 1: (*state.journals[1], told)}
    verdict = verdict_of(RUN, METADATA, records, dataclasses.replace(state, journals=journals))
    assert (verdict.validity, verdict.excused) == ("invalid", {})
    assert "broker 1: does not show t1-3" in verdict.message


def test_an_election_after_the_create_is_not_excused() -> None:
    """A failover reads the state znode and announces the partition: not this quirk any more."""
    _, records, state = load_capture(RUN)
    last = records[-1]
    epoch = TxnRecord(last.zxid + 1, 0x99, 1, last.time_ms + 10, set_data("/controller_epoch", b"2", 2))
    verdict = verdict_of(RUN, METADATA, [*records, epoch], state)
    assert (verdict.validity, verdict.excused) == ("invalid", {})
    assert "broker 1: does not show t1-3" in verdict.message


def test_a_live_broker_without_a_journal_leaves_it_unknown() -> None:
    _, records, state = load_capture(RUN)
    journals = {b: j for b, j in state.journals.items() if b != 2}
    verdict = verdict_of(RUN, METADATA, records, dataclasses.replace(state, journals=journals))
    assert verdict.validity == "unknown"
    assert "no request journal of broker(s) [2]" in verdict.message


# --- several creates in flight, the broker's own write first on the new connection -------------

SEVERAL = Path(__file__).parent / "data" / "new-partitions-replies-lost"
T3 = [("t3", 0), ("t3", 1), ("t3", 2)]


def test_three_creates_in_flight_show_three_failed_creates_after_a_successful_write() -> None:
    """``data/new-partitions-replies-lost``: the kept chaos run ``admin-api`` seed 3855 of
    ``python -m chaos run --runs 300 --seed 3700 --parallel 2`` (2026-11-28, reference target,
    trimmed and sealed again). Controller 2 created the state znodes of t3-0, t3-1 and t3-2
    (cxids 207-209, the last three records of its connection); its link to ZooKeeper was cut
    before the replies came. On the new connection the same session (shared with broker 2) first
    wrote an ISR shrink of t1-0 (cxid 1, ok), then the three creates sent again failed with
    NODEEXISTS (cxids 4-6). The state-change log fails all three NewPartition → OnlinePartition
    changes; no broker is ever told of them."""
    history, records, state = load_capture(SEVERAL)
    created = [
        w for w in Timeline.of(records).of_type(StateWritten) if w.created and (w.topic, w.partition) in T3
    ]
    assert [w.record.cxid for w in created] == [207, 208, 209]
    controller = created[0].record.session_id
    after = [r for r in records if r.session_id == controller and r.zxid > created[-1].record.zxid]
    assert (after[0].cxid, after[0].failed) == (
        1,
        False,
    )  # the broker's ISR write, first on the new connection
    assert [(r.cxid, NODE_EXISTS in r.error_codes) for r in after[1:4]] == [(4, True), (5, True), (6, True)]
    named = {(p.topic, p.partition) for j in state.journals.values() for q in j for p in q.partitions}
    assert not named & set(T3)
    log = (SEVERAL / "node-2" / "state-change.log").read_text(encoding="utf-8")
    for topic, partition in T3:
        assert (
            f"failed to change state for partition {topic}-{partition} from NewPartition to OnlinePartition"
            in log
        )
    assert json.loads((SEVERAL / "verdict.json").read_text(encoding="utf-8"))["verdict"] == "invalid"
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []
    (metadata,) = [v for v in verdicts if v.checker == METADATA]
    excused = metadata.excused[QUIRK]
    assert sorted(excused) == sorted(
        f"partition shown differently broker {b}: {t}-{p}" for t, p in T3 for b in state.live_brokers
    )


def _first_retry(records: Sequence[TxnRecord]) -> TxnRecord:
    """The first create sent again on the controller's new connection (cxid 4, after t3-2's)."""
    last_create = next(r for r in records if r.cxid == 209 and not r.failed)
    return next(
        r
        for r in records
        if r.session_id == last_create.session_id and r.zxid > last_create.zxid and r.failed and r.cxid == 4
    )


def _judged_metadata(records: Sequence[TxnRecord], state: FinalState) -> Verdict:
    history = History.load(SEVERAL / "history.jsonl")
    (verdict,) = [v for v in check_all(history, records, state) if v.checker == METADATA]
    return verdict


def test_fewer_failed_creates_than_creates_in_flight_excuse_only_the_last_ones() -> None:
    """Without the first retried failure, two failures answer for the last two creates: t3-1 and
    t3-2 are excused, t3-0 (three replies would have been lost) is not."""
    _, records, state = load_capture(SEVERAL)
    verdict = _judged_metadata([r for r in records if r is not _first_retry(records)], state)
    assert verdict.validity == "invalid"
    assert "does not show t3-0" in verdict.message
    assert all("t3-0" not in item for item in verdict.excused.get(QUIRK, ()))
    assert any("t3-2" in item for item in verdict.excused.get(QUIRK, ()))


def test_a_retried_op_that_failed_otherwise_is_no_evidence() -> None:
    """If the first failure on the new connection is not NODEEXISTS (e.g. a setData answered
    BADVERSION), the creates' replies are not shown lost: nothing is excused."""
    _, records, state = load_capture(SEVERAL)
    first_retry = _first_retry(records)

    def other_error(r: TxnRecord) -> TxnRecord:
        if r is not first_retry:
            return r
        return dataclasses.replace(r, txn=dataclasses.replace(r.txn, op="error", error=-103, ops=()))

    verdict = _judged_metadata([other_error(r) for r in records], state)
    assert verdict.validity == "invalid"
    assert "does not show t3-0" in verdict.message
