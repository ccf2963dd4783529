"""A reassignment entry stranded by a topic deletion (Kafka 2.5.1) against ``admin_znodes_cleaned``.

The logs are hand-made after chaos run partition-00001-s2001 (campaign seed 2000): ``t0-0`` is
being reassigned [3, 1] → [2, 3] while broker 3 is cut off; ``t0``'s deletion starts at once (a
first request is not halted, see the quirk ``reassignment_stranded_by_deletion``), halts for
offline replicas and for the reassignment (re-run on broker startup), and ``onBrokerStartup``
resumes it each time (KafkaController.scala@2.5.1 L370-378, TopicDeletionManager.scala L134-142)
until it completes.
Kafka leaves ``t0-0`` in ``/admin/reassign_partitions`` until the next controller failover.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

import pytest

from chaos.checkers import PartitionState, Timeline, TopicState
from chaos.checkers.cleanup import REASSIGN_PARTITIONS, admin_znodes_cleaned
from chaos.checkers.liveness import reassignments_completed
from chaos.checkers.quirks.reassignment import stranded_entries
from probes import TopicPartition, TxnRecord
from tests.chaos.checkers.builders import (
    ADMIN,
    SESSION_A,
    SESSION_B,
    Log,
    create,
    delete,
    final_state,
    history_of,
    set_data,
    state_data,
    state_path,
    topic_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

T0_0 = TopicPartition("t0", 0)


def stranded_reassignments(records: Sequence[TxnRecord]) -> dict[TopicPartition, int]:
    return stranded_entries(Timeline.of(records))


def reassign_data(entries: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    parts = [{"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in entries.items()]
    return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":")).encode()


def delete_topic(log: Log, topic: str, partitions: int) -> None:
    """``completeDeleteTopic``: the topic's znodes recursively, then the deletion request."""
    for p in range(partitions):
        log.fenced(SESSION_A, delete(state_path(topic, p)))
        log.fenced(SESSION_A, delete(f"/brokers/topics/{topic}/partitions/{p}"))
    log.fenced(SESSION_A, delete(f"/brokers/topics/{topic}/partitions"))
    log.fenced(SESSION_A, delete(f"/brokers/topics/{topic}"))
    log.fenced(SESSION_A, delete(f"/admin/delete_topics/{topic}"))


def reassigned_then_deleted(*, started: bool = True, resumed: bool = True) -> Log:
    """t0-0 reassigned to [2, 3] (U1 written by the controller when ``started``), t0 deleted
    (after broker 1, a replica host, registered again when ``resumed``)."""
    log = Log()
    log.elect(SESSION_A, 2)
    log.create_topic(ADMIN, "t0", {0: [3, 1], 1: [1, 2]})
    log.set_state(SESSION_A, "t0", 0, state_data(3, 0, [3, 1]))
    log.set_state(SESSION_A, "t0", 1, state_data(1, 0, [1, 2]))
    log.write(ADMIN, create(REASSIGN_PARTITIONS, reassign_data({("t0", 0): [2, 3]})))
    if started:
        u1 = topic_data({0: [2, 3, 1], 1: [1, 2]}, adding={0: [2]})
        log.fenced(SESSION_A, set_data("/brokers/topics/t0", u1, 1))
    log.write(ADMIN, create("/admin/delete_topics/t0"))
    if resumed:
        log.write(0x55, create("/brokers/ids/1", None, ephemeral=True))
    delete_topic(log, "t0", 2)
    return log


HISTORY = history_of(
    ("client-1", "reassign", {"topic": "t0", "assignment": {"0": [2, 3]}}, "ok"),
    ("client-0", "delete_topic", {"topic": "t0"}, "ok"),
).ops
LEFT = {T0_0: (2, 3)}


def test_an_entry_stranded_by_a_deletion_mid_reassignment_is_what_kafka_leaves() -> None:
    log = reassigned_then_deleted()
    assert set(stranded_reassignments(log.records)) == {T0_0}
    state = dataclasses.replace(final_state(), reassign_partitions=LEFT)
    v = admin_znodes_cleaned(HISTORY, log.records, state)
    assert v.validity == "valid", v.message
    assert v.excused == {"reassignment_stranded_by_deletion": ("reassignment entry left t0-0",)}
    assert "excused as Kafka 2.5.1 behaviour: reassignment_stranded_by_deletion" in v.message


@pytest.mark.parametrize("partitions", [{0: [1]}, {0: [1, 2], 1: [2, 3]}], ids=["smaller", "as-large"])
def test_the_entry_stays_when_the_name_is_created_again(partitions: dict[int, list[int]]) -> None:
    log = reassigned_then_deleted()
    log.create_topic(ADMIN, "t0", partitions)
    state = dataclasses.replace(final_state({"t0": partitions}), reassign_partitions=LEFT)
    assert admin_znodes_cleaned(HISTORY, log.records, state).validity == "valid"


def test_a_controller_failover_after_the_deletion_must_clean_the_entry() -> None:
    log = reassigned_then_deleted()
    log.elect(SESSION_B, 1)  # initializePartitionReassignments re-reads the znode
    assert stranded_reassignments(log.records) == {}
    state = dataclasses.replace(final_state(), reassign_partitions=LEFT)
    v = admin_znodes_cleaned(HISTORY, log.records, state)
    assert v.validity == "invalid"
    assert v.evidence[0]["path"] == REASSIGN_PARTITIONS


def test_an_entry_the_controller_had_not_started_must_be_removed() -> None:
    """Not yet processed when the topic went: ``processZkPartitionReassignment`` later finds the
    partition unknown and removes it (KafkaController.scala@2.5.1 L1541-1546, L662-668)."""
    log = reassigned_then_deleted(started=False)
    state = dataclasses.replace(final_state(), reassign_partitions=LEFT)
    assert admin_znodes_cleaned(HISTORY, log.records, state).validity == "invalid"


def test_a_first_deletion_request_is_not_halted_by_the_reassignment() -> None:
    """Run zk-session-00013-s2013: no broker registered between the request and the deletion;
    Kafka 2.5.1 does not halt a first request (KafkaController L1510-1518 marks before it
    enqueues; TopicDeletionManager L170-177 only halts queued topics)."""
    log = reassigned_then_deleted(resumed=False)
    assert set(stranded_reassignments(log.records)) == {T0_0}
    state = dataclasses.replace(final_state(), reassign_partitions=LEFT)
    assert admin_znodes_cleaned(HISTORY, log.records, state).validity == "valid"


def test_a_stranded_entry_does_not_excuse_another_pending_one() -> None:
    log = reassigned_then_deleted()
    left = {**LEFT, TopicPartition("t1", 0): (1, 2)}
    state = dataclasses.replace(final_state(), reassign_partitions=left)
    assert admin_znodes_cleaned(HISTORY, log.records, state).validity == "invalid"


def test_rewriting_the_znode_without_the_entry_unstrands_it() -> None:
    log = reassigned_then_deleted()
    log.fenced(SESSION_A, set_data(REASSIGN_PARTITIONS, reassign_data({("t1", 0): [1, 2]}), 1))
    assert stranded_reassignments(log.records) == {}


def test_without_a_transaction_log_a_deleted_topics_entry_is_unknown_and_others_invalid() -> None:
    state = dataclasses.replace(final_state(), reassign_partitions=LEFT)
    assert admin_znodes_cleaned(HISTORY, None, state).validity == "unknown"
    assert admin_znodes_cleaned([], None, state).validity == "invalid"


def test_a_deletion_request_halted_by_a_broker_down_after_heal_is_unknown_not_invalid() -> None:
    """Run composed-00014-s2014: broker 1 never came back, so Kafka keeps the deletion halted for
    offline replicas (TopicDeletionManager.scala@2.5.1 L291-317) and its request znode with it."""
    h = history_of(("client-1", "delete_topic", {"topic": "t1"}, "ok")).ops
    log = Log()
    log.write(0x55, create("/brokers/ids/1", None, ephemeral=True))
    down = final_state(
        {"t1": {0: [1, 2]}}, {("t1", 0): (2, 2, [2])}, live=(2, 3), delete_topics=frozenset({"t1"})
    )
    v = admin_znodes_cleaned(h, log.records, down)
    assert v.validity == "unknown"
    assert "not live after heal" in v.message
    live = dataclasses.replace(down, live_brokers=frozenset({1, 2, 3}))
    assert admin_znodes_cleaned(h, log.records, live).validity == "invalid"


def test_a_reassignment_waiting_on_a_leader_down_after_heal_is_unknown_not_invalid() -> None:
    """Run composed-00019-s2019: broker 1 (t0-0's leader) never came back and t0 is queued for
    deletion, so Kafka elects no leader (PartitionStateMachine.scala@2.5.1 L66-71) and adding
    replica 3 can never join the ISR."""
    topics = {"t0": TopicState(0x40, {0: (1, 2, 3)}, adding={0: (3,)})}
    down = dataclasses.replace(
        final_state(live=(2, 3), delete_topics=frozenset({"t0"})),
        topics=topics,
        partition_states={T0_0: PartitionState(1, 3, (1, 2), 1, 3)},
    )
    v = reassignments_completed([], [], down)
    assert v.validity == "unknown"
    assert "target replicas on [1] not live after heal" in v.message
    leaderless = dataclasses.replace(
        down,
        live_brokers=frozenset({1, 2, 3}),
        partition_states={T0_0: PartitionState(-1, 3, (3,), 1, 3)},
    )
    v = reassignments_completed([], [], leaderless)
    assert v.validity == "unknown"
    assert "no live leader after heal (leader -1)" in v.message
    healed = dataclasses.replace(down, live_brokers=frozenset({1, 2, 3}))
    assert reassignments_completed([], [], healed).validity == "invalid"


def test_a_reassignment_entry_targeting_a_broker_down_after_heal_is_unknown() -> None:
    """Run partition-00036-s2036: broker 1 never came back; t3-0 targets [3, 1, 2]."""
    log = Log()
    log.write(0x55, create("/brokers/ids/1", None, ephemeral=True))
    entry = {TopicPartition("t3", 0): (3, 1, 2)}
    down = dataclasses.replace(final_state(live=(2, 3)), reassign_partitions=entry)
    assert admin_znodes_cleaned([], log.records, down).validity == "unknown"
    healed = dataclasses.replace(down, live_brokers=frozenset({1, 2, 3}))
    assert admin_znodes_cleaned([], log.records, healed).validity == "invalid"


def test_a_stranded_entry_halts_deleting_a_topic_created_again_under_that_name() -> None:
    """partition seed 2684 (simulated): t0 is created again after the deletion that stranded t0-0,
    then deleted; Kafka 2.5.1 still counts t0-0 among its reassignments and marks the new t0
    ineligible for deletion until a failover."""
    from chaos.checkers.liveness import deletions_completed  # noqa: PLC0415

    log = reassigned_then_deleted()
    log.create_topic(ADMIN, "t0", {0: [1]})
    log.write(ADMIN, create("/admin/delete_topics/t0"))
    history = history_of(
        ("client-1", "reassign", {"topic": "t0", "assignment": {"0": [2, 3]}}, "ok"),
        ("client-0", "delete_topic", {"topic": "t0"}, "ok"),
        ("client-0", "create_topic", {"topic": "t0", "assignment": {"0": [1]}}, "ok"),
        ("client-0", "delete_topic", {"topic": "t0"}, "ok"),
    ).ops
    kept = final_state({"t0": {0: [1]}}, {("t0", 0): (1, 0, [1])}, delete_topics=frozenset({"t0"}))
    kept = dataclasses.replace(kept, reassign_partitions=LEFT)
    v = deletions_completed(history, log.records, kept)
    assert v.validity == "valid", v.message
    assert "stranded_reassignment_halts_deleting_the_name_again" in v.excused
    # after a failover the new controller's context has no such partition: the halt is a violation
    log.elect(SESSION_B, 3)
    assert deletions_completed(history, log.records, kept).validity == "invalid"
