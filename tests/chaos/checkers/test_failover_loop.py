"""Kafka 2.5.1's controller failover loop on a reassignment without a partition state: the quirk's
recogniser on logs in miniature, and the simulated run that found it."""

from __future__ import annotations

import dataclasses

import pytest

from chaos.checkers import ALL_CHECKERS, TopicState
from chaos.checkers.cleanup import admin_znodes_cleaned
from chaos.checkers.final_state import FinalState
from chaos.checkers.judge import Checker
from chaos.checkers.liveness import controller_elected, deletions_completed, reassignments_completed
from chaos.checkers.quirks import QUIRKS
from chaos.checkers.safety import controller_writes_fenced
from chaos.checkers.verdict import Verdict
from tests.chaos.checkers.builders import ADMIN, Log, create, delete, final_state, history_of, set_data

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

LOOP = "controller_failover_loops_on_stateless_reassignment"
MID = (
    b'{"version":2,"partitions":{"0":[2],"1":[1,3]},'
    b'"adding_replicas":{"1":[1]},"removing_replicas":{"1":[3]}}'
)


def _log(*, resignations: int = 4, by_itself: bool = True, last_mid_failover: bool = False) -> Log:
    """composed seed 52768 (simulated) in miniature: t0-1 [3] created while broker 3 was down has
    no state; a reassignment to [1] is written into the topic znode (U1) and throws at A1; t0 is
    queued for deletion; then every controller elected resigns in its failover (the resumption of
    t0-1 throws) — ``resignations`` times, each deleting ``/controller`` fenced by its own epoch
    (``by_itself``; else an outsider deletes it), the last elected possibly still in its
    failover."""
    log = Log()
    for b in (1, 2):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(0x51, 1)
    log.create_topic(ADMIN, "t0", {0: [2], 1: [3]})
    log.fenced(0x51, set_data("/brokers/topics/t0", MID, 1))  # U1; A1 throws: no state
    log.write(ADMIN, create("/admin/delete_topics/t0"))
    log.write(0x53, create("/brokers/ids/3", None, ephemeral=True))
    log.write(0x51, delete("/controller"))  # the first controller's session ends
    for i in range(resignations):
        session = 0x52 + i % 2
        log.elect(session, 2 + i % 2)
        if by_itself:
            log.fenced(session, delete("/controller"))
        else:
            log.write(ADMIN, delete("/controller"))
    if last_mid_failover:
        log.elect(0x51, 1)
    return log


def _state(
    *, controller: int | None = None, queued: bool = True, live: tuple[int, ...] = (1, 2, 3)
) -> FinalState:
    state = final_state(
        {"t0": {0: [2], 1: [1, 3]}},
        {("t0", 0): (2, 1, [2])},
        controller=controller,
        live=live,
        delete_topics=frozenset({"t0"} if queued else ()),
    )
    stuck = TopicState(0x40, {0: (2,), 1: (1, 3)}, {1: (1,)}, {1: (3,)})
    return dataclasses.replace(state, topics={"t0": stuck})


HISTORY = history_of(
    ("client-0", "reassign", {"topic": "t0", "assignment": {"1": [1]}}, "ok"),
    ("client-0", "delete_topic", {"topic": "t0"}, "ok"),
).ops


def _judge(checker: Checker, log: Log, state: FinalState) -> Verdict:
    return checker(HISTORY, log.records, state)


def test_the_loop_excuses_every_liveness_finding_of_its_run() -> None:
    v = _judge(controller_elected, _log(), _state())
    assert v.validity == "valid", v.message
    assert v.excused == {LOOP: ("controller /controller",)}
    for checker in (deletions_completed, admin_znodes_cleaned, reassignments_completed):
        v = _judge(checker, _log(), _state())
        assert v.validity == "valid", (checker.name, v.message)
        assert v.excused, checker.name


def test_the_last_controller_may_still_be_in_its_failover() -> None:
    v = _judge(deletions_completed, _log(last_mid_failover=True), _state(controller=1))
    assert v.validity == "valid", v.message


@pytest.mark.parametrize(
    ("log", "state", "why"),
    [
        (_log(resignations=2), _state(), "two resignations are no loop"),
        (_log(by_itself=False), _state(), "an outsider deleted /controller"),
        (_log(), _state(queued=False), "not queued, a replica live: the failover brings it online"),
    ],
    ids=["short", "outsider", "can-go-online"],
)
def test_no_loop_no_excuse(log: Log, state: FinalState, why: str) -> None:
    v = _judge(controller_elected, log, state)
    assert v.validity == "invalid", why
    assert LOOP not in v.excused, why


def test_a_partition_with_no_live_replica_keeps_the_loop_going_without_a_deletion() -> None:
    v = _judge(controller_elected, _log(), _state(queued=False, live=(2,)))
    assert v.validity == "valid", v.message
    assert LOOP in v.excused


def test_the_loop_excuses_liveness_only() -> None:
    (quirk,) = [q for q in QUIRKS if q.name == LOOP]
    kinds = {c.name: c.kind for c in ALL_CHECKERS}
    assert {kinds[c] for c in quirk.checkers} == {"liveness"}
    assert set(quirk.checkers) == {c for c, k in kinds.items() if k == "liveness"}
    # a write outside the controller's fence during the loop is still a violation
    log = _log()
    log.write(0x52, set_data("/brokers/topics/t0/partitions/0/state", b"{}", 1))
    assert _judge(controller_writes_fenced, log, _state()).validity == "invalid"


@pytest.mark.slow
def test_the_simulated_run_that_found_it_is_valid_with_the_loop_excused() -> None:
    """composed seed 52768, format 4: 17,206 elections by the end of the run (about 18 s of CPU)."""
    from chaos.generator import generate  # noqa: PLC0415
    from chaos.sim.run import simulate  # noqa: PLC0415

    result = simulate(generate("composed", 52768), None)
    assert result.verdict == "valid", result.reason
    by_name = {v.checker: v for v in result.verdicts}
    assert LOOP in by_name["controller_elected"].excused
    assert by_name["controller_epoch_increases"].validity == "valid"
    assert by_name["controller_writes_fenced"].validity == "valid"
