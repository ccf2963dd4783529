"""Liveness checkers on hand-made final states: violated (invalid, with evidence), clean, unknown."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from chaos.checkers import MetadataPartition, TopicState
from chaos.checkers.cleanup import admin_znodes_cleaned, metadata_agrees_with_zookeeper
from chaos.checkers.liveness import (
    controller_elected,
    deletions_completed,
    partitions_have_leaders,
    reassign_targets,
    reassignments_completed,
)
from chaos.history import OpType
from probes import TopicPartition
from probes.txnrecords import TxnOp, TxnRecord
from tests.chaos.checkers.builders import (
    ADMIN,
    Log,
    create,
    delete,
    final_state,
    history_of,
    request,
    set_data,
    state_data,
    topic_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

ALL = (
    controller_elected,
    partitions_have_leaders,
    reassignments_completed,
    deletions_completed,
    admin_znodes_cleaned,
    metadata_agrees_with_zookeeper,
)


@pytest.mark.parametrize("checker", ALL, ids=lambda c: c.name)
def test_no_final_state_means_unknown(checker: object) -> None:
    assert callable(checker)
    v = checker([], None, None)
    assert v.validity == "unknown"
    assert "never healed" in v.message


@pytest.mark.parametrize("checker", ALL, ids=lambda c: c.name)
def test_a_healthy_final_state_is_valid(checker: object) -> None:
    assert callable(checker)
    state = final_state({"t": {0: [1, 2], 1: [2, 3]}}, {("t", 0): (1, 2, [1, 2]), ("t", 1): (3, 4, [3])})
    v = checker([], None, state)
    assert v.validity == "valid", v.message


# ---- controller -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("controller", "live"), [(None, (1, 2, 3)), (4, (1, 2, 3))])
def test_no_live_controller_after_heal_is_invalid(controller: int | None, live: tuple[int, ...]) -> None:
    v = controller_elected([], None, final_state(controller=controller, live=live))
    assert v.validity == "invalid"
    assert v.evidence[0]["path"] == "/controller"


# ---- leaders ----------------------------------------------------------------------------------------


def test_a_partition_with_a_live_isr_member_and_no_leader_is_invalid() -> None:
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (-1, 3, [2])})
    v = partitions_have_leaders([], None, state)
    assert v.validity == "invalid"
    assert "t-0 leader -1 with live ISR members [2]" in v.message
    assert v.evidence[0]["path"] == "/brokers/topics/t/partitions/0/state"


def test_a_leader_on_a_dead_broker_is_invalid() -> None:
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 3, [1, 2])}, live=(2, 3))
    assert partitions_have_leaders([], None, state).validity == "invalid"


def test_a_partition_with_a_live_replica_but_no_state_is_invalid() -> None:
    state = final_state({"t": {0: [1, 2], 1: [3]}}, {("t", 0): (1, 0, [1, 2])})
    v = partitions_have_leaders([], None, state)
    assert v.validity == "invalid"
    assert "t-1 has live replicas [3] but no state" in v.message


def test_no_leader_is_fine_when_no_isr_member_lives_or_the_topic_is_being_deleted() -> None:
    offline = final_state({"t": {0: [4, 5]}}, {("t", 0): (-1, 3, [4])})
    assert partitions_have_leaders([], None, offline).validity == "valid"
    deleting = final_state({"t": {0: [1, 2]}}, {("t", 0): (-1, 3, [2])}, delete_topics=frozenset({"t"}))
    assert partitions_have_leaders([], None, deleting).validity == "valid"


# ---- reassignments -------------------------------------------------------------------------------


def reassigning(adding: tuple[int, ...], removing: tuple[int, ...] = (1,)) -> TopicState:
    return TopicState(0x40, {0: (*adding, 1, 2)}, {0: adding}, {0: removing})


def test_a_reassignment_still_running_to_registered_brokers_is_invalid() -> None:
    state = final_state(topics={}, states={}, live=(1, 2, 3))
    state = dataclasses.replace(state, topics={"t": reassigning((3,))})
    v = reassignments_completed([], None, state)
    assert v.validity == "invalid"
    assert "t-0 still reassigning (adding [3], removing [1])" in v.message
    assert v.evidence[0]["path"] == "/brokers/topics/t"
    assert v.evidence[0]["replicas"] == [3, 1, 2]


def test_a_reassignment_waiting_for_a_broker_that_never_registered_is_excused() -> None:
    state = dataclasses.replace(final_state(), topics={"t": reassigning((9,))})
    assert reassignments_completed([], [], state).validity == "valid"
    assert admin_znodes_cleaned(
        [], [], dataclasses.replace(state, reassign_partitions={TopicPartition("t", 0): (9, 2)})
    ).is_valid


def test_a_broker_that_registered_once_does_not_excuse_a_stuck_reassignment() -> None:
    log = Log()
    log.write(0x55, create("/brokers/ids/9", None, ephemeral=True))
    state = dataclasses.replace(final_state(), topics={"t": reassigning((9,))})
    # not excused, but not judged either: 9 is down after heal and Kafka completes a reassignment
    # only once every target replica is in the ISR (KafkaController.scala@2.5.1 L804-814)
    assert reassignments_completed([], log.records, state).validity == "unknown"
    live = dataclasses.replace(state, live_brokers=frozenset({1, 2, 3, 9}))
    assert reassignments_completed([], log.records, live).validity == "invalid"


def test_an_acknowledged_reassignment_that_did_not_reach_its_target_is_invalid() -> None:
    h = history_of(("client-0", "reassign", {"topic": "t", "assignment": {"0": [3, 2]}}, "ok"))
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 2, [1, 2])})
    v = reassignments_completed(h.ops, None, state)
    assert v.validity == "invalid"
    assert "t-0 ends on [1, 2], not target [3, 2]" in v.message
    assert v.evidence[0]["kind"] == "op"
    assert v.evidence[0]["index"] == 0


def test_reassignments_reached_superseded_failed_or_of_deleted_topics_are_fine() -> None:
    h = history_of(
        ("client-0", "reassign", {"partitions": [{"topic": "t", "partition": 0, "replicas": [3, 2]}]}, "ok"),
        ("client-0", "reassign", {"topic": "u", "assignment": {"0": [3]}}, "ok"),
        ("client-1", "reassign", {"topic": "u", "assignment": {"0": [1]}}, "info"),  # later: supersedes
        ("client-0", "reassign", {"topic": "w", "assignment": {"0": [3]}}, "fail"),
        ("client-0", "reassign", {"topic": "gone", "assignment": {"0": [3]}}, "ok"),
    )
    state = final_state(
        {"t": {0: [3, 2]}, "u": {0: [1]}, "w": {0: [1]}},
        {("t", 0): (3, 2, [3, 2]), ("u", 0): (1, 1, [1]), ("w", 0): (1, 0, [1])},
    )
    v = reassignments_completed(h.ops, None, state)
    assert v.validity == "valid", v.message


def test_reassign_targets_reads_both_value_shapes_and_skips_junk() -> None:
    assert reassign_targets({"topic": "t", "assignment": {"0": [1, 2], "x": [3], "1": "no"}}) == {
        TopicPartition("t", 0): (1, 2)
    }
    assert reassign_targets(
        {"partitions": [{"topic": "u", "partition": 2, "replicas": [3]}, {"topic": 5}]}
    ) == {TopicPartition("u", 2): (3,)}


# ---- deletions ------------------------------------------------------------------------------------


def test_an_acknowledged_deletion_whose_topic_remains_is_invalid() -> None:
    h = history_of(("client-0", "delete_topic", {"topic": "t"}, "ok"))
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 2, [1, 2])})
    v = deletions_completed(h.ops, None, state)
    assert v.validity == "invalid"
    assert "'t' still exists" in v.message
    assert v.evidence[0]["f"] == "delete_topic"


def test_a_deleted_name_created_again_later_may_exist() -> None:
    h = history_of(
        ("client-0", "delete_topic", {"topic": "t"}, "ok"),
        ("client-1", "create_topic_admin", {"topic": "t"}, "info"),
    )
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 0, [1, 2])})
    assert deletions_completed(h.ops, None, state).validity == "valid"


def _dropped_request_log(*, partitions_first: bool) -> tuple[Log, int]:
    """Seed 2062 of ``process`` in miniature: topic t created, its deletion requested, the request
    deleted by the controller — before (Kafka's TopicDeletion-before-TopicChange race) or after
    the controller created t's partitions (it knew t: dropping the request is a bug)."""
    log = Log()
    log.elect(0xC, 1)
    topic = log.create_topic(0xA, "t", {0: [1, 2]})
    log.write(0xA, create("/admin/delete_topics/t"))
    if partitions_first:
        log.fenced(0xC, create("/brokers/topics/t/partitions"))
    log.fenced(0xC, delete("/admin/delete_topics/t"))
    if not partitions_first:
        log.fenced(0xC, create("/brokers/topics/t/partitions"))
    return log, topic.zxid


def test_a_deletion_request_kafka_drops_for_a_topic_not_yet_known_is_excused() -> None:
    h = history_of(
        ("client-1", "create_topic", {"topic": "t"}, "ok"),
        ("client-0", "delete_topic", {"topic": "t"}, "ok"),
    )
    log, czxid = _dropped_request_log(partitions_first=False)
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 0, [1, 2])})
    state = dataclasses.replace(state, topics={"t": dataclasses.replace(state.topics["t"], czxid=czxid)})
    v = deletions_completed(h.ops, log.records, state)
    assert v.validity == "valid"
    assert v.excused == {"deletion_request_dropped_before_topic_known": ("acknowledged deletion not done t",)}
    # the controller knew t (its partitions existed) and still dropped the request: invalid
    known, czxid = _dropped_request_log(partitions_first=True)
    state = dataclasses.replace(state, topics={"t": dataclasses.replace(state.topics["t"], czxid=czxid)})
    assert deletions_completed(h.ops, known.records, state).validity == "invalid"
    # a later incarnation of t (another czxid) is not the one whose request was dropped
    later = dataclasses.replace(state, topics={"t": dataclasses.replace(state.topics["t"], czxid=czxid + 99)})
    assert deletions_completed(h.ops, log.records, later).validity == "invalid"


def _halt_left_behind(
    *, back_before_deletion: bool = False, election: bool = False, resume: bool = False
) -> Log:
    """Seed 2261 of ``partition`` in miniature: t's first topic [1, 2] is being deleted when broker
    1 (its replica already deleted) loses its registration; the deletion completes without it; t
    is created again on broker 2 and its deletion requested — Kafka holds it halted."""
    log = Log()
    for b in (1, 2):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x52, 2)
    log.create_topic(ADMIN, "t", {0: [1, 2]})
    log.write(ADMIN, create("/admin/delete_topics/t"))
    log.write(0x51, TxnOp("closeSession", closed_paths=("/brokers/ids/1",)))
    if back_before_deletion:
        log.write(0x61, create("/brokers/ids/1", None, ephemeral=True))
    log.fenced(0x52, delete("/brokers/topics/t"))
    log.fenced(0x52, delete("/admin/delete_topics/t"))
    if not back_before_deletion:
        log.write(0x61, create("/brokers/ids/1", None, ephemeral=True))
    log.create_topic(ADMIN, "t", {0: [2]})
    log.write(ADMIN, create("/admin/delete_topics/t"))
    if election:
        log.elect(0x51, 1)
    if resume:  # broker 2, hosting the new topic's replica, registers again
        log.write(0x52, TxnOp("closeSession", closed_paths=("/brokers/ids/2",)))
        log.write(0x62, create("/brokers/ids/2", None, ephemeral=True))
    return log


def test_a_deletion_halt_left_by_an_earlier_topic_of_the_name_is_kafkas_behaviour() -> None:
    h = history_of(
        ("client-0", "delete_topic", {"topic": "t"}, "ok"),
        ("client-1", "create_topic", {"topic": "t"}, "ok"),
        ("client-0", "delete_topic", {"topic": "t"}, "ok"),
    )
    log = _halt_left_behind()
    czxid = log.records[-2].zxid  # the second topic znode
    state = final_state({"t": {0: [2]}}, {("t", 0): (2, 0, [2])}, live=(1, 2), delete_topics=frozenset({"t"}))
    state = dataclasses.replace(state, topics={"t": dataclasses.replace(state.topics["t"], czxid=czxid)})
    assert deletions_completed(h.ops, log.records, state).validity == "valid"
    v = admin_znodes_cleaned(h.ops, log.records, state)
    assert v.validity == "valid"
    assert v.excused == {"deletion_halt_outlives_topic": ("deletion request left t",)}
    for variant in ({"back_before_deletion": True}, {"election": True}, {"resume": True}):
        log = _halt_left_behind(**variant)
        czxid = next(r.zxid for r in reversed(log.records) if r.txn.path == "/brokers/topics/t")
        held = dataclasses.replace(state, topics={"t": dataclasses.replace(state.topics["t"], czxid=czxid)})
        assert admin_znodes_cleaned(h.ops, log.records, held).validity == "invalid", variant


def _abandoned_log(*, failover: bool = False, completed: bool = False) -> Log:
    """Seed 2307 of ``process`` in miniature: t-0 [1] has no state (its replica was down); the
    reassignment to [2, 3] is written into the topic znode (U1), fails (no state to bump) and its
    entry is removed from /admin/reassign_partitions; the topic znode keeps the reassignment."""
    log = Log()
    log.elect(0x51, 3)
    log.create_topic(ADMIN, "t", {0: [1]})
    entry = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}'
    log.write(ADMIN, create("/admin/reassign_partitions", entry))
    mid = (
        b'{"version":2,"partitions":{"0":[2,3,1]},"adding_replicas":{"0":[2,3]},'
        b'"removing_replicas":{"0":[1]}}'
    )
    log.fenced(0x51, set_data("/brokers/topics/t", mid, 1))
    log.fenced(0x51, delete("/admin/reassign_partitions"))
    if completed:
        log.fenced(0x51, set_data("/brokers/topics/t", b'{"version":2,"partitions":{"0":[2,3]}}', 2))
    if failover:
        log.elect(0x52, 2)
    return log


def test_a_reassignment_kafka_gave_up_after_writing_the_topic_znode_is_excused_until_a_failover() -> None:
    h = history_of(("client-0", "reassign", {"topic": "t", "assignment": {"0": [2, 3]}}, "ok"))
    state = final_state({"t": {0: [2, 3, 1]}}, {("t", 0): (2, 1, [2, 3, 1])})
    mid_state = dataclasses.replace(
        state,
        topics={"t": dataclasses.replace(state.topics["t"], adding={0: (2, 3)}, removing={0: (1,)})},
    )
    v = reassignments_completed(h.ops, _abandoned_log().records, mid_state)
    assert v.validity == "valid"
    assert v.excused == {
        "reassignment_abandoned_without_state": (
            "partition still reassigning t-0",
            "reassignment target not reached t-0",
        )
    }
    # a failover resumes it: still mid-reassignment afterwards is a violation
    v = reassignments_completed(h.ops, _abandoned_log(failover=True).records, mid_state)
    assert v.validity == "invalid"
    assert "t-0 still reassigning (adding [2, 3], removing [1])" in v.message


def _leaderless_log(*, then: str | None = None) -> Log:
    """Seed 2318 of ``zk-session`` in miniature: t-0 [3, 1] → [2] completes while broker 2 is
    away, so the election for [2] fails; removing 3 and 1 leaves leader -1, ISR [2]; RS [2]."""
    log = Log()
    for b in (1, 2, 3):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x53, 3)
    log.create_topic(ADMIN, "t", {0: [3, 1]})
    log.set_state(0x53, "t", 0, state_data(3, 0, [3, 1]))
    mid = (
        b'{"version":2,"partitions":{"0":[2,3,1]},"adding_replicas":{"0":[2]},'
        b'"removing_replicas":{"0":[3,1]}}'
    )
    log.fenced(0x53, set_data("/brokers/topics/t", mid, 1))
    log.set_state(0x53, "t", 0, state_data(3, 1, [3, 1, 2]), fenced=False)
    log.set_state(0x53, "t", 0, state_data(-1, 2, [1, 2]))
    log.set_state(0x53, "t", 0, state_data(-1, 3, [2]))
    log.fenced(0x53, set_data("/brokers/topics/t", b'{"version":2,"partitions":{"0":[2]}}', 2))
    if then == "broker failure":
        log.write(0x51, TxnOp("closeSession", closed_paths=("/brokers/ids/1",)))
    elif then == "failover":
        log.elect(0x51, 1)
    return log


def test_a_partition_kafka_leaves_leaderless_after_its_reassignment_is_excused_until_it_would_elect() -> None:
    state = final_state({"t": {0: [2]}}, {("t", 0): (-1, 3, [2])})
    v = partitions_have_leaders([], _leaderless_log().records, state)
    assert v.validity == "valid"
    assert v.excused == {"leaderless_after_reassignment": ("leaderless partition t-0",)}
    assert partitions_have_leaders([], None, state).validity == "invalid"
    for then in ("broker failure", "failover"):  # either makes Kafka elect leaderless partitions
        v = partitions_have_leaders([], _leaderless_log(then=then).records, state)
        assert v.validity == "invalid", then
        assert "t-0 leader -1 with live ISR members [2]" in v.message


def _deletion_with_registration_at(time_s: float) -> list[TxnRecord]:
    """t on [1, 3] queued for deletion; broker 3 registers at ``time_s`` (ZooKeeper's clock)."""
    log = Log()
    log.elect(0x51, 1)
    log.create_topic(ADMIN, "t", {0: [1, 3]})
    log.write(ADMIN, create("/admin/delete_topics/t"))
    log.write(0x63, create("/brokers/ids/3", None, ephemeral=True))
    records = [dataclasses.replace(r, time_ms=1_000_000) for r in log.records]
    records[-1] = dataclasses.replace(records[-1], time_ms=int(time_s * 1000))
    return records


def test_a_deletion_halted_by_a_failed_replica_deletion_waits_for_a_replicas_broker_to_register() -> None:
    """Seed 2391 of ``partition`` in miniature: StopReplica(delete) answered STALE_BROKER_EPOCH (77)
    at wall time 2000 s halts t's deletion; a registration of broker 3 (hosting a replica) after
    that resumes it in Kafka — before it, it does not."""
    h = history_of(("client-0", "delete_topic", {"topic": "t"}, "ok"))
    log_with_registration_at = _deletion_with_registration_at
    failed = request(9, "StopReplica", 1, [("t", 0, 0, 77)], delete=True)
    failed = dataclasses.replace(failed, sent_s=1999.9, answered_s=2000.0)
    state = final_state(
        {"t": {0: [1, 3]}}, {("t", 0): (1, 0, [1])}, delete_topics=frozenset({"t"}), journals={3: (failed,)}
    )
    v = deletions_completed(h.ops, log_with_registration_at(1990.0), state)
    assert v.validity == "valid"
    assert v.excused == {"deletion_halted_by_failed_replica_deletion": ("acknowledged deletion not done t",)}
    assert admin_znodes_cleaned(h.ops, log_with_registration_at(1990.0), state).validity == "valid"
    assert admin_znodes_cleaned(h.ops, log_with_registration_at(2010.0), state).validity == "invalid"
    no_failure = dataclasses.replace(state, journals={})
    assert admin_znodes_cleaned(h.ops, log_with_registration_at(1990.0), no_failure).validity == "invalid"


def test_a_registration_the_pending_broker_change_read_does_not_lift_the_halt() -> None:
    """Simulated ``links`` seed 38082 in miniature: the StopReplica(delete) addressed to broker 3's
    old registration fails STALE_BROKER_EPOCH at 2000 s; the broker change that replaced that
    registration was already queued, and the controller handled it first — it read broker 3's
    registration of 2010 s (the epoch it next addressed broker 3 with) before the failure halted the
    deletion, so that registration lifts nothing. A registration after it would."""
    h = history_of(("client-0", "delete_topic", {"topic": "t"}, "ok"))
    records = _deletion_with_registration_at(2010.0)
    read_epoch = records[-1].zxid

    failed = dataclasses.replace(
        request(9, "StopReplica", 1, [("t", 0, 0, 77)], delete=True, error=77),
        sent_s=1999.9,
        answered_s=2000.0,
    )
    startup = dataclasses.replace(request(10, "UpdateMetadata", 1, broker_epoch=read_epoch), sent_s=2010.5)
    state = final_state(
        {"t": {0: [1, 3]}},
        {("t", 0): (1, 0, [1])},
        delete_topics=frozenset({"t"}),
        journals={3: (failed, startup)},
    )
    v = deletions_completed(h.ops, records, state)
    assert (v.validity, v.excused) == (
        "valid",
        {"deletion_halted_by_failed_replica_deletion": ("acknowledged deletion not done t",)},
    )
    # the controller addressed broker 3 with an older epoch: the registration came after
    older = dataclasses.replace(startup, broker_epoch=read_epoch - 1)
    assert (
        deletions_completed(
            h.ops, records, dataclasses.replace(state, journals={3: (failed, older)})
        ).validity
        == "invalid"
    )
    # another error than STALE_BROKER_EPOCH says nothing about a pending broker change
    storage = dataclasses.replace(
        failed, error_code=56, partitions=(dataclasses.replace(failed.partitions[0], error_code=56),)
    )
    assert (
        deletions_completed(
            h.ops, records, dataclasses.replace(state, journals={3: (storage, startup)})
        ).validity
        == "invalid"
    )
    # a later registration of broker 3 is read after the failure: Kafka resumes the deletion
    again = dataclasses.replace(records[-1], zxid=read_epoch + 1, session_id=0x64, time_ms=2_020_000)
    closed = dataclasses.replace(
        records[-1],
        zxid=read_epoch + 1,
        session_id=0x63,
        txn=TxnOp("closeSession", closed_paths=("/brokers/ids/3",)),
    )
    later = [*records, closed, dataclasses.replace(again, zxid=read_epoch + 2)]
    assert deletions_completed(h.ops, later, state).validity == "invalid"


def test_a_reassignment_of_a_topic_queued_for_deletion_is_skipped_as_kafka_does() -> None:
    """maybeTriggerPartitionReassignment skips a topic queued for deletion (UNKNOWN_TOPIC_OR_PARTITION)."""
    h = history_of(("client-0", "reassign", {"topic": "t", "assignment": {"0": [2, 3, 1]}}, "ok"))
    queued = final_state({"t": {0: [2, 3]}}, {("t", 0): (2, 1, [2, 3])}, delete_topics=frozenset({"t"}))
    assert reassignments_completed(h.ops, [], queued).validity == "valid"
    not_queued = dataclasses.replace(queued, delete_topics=frozenset())
    v = reassignments_completed(h.ops, [], not_queued)
    assert "t-0 ends on [2, 3], not target [2, 3, 1]" in v.message


def test_deleting_a_topic_with_a_given_up_reassignment_stalls_as_in_kafka_until_a_failover() -> None:
    """Seed 2542 of ``process``: the adding replicas of a given-up reassignment never became
    NewReplica, so the topic's deletion needs invalid transitions and never completes."""
    h = history_of(("client-0", "delete_topic", {"topic": "t"}, "ok"))
    state = final_state({"t": {0: [2, 3, 1]}}, {("t", 0): (2, 1, [2, 3, 1])}, delete_topics=frozenset({"t"}))
    assert admin_znodes_cleaned(h.ops, _abandoned_log().records, state).validity == "valid"
    v = deletions_completed(h.ops, _abandoned_log().records, state)
    assert v.validity == "valid"
    assert v.excused == {"deletion_stalled_by_abandoned_reassignment": ("acknowledged deletion not done t",)}
    assert admin_znodes_cleaned(h.ops, _abandoned_log(failover=True).records, state).validity == "invalid"


def test_deletion_blocked_by_a_never_registered_broker_is_excused_and_by_a_dead_one_unknown() -> None:
    h = history_of(("client-0", "delete_topic", {"topic": "t"}, "ok"))
    never = final_state({"t": {0: [1, 9]}}, {("t", 0): (1, 2, [1])}, delete_topics=frozenset({"t"}))
    assert deletions_completed(h.ops, [], never).validity == "valid"
    assert admin_znodes_cleaned(h.ops, [], never).validity == "valid"
    down = final_state(
        {"t": {0: [1, 2]}}, {("t", 0): (1, 2, [1])}, live=(1, 3), delete_topics=frozenset({"t"})
    )
    log = Log()
    log.write(0x55, create("/brokers/ids/2", None, ephemeral=True))
    v = deletions_completed(h.ops, log.records, down)
    assert v.validity == "unknown"
    assert "not live after heal" in v.message


# ---- admin znodes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"reassign_partitions": {TopicPartition("t", 0): (1, 2)}}, "/admin/reassign_partitions"),
        ({"reassign_partitions": {}}, "/admin/reassign_partitions"),
        ({"preferred_replica_election": (TopicPartition("t", 0),)}, "/admin/preferred_replica_election"),
        ({"delete_topics": frozenset({"t"})}, "/admin/delete_topics/t"),
    ],
    ids=["reassign", "reassign-empty", "preferred", "delete"],
)
def test_admin_znodes_left_behind_are_invalid(change: dict[str, Any], path: str) -> None:
    state = dataclasses.replace(final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 0, [1, 2])}), **change)
    v = admin_znodes_cleaned([], None, state)
    assert v.validity == "invalid"
    assert v.evidence[0]["path"] == path


def test_a_reassignment_znode_with_one_entry_for_a_live_broker_is_not_excused() -> None:
    waiting = {TopicPartition("t", 0): (9, 2), TopicPartition("t", 1): (3, 2)}
    state = dataclasses.replace(final_state(), reassign_partitions=waiting)
    assert admin_znodes_cleaned([], [], state).validity == "invalid"


# ---- metadata --------------------------------------------------------------------------------------


def views(**per_broker: dict[str, dict[int, MetadataPartition]] | None) -> dict[int, Any]:
    return {int(b[1:]): v for b, v in per_broker.items()}


GOOD = {"t": {0: MetadataPartition(1, (1, 2), (1, 2))}}


@pytest.mark.parametrize(
    ("broker_view", "problem"),
    [
        ({"t": {0: MetadataPartition(2, (1, 2), (1, 2))}}, "t-0 leader 2 replicas [1, 2] isr [1, 2]"),
        ({"t": {0: MetadataPartition(1, (2, 1), (1, 2))}}, "t-0 leader 1 replicas [2, 1]"),
        ({"t": {0: MetadataPartition(1, (1, 2), (1,))}}, "t-0 leader 1 replicas [1, 2] isr [1]; ZooKeeper"),
        ({}, "does not show t-0"),
        ({**GOOD, "old": {0: MetadataPartition(1, (1,), (1,))}}, "shows topic 'old'"),
    ],
    ids=["leader", "replicas", "isr", "missing", "extra-topic"],
)
def test_a_broker_whose_metadata_differs_from_zookeeper_is_invalid(
    broker_view: dict[str, dict[int, MetadataPartition]], problem: str
) -> None:
    state = final_state(
        {"t": {0: [1, 2]}}, {("t", 0): (1, 3, [1, 2])}, metadata=views(b1=GOOD, b2=broker_view, b3=GOOD)
    )
    v = metadata_agrees_with_zookeeper([], None, state)
    assert v.validity == "invalid"
    assert problem in v.message
    assert "broker 2:" in v.message
    assert [e["broker"] for e in v.evidence] == [2]


def test_isr_order_does_not_matter_but_a_missing_view_makes_it_unknown() -> None:
    reordered = {"t": {0: MetadataPartition(1, (1, 2), (2, 1))}}
    state = final_state(
        {"t": {0: [1, 2]}}, {("t", 0): (1, 3, [1, 2])}, metadata=views(b1=GOOD, b2=reordered, b3=GOOD)
    )
    assert metadata_agrees_with_zookeeper([], None, state).validity == "valid"
    missing = dataclasses.replace(state, metadata=views(b1=GOOD, b2=None))
    v = metadata_agrees_with_zookeeper([], None, missing)
    assert v.validity == "unknown"
    assert "no metadata view of live broker 2" in v.message


def test_topics_being_deleted_and_partitions_without_state_are_not_expected_in_metadata() -> None:
    state = final_state(
        {"t": {0: [1, 2]}, "d": {0: [1]}, "n": {0: [9]}},
        {("t", 0): (1, 3, [1, 2]), ("d", 0): (-1, 1, [1])},
        delete_topics=frozenset({"d"}),
        metadata=views(b1=GOOD, b2=GOOD, b3=GOOD),
    )
    assert metadata_agrees_with_zookeeper([], None, state).validity == "valid"


def _deleted_while_broker_2_away(*, away: bool) -> Log:
    """``old`` deleted (request, then the controller's deletes); broker 2's session expires and it
    registers again in the middle (seed 2018 of ``zk-session``) — or it stays registered."""
    log = Log()
    for b in (1, 2, 3):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x51, 1)
    log.create_topic(ADMIN, "old", {0: [1]})
    log.write(ADMIN, create("/admin/delete_topics/old"))
    if away:  # the expired session's closeSession takes its ephemeral registration along
        log.write(0x52, TxnOp("closeSession", closed_paths=("/brokers/ids/2",)))
    log.fenced(0x51, delete("/brokers/topics/old"))
    log.fenced(0x51, delete("/admin/delete_topics/old"))
    if away:
        log.write(0x62, create("/brokers/ids/2", None, ephemeral=True))
    return log


def test_a_deleted_topic_kept_by_a_broker_that_was_away_during_the_deletion_is_kafkas_behaviour() -> None:
    stale = {**GOOD, "old": {0: MetadataPartition(1, (1,), (1,))}}
    state = final_state(
        {"t": {0: [1, 2]}}, {("t", 0): (1, 3, [1, 2])}, metadata=views(b1=GOOD, b2=stale, b3=GOOD)
    )
    away = _deleted_while_broker_2_away(away=True).records
    v = metadata_agrees_with_zookeeper([], away, state)
    assert v.validity == "valid"
    assert v.excused == {
        "deleted_topic_kept_by_absent_broker": ("topic shown but not in ZooKeeper broker 2: old",)
    }
    # a broker that stayed registered must have dropped the topic
    stayed = _deleted_while_broker_2_away(away=False).records
    v = metadata_agrees_with_zookeeper([], stayed, state)
    assert v.validity == "invalid"
    assert "broker 2: shows topic 'old'" in v.message
    # … and so must one whose journal shows it was told (an applied UpdateMetadata with leader -2)
    told = request(7, "UpdateMetadata", 2, [("old", 0, 1, 0)])
    told = dataclasses.replace(told, partitions=(dataclasses.replace(told.partitions[0], leader=-2),))
    with_journal = dataclasses.replace(state, journals={2: (told,)})
    assert metadata_agrees_with_zookeeper([], away, with_journal).validity == "invalid"


def test_admin_history_ops_unrelated_to_liveness_change_nothing() -> None:
    h = history_of(("client-0", "preferred_election", {"partitions": [{"topic": "t", "partition": 0}]}, "ok"))
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 0, [1, 2])})
    assert all(c(h.ops, [], state).is_valid for c in ALL)
    assert ADMIN  # the admin session id is shared with the safety tests' logs


def _deleted_while_broker_2_cut_off(*, replaced: bool) -> Log:
    """``old`` deleted by controller 1 (epoch 1) while broker 2, still registered, cannot be
    reached; then (``replaced``) controller 1 gives way to 3 (epoch 2) — partition seed 2606."""
    log = Log()
    for b in (1, 2, 3):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x51, 1)
    log.create_topic(ADMIN, "old", {0: [1]})
    log.time_ms += 1000
    log.write(ADMIN, create("/admin/delete_topics/old"))
    log.fenced(0x51, delete("/brokers/topics/old"))
    log.fenced(0x51, delete("/admin/delete_topics/old"))
    if replaced:
        log.time_ms += 1000
        log.write(0x51, delete("/controller"))
        log.elect(0x53, 3)
    return log


def test_a_deleted_topics_notice_lost_with_its_controller_is_kafkas_behaviour() -> None:
    stale = {**GOOD, "old": {0: MetadataPartition(1, (1,), (1,))}}
    state = final_state(
        {"t": {0: [1, 2]}}, {("t", 0): (1, 3, [1, 2])}, metadata=views(b1=GOOD, b2=stale, b3=GOOD)
    )
    deleted_s = (1_700_000_000_000 + 1000) / 1000
    before = dataclasses.replace(request(1, "UpdateMetadata", 1), sent_s=deleted_s - 0.5)
    after = dataclasses.replace(request(2, "UpdateMetadata", 1), sent_s=deleted_s + 0.2)
    cut_off = dataclasses.replace(state, journals={2: (before,)})
    replaced = _deleted_while_broker_2_cut_off(replaced=True).records
    v = metadata_agrees_with_zookeeper([], replaced, cut_off)
    assert v.validity == "valid"
    assert v.excused == {
        "deleted_topic_kept_when_its_notice_died_with_the_controller": (
            "topic shown but not in ZooKeeper broker 2: old",
        )
    }
    # the same controller still in charge resends the notice until it gets through
    kept = _deleted_while_broker_2_cut_off(replaced=False).records
    assert metadata_agrees_with_zookeeper([], kept, cut_off).validity == "invalid"
    # a slow link too (admin-api seed 270): it heard from the deleting controller, not the notice
    slow = dataclasses.replace(state, journals={2: (before, after)})
    assert metadata_agrees_with_zookeeper([], replaced, slow).validity == "valid"
    # a broker whose journal shows the notice applied must have dropped the topic
    notice = request(3, "UpdateMetadata", 1, [("old", 0, 1, 0)])
    notice = dataclasses.replace(notice, partitions=(dataclasses.replace(notice.partitions[0], leader=-2),))
    told = dataclasses.replace(state, journals={2: (before, notice)})
    v = metadata_agrees_with_zookeeper([], replaced, told)
    assert v.validity == "invalid"
    assert "broker 2: shows topic 'old'" in v.message


def test_a_replica_left_over_from_a_deleted_topic_stalls_the_new_topics_reassignment_as_in_kafka() -> None:
    """process seed 177 (simulated): broker 3 deleted its t1-1, a reassignment resumed during the
    deletion re-created it at leader epoch 7, and t1 created again is refused there (epochs 0, 1
    answered 11): the new t1-1's reassignment onto 1 and 2 never completes."""
    log = Log()
    for b in (1, 2, 3):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x51, 1)
    log.create_topic(ADMIN, "t1", {1: [2, 3, 1]})
    log.write(ADMIN, create("/admin/delete_topics/t1"))
    log.fenced(0x51, delete("/brokers/topics/t1"))
    log.fenced(0x51, delete("/admin/delete_topics/t1"))
    log.create_topic(ADMIN, "t1", {1: [3]})
    state = final_state(topics={}, states={}, live=(1, 2, 3))
    stuck = TopicState(0x90, {1: (2, 3, 1)}, {1: (2, 1)}, {1: ()})
    state = dataclasses.replace(state, topics={"t1": stuck})

    def sent(seq: int, kind: str, epoch: int | None, code: int, delete: bool | None = None) -> Any:
        r = request(seq, kind, 1, [("t1", 1, epoch or 0, code)], delete=delete)
        return dataclasses.replace(r, partitions=(dataclasses.replace(r.partitions[0], leader_epoch=epoch),))

    deleted = sent(1, "StopReplica", None, 0, delete=True)
    recreated = sent(2, "LeaderAndIsr", 7, 0)
    refused = sent(3, "LeaderAndIsr", 1, 11)
    stale = dataclasses.replace(state, journals={3: (deleted, recreated, refused)})
    v = reassignments_completed([], log.records, stale)
    assert v.validity == "valid"
    assert v.excused == {"stale_replica_outlives_its_deleted_topic": ("partition still reassigning t1-1",)}
    # without the re-created replica (its deletion held) the stalled reassignment is a violation
    clean = dataclasses.replace(state, journals={3: (deleted, refused)})
    assert reassignments_completed([], log.records, clean).validity == "invalid"
    # and a broker that took the new topic's epoch is no excuse either
    taken = dataclasses.replace(state, journals={3: (deleted, recreated, sent(3, "LeaderAndIsr", 8, 0))})
    assert reassignments_completed([], log.records, taken).validity == "invalid"


def _api_abandoned_log(*, then: str | None = None, cancelled: bool = False, same_target: bool = False) -> Log:
    """Seed 918 of ``admin-api`` (simulated) in miniature. t0-1 [3] was created while broker 3 was
    down, so it has no state; an API reassignment to [3, 1] is written into the topic znode (U1)
    and throws at A1 (answered -1). t0 and t1 are then queued for deletion; t1's deletion waits for
    broker 3. When 3 registers, onBrokerStartup resumes t0-1's reassignment first (3 is a target),
    which throws again (t0 is queued for deletion: never elected), so t1's deletion is not resumed.

    ``then``: "failover" (a new controller), "broker-2" (2, hosting a t1 replica, registers
    again afterwards: its startup has nothing to resume and resumes t1's deletion)."""
    log = Log()
    for b in (1, 2):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x52, 2)
    log.create_topic(ADMIN, "t1", {0: [2, 3], 1: [3, 1]})
    log.set_state(0x52, "t1", 0, state_data(2, 0, [2]))
    log.set_state(0x52, "t1", 1, state_data(1, 0, [1]))
    log.create_topic(ADMIN, "t0", {0: [2], 1: [3]})
    log.set_state(0x52, "t0", 0, state_data(2, 0, [2]))
    mid = b'{"version":2,"partitions":{"0":[2],"1":[3,1]},"adding_replicas":{"1":[1]},"removing_replicas":{}}'
    if same_target:  # a znode reassignment of t0-1 onto its own [3]: no U1, phase B throws at B3
        entry = b'{"version":1,"partitions":[{"topic":"t0","partition":1,"replicas":[3]}]}'
        log.write(ADMIN, create("/admin/reassign_partitions", entry))
        log.fenced(0x52, delete("/admin/reassign_partitions"))  # removed as failed
    else:
        log.fenced(0x52, set_data("/brokers/topics/t0", mid, 1))  # U1, then A1 throws: no state
    if cancelled:  # back to [3] (U1 again); phase B throws at B3: still among the reassignments
        log.fenced(0x52, set_data("/brokers/topics/t0", topic_data({0: [2], 1: [3]}), 2))
    log.write(ADMIN, create("/admin/delete_topics/t0"))
    log.write(ADMIN, create("/admin/delete_topics/t1"))
    log.write(0x53, create("/brokers/ids/3", None, ephemeral=True))  # its startup throws
    if then == "failover":
        log.write(0x52, delete("/controller"))
        log.elect(0x51, 1)
    elif then == "broker-2":
        log.write(0x52, delete("/brokers/ids/2"))
        log.write(0x54, create("/brokers/ids/2", None, ephemeral=True))
    return log


@pytest.mark.parametrize(
    ("reassign", "log_kw"),
    [
        (("api-0", "reassign_api", {"1": [3, 1]}, "info"), "cancelled"),
        (("client-0", "reassign", {"1": [3]}, "ok"), "same_target"),
    ],
    ids=["cancelled", "own-replicas"],
)
def test_a_reassignment_without_state_that_moves_nothing_still_throws_at_the_next_startup(
    reassign: tuple[str, str, dict[str, list[int]], OpType], log_kw: str
) -> None:
    """admin-api seed 43037 (simulated): the given-up reassignment of t0-1 is cancelled (its topic
    znode back to [3]); process seed 52676: a znode reassignment of t0-1 onto the replicas it has
    writes nothing, its entry removed as failed. Either way phase B throws at B3 (no leadership)
    before B7, t0-1 stays among the controller's reassignments, broker 3's startup resumes it and
    throws again, and t1's deletion is not resumed."""
    process, f, assignment, outcome = reassign
    h = history_of(
        (process, f, {"topic": "t0", "assignment": assignment}, outcome),
        ("client-0", "delete_topic", {"topic": "t0"}, "ok"),
        ("client-1", "delete_topic", {"topic": "t1"}, "ok"),
    )
    state = final_state(
        {"t0": {0: [2], 1: [3]}, "t1": {0: [2, 3], 1: [3, 1]}},
        {("t0", 0): (-1, 1, [2]), ("t1", 0): (-1, 1, [2]), ("t1", 1): (-1, 1, [1])},
        delete_topics=frozenset({"t0", "t1"}),
    )
    log = _api_abandoned_log(cancelled=log_kw == "cancelled", same_target=log_kw == "same_target")
    v = admin_znodes_cleaned(h.ops, log.records, state)
    assert "deletion request left t1" in v.excused.get("deletion_resumption_lost_to_failed_startup", ())


def test_a_deletion_a_failed_broker_startup_did_not_resume_is_excused_until_another_resumes_it() -> None:
    h = history_of(
        ("api-0", "reassign_api", {"topic": "t0", "assignment": {"1": [3, 1]}}, "info"),
        ("client-0", "delete_topic", {"topic": "t0"}, "ok"),
        ("client-1", "delete_topic", {"topic": "t1"}, "ok"),
    )
    state = final_state(
        {"t0": {0: [2], 1: [3, 1]}, "t1": {0: [2, 3], 1: [3, 1]}},
        {("t0", 0): (-1, 1, [2]), ("t1", 0): (-1, 1, [2]), ("t1", 1): (-1, 1, [1])},
        delete_topics=frozenset({"t0", "t1"}),
    )
    v = admin_znodes_cleaned(h.ops, _api_abandoned_log().records, state)
    assert v.validity == "valid", v.message
    assert v.excused == {
        "deletion_stalled_by_abandoned_reassignment": ("deletion request left t0",),
        "deletion_resumption_lost_to_failed_startup": ("deletion request left t1",),
    }
    # a failover resumes every deletion; another broker's clean startup resumes t1's
    for then in ("failover", "broker-2"):
        v = admin_znodes_cleaned(h.ops, _api_abandoned_log(then=then).records, state)
        assert v.validity == "invalid", then
        assert "/admin/delete_topics/t1 left" in v.message, then


def test_an_api_reassignment_given_up_without_state_is_excused_while_its_topic_cannot_elect() -> None:
    """The API path leaves no /admin/reassign_partitions entry to see removed: U1 of a partition
    without a state is the sign. Broker 3 registering does not resume it (t0 is queued for
    deletion, so t0-1 still has no state); a failover does."""
    h = history_of(("api-0", "reassign_api", {"topic": "t0", "assignment": {"1": [3, 1]}}, "info"))
    state = final_state({"t0": {0: [2], 1: [3, 1]}}, {("t0", 0): (2, 1, [2])})
    mid = dataclasses.replace(
        state, topics={"t0": dataclasses.replace(state.topics["t0"], adding={1: (1,)}, removing={})}
    )
    v = reassignments_completed(h.ops, _api_abandoned_log().records, mid)
    assert v.validity == "valid", v.message
    # answered -1 (info): no target is owed, only the partition left mid-reassignment is excused
    assert v.excused == {"reassignment_abandoned_without_state": ("partition still reassigning t0-1",)}
    v = reassignments_completed(h.ops, _api_abandoned_log(then="failover").records, mid)
    assert v.validity == "invalid"
    assert "t0-1 still reassigning (adding [1], removing [])" in v.message


def _reassigning_name_log(*, reassign: bool = True, failover: bool = False) -> Log:
    """Seed 2534 of ``partition`` (simulated) in miniature: an API reassignment of t2-1 is under way
    when t2's deletion is requested; a second change under /admin/delete_topics (t4's request)
    halts it for "topic reassignment in progress", yet it completes. t2-1 stays in the controller's
    reassigning set and t2 in its ineligible set: t2 created again is not deleted — each later
    change under /admin/delete_topics (t4's request removed) halts it again."""
    log = Log()
    for b in (1, 2, 3):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x52, 2)
    log.create_topic(ADMIN, "t4", {0: [1]})
    log.set_state(0x52, "t4", 0, state_data(1, 0, [1]))
    log.create_topic(ADMIN, "t2", {0: [2], 1: [3]})
    log.set_state(0x52, "t2", 0, state_data(2, 0, [2]))
    log.set_state(0x52, "t2", 1, state_data(3, 0, [3]))
    log.write(ADMIN, create("/admin/delete_topics/t2"))
    if reassign:
        mid = (
            b'{"version":2,"partitions":{"0":[2],"1":[2,1,3]},"adding_replicas":{"1":[2,1]},'
            b'"removing_replicas":{}}'
        )
        log.fenced(0x52, set_data("/brokers/topics/t2", mid, 1))
    log.write(ADMIN, create("/admin/delete_topics/t4"))
    for op in (
        delete("/brokers/topics/t2/partitions/0/state"),
        delete("/brokers/topics/t2/partitions/0"),
        delete("/brokers/topics/t2/partitions/1/state"),
        delete("/brokers/topics/t2/partitions/1"),
        delete("/brokers/topics/t2/partitions"),
        delete("/brokers/topics/t2"),
        delete("/admin/delete_topics/t2"),
    ):
        log.fenced(0x52, op)
    log.create_topic(ADMIN, "t2", {0: [3, 1], 1: [1, 2]})
    log.versions.pop("/brokers/topics/t2/partitions/0/state", None)
    log.versions.pop("/brokers/topics/t2/partitions/1/state", None)
    log.set_state(0x52, "t2", 0, state_data(3, 0, [3, 1]))
    log.set_state(0x52, "t2", 1, state_data(1, 0, [1, 2]))
    log.write(ADMIN, create("/admin/delete_topics/t2"))
    log.fenced(0x52, delete("/admin/delete_topics/t4"))
    if failover:
        log.write(0x52, delete("/controller"))
        log.elect(0x51, 1)
    return log


def test_a_reassignment_under_way_when_its_topic_was_deleted_halts_deleting_the_name_again() -> None:
    h = history_of(("client-0", "delete_topic", {"topic": "t2"}, "ok"))
    log = _reassigning_name_log()
    created = next(r.zxid for r in reversed(log.records) if r.txn.path == "/brokers/topics/t2")
    state = final_state(
        {"t2": {0: [3, 1], 1: [1, 2]}, "t4": {0: [1]}},
        {("t2", 0): (3, 0, [3, 1]), ("t2", 1): (1, 0, [1, 2]), ("t4", 0): (1, 0, [1])},
        delete_topics=frozenset({"t2"}),
    )
    state = dataclasses.replace(
        state, topics={**state.topics, "t2": dataclasses.replace(state.topics["t2"], czxid=created)}
    )
    v = admin_znodes_cleaned(h.ops, log.records, state)
    assert v.validity == "valid", v.message
    assert v.excused == {"deletion_halt_outlives_topic": ("deletion request left t2",)}
    # no reassignment under way, or a failover since (it rebuilds both sets): a violation
    for variant in ({"reassign": False}, {"failover": True}):
        log = _reassigning_name_log(**variant)
        v = admin_znodes_cleaned(h.ops, log.records, state)
        assert v.validity == "invalid", variant
        assert "/admin/delete_topics/t2 left" in v.message, variant


def test_a_lost_notice_of_an_earlier_topic_of_the_name_is_kafkas_behaviour_per_partition() -> None:
    """partition seed 18319 (simulated): ``old`` (partitions 0 and 1) is deleted while broker 2 is
    cut off and its controller is replaced; a new ``old`` with partition 0 only is created and
    deleted, and broker 2 applies that deletion's notice for partition 0. Its cache still holds
    ``old``-1 (Kafka drops a deleted topic partition by partition): the first notice died with
    its controller. Told of both partitions, the broker must not show ``old``."""
    log = _deleted_while_broker_2_cut_off(replaced=True)
    log.create_topic(ADMIN, "old", {0: [1]})
    log.write(ADMIN, create("/admin/delete_topics/old"))
    log.fenced(0x53, delete("/brokers/topics/old"))
    log.fenced(0x53, delete("/admin/delete_topics/old"))
    stale = {**GOOD, "old": {1: MetadataPartition(1, (1,), (1,))}}
    state = final_state(
        {"t": {0: [1, 2]}}, {("t", 0): (1, 3, [1, 2])}, metadata=views(b1=GOOD, b2=stale, b3=GOOD)
    )

    def deleted(seq: int, *partitions: int) -> Any:
        r = request(seq, "UpdateMetadata", 2, [("old", p, 1, 0) for p in partitions])
        return dataclasses.replace(
            r, partitions=tuple(dataclasses.replace(p, leader=-2) for p in r.partitions)
        )

    live = request(1, "UpdateMetadata", 1, [("old", 0, 0, 0), ("old", 1, 0, 0)])
    second = request(2, "UpdateMetadata", 2, [("old", 0, 0, 0)])
    v = metadata_agrees_with_zookeeper(
        [], log.records, dataclasses.replace(state, journals={2: (live, second, deleted(3, 0))})
    )
    assert v.validity == "valid", v.message
    assert list(v.excused) == ["deleted_topic_kept_when_its_notice_died_with_the_controller"]
    told = dataclasses.replace(state, journals={2: (live, second, deleted(3, 0, 1))})
    assert metadata_agrees_with_zookeeper([], log.records, told).validity == "invalid"


@pytest.mark.parametrize("then", [None, "broker-2"])
def test_a_reassignment_waiting_for_a_stalled_deletion_is_explained_with_it(then: str | None) -> None:
    """admin-api seed 35885 (simulated) in miniature: t1-0 is being reassigned to [2, 3, 1] with no
    live leader when t1 is queued for deletion; the deletion's resumption is lost (the quirk of
    :func:`test_a_deletion_a_failed_broker_startup_did_not_resume_is_excused_until_another_resumes_it`),
    and a partition of a topic queued for deletion is never elected: the reassignment waits with
    the deletion. Once another registration resumes the deletion, nothing explains it."""
    log = _api_abandoned_log(then=then)
    reassigning = topic_data({0: [2, 3, 1], 1: [3, 1]}, {0: [1]})
    log.fenced(0x52, set_data("/brokers/topics/t1", reassigning, log.next_version("/brokers/topics/t1")))
    h = history_of(
        ("client-0", "reassign", {"topic": "t1", "assignment": {"0": [2, 3, 1]}}, "ok"),
        ("client-1", "delete_topic", {"topic": "t1"}, "ok"),
    )
    state = final_state(
        {"t0": {0: [2], 1: [3, 1]}, "t1": {0: [2, 3, 1], 1: [3, 1]}},
        {("t0", 0): (-1, 1, [2]), ("t1", 0): (-1, 1, [2]), ("t1", 1): (-1, 1, [1])},
        delete_topics=frozenset({"t0", "t1"}),
        live=(1, 3),
    )
    t1 = TopicState(0x41, {0: (2, 3, 1), 1: (3, 1)}, {0: (1,)}, {})
    state = dataclasses.replace(state, topics={**state.topics, "t1": t1})
    v = reassignments_completed(h.ops, log.records, state)
    if then is None:
        assert v.validity == "valid", v.message
        assert v.excused["reassignment_waits_for_a_stalled_deletion"] == ("partition still reassigning t1-0",)
    else:
        assert "reassignment_waits_for_a_stalled_deletion" not in v.excused
        assert v.validity != "valid"
