"""Every valid and invalid edge of the replica and partition state machines (spec §3.1, §3.2, §3.5)."""

from __future__ import annotations

import itertools
import logging

import pytest

from kafkawire.states import TopicPartition
from reference_controller.controller.context import PartitionAndReplica
from reference_controller.controller.core import KafkaController
from reference_controller.controller.decisions.elections import OfflinePartitionLeaderElectionStrategy
from reference_controller.controller.decisions.states import (
    VALID_PREVIOUS_PARTITION_STATES,
    VALID_PREVIOUS_REPLICA_STATES,
    PartitionState,
    ReplicaState,
)
from reference_controller.logutil import STATE_CHANGE_LOGGER, TRACE, KafkaLayout
from reference_controller.testing.clock import ManualClock
from reference_controller.testing.memory_zk import MemoryZooKeeper
from reference_controller.zkdata import ReplicaAssignment
from tests.unit.controller.harness import broker_info, make_config

pytestmark = pytest.mark.unit
R, P = ReplicaState, PartitionState
TP = TopicPartition("foo", 0)
REPLICA = PartitionAndReplica(TP, 2)


def bare_controller() -> KafkaController:
    ctl = KafkaController(make_config(1), MemoryZooKeeper().client(), ManualClock(), 0)
    ctx = ctl.context
    ctx.epoch = 3
    ctl.context.controllership.active_controller_id = 1
    for b in (1, 2):
        ctx.live_brokers[b] = broker_info(b)
        ctx.live_broker_epochs[b] = 10 + b
    ctx.all_topics.add("foo")
    ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2)))
    return ctl


def test_replica_table_is_kafkas() -> None:
    assert [s.name for s in VALID_PREVIOUS_REPLICA_STATES[R.ReplicaDeletionIneligible]] == [
        "OfflineReplica",
        "ReplicaDeletionStarted",
    ]
    assert [s.value for s in R] == [1, 2, 3, 4, 5, 6, 7]
    assert [s.value for s in P] == [0, 1, 2, 3]


REPLICA_EDGES = list(itertools.product(list(R), list(R)))


@pytest.mark.parametrize(
    ("current", "target"), REPLICA_EDGES, ids=[f"{c.name}->{t.name}" for c, t in REPLICA_EDGES]
)
def test_replica_transition(
    current: ReplicaState, target: ReplicaState, caplog: pytest.LogCaptureFixture
) -> None:
    ctl = bare_controller()
    ctl.context.replica_states[REPLICA] = current
    caplog.set_level(TRACE, logger=STATE_CHANGE_LOGGER)
    ctl.replica_state_machine.handle_state_changes([REPLICA], target)
    valid = current in VALID_PREVIOUS_REPLICA_STATES[target]
    if not valid:
        assert ctl.context.replica_state(REPLICA) == current
        record = next(r for r in caplog.records if r.levelname == "ERROR")
        assert record.getMessage() == (
            "[Controller id=1 epoch=3] Controller 1 epoch 3 initiated state change of replica 2 "
            "for partition "
            f"foo-0 from {current.name} to {target.name} failed"
        )
        assert record.exc_info is not None
        previous = ",".join(s.name for s in VALID_PREVIOUS_REPLICA_STATES[target])
        assert str(record.exc_info[1]) == (
            f"Replica [Topic=foo,Partition=0,Replica=2] should be in the {previous} states before moving to "
            f"{target.name} state. Instead it is in {current.name} state"
        )
        exc_type = record.exc_info[0]
        assert exc_type is not None
        assert f"{exc_type.__module__}.{exc_type.__name__}" == "java.lang.IllegalStateException"
    else:
        assert ctl.context.replica_state(REPLICA) == target
        assert (
            f"Changed state of replica 2 for partition foo-0 from {current.name} to {target.name}"
            in caplog.text
        )
        assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_missing_replica_state_is_non_existent_replica() -> None:
    ctl = bare_controller()
    assert ctl.context.replica_state(REPLICA) == R.NonExistentReplica
    ctl.replica_state_machine.handle_state_changes([REPLICA], R.NewReplica)
    assert ctl.context.replica_state(REPLICA) == R.NewReplica


def test_non_existent_replica_removes_replica_from_assignment() -> None:
    ctl = bare_controller()
    ctl.context.replica_states[REPLICA] = R.ReplicaDeletionSuccessful
    ctl.replica_state_machine.handle_state_changes([REPLICA], R.NonExistentReplica)
    assert ctl.context.partition_replica_assignment(TP) == (1,)
    assert REPLICA not in ctl.context.replica_states


def test_exact_invalid_replica_message_from_spec(caplog: pytest.LogCaptureFixture) -> None:
    ctl = bare_controller()
    ctl.context.replica_states[REPLICA] = R.ReplicaDeletionSuccessful
    ctl.replica_state_machine.handle_state_changes([REPLICA], R.ReplicaDeletionIneligible)
    text = KafkaLayout().format(next(r for r in caplog.records if r.levelno == logging.ERROR))
    assert text.endswith(
        "ERROR [Controller id=1 epoch=3] Controller 1 epoch 3 initiated state change of replica "
        "2 for partition "
        "foo-0 from ReplicaDeletionSuccessful to ReplicaDeletionIneligible failed (state.change.logger)\n"
        "java.lang.IllegalStateException: Replica [Topic=foo,Partition=0,Replica=2] should be in the "
        "OfflineReplica,ReplicaDeletionStarted states before moving to ReplicaDeletionIneligible state. "
        "Instead it is in ReplicaDeletionSuccessful state"
    )


PARTITION_EDGES = list(itertools.product(list(P), list(P)))


@pytest.mark.parametrize(
    ("current", "target"), PARTITION_EDGES, ids=[f"{c.name}->{t.name}" for c, t in PARTITION_EDGES]
)
def test_partition_transition(
    current: PartitionState, target: PartitionState, caplog: pytest.LogCaptureFixture
) -> None:
    ctl = bare_controller()
    ctl.context.partition_states[TP] = current
    caplog.set_level(TRACE, logger=STATE_CHANGE_LOGGER)
    if target == P.OnlinePartition:
        ctl.context.live_brokers.clear()  # no live replica and no state znode: every election fails
    ctl.partition_state_machine.handle_state_changes(
        [TP], target, OfflinePartitionLeaderElectionStrategy(False)
    )
    valid = current in VALID_PREVIOUS_PARTITION_STATES[target]
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    header = (
        f"[Controller id=1 epoch=3] Controller 1 epoch 3 failed to change state for partition foo-0 "
        f"from {current.name} to {target.name}"
    )
    if not valid:
        assert ctl.context.partition_state(TP) == current
        assert errors[0].getMessage() == header
        assert errors[0].exc_info is not None
        previous = ",".join(s.name for s in VALID_PREVIOUS_PARTITION_STATES[target])
        assert str(errors[0].exc_info[1]) == (
            f"Partition foo-0 should be in one of {previous} states before moving to {target.name} state. "
            f"Instead it is in {current.name} state"
        )
    elif target == P.OnlinePartition:
        assert ctl.context.partition_state(TP) == current  # the election failed: state unchanged
        assert errors
        assert errors[0].getMessage().startswith(header.rsplit(" from ", 1)[0])
    else:
        assert ctl.context.partition_state(TP) == target
        assert f"Changed partition foo-0 state from {current.name} to {target.name}" in caplog.text


def test_new_to_online_without_live_replica_logs_kafkas_message(caplog: pytest.LogCaptureFixture) -> None:
    ctl = bare_controller()
    ctl.context.partition_states[TP] = P.NewPartition
    ctl.context.live_brokers.clear()
    ctl.partition_state_machine.handle_state_changes(
        [TP], P.OnlinePartition, OfflinePartitionLeaderElectionStrategy(False)
    )
    record = next(r for r in caplog.records if r.levelname == "ERROR")
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == (
        "Controller 1 epoch 3 encountered error during state change of partition foo-0 from New to Online, "
        "assigned replicas are [1,2], live brokers are [Set()]. No assigned replica is alive."
    )
    assert ctl.context.partition_state(TP) == P.NewPartition
