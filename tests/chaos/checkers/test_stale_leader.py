"""A deposed partition leader's ISR write landing on a recreated topic's state znode
(:mod:`chaos.checkers.quirks.stale_leader`, quirk ``stale_leader_isr_write_lands_on_recreated_topic``)
against the safety checkers.

The simulator's composed seed 11807 (formats 4 and 5) in miniature: broker 1 leads t-0 ([1, 2],
leader epoch 0, controller epoch 1, state version 0) and is the controller; its session expires
while it is cut off; broker 2 becomes controller, reassigns t-0 away from broker 1, deletes t and
creates it again on [2, 3] (state version 0 once more); broker 1 comes back in a new session and
writes the ISR shrink it had pending — ``{"leader":1,"leader_epoch":0,"controller_epoch":1,
"isr":[1]}`` at expected version 0 — which lands on the new state znode.
"""

from __future__ import annotations

import dataclasses

import pytest

from chaos.checkers import FinalState, check_all
from chaos.checkers.final_state import PartitionState
from chaos.checkers.findings import RunInputs
from chaos.checkers.quirks.stale_leader import stale_leader_writes
from chaos.history import History
from probes import TopicPartition, TxnOp
from tests.chaos.checkers.builders import (
    ADMIN,
    SESSION_A,
    SESSION_B,
    SESSION_C,
    Log,
    create,
    delete,
    final_state,
    set_data,
    state_data,
    state_path,
    topic_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

QUIRK = "stale_leader_isr_write_lands_on_recreated_topic"
SESSION_D = 0x1000_0000_0000_0D  # broker 1's second session
STATE = state_path("t", 0)
STALE = state_data(1, 0, [1], controller_epoch=1)


def _register(log: Log, session: int, broker: int) -> None:
    log.write(session, create(f"/brokers/ids/{broker}", b"{}", ephemeral=True))


def _story(*, recreate: bool = True, writer: int = SESSION_D, stale: bytes = STALE, expected: int = 0) -> Log:
    """The run up to and including the stale write (``expected``: the version it expected)."""
    log = Log()
    _register(log, SESSION_A, 1)
    _register(log, SESSION_B, 2)
    _register(log, SESSION_C, 3)
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1, 2]))  # version 0
    log.write(SESSION_A, TxnOp("closeSession", closed_paths=("/controller", "/brokers/ids/1")))
    log.elect(SESSION_B, 2)
    log.set_state(SESSION_B, "t", 0, state_data(2, 1, [2], controller_epoch=2))  # version 1
    log.fenced(SESSION_B, set_data("/brokers/topics/t", topic_data({0: [2]}), 1))
    if recreate:
        log.write(ADMIN, create("/admin/delete_topics/t"))
        for path in (
            STATE,
            "/brokers/topics/t/partitions/0",
            "/brokers/topics/t/partitions",
            "/brokers/topics/t",
        ):
            log.fenced(SESSION_B, delete(path))
        log.fenced(SESSION_B, delete("/admin/delete_topics/t"))
        log.versions.pop(STATE)
        log.create_topic(ADMIN, "t", {0: [2, 3]})
        log.set_state(SESSION_B, "t", 0, state_data(2, 0, [2, 3], controller_epoch=2))  # version 0 again
    _register(log, SESSION_D, 1)
    log.write(writer, set_data(STATE, stale, expected + 1))
    return log


def _final(
    isr: tuple[int, ...] = (1,), leader: int = 1, version: int = 1, replicas: tuple[int, ...] = (2, 3)
) -> FinalState:
    state = final_state({"t": {0: replicas}})
    return dataclasses.replace(
        state, partition_states={TopicPartition("t", 0): PartitionState(leader, 0, isr, 1, version)}
    )


def _judge(log: Log, state: FinalState) -> dict[str, tuple[str, dict[str, tuple[str, ...]]]]:
    return {
        v.checker: (v.validity, dict(v.excused))
        for v in check_all(History(), log.records, state)
        if v.checker
        in ("controller_writes_fenced", "no_write_after_epoch_superseded", "partition_states_valid")
    }


def test_the_stale_write_and_the_state_it_left_are_kafkas_and_valid() -> None:
    log = _story()
    stale_zxid = log.records[-1].zxid
    judged = _judge(log, _final())
    assert judged == {
        "no_write_after_epoch_superseded": ("valid", {QUIRK: (f"controller write 0x{stale_zxid:x}",)}),
        "controller_writes_fenced": ("valid", {QUIRK: (f"controller write 0x{stale_zxid:x}",)}),
        "partition_states_valid": (
            "valid",
            {
                QUIRK: (
                    "final ISR outside the replicas t-0",
                    f"state write t-0 at 0x{stale_zxid:x}",
                )
            },
        ),
    }
    found = stale_leader_writes(RunInputs.of((), log.records, _final()))
    assert [(w.tp, w.write.zxid, w.from_incarnation) for w in found] == [
        (TopicPartition("t", 0), stale_zxid, 1)
    ]


def test_the_same_write_by_the_controller_session_is_an_unfenced_controller_write() -> None:
    """The data a stale leader would write, written by the controller without the epoch check."""
    judged = _judge(_story(writer=SESSION_B), _final())
    assert {c: v for c, (v, _) in judged.items()} == {
        "no_write_after_epoch_superseded": "valid",  # the controller still owns its epoch
        "controller_writes_fenced": "invalid",
        "partition_states_valid": "invalid",
    }


def test_a_state_the_leader_never_had_is_not_explained() -> None:
    judged = _judge(_story(stale=state_data(1, 5, [1], controller_epoch=1)), _final())
    assert {c: v for c, (v, _) in judged.items()} == {
        "no_write_after_epoch_superseded": "invalid",
        "controller_writes_fenced": "invalid",
        "partition_states_valid": "invalid",
    }


def test_a_write_at_a_version_the_leader_never_cached_is_not_explained() -> None:
    """Broker 1 only ever saw version 0 of t-0's state; a write expecting 1 is not its cache."""
    log = _story(expected=1)
    judged = _judge(log, _final(version=2))
    assert {c: v for c, (v, _) in judged.items()} == {
        "no_write_after_epoch_superseded": "invalid",
        "controller_writes_fenced": "invalid",
        "partition_states_valid": "invalid",
    }


def test_without_a_recreation_the_write_is_not_explained() -> None:
    """Within one incarnation the version moves on with every controller write, so Kafka's stale
    write would fail; a log showing one land is not Kafka's quirk."""
    log = _story(recreate=False, expected=1)
    judged = _judge(log, _final(version=2, replicas=(2,)))
    assert {c: v for c, (v, _) in judged.items()} == {
        "no_write_after_epoch_superseded": "invalid",
        "controller_writes_fenced": "invalid",
        "partition_states_valid": "invalid",
    }


def test_a_later_state_is_judged_on_its_own() -> None:
    """Once a controller has written the state again, the final state is no longer the stale
    write's: its problems are not explained."""
    log = _story()
    log.versions[STATE] = 1  # the stale write's version: the controller's next write makes 2
    log.set_state(SESSION_B, "t", 0, state_data(2, 1, [2, 1], controller_epoch=2))
    judged = _judge(log, _final(isr=(2, 1), leader=2, version=2))
    assert judged["partition_states_valid"][0] == "invalid"
    assert judged["controller_writes_fenced"][0] == "valid"


@pytest.mark.slow
def test_the_simulated_run_that_found_it_is_valid_with_the_write_excused() -> None:
    from chaos.generator import generate  # noqa: PLC0415
    from chaos.sim.run import simulate  # noqa: PLC0415

    result = simulate(generate("composed", 11807), None)
    assert result.verdict == "valid", result.reason
    by_name = {v.checker: v for v in result.verdicts}
    for checker in ("controller_writes_fenced", "no_write_after_epoch_superseded", "partition_states_valid"):
        assert QUIRK in by_name[checker].excused, checker
    assert not any(v.excused for v in result.verdicts if v.checker == "brokers_apply_requests_in_epoch_order")
