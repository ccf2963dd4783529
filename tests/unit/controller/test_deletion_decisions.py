"""Topic deletion choices (decisions.deletion): worked rows and "a dumb version agrees" properties.

Each oracle below is a line-by-line transliteration of the Kafka 2.5.1 code the decision came from
(TopicDeletionManager.scala, KafkaController.processTopicDeletion /
processTopicDeletionStopReplicaResponseReceived), with its mutable sets and early exits."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkawire.states import TopicPartition
from reference_controller.controller.decisions import deletion
from reference_controller.controller.decisions.states import ReplicaState

pytestmark = pytest.mark.unit
R = ReplicaState

states = st.lists(st.sampled_from(list(ReplicaState)), max_size=6)
topic_names = st.sampled_from(["a", "b", "c", "d"])
tps = st.builds(TopicPartition, topic_names, st.integers(0, 3))


# ---- resumeDeletions ---------------------------------------------------------------------------
def kafka_resume_deletions(
    replica_states: list[ReplicaState], marked_ineligible: bool, enabled: bool
) -> deletion.DeletionStep:
    """`resumeDeletions` for one queued topic, as Kafka writes it."""
    queued, complete, retry = True, False, False
    if all(s == R.ReplicaDeletionSuccessful for s in replica_states):  # areAllReplicasInState
        complete, queued = True, False  # completeDeleteTopic dequeues it
    elif not any(s == R.ReplicaDeletionStarted for s in replica_states) and any(
        s == R.ReplicaDeletionIneligible for s in replica_states
    ):
        retry = True
    in_progress = enabled and any(s == R.ReplicaDeletionStarted for s in replica_states)
    ineligible = not enabled or marked_ineligible
    return deletion.DeletionStep(complete, retry, queued and not in_progress and not ineligible)


@given(states, st.booleans(), st.booleans())
def test_deletion_step_agrees_with_kafkas_resume_deletions(
    replica_states: list[ReplicaState], marked: bool, enabled: bool
) -> None:
    assert deletion.deletion_step(replica_states, marked, enabled) == kafka_resume_deletions(
        replica_states, marked, enabled
    )


@pytest.mark.parametrize(
    ("replica_states", "marked", "step"),
    [
        ([R.ReplicaDeletionSuccessful] * 2, False, (True, False, False)),
        ([], True, (True, False, False)),  # no replica left counts as all deleted
        ([R.ReplicaDeletionIneligible, R.OfflineReplica], False, (False, True, True)),
        ([R.ReplicaDeletionIneligible, R.OfflineReplica], True, (False, True, False)),
        ([R.ReplicaDeletionStarted, R.ReplicaDeletionIneligible], False, (False, False, False)),
        ([R.OnlineReplica, R.OnlineReplica], False, (False, False, True)),
    ],
)
def test_deletion_step_rows(replica_states: list[ReplicaState], marked: bool, step: tuple[bool, ...]) -> None:
    assert deletion.deletion_step(replica_states, marked, enabled=True) == deletion.DeletionStep(*step)


def test_nothing_is_started_when_deletion_is_disabled() -> None:
    assert not deletion.deletion_step([R.OnlineReplica], False, enabled=False).start


# ---- onPartitionDeletion -----------------------------------------------------------------------
@given(st.lists(st.tuples(st.integers(0, 9), st.booleans(), st.booleans()), unique_by=lambda r: r[0]))
def test_replica_deletion_plan_agrees_with_kafkas_on_partition_deletion(
    replicas: list[tuple[int, bool, bool]],
) -> None:
    ids = [r for r, _, _ in replicas]
    online = {r for r, up, _ in replicas if up}
    deleted = {r for r, _, done in replicas if done}
    dead: list[int] = []
    retry: list[int] = []
    for r in ids:  # replicasForTopic, partitioned as Kafka does
        if r not in online:
            dead.append(r)
    for r in ids:
        if r not in dead and r not in deleted:
            retry.append(r)
    plan = deletion.replica_deletion_plan(ids, online.__contains__, deleted)
    assert (list(plan.dead), list(plan.retry), plan.topic_ineligible) == (dead, retry, bool(dead))


# ---- StopReplica responses ---------------------------------------------------------------------
@given(st.dictionaries(tps, st.sampled_from([0, 0, 56, 3])), st.sampled_from([0, 0, 11]))
def test_stop_replica_outcome_agrees_with_kafkas_response_handler(
    partition_errors: Mapping[TopicPartition, int], request_error: int
) -> None:
    in_error = (
        set(partition_errors)
        if request_error != 0
        else {tp for tp, code in partition_errors.items() if code != 0}
    )
    deleted = sorted(set(partition_errors) - in_error)
    assert deletion.stop_replica_deletion_outcome(partition_errors, request_error) == (
        sorted(in_error),
        deleted,
    )


def test_a_request_error_fails_partitions_that_answered_none() -> None:
    ok = {TopicPartition("t", 0): 0}
    assert deletion.stop_replica_deletion_outcome(ok, 11) == ([TopicPartition("t", 0)], [])


# ---- processTopicDeletion, fetchTopicDeletionsInProgress ----------------------------------------
@given(st.sets(topic_names), st.sets(topic_names), st.sets(tps))
def test_topic_deletion_requests_agree_with_kafkas_process_topic_deletion(
    requested: set[str], all_topics: set[str], reassigning: set[TopicPartition]
) -> None:
    to_delete = set(requested)
    non_existent = sorted(to_delete - all_topics)
    to_delete -= set(non_existent)
    marked = sorted(to_delete & {tp[0] for tp in reassigning})
    assert deletion.topic_deletion_requests(requested, all_topics, reassigning) == (
        deletion.TopicDeletionRequests(tuple(non_existent), frozenset(to_delete), tuple(marked))
    )


@given(st.sets(topic_names), st.sets(tps))
def test_ineligible_at_failover_is_offline_topics_and_reassigning_topics(
    offline: Collection[str], reassigning: set[TopicPartition]
) -> None:
    expected = set(offline)
    for tp in reassigning:
        expected.add(tp.topic)
    assert deletion.ineligible_at_failover(offline, reassigning) == expected
