"""A deletion and a reassignment Kafka 2.5.1 leaves waiting for each other
(:mod:`chaos.checkers.quirks.deadlock`, quirk ``reassignment_deadlocked_by_deletion``)
against ``reassignments_completed``, ``deletions_completed`` and ``admin_znodes_cleaned``.

``data/deadlock`` is the kept chaos run ``partition`` seed 2651 (campaign seed 2600, reference
target): t0-1 [1, 2] → [3, 1] is mid-reassignment when t0's first deletion request (zxid 0x17bb)
starts deleting it at once; the deletion's OfflineReplica leaves t0-1 leader -1, ISR [2]
(0x17bc); broker 1 registers again (0x17cd: the halt is lifted); t4's deletion request is created
(0x17ce) and removed (0x17d7) after the controller had queued t0 (its UpdateMetadata with leader -2
reached broker 2 at 1795481346.977 s), and each TopicDeletion event halts t0 for "topic
reassignment in progress". ``data/deadlock-replay`` is the same seed run again (another
interleaving, same end). The hand-made logs below are the run in miniature, with the variants in
which Kafka 2.5.1 would have finished the deletion or the reassignment.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from chaos.checkers import FinalState, ReceivedRequest, RequestPartition, Timeline, check_all
from chaos.checkers.cleanup import REASSIGN_PARTITIONS, admin_znodes_cleaned
from chaos.checkers.liveness import deletions_completed, reassignments_completed
from chaos.checkers.quirks.deadlock import Deadlock
from chaos.checkers.quirks.deadlock import deadlocked_reassignments as deadlock_of
from chaos.history import History, Op
from probes import TopicPartition, TxnOp, TxnRecord
from tests.chaos.checkers.builders import (
    ADMIN,
    SESSION_A,
    Log,
    create,
    delete,
    final_state,
    history_of,
    load_capture,
    set_data,
    state_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

DATA = Path(__file__).parent / "data"
CAPTURE = DATA / "deadlock"
REPLAY = DATA / "deadlock-replay"  # `chaos run --scenario partition --seed 2651 --runs 1`, again
T_1 = TopicPartition("t", 1)
START_MS = 1_000_000
STEP_MS = 100
MID = (
    b'{"version":2,"partitions":{"0":[3,1],"1":[3,1,2]},"adding_replicas":{"1":[3]},'
    b'"removing_replicas":{"1":[2]}}'
)


# ---- the real run ---------------------------------------------------------------------------------


QUIRK = "reassignment_deadlocked_by_deletion"


def real_run(run: Path = CAPTURE) -> tuple[tuple[Op, ...], list[TxnRecord], FinalState]:
    return load_capture(run)


def deadlocked_reassignments(records: Sequence[TxnRecord], state: FinalState) -> Deadlock:
    return deadlock_of(Timeline.of(records), state)


@pytest.mark.parametrize("run", [CAPTURE, REPLAY], ids=["kept", "replay"])
def test_the_real_run_is_kafkas_deadlock_and_judged_valid(run: Path) -> None:
    """The replay took another path to the same end: broker 1, then the controller, bounced (a
    failover before t0's deletion request); broker 1 registered after t4's request, and the
    controller's removal of t4's request (0xb2) halted t0 after that registration."""
    history, records, state = real_run(run)
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []
    deadlock = deadlocked_reassignments(records, state)
    assert deadlock.partitions == deadlock.entries == {TopicPartition("t0", 1)}
    excused = {v.checker: v.excused for v in verdicts if v.excused}
    assert excused == {
        "reassignments_completed": {QUIRK: ("partition still reassigning t0-1",)},
        "deletions_completed": {QUIRK: ("acknowledged deletion not done t0",)},
        "admin_znodes_cleaned": {QUIRK: ("deletion request left t0", "reassignment entry left t0-1")},
    }


def _judged(records: Sequence[TxnRecord], state: FinalState) -> dict[str, str]:
    history = History.load(CAPTURE / "history.jsonl")
    return {v.checker: v.validity for v in check_all(history, records, state) if not v.is_valid}


def test_the_real_run_without_the_later_deletion_requests_would_have_finished_the_deletion() -> None:
    """Without t4's request (created 0x17ce, removed 0x17d7) nothing halts t0 after broker 1's
    registration lifted the halt: Kafka deletes t0 when broker 3 answers its StopReplica."""
    _, records, state = real_run()
    t4 = {"/admin/delete_topics/t4"}
    kept = [r for r in records if not {op.path for op in (r.txn, *r.txn.ops)} & t4]
    assert len(kept) == len(records) - 2
    assert _judged(kept, state) == {
        "deletions_completed": "invalid",
        "admin_znodes_cleaned": "invalid",
        "reassignments_completed": "unknown",  # leaderless, as before the excuse
    }


def test_the_real_run_with_a_replica_host_registering_at_the_end_is_not_excused() -> None:
    _, records, state = real_run()
    last = records[-1]
    back = TxnRecord(
        last.zxid + 1, 0x77, 0, last.time_ms + 10, create("/brokers/ids/3", None, ephemeral=True)
    )
    assert _judged([*records, back], state) == {
        "deletions_completed": "invalid",
        "admin_znodes_cleaned": "invalid",
        "reassignments_completed": "unknown",  # leaderless, as before the excuse
    }


def test_the_real_run_without_evidence_that_t0_was_queued_first_is_not_excused() -> None:
    """No UpdateMetadata with leader -2 for t0 before t4's request: the controller may have seen
    both requests in one TopicDeletion event, which does not halt a topic it had not queued."""
    _, records, state = real_run()
    late = {
        b: tuple(
            dataclasses.replace(r, sent_s=r.sent_s + 10, answered_s=None) if r.sent_s is not None else r
            for r in requests
        )
        for b, requests in state.journals.items()
    }
    assert "deletions_completed" in _judged(records, dataclasses.replace(state, journals=late))


# ---- the run in miniature --------------------------------------------------------------------------


def told(topic: str, at_s: float) -> ReceivedRequest:
    """An UpdateMetadata marking ``topic`` deleted (leader -2) sent at ``at_s``."""
    parts = (RequestPartition(topic, 0, -2, 0, 0), RequestPartition(topic, 1, -2, 0, 0))
    return ReceivedRequest(50, 2, "UpdateMetadata", 1, 0x30, 0, parts, None, at_s, at_s + 0.001)


def timed(log: Log) -> list[TxnRecord]:
    return [dataclasses.replace(r, time_ms=START_MS + i * STEP_MS) for i, r in enumerate(log.records)]


def request_time_s(records: Sequence[TxnRecord], topic: str) -> float:
    return next(r.time_ms for r in records if r.txn.path == f"/admin/delete_topics/{topic}") / 1000


def deadlock_log(
    *,
    reassigned: str = "t",
    other_request: bool = True,
    back_after: bool = False,
    election: bool = False,
    caught_up: bool = False,
    taken_back: str | None = None,
) -> list[TxnRecord]:
    """Seed 2651 in miniature: ``reassigned``-1 [1, 2] → [3, 1] is mid-reassignment (U1 by
    controller 2; broker 1's controlled shutdown left leader 2, ISR [2]); t's deletion starts at
    once (t-1: leader 2 → -1, ISR [2]); broker 1, a replica host, registers again (the halt is
    lifted); then (``other_request``) v's deletion request is created and, v deleted, removed.
    Records are 100 ms apart from ``START_MS``."""
    log = Log()
    for b in (1, 2, 3):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(SESSION_A, 2)
    for name in ("t", "u"):
        log.create_topic(ADMIN, name, {0: [3, 1], 1: [1, 2]})
        log.set_state(SESSION_A, name, 0, state_data(3, 0, [3, 1]))
        log.set_state(SESSION_A, name, 1, state_data(1, 0, [1, 2]))
    log.create_topic(ADMIN, "v", {0: [2]})
    log.set_state(SESSION_A, "v", 0, state_data(2, 0, [2]))
    entry = {"topic": reassigned, "partition": 1, "replicas": [3, 1]}
    log.write(ADMIN, create(REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": [entry]}).encode()))
    log.fenced(SESSION_A, set_data(f"/brokers/topics/{reassigned}", MID, 1))
    for name in ("t", "u"):
        log.set_state(SESSION_A, name, 1, state_data(2, 1, [2]))  # broker 1's controlled shutdown
    log.write(0x51, TxnOp("closeSession", closed_paths=("/brokers/ids/1",)))
    log.write(ADMIN, create("/admin/delete_topics/t"))
    log.set_state(SESSION_A, "t", 1, state_data(-1, 2, [2]))  # onPartitionDeletion: leader 2 offline
    log.write(0x61, create("/brokers/ids/1", None, ephemeral=True))  # lifts the halt
    if caught_up:  # a state write with the targets in the ISR: Kafka would complete the reassignment
        log.set_state(SESSION_A, "t", 1, state_data(-1, 3, [2, 3, 1]))
    if taken_back == "controller":  # target 3 out again by the controller (e.g. its controlled shutdown)
        log.set_state(SESSION_A, "t", 1, state_data(-1, 4, [2, 1]))
    elif taken_back == "leader":  # by a leader's own ISR write
        log.set_state(SESSION_A, "t", 1, state_data(-1, 3, [2, 1]), fenced=False)
    if other_request:
        log.write(ADMIN, create("/admin/delete_topics/v"))
        for path in ("/brokers/topics/v/partitions/0/state", "/brokers/topics/v", "/admin/delete_topics/v"):
            log.fenced(SESSION_A, delete(path))
    if election:
        log.elect(0x63, 3)
    if back_after:
        log.write(0x73, TxnOp("closeSession", closed_paths=("/brokers/ids/3",)))
        log.write(0x83, create("/brokers/ids/3", None, ephemeral=True))
    return timed(log)


def end_state(
    records: Sequence[TxnRecord],
    *,
    leader: int = -1,
    isr: Sequence[int] = (2,),
    reassigned: str = "t",
    told_after_ms: int | None = 50,
) -> FinalState:
    """What ZooKeeper shows at the end; the journal holds an UpdateMetadata with leader -2 for t
    sent ``told_after_ms`` after t's deletion request (None: no such request)."""
    state = final_state(
        {"t": {0: [3, 1], 1: [1, 2]}, "u": {0: [3, 1], 1: [1, 2]}},
        {
            ("t", 0): (-1, 1, [1]),
            ("t", 1): (leader, 3, list(isr)),
            ("u", 0): (3, 0, [3, 1]),
            ("u", 1): (2, 1, [2]),
        },
        delete_topics=frozenset({"t"}),
        reassign_partitions={TopicPartition(reassigned, 1): (3, 1)},
    )
    topics = {}
    for name, topic in state.topics.items():
        czxid = next(r.zxid for r in records if r.txn.path == f"/brokers/topics/{name}")
        topics[name] = dataclasses.replace(topic, czxid=czxid)
        if name == reassigned:  # t-1 [1, 2] → [3, 1]: RS [3, 1, 2], adding [3], removing [2]
            mid = {0: (3, 1), 1: (3, 1, 2)}
            topics[name] = dataclasses.replace(
                topics[name], replicas=mid, adding={1: (3,)}, removing={1: (2,)}
            )
    journals = {}
    if told_after_ms is not None:
        journals = {2: (told("t", request_time_s(records, "t") + told_after_ms / 1000),)}
    return dataclasses.replace(state, topics=topics, journals=journals)


HISTORY = history_of(
    ("client-0", "reassign", {"topic": "t", "assignment": {"1": [3, 1]}}, "ok"),
    ("client-0", "delete_topic", {"topic": "t"}, "ok"),
).ops


def judge(records: Sequence[TxnRecord], state: FinalState) -> dict[str, str]:
    return {
        checker.name: checker(HISTORY, records, state).validity
        for checker in (reassignments_completed, deletions_completed, admin_znodes_cleaned)
    }


ALL_VALID = {
    "reassignments_completed": "valid",
    "deletions_completed": "valid",
    "admin_znodes_cleaned": "valid",
}
STALLED = {
    "reassignments_completed": "unknown",  # t-1 leaderless: a gap, as before the excuse
    "deletions_completed": "invalid",
    "admin_znodes_cleaned": "invalid",
}


def test_a_held_deletion_and_its_leaderless_reassignment_are_kafkas_deadlock() -> None:
    records = deadlock_log()
    state = end_state(records)
    assert judge(records, state) == ALL_VALID
    deadlock = deadlocked_reassignments(records, state)
    assert deadlock.partitions == deadlock.entries == {T_1}
    assert deadlock.topics == {"t"}
    assert judge([], state) == STALLED  # the same end without the transaction log


def test_a_first_deletion_request_alone_does_not_halt_so_the_stall_is_not_excused() -> None:
    """Only t's own request: processTopicDeletion does not halt a topic it is only now queueing,
    and broker 1's registration lifted the reassignment's halt; Kafka would finish the deletion."""
    records = deadlock_log(other_request=False)
    assert judge(records, end_state(records)) == STALLED


def test_a_later_request_is_a_halt_only_if_the_controller_had_queued_the_topic_before_it() -> None:
    """v's request is created and then removed by the controller: each change is a TopicDeletion
    event that halts t — if t was queued by then (the leader -2 UpdateMetadata went out before)."""
    records = deadlock_log()
    changes_ms = [
        r.time_ms for r in records if "/admin/delete_topics/v" in {op.path for op in (r.txn, *r.txn.ops)}
    ]
    t_ms = int(request_time_s(records, "t") * 1000)
    created, removed = (ms - t_ms for ms in changes_ms)
    assert judge(records, end_state(records, told_after_ms=created - 1)) == ALL_VALID
    assert judge(records, end_state(records, told_after_ms=removed - 1)) == ALL_VALID  # the removal halts
    assert judge(records, end_state(records, told_after_ms=removed + 1)) == STALLED
    assert judge(records, end_state(records, told_after_ms=-1)) == STALLED  # before t's request
    assert judge(records, end_state(records, told_after_ms=None)) == STALLED


def test_a_replica_host_registering_after_the_halt_lifts_it() -> None:
    records = deadlock_log(back_after=True)
    assert judge(records, end_state(records)) == STALLED


def test_a_reassignment_of_another_topic_does_not_excuse_the_deletion() -> None:
    records = deadlock_log(reassigned="u")
    state = end_state(records, reassigned="u")
    assert deadlocked_reassignments(records, state) == Deadlock()
    assert judge(records, state)["deletions_completed"] == "invalid"


@pytest.mark.parametrize(
    ("leader", "isr"),
    [(2, (2,)), (-1, (2, 3, 1)), (-1, (3, 1))],
    ids=["live-leader", "targets-in-isr", "isr-is-the-targets"],
)
def test_a_reassignment_that_can_still_complete_is_not_excused(leader: int, isr: tuple[int, ...]) -> None:
    records = deadlock_log()
    state = end_state(records, leader=leader, isr=isr)
    assert deadlocked_reassignments(records, state) == Deadlock()
    assert judge(records, state)["deletions_completed"] == "invalid"


def test_a_state_write_since_the_request_with_the_targets_in_the_isr_is_not_excused() -> None:
    """Kafka would have completed the reassignment on that write (its ISR-change handler)."""
    records = deadlock_log(caught_up=True)
    assert deadlocked_reassignments(records, end_state(records)) == Deadlock()


def test_a_complete_isr_the_controller_itself_took_back_next_may_have_gone_unseen() -> None:
    """links seed 282 (simulated): the controller handled a ControlledShutdown (removing target 3
    from the ISR) before the notification of the ISR write that had completed the targets, so its
    ISR-change handler read an incomplete ISR: Kafka's deadlock, excused. The same ISR taken back
    by the leader's own write is not: the controller's handler may have read the complete ISR."""
    records = deadlock_log(caught_up=True, taken_back="controller")
    assert deadlocked_reassignments(records, end_state(records, isr=(2, 1))).partitions == {T_1}
    records = deadlock_log(caught_up=True, taken_back="leader")
    assert deadlocked_reassignments(records, end_state(records, isr=(2, 1))) == Deadlock()


def test_a_failover_keeps_the_halt_but_kafka_removes_the_reassignment_entry() -> None:
    """A new controller halts the queued, reassigning topic (fetchTopicDeletionsInProgress) and
    removes a topic-being-deleted's entry from /admin/reassign_partitions (L645-674)."""
    records = deadlock_log(other_request=False, election=True)
    state = end_state(records, told_after_ms=None)  # a failover reads the requests itself
    deadlock = deadlocked_reassignments(records, state)
    assert deadlock.partitions == {T_1}
    assert deadlock.entries == frozenset()
    assert judge(records, state) == {**ALL_VALID, "admin_znodes_cleaned": "invalid"}
    assert judge(records, dataclasses.replace(state, reassign_partitions=None)) == ALL_VALID


def test_a_withdrawn_request_or_a_new_topic_of_the_name_is_not_excused() -> None:
    records = deadlock_log()
    state = end_state(records)
    assert (
        deadlocked_reassignments(records, dataclasses.replace(state, delete_topics=frozenset())) == Deadlock()
    )
    newer = {**state.topics, "t": dataclasses.replace(state.topics["t"], czxid=0x999)}
    assert deadlocked_reassignments(records, dataclasses.replace(state, topics=newer)) == Deadlock()
