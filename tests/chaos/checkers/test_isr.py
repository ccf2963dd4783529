"""``dead_brokers_leave_the_isr`` on hand-built transaction logs (pure logic).

The checker's power on the real reference and its mutants is measured by the simulator's
benchmark (``python -m chaos.sim.bench``); these cases pin down what it owes and excuses.
"""

from __future__ import annotations

import pytest

from chaos.checkers import LIVENESS_CHECKERS, ReceivedRequest
from chaos.checkers.isr import dead_brokers_leave_the_isr
from probes import TxnOp, TxnRecord
from tests.chaos.checkers.builders import (
    ADMIN,
    SESSION_A,
    SESSION_B,
    Log,
    create,
    delete,
    final_state,
    request,
    state_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

FINAL = final_state()


def _cluster(assignment: list[int], controller: int = 1) -> Log:
    """Brokers 1-3 registered (each its own session), ``controller`` elected, topic t created
    with ``assignment`` and leader ``assignment[0]``, ISR all replicas."""
    log = Log()
    for broker in (1, 2, 3):
        log.write(SESSION_A + broker, create(f"/brokers/ids/{broker}", b"{}", ephemeral=True))
    log.elect(SESSION_A + controller, controller)
    log.create_topic(ADMIN, "t", {0: assignment})
    log.set_state(SESSION_A + controller, "t", 0, state_data(assignment[0], 0, assignment))
    return log


def _dies(log: Log, broker: int) -> TxnRecord:
    return log.add(SESSION_A + broker, TxnOp("closeSession", closed_paths=(f"/brokers/ids/{broker}",)))


def _returns(log: Log, broker: int, session: int) -> TxnRecord:
    return log.write(session, create(f"/brokers/ids/{broker}", b"{}", ephemeral=True))


def _judge(log: Log) -> tuple[str, str]:
    v = dead_brokers_leave_the_isr([], log.records, FINAL)
    return v.validity, v.message


def test_it_is_a_liveness_checker_so_the_final_phase_waits_for_it() -> None:
    assert dead_brokers_leave_the_isr in LIVENESS_CHECKERS


def test_a_dead_follower_the_controller_took_out_is_valid() -> None:
    log = _cluster([2, 3, 1])
    _dies(log, 3)
    log.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2, 1]))
    assert _judge(log) == ("valid", "1 broker departure(s) followed through the ISRs")


def test_a_dead_follower_left_in_the_isr_by_the_controller_in_place_is_invalid() -> None:
    log = _cluster([2, 3, 1])
    died = _dies(log, 3)
    _returns(log, 3, SESSION_B + 3)  # a quick restart: Kafka handles it as a bounce, still a failure
    validity, message = _judge(log)
    assert validity == "invalid"
    assert (
        f"broker 3's registration went at zxid 0x{died.zxid:x} while it was in the ISR [2, 3, 1] of t-0"
        in message
    )
    assert "the ISR is [2, 3, 1]" in message


def test_the_last_isr_member_stays() -> None:
    log = _cluster([2, 3])
    log.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2]))  # 3 dropped by the leader earlier
    _dies(log, 2)
    assert _judge(log)[0] == "valid"


def test_the_leader_taken_out_with_no_leader_left_is_valid() -> None:
    """doRemoveReplicasFromIsr: the dead leader leaves, the leader becomes -1."""
    log = _cluster([2, 3])
    _dies(log, 3)
    _dies(log, 2)
    log.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2]))  # 3 out
    log.set_state(SESSION_A + 1, "t", 0, state_data(-1, 2, [2]))  # 2 is the last member: stays
    assert _judge(log)[0] == "valid"


def test_a_topic_queued_for_deletion_is_not_judged() -> None:
    log = _cluster([2, 3, 1])
    log.write(ADMIN, create("/admin/delete_topics/t"))
    _dies(log, 3)
    assert _judge(log)[0] == "valid"


def test_a_topic_stays_unjudged_through_its_deletions_own_state_writes() -> None:
    """process seed 18926 (simulated): the deletion takes replica 1 out of t-0's ISR (a state
    write after the request), then broker 3 dies: the topic is still queued, its ISR left alone.
    Once the request is gone (the deletion completed or was refused), the topic is judged again."""
    log = _cluster([2, 3, 1])
    log.write(ADMIN, create("/admin/delete_topics/t"))
    log.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2, 3]))  # onPartitionDeletion: 1 offline
    _dies(log, 3)
    assert _judge(log)[0] == "valid"
    log = _cluster([2, 3, 1])
    log.write(ADMIN, create("/admin/delete_topics/t"))
    log.fenced(SESSION_A + 1, delete("/admin/delete_topics/t"))  # deletion disabled: refused
    log.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2, 3, 1]))
    _dies(log, 3)
    assert _judge(log)[0] == "invalid"


def test_a_new_controller_elected_while_the_broker_is_gone_owes_it_once_it_wrote_something() -> None:
    """KAFKA-3143: broker 1, the controller, dies; broker 2 is elected while 1 is gone and writes
    (the election of u-0, which 1 led), but leaves 1 in t-0's ISR."""
    log = _cluster([2, 1, 3])
    log.create_topic(ADMIN, "u", {0: [1, 2]})
    log.set_state(SESSION_A + 1, "u", 0, state_data(1, 0, [1, 2]))
    _dies(log, 1)
    log.elect(SESSION_A + 2, 2)
    log.set_state(SESSION_A + 2, "u", 0, state_data(2, 1, [2]))  # its first write: context read
    _returns(log, 1, SESSION_B + 1)
    validity, message = _judge(log)
    assert validity == "invalid"
    assert "of t-0" in message
    assert "of u-0" not in message


def test_a_new_controller_that_wrote_nothing_before_the_broker_came_back_is_not_judged() -> None:
    """It may have read the broker as alive: Kafka's startup then leaves the ISR alone."""
    log = _cluster([2, 1, 3])
    _dies(log, 1)
    log.elect(SESSION_A + 2, 2)
    _returns(log, 1, SESSION_B + 1)
    log.set_state(SESSION_A + 2, "t", 0, state_data(2, 0, [2, 1, 3]))
    assert _judge(log)[0] == "valid"


def test_a_broker_back_before_the_next_election_is_not_owed_by_the_new_controller() -> None:
    log = _cluster([2, 3, 1])
    _dies(log, 3)
    _returns(log, 3, SESSION_B + 3)
    _dies(log, 1)  # the controller goes before it handled broker 3
    log.elect(SESSION_A + 2, 2)
    log.set_state(SESSION_A + 2, "t", 0, state_data(2, 1, [2, 3]))  # 1 out, 3 alive in its view
    assert _judge(log)[0] == "valid"


def test_the_leader_growing_the_isr_back_to_the_broker_excuses_it() -> None:
    log = _cluster([2, 3, 1])
    _dies(log, 3)
    log.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2, 1]))
    log.set_state(SESSION_A + 2, "t", 0, state_data(2, 1, [2, 1, 3]), fenced=False)
    assert _judge(log)[0] == "valid"


def test_a_leaders_own_write_keeping_the_broker_does_not_excuse_the_controller() -> None:
    log = _cluster([2, 3, 1])
    _dies(log, 3)
    log.set_state(SESSION_A + 2, "t", 0, state_data(2, 0, [2, 3, 1]), fenced=False)
    assert _judge(log)[0] == "invalid"


def test_without_a_log_or_a_final_state_it_is_unknown() -> None:
    log = _cluster([2, 3, 1])
    assert dead_brokers_leave_the_isr([], None, FINAL).validity == "unknown"
    assert dead_brokers_leave_the_isr([], log.records, None).validity == "unknown"


def _unseen_registration_story() -> tuple[Log, int, int]:
    """Simulated ``composed`` seed 48754 in miniature: broker 2 dies, the controller takes it out
    of t-0's ISR; while 2 is unregistered, its still-running process fetches and leader 1 grows the
    ISR back to [1, 2]; then 2 registers again and its registration goes at once. Returns the log,
    broker 2's first registration's czxid and that of the short one."""
    log = _cluster([1, 2])
    first = log.records[1].zxid
    _dies(log, 2)
    log.set_state(SESSION_A + 1, "t", 0, state_data(1, 1, [1]))
    log.set_state(SESSION_A + 1, "t", 0, state_data(1, 1, [1, 2]), fenced=False)  # the leader's write
    short = _returns(log, 2, SESSION_B + 2).zxid
    log.add(SESSION_B + 2, TxnOp("closeSession", closed_paths=("/brokers/ids/2",)))
    return log, first, short


def _journal(*epochs: int) -> dict[int, tuple[ReceivedRequest, ...]]:
    return {2: tuple(request(i, "UpdateMetadata", 1, broker_epoch=e) for i, e in enumerate(epochs))}


def test_a_registration_no_controller_addressed_is_one_the_controller_never_had_alive() -> None:
    log, first, short = _unseen_registration_story()
    unseen = final_state(journals=_journal(first))
    v = dead_brokers_leave_the_isr([], log.records, unseen)
    assert (v.validity, v.message) == ("valid", "2 broker departure(s) followed through the ISRs")
    # a controller addressed the short registration: it had the broker alive and owes its removal
    seen = final_state(journals=_journal(first, short))
    v = dead_brokers_leave_the_isr([], log.records, seen)
    assert v.validity == "invalid"
    assert f"broker 2's registration went at zxid 0x{log.records[-1].zxid:x}" in v.message
    # without journals, or with requests that carry no broker epoch, every registration is seen
    assert dead_brokers_leave_the_isr([], log.records, FINAL).validity == "invalid"
    no_epochs = final_state(journals=_journal(-1, -1))
    assert dead_brokers_leave_the_isr([], log.records, no_epochs).validity == "invalid"
