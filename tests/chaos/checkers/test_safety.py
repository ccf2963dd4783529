"""Safety checkers on hand-made logs, journals and histories, and on a real capture.

Each checker: a log/history that breaks it (invalid, naming the records or ops), a clean one
(valid), and missing data (unknown). ``data/failover`` is a real 3-node reference run with a
controller SIGKILL (``real_scenario.py``); mutating it shows the checkers catch a bug in a real
log, not only in hand-made ones.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from chaos.checkers import check_all
from chaos.checkers.final_state import FinalState
from chaos.checkers.journal import CONCURRENT_WINDOW_S
from chaos.checkers.liveness import partitions_have_leaders
from chaos.checkers.requests import brokers_apply_requests_in_epoch_order
from chaos.checkers.safety import (
    acknowledged_creations_survive,
    controller_epoch_increases,
    controller_writes_fenced,
    elections_drop_the_old_leader,
    no_write_after_epoch_superseded,
    one_controller_per_epoch,
    partition_states_valid,
)
from chaos.history import History, Op
from probes import TxnOp, TxnRecord
from tests.chaos.checkers.builders import (
    ADMIN,
    SESSION_A,
    SESSION_B,
    Log,
    create,
    delete,
    final_state,
    history_of,
    load_capture,
    request,
    set_data,
    state_data,
    state_path,
    topic_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

CAPTURE = Path(__file__).parent / "data" / "failover"


def real_capture() -> tuple[tuple[Op, ...], list[TxnRecord], FinalState]:
    return load_capture(CAPTURE)


def zxids(evidence: object) -> set[str]:
    assert isinstance(evidence, tuple)
    return {e["zxid"] for e in evidence if e.get("kind") == "txn"}


def hexz(record: TxnRecord) -> str:
    return f"0x{record.zxid:x}"


def test_every_checker_accepts_the_real_failover_capture() -> None:
    history, records, state = real_capture()
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []
    assert len(verdicts) == 18


# ---- /controller_epoch strictly increasing ------------------------------------------------------


def test_controller_epoch_increases_accepts_successive_elections() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.elect(SESSION_B, 2)
    v = controller_epoch_increases([], log.records, None)
    assert v.validity == "valid", v.message
    assert "values [0, 1, 2]" in v.message


@pytest.mark.parametrize("second_epoch", [1, 0])
def test_controller_epoch_written_twice_with_the_same_or_a_smaller_value_is_invalid(
    second_epoch: int,
) -> None:
    log = Log()
    first = log.elect(SESSION_A, 1)
    second = log.elect(SESSION_B, 2, epoch=second_epoch)
    v = controller_epoch_increases([], log.records, None)
    assert v.validity == "invalid"
    assert f"from 1 to {second_epoch}" in v.message
    assert zxids(v.evidence) == {hexz(first), hexz(second)}


def test_controller_epoch_with_non_integer_data_is_invalid() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    bad = log.multi(SESSION_B, set_data("/controller_epoch", b"two", 2))
    v = controller_epoch_increases([], log.records, None)
    assert v.validity == "invalid"
    assert hexz(bad) in zxids(v.evidence)


def test_a_failed_election_multi_is_not_a_write() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.failed_multi(SESSION_B)
    assert controller_epoch_increases([], log.records, None).validity == "valid"


def test_controller_epoch_without_a_log_is_unknown() -> None:
    assert controller_epoch_increases([], None, final_state()).validity == "unknown"


# ---- one controller per epoch -------------------------------------------------------------------


def test_fenced_writes_of_successive_controllers_under_their_own_epochs_are_valid() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.fenced(SESSION_A, create("/brokers/topics/t/partitions"))
    log.elect(SESSION_B, 2)
    log.fenced(SESSION_B, delete("/admin/reassign_partitions"))
    v = one_controller_per_epoch([], log.records, None)
    assert v.validity == "valid", v.message


def test_a_second_session_writing_under_an_epoch_it_did_not_win_is_invalid() -> None:
    log = Log()
    election = log.elect(SESSION_A, 1)
    log.fenced(SESSION_A, create("/brokers/topics/t/partitions"))
    intruder = log.fenced(SESSION_B, create("/brokers/topics/u/partitions"))  # "elected" without bumping
    v = one_controller_per_epoch([], log.records, None)
    assert v.validity == "invalid"
    assert f"2 sessions acted under epoch 1: 0x{SESSION_A:x}, 0x{SESSION_B:x}" in v.message
    assert zxids(v.evidence) == {hexz(intruder), hexz(election)}


def test_two_elections_writing_the_same_epoch_value_are_two_controllers_in_one_epoch() -> None:
    log = Log()
    first = log.elect(SESSION_A, 1)
    second = log.elect(SESSION_B, 2, epoch=1)  # the epoch is not incremented: version 2 holds "1"
    log.fenced(SESSION_B, create("/brokers/topics/t/partitions"))
    v = one_controller_per_epoch([], log.records, None)
    assert v.validity == "invalid"
    assert "under epoch 1" in v.message
    assert zxids(v.evidence) == {hexz(first), hexz(second)}


def test_two_sessions_under_an_epoch_whose_election_is_not_in_the_log_is_invalid() -> None:
    log = Log(epoch=4, epoch_version=4)  # the log starts after the election
    a = log.fenced(SESSION_A, create("/brokers/topics/t/partitions"))
    b = log.fenced(SESSION_B, create("/brokers/topics/u/partitions"))
    v = one_controller_per_epoch([], log.records, None)
    assert v.validity == "invalid"
    assert zxids(v.evidence) == {hexz(a), hexz(b)}


def test_one_controller_per_epoch_without_a_log_is_unknown() -> None:
    assert one_controller_per_epoch([], None, None).validity == "unknown"


# ---- no controller write after its epoch was superseded -----------------------------------------


def test_a_deposed_controllers_unfenced_leader_change_is_invalid() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1, 2]))
    log.elect(SESSION_B, 2)
    stale = log.set_state(SESSION_A, "t", 0, state_data(2, 1, [2]), fenced=False)
    v = no_write_after_epoch_superseded([], log.records, None)
    assert v.validity == "invalid"
    assert f"zxid {hexz(stale)}" in v.message
    assert zxids(v.evidence) == {hexz(stale)}


def test_a_fenced_write_that_checked_an_old_epoch_version_is_invalid() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.elect(SESSION_B, 2)
    stale = log.fenced(SESSION_A, delete("/admin/preferred_replica_election"), version=1)
    v = no_write_after_epoch_superseded([], log.records, None)
    assert v.validity == "invalid"
    assert "checked epoch version 1, current 2" in v.message
    assert zxids(v.evidence) == {hexz(stale)}


@pytest.mark.parametrize(
    "op",
    [
        delete("/admin/delete_topics/t"),
        delete("/brokers/topics/t"),
        create("/brokers/topics/t/partitions/0"),
        delete("/isr_change_notification/isr_change_0000000001"),
        set_data("/admin/reassign_partitions", b"{}", 1),
    ],
    ids=lambda op: f"{op.op} {op.path}",
)
def test_every_kind_of_unfenced_controller_write_by_a_deposed_controller_is_caught(op: TxnOp) -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.elect(SESSION_B, 2)
    stale = log.write(SESSION_A, op)
    v = no_write_after_epoch_superseded([], log.records, None)
    assert v.validity == "invalid"
    assert zxids(v.evidence) == {hexz(stale)}


def test_broker_isr_writes_admin_writes_and_failed_multis_are_not_controller_writes() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2, 3]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1, 2, 3]))
    log.elect(SESSION_B, 2)
    # the leader (an old controller's session, even) shrinks the ISR: same leader and leader epoch
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1, 2]), fenced=False)
    log.write(ADMIN, set_data("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1,2,3],"1":[2,3]}}', 1))
    log.write(ADMIN, create("/admin/delete_topics/t"))
    log.failed_multi(SESSION_A)
    log.fenced(SESSION_B, delete("/admin/delete_topics/t"))
    v = no_write_after_epoch_superseded([], log.records, None)
    assert v.validity == "valid", v.message


def test_an_unfenced_controller_write_is_invalid_even_by_the_current_controller() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2]})
    unfenced = log.write(SESSION_A, create("/brokers/topics/t/partitions"))
    log.fenced(SESSION_A, create("/brokers/topics/t/partitions/0"))
    v = controller_writes_fenced([], log.records, None)
    assert v.validity == "invalid"
    assert zxids(v.evidence) == {hexz(unfenced)}
    assert no_write_after_epoch_superseded([], log.records, None).validity == "valid"  # not deposed


def test_a_write_checking_a_newer_controllers_epoch_version_is_not_fenced() -> None:
    """A deposed controller whose check asked for any version (-1): ZooKeeper logs the version
    current when the multi applied (B's), not the one A's election wrote."""
    log = Log()
    log.elect(SESSION_A, 1)
    log.fenced(SESSION_A, create("/brokers/topics/t/partitions"))
    log.elect(SESSION_B, 2)
    stale = log.fenced(SESSION_A, create("/brokers/topics/u/partitions"))  # check version=2
    v = controller_writes_fenced([], log.records, None)
    assert v.validity == "invalid"
    assert "checked /controller_epoch version 2, but its controller's election wrote version 1" in v.message
    assert zxids(v.evidence) == {hexz(stale)}
    # the old comparison with the version current at apply time can never fail on a real log
    assert no_write_after_epoch_superseded([], log.records, None).validity == "valid"


def test_a_write_by_a_session_that_won_no_election_is_not_fenced() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    intruder = log.fenced(SESSION_B, create("/brokers/topics/t/partitions"))
    v = controller_writes_fenced([], log.records, None)
    assert v.validity == "invalid"
    assert f"session 0x{SESSION_B:x}, which won no election" in v.message
    assert zxids(v.evidence) == {hexz(intruder)}


def test_a_re_elected_controller_is_fenced_by_its_latest_election() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.elect(SESSION_B, 2)
    log.fenced(SESSION_B, create("/brokers/topics/t/partitions"))
    log.elect(SESSION_A, 1)  # epoch 3, version 3
    log.fenced(SESSION_A, create("/brokers/topics/u/partitions"))
    assert controller_writes_fenced([], log.records, None).validity == "valid"
    stale = log.fenced(SESSION_A, delete("/admin/delete_topics/u"), version=1)  # its old epoch's
    v = controller_writes_fenced([], log.records, None)
    assert v.validity == "invalid"
    assert zxids(v.evidence) == {hexz(stale)}


def test_a_fence_whose_election_is_not_in_the_log_is_unknown() -> None:
    log = Log(epoch=4, epoch_version=4)  # the log starts after the election
    log.fenced(SESSION_A, create("/brokers/topics/t/partitions"))
    v = controller_writes_fenced([], log.records, None)
    assert v.validity == "unknown"
    assert "the election that wrote epoch version 4 is not in the transaction log" in v.message


def test_leader_isr_writes_and_admin_writes_need_no_fence() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1, 2]))
    log.set_state(SESSION_B, "t", 0, state_data(1, 0, [1]), fenced=False)
    log.write(ADMIN, create("/admin/reassign_partitions", b"{}"))
    log.write(ADMIN, create("/admin/delete_topics/t"))
    v = controller_writes_fenced([], log.records, None)
    assert v.validity == "valid", v.message
    assert controller_writes_fenced([], None, None).validity == "unknown"


def test_the_real_capture_with_an_injected_stale_leader_change_is_invalid() -> None:
    history, records, state = real_capture()
    old_controller = next(r for r in records if r.op == "multi" and r.ops[1].data == b"1").session_id
    stale = TxnRecord(
        records[-1].zxid + 1,
        old_controller,
        999,
        records[-1].time_ms,
        set_data(state_path("t1", 1), state_data(3, 9, [3], controller_epoch=1), 9),
    )
    v = no_write_after_epoch_superseded(history, [*records, stale], state)
    assert v.validity == "invalid"
    assert zxids(v.evidence) == {hexz(stale)}


def test_no_write_after_epoch_superseded_without_a_log_is_unknown() -> None:
    assert no_write_after_epoch_superseded([], None, final_state()).validity == "unknown"


# ---- partition state invariants ---------------------------------------------------------------


def topic_log(*states: bytes) -> tuple[Log, list[TxnRecord]]:
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2, 3]})
    return log, [log.set_state(SESSION_A, "t", 0, s) for s in states]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (state_data(4, 1, [1, 4]), "ISR [1, 4] not within replicas [1, 2, 3]"),
        (state_data(2, 1, [1, 3]), "leader 2 not in ISR [1, 3]"),
        (state_data(-1, 1, []), "empty ISR"),
        (state_data(1, 0, [1]), None),  # epoch 0 after 2: the leader epoch went back
        (b'{"leader":1}', "malformed state znode"),
    ],
    ids=["isr-outside-replicas", "leader-outside-isr", "empty-isr", "epoch-back", "malformed"],
)
def test_state_writes_breaking_an_invariant_are_invalid(bad: bytes, problem: str | None) -> None:
    log, _ = topic_log(state_data(1, 0, [1, 2, 3]), state_data(1, 2, [1, 2]))
    wrong = log.set_state(SESSION_A, "t", 0, bad)
    v = partition_states_valid([], log.records, None)
    assert v.validity == "invalid"
    assert (problem or "leader_epoch went back from 2 to 0") in v.message
    assert zxids(v.evidence) == {hexz(wrong)}


def test_a_new_leader_without_a_new_leader_epoch_is_invalid() -> None:
    log, _ = topic_log(state_data(1, 3, [1, 2, 3]))
    wrong = log.set_state(SESSION_A, "t", 0, state_data(2, 3, [1, 2, 3]))
    v = partition_states_valid([], log.records, None)
    assert v.validity == "invalid"
    assert "leader changed from 1 to 2 without a leader-epoch bump" in v.message
    assert zxids(v.evidence) == {hexz(wrong)}


def test_a_controller_isr_shrink_without_a_leader_epoch_bump_is_invalid() -> None:
    log, _ = topic_log(state_data(1, 3, [1, 2, 3]))
    wrong = log.set_state(SESSION_A, "t", 0, state_data(1, 3, [1, 2]))  # fenced: the controller's
    v = partition_states_valid([], log.records, None)
    assert v.validity == "invalid"
    assert "controller rewrote the state keeping leader epoch 3" in v.message
    assert zxids(v.evidence) == {hexz(wrong)}


def test_a_leader_from_outside_the_previous_isr_is_an_unclean_election_and_invalid() -> None:
    log, _ = topic_log(state_data(1, 3, [1, 2]), state_data(-1, 4, [1]))
    wrong = log.set_state(SESSION_A, "t", 0, state_data(3, 5, [3]))
    v = partition_states_valid([], log.records, None)
    assert v.validity == "invalid"
    assert "leader 3 elected from outside the previous ISR [1]" in v.message
    assert zxids(v.evidence) == {hexz(wrong)}


def test_clean_elections_from_the_isr_are_valid() -> None:
    log, _ = topic_log(state_data(1, 0, [1, 2, 3]))
    log.set_state(SESSION_B, "t", 0, state_data(1, 0, [1, 3]), fenced=False)  # the leader's ISR shrink
    log.set_state(SESSION_A, "t", 0, state_data(3, 1, [3]))  # offline election from the ISR
    log.set_state(SESSION_A, "t", 0, state_data(-1, 2, [3]))  # last ISR member gone: ISR kept
    log.set_state(SESSION_A, "t", 0, state_data(3, 3, [3]))  # it is back
    v = partition_states_valid([], log.records, None)
    assert v.validity == "valid", v.message


def test_leader_minus_one_and_a_recreated_topic_restarting_at_epoch_zero_are_valid() -> None:
    log, _ = topic_log(state_data(1, 0, [1, 2, 3]), state_data(-1, 5, [3]))
    for path in (
        state_path("t", 0),
        "/brokers/topics/t/partitions/0",
        "/brokers/topics/t/partitions",
        "/brokers/topics/t",
    ):
        log.fenced(SESSION_A, delete(path))
    log.versions.clear()
    log.create_topic(ADMIN, "t", {0: [2, 3]})
    log.set_state(SESSION_A, "t", 0, state_data(2, 0, [2, 3]))
    v = partition_states_valid([], log.records, None)
    assert v.validity == "valid", v.message


def test_isr_may_include_adding_replicas_during_a_reassignment() -> None:
    log, _ = topic_log(state_data(1, 0, [1, 2, 3]))
    reassigning = topic_data({0: [4, 1, 2, 3]}, adding={0: [4]})
    log.fenced(SESSION_A, set_data("/brokers/topics/t", reassigning, 1))
    log.set_state(SESSION_A, "t", 0, state_data(1, 1, [1, 2, 3, 4]))
    assert partition_states_valid([], log.records, None).validity == "valid"


def test_a_bad_final_state_is_invalid_even_without_a_log() -> None:
    state = final_state({"t": {0: [1, 2]}}, {("t", 0): (3, 4, [3])})
    v = partition_states_valid([], None, state)
    assert v.validity == "invalid"
    assert v.evidence[0]["path"] == state_path("t", 0)
    assert "ISR [3] not within replicas [1, 2]" in v.message


def _reassignment_log(removal_leader: int) -> Log:
    """Seed 2156 of ``partition`` in miniature: t-0 [2,3] → [1]; ISR [2,3,1] read as complete,
    then shrunk to [2,3]; the election for [1] fails; removing 2 and then 3 leaves leader -1 and
    ISR [3] (Kafka keeps an ISR of one); the topic znode then says RS [1]."""
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [2, 3]})
    log.set_state(SESSION_A, "t", 0, state_data(2, 0, [2, 3]))

    def topic(replicas: list[int], adding: list[int], removing: list[int]) -> bytes:
        body = {
            "version": 2,
            "partitions": {"0": replicas},
            "adding_replicas": {"0": adding} if adding else {},
            "removing_replicas": {"0": removing} if removing else {},
        }
        return json.dumps(body).encode()

    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic([1, 2, 3], [1], [2, 3]), 1))
    log.set_state(SESSION_A, "t", 0, state_data(2, 1, [2, 3]))
    log.set_state(SESSION_B, "t", 0, state_data(2, 1, [2, 3, 1]), fenced=False)  # leader's ISR writes
    log.set_state(SESSION_B, "t", 0, state_data(2, 1, [2, 3]), fenced=False)
    log.set_state(SESSION_A, "t", 0, state_data(-1, 2, [3]))
    log.set_state(SESSION_A, "t", 0, state_data(removal_leader, 3, [3]))
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic([1], [], []), 2))
    return log


def test_an_isr_kafka_leaves_outside_the_replicas_after_a_failed_reassignment_election_is_excused() -> None:
    state = final_state({"t": {0: [1]}}, {("t", 0): (-1, 3, [3])})
    v = partition_states_valid([], _reassignment_log(-1).records, state)
    assert v.validity == "valid"
    assert v.excused == {
        "isr_orphaned_by_failed_reassignment_election": ("final ISR outside the replicas t-0",)
    }
    assert partitions_have_leaders([], _reassignment_log(-1).records, state).validity == "valid"
    # without the log nothing shows it is Kafka's path: invalid
    assert partition_states_valid([], None, state).validity == "invalid"
    # a leader kept on the orphaned ISR is not what Kafka's removal writes: invalid
    led = final_state({"t": {0: [1]}}, {("t", 0): (3, 3, [3])})
    v = partition_states_valid([], _reassignment_log(3).records, led)
    assert v.validity == "invalid"
    assert "final t-0: ISR [3] not within replicas [1]" in v.message


def test_partition_states_with_only_a_good_final_state_are_unknown_and_with_nothing_unknown() -> None:
    good = final_state({"t": {0: [1, 2]}}, {("t", 0): (1, 4, [1, 2])})
    assert partition_states_valid([], None, good).validity == "unknown"
    assert partition_states_valid([], None, None).validity == "unknown"


# ---- brokers apply controller requests in epoch order ---------------------------------------


def journals(*requests: object) -> FinalState:
    return final_state(journals={2: tuple(requests)})


def test_applying_an_older_controller_epoch_after_a_newer_one_is_invalid() -> None:
    state = journals(request(0, "UpdateMetadata", 2, source=2), request(1, "UpdateMetadata", 1, source=1))
    v = brokers_apply_requests_in_epoch_order([], None, state)
    assert v.validity == "invalid"
    assert "broker 2 applied UpdateMetadata #1 of controller epoch 1 after #0 of epoch 2" in v.message
    assert {(e["seq"], e["controller_epoch"]) for e in v.evidence} == {(0, 2), (1, 1)}


def test_a_stale_request_the_broker_rejected_is_fine() -> None:
    state = journals(
        request(0, "UpdateMetadata", 2, source=2), request(1, "LeaderAndIsr", 1, [("t", 0, 5, 0)], error=11)
    )
    assert brokers_apply_requests_in_epoch_order([], None, state).validity == "valid"


def test_applying_a_leader_epoch_that_is_not_newer_is_invalid() -> None:
    state = journals(
        request(0, "LeaderAndIsr", 1, [("t", 0, 3, 0)]),
        request(1, "LeaderAndIsr", 2, [("t", 0, 3, 0)], source=2),
    )
    v = brokers_apply_requests_in_epoch_order([], None, state)
    assert v.validity == "invalid"
    assert "t-0 with leader epoch 3 after #0 with 3" in v.message
    assert [e["seq"] for e in v.evidence] == [0, 1]


def test_per_partition_rejections_and_stop_replica_deletions_reset_nothing_wrongly() -> None:
    state = journals(
        request(0, "LeaderAndIsr", 1, [("t", 0, 3, 0)]),
        request(1, "LeaderAndIsr", 1, [("t", 0, 3, 11)]),  # answered STALE_CONTROLLER_EPOCH: not applied
        request(2, "StopReplica", 1, [("t", 0, 0, 0)], delete=True),
        request(3, "LeaderAndIsr", 1, [("t", 0, 0, 0)]),  # the topic's next incarnation
    )
    assert brokers_apply_requests_in_epoch_order([], None, state).validity == "valid"


def test_an_unanswered_stop_replica_delete_may_have_deleted_the_partition() -> None:
    """Seed 2030 of ``links``: the resigning controller's StopReplica(delete) got no answer on the
    journal, the broker applied it (its own log says so), and the next controller's LeaderAndIsr
    re-created the partition at the same leader epoch: not provably stale."""
    state = journals(
        request(0, "LeaderAndIsr", 2, [("t0", 0, 7, 0)], source=3),
        request(1, "StopReplica", 2, [("t0", 0, 0, 0)], source=3, error=None, delete=True),
        request(2, "LeaderAndIsr", 3, [("t0", 0, 7, 0)], source=1),
    )
    v = brokers_apply_requests_in_epoch_order([], None, state)
    assert v.validity == "valid"
    assert v.excused == {
        "unanswered_stop_replica_may_have_deleted": ("leader epoch not newer broker 2 request #2 t0-0",)
    }
    # … but an unanswered StopReplica *without* delete proves nothing either way: still invalid
    kept = journals(
        request(0, "LeaderAndIsr", 2, [("t0", 0, 7, 0)], source=3),
        request(1, "StopReplica", 2, [("t0", 0, 0, 0)], source=3, error=None, delete=False),
        request(2, "LeaderAndIsr", 3, [("t0", 0, 7, 0)], source=1),
    )
    assert brokers_apply_requests_in_epoch_order([], None, kept).validity == "invalid"
    # … and an unanswered one is never itself "applied out of order"
    late = journals(
        request(0, "UpdateMetadata", 3, source=1),
        request(1, "StopReplica", 2, [("t0", 0, 0, 0)], source=3, error=None, delete=True),
    )
    assert brokers_apply_requests_in_epoch_order([], None, late).validity == "valid"


def test_a_restarted_broker_is_a_new_life() -> None:
    state = journals(
        request(0, "LeaderAndIsr", 2, [("t", 0, 3, 0)], broker_epoch=0x30),
        request(1, "LeaderAndIsr", 1, [("t", 0, 1, 0)], broker_epoch=0x90),
    )
    assert brokers_apply_requests_in_epoch_order([], None, state).validity == "valid"


def test_answer_times_decide_the_order_of_requests_from_two_controllers() -> None:
    newer = dataclasses.replace(request(0, "UpdateMetadata", 2, source=2), sent_s=10.0, answered_s=10.5)
    older = dataclasses.replace(request(1, "UpdateMetadata", 1, source=1), sent_s=10.2)
    concurrent = brokers_apply_requests_in_epoch_order([], None, journals(newer, older))
    assert concurrent.validity == "valid", concurrent.message
    answered_first = dataclasses.replace(newer, answered_s=10.1)
    assert (
        brokers_apply_requests_in_epoch_order([], None, journals(answered_first, older)).validity == "invalid"
    )


def test_without_answer_times_requests_of_two_controllers_recorded_close_together_are_concurrent() -> None:
    newer = dataclasses.replace(request(0, "UpdateMetadata", 2, source=2), sent_s=10.0)
    close = dataclasses.replace(
        request(1, "UpdateMetadata", 1, source=1), sent_s=10.0 + CONCURRENT_WINDOW_S / 2
    )
    assert brokers_apply_requests_in_epoch_order([], None, journals(newer, close)).validity == "valid"
    late = dataclasses.replace(close, sent_s=10.0 + CONCURRENT_WINDOW_S * 2)
    v = brokers_apply_requests_in_epoch_order([], None, journals(newer, late))
    assert v.validity == "invalid"
    assert [e["seq"] for e in v.evidence] == [0, 1]


def test_a_stale_leader_epoch_from_the_same_controller_is_ordered_by_the_journal_alone() -> None:
    first = dataclasses.replace(request(0, "LeaderAndIsr", 1, [("t", 0, 4, 0)]), sent_s=10.0)
    second = dataclasses.replace(request(1, "LeaderAndIsr", 1, [("t", 0, 2, 0)]), sent_s=10.0)
    assert brokers_apply_requests_in_epoch_order([], None, journals(first, second)).validity == "invalid"


def test_requests_without_journals_are_unknown() -> None:
    assert brokers_apply_requests_in_epoch_order([], None, None).validity == "unknown"
    assert brokers_apply_requests_in_epoch_order([], None, final_state()).validity == "unknown"


def test_the_real_capture_with_a_replayed_old_request_is_invalid() -> None:
    history, records, state = real_capture()
    broker, journal = 3, state.journals[3]
    old = next(r for r in journal if r.controller_epoch == 1 and r.kind == "UpdateMetadata")
    replayed = dataclasses.replace(old, seq=10_000, sent_s=None, answered_s=None)
    mutated = dataclasses.replace(state, journals={**state.journals, broker: (*journal, replayed)})
    v = brokers_apply_requests_in_epoch_order(history, records, mutated)
    assert v.validity == "invalid"
    assert 10_000 in {e["seq"] for e in v.evidence}


# ---- acknowledged creations survive -----------------------------------------------------------


def test_an_acknowledged_creation_missing_at_the_end_is_invalid() -> None:
    h = history_of(
        ("client-0", "create_topic", {"topic": "t"}, "ok"), ("client-1", "create_topic", {"topic": "u"}, "ok")
    )
    v = acknowledged_creations_survive(h.ops, None, final_state({"u": {0: [1]}}))
    assert v.validity == "invalid"
    assert "'t'" in v.message
    assert [(e["index"], e["type"]) for e in v.evidence] == [(0, "invoke"), (1, "ok")]


def test_creations_deleted_later_or_never_acknowledged_may_be_missing() -> None:
    h = history_of(
        ("client-0", "create_topic", {"topic": "t"}, "ok"),
        ("client-1", "delete_topic", {"topic": "t"}, "info"),
        ("client-0", "create_topic_admin", {"topic": "u"}, "info"),
        ("client-0", "create_topic", {"topic": "w"}, "fail"),
    )
    assert acknowledged_creations_survive(h.ops, None, final_state()).validity == "valid"


def test_a_deletion_running_when_the_creation_started_excuses_it_but_one_finished_before_does_not() -> None:
    h = History(clock=iter(range(100)).__next__)
    d = h.invoke("client-1", "delete_topic", {"topic": "t"})
    c = h.invoke("client-0", "create_topic", {"topic": "t"})
    h.complete(d, "ok")
    h.complete(c, "ok")
    assert acknowledged_creations_survive(h.ops, None, final_state()).validity == "valid"
    h2 = history_of(
        ("client-1", "delete_topic", {"topic": "t"}, "ok"), ("client-0", "create_topic", {"topic": "t"}, "ok")
    )
    assert acknowledged_creations_survive(h2.ops, None, final_state()).validity == "invalid"


def test_acknowledged_creations_without_a_final_state_are_unknown() -> None:
    h = history_of(("client-0", "create_topic", {"topic": "t"}, "ok"))
    assert acknowledged_creations_survive(h.ops, None, None).validity == "unknown"


# --- elections_drop_the_old_leader ----------------------------------------------------------------


def _cluster_log(assignment: list[int]) -> Log:
    """Brokers 1-3 registered (1 with its own session), broker 1 controller, topic t created with
    ``assignment`` and its first state: leader ``assignment[0]``, ISR all replicas."""
    log = Log()
    for broker in (1, 2, 3):
        log.write(SESSION_A + broker, create(f"/brokers/ids/{broker}", b"{}", ephemeral=True))
    log.elect(SESSION_A + 1, 1)
    log.create_topic(ADMIN, "t", {0: assignment})
    log.set_state(SESSION_A + 1, "t", 0, state_data(assignment[0], 0, assignment))
    return log


def _dies(log: Log, broker: int) -> TxnRecord:
    return log.add(SESSION_A + broker, TxnOp("closeSession", closed_paths=(f"/brokers/ids/{broker}",)))


def test_an_offline_election_keeping_the_dead_leader_in_the_isr_is_invalid() -> None:
    """The offline-election-keeps-dead-isr-members mutant's write: leader 2 died, 3 elected, ISR
    still [2, 3, 1]; Kafka's offline election keeps only the live part of the ISR."""
    log = _cluster_log([2, 3, 1])
    _dies(log, 2)
    wrong = log.set_state(SESSION_A + 1, "t", 0, state_data(3, 1, [2, 3, 1]))
    v = elections_drop_the_old_leader([], log.records, None)
    assert v.validity == "invalid"
    assert (
        "leader moved from 2, whose registration is gone, to 3 but the new ISR [2, 3, 1] keeps 2" in v.message
    )
    assert zxids(v.evidence) == {hexz(wrong)}


def test_an_offline_election_dropping_the_dead_leader_is_valid() -> None:
    log = _cluster_log([2, 3, 1])
    _dies(log, 2)
    log.set_state(SESSION_A + 1, "t", 0, state_data(3, 1, [3, 1]))
    v = elections_drop_the_old_leader([], log.records, None)
    assert v.validity == "valid", v.message
    assert v.message.startswith("1 election(s) away from a leader checked")


def test_elections_that_keep_the_isr_by_design_are_not_judged() -> None:
    """A preferred election (to the first replica, ISR unchanged) or a reassignment's may run
    before the controller has seen the leader's registration go: Kafka keeps the ISR in both."""
    preferred = _cluster_log([3, 2, 1])
    preferred.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2, 1]))  # 3 shut down: dropped
    preferred.set_state(SESSION_A + 2, "t", 0, state_data(2, 1, [2, 1, 3]), fenced=False)  # back
    _dies(preferred, 2)
    preferred.set_state(SESSION_A + 1, "t", 0, state_data(3, 2, [2, 1, 3]))
    assert elections_drop_the_old_leader([], preferred.records, None).validity == "valid"

    reassigned = _cluster_log([2, 3, 1])
    reassigned.write(
        ADMIN, set_data("/brokers/topics/t", topic_data({0: [3, 1, 2]}, adding={}, removing={0: [2]}), 1)
    )
    _dies(reassigned, 2)
    reassigned.set_state(SESSION_A + 1, "t", 0, state_data(3, 1, [2, 3, 1]))
    assert elections_drop_the_old_leader([], reassigned.records, None).validity == "valid"


def test_a_write_by_the_leader_itself_is_not_judged() -> None:
    plain = _cluster_log([2, 3, 1])
    _dies(plain, 2)
    plain.set_state(SESSION_A + 3, "t", 0, state_data(3, 0, [2, 3, 1]), fenced=False)
    v = elections_drop_the_old_leader([], plain.records, None)
    assert v.validity == "valid"
    assert v.message.startswith("0 election(s)")


def test_a_move_from_a_live_leader_that_keeps_it_and_is_not_preferred_is_invalid() -> None:
    """The controlled-shutdown-keeps-broker-in-isr mutant's write: leader 2 shuts down, 3 (not the
    first replica) elected, ISR kept [2, 3, 1]; Kafka's controlled-shutdown election drops 2. A
    bounced leader's election is an offline one and drops it too."""
    for registered_again in (False, True):
        log = _cluster_log([2, 3, 1])
        if registered_again:
            _dies(log, 2)
            log.write(SESSION_B, create("/brokers/ids/2", b"{}", ephemeral=True))
        wrong = log.set_state(SESSION_A + 1, "t", 0, state_data(3, 1, [2, 3, 1]))
        v = elections_drop_the_old_leader([], log.records, None)
        assert v.validity == "invalid"
        assert "leader moved from 2 to 3 but the new ISR [2, 3, 1] keeps 2 (old ISR [2, 3, 1])" in v.message
        assert zxids(v.evidence) == {hexz(wrong)}


def test_a_controlled_shutdown_election_dropping_the_leader_is_valid() -> None:
    log = _cluster_log([2, 3, 1])
    log.set_state(SESSION_A + 1, "t", 0, state_data(3, 1, [3, 1]))
    v = elections_drop_the_old_leader([], log.records, None)
    assert v.validity == "valid", v.message
    assert v.message.startswith("1 election(s) away from a leader checked")


def test_a_preferred_election_from_a_live_leader_keeps_the_isr_and_is_valid() -> None:
    log = _cluster_log([3, 2, 1])
    log.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [3, 2, 1]))  # moved to 2 earlier
    log.set_state(SESSION_A + 1, "t", 0, state_data(3, 2, [3, 2, 1]))
    assert elections_drop_the_old_leader([], log.records, None).validity == "invalid"  # the first move
    ok = _cluster_log([3, 2, 1])
    ok.set_state(SESSION_A + 1, "t", 0, state_data(2, 1, [2, 1]))  # 3 shut down: dropped
    ok.set_state(SESSION_A + 2, "t", 0, state_data(2, 1, [2, 1, 3]), fenced=False)  # caught up
    ok.set_state(SESSION_A + 1, "t", 0, state_data(3, 2, [2, 1, 3]))  # preferred: back to 3
    v = elections_drop_the_old_leader([], ok.records, None)
    assert v.validity == "valid", v.message


def test_elections_away_from_a_dead_leader_without_a_log_are_unknown() -> None:
    v = elections_drop_the_old_leader([], None, None)
    assert v.validity == "unknown"
