"""What the admin-API ops imply, on hand-made logs and histories: API reassignments and
cancellations (the latest request wins, a cancellation ends on the original replicas), listings
against the topic znode, who may create ``/admin/reassign_partitions``, unclean leaders that were
asked for or allowed by the topic config — and each wrong consequence flagged invalid."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from chaos.checkers import TopicState
from chaos.checkers.admin_api import (
    CANCEL_NOT_REVERTED,
    cancellations_reverted,
    listings_agree_with_topic_znode,
    reassign_znode_created_by_admin,
)
from chaos.checkers.cleanup import admin_znodes_cleaned
from chaos.checkers.liveness import partitions_have_leaders, reassignments_completed
from chaos.checkers.safety import partition_states_valid
from chaos.history import History, OpType
from probes import TopicPartition, TxnOp
from tests.chaos.checkers.builders import (
    ADMIN,
    SESSION_A,
    Log,
    create,
    delete,
    final_state,
    set_data,
    state_data,
    topic_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

T0 = 1_700_000_000_000
Step = tuple[str, Mapping[str, Any], OpType, Mapping[str, Any] | None]


def history(*steps: Step) -> History:
    """Sequential ops of one client: ``(f, invoke value, outcome, extra completion value)``."""
    h = History(clock=iter(range(0, 10**9, 1000)).__next__)
    for f, value, outcome, extra in steps:
        op = h.invoke("client-0", f, value)
        h.complete(op, outcome, None if extra is None else {**value, **extra})
    return h


def answered(*codes: tuple[str, int, int], started_ms: int = T0, ended_ms: int = T0 + 50) -> dict[str, Any]:
    results = [{"topic": t, "partition": p, "error_code": c} for t, p, c in codes]
    return {"results": results, "started_ms": started_ms, "ended_ms": ended_ms}


def reassign_api(target: Sequence[int], outcome: OpType = "ok") -> Step:
    return ("reassign_api", {"topic": "t", "assignment": {"0": list(target)}}, outcome, answered(("t", 0, 0)))


def cancel(outcome: OpType = "ok", code: int = 0) -> Step:
    return ("cancel_reassignment", {"topic": "t", "partitions": [0]}, outcome, answered(("t", 0, code)))


def reassignment_log(*, cancelled_to: Sequence[int] | None = (2, 1)) -> Log:
    """t-0 on [1, 2]; an API reassignment to [3, 2] (RS [3, 2, 1], adding [3], removing [1]) by
    controller session A; then, unless None, the cancellation's writes back to ``cancelled_to``."""
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1, 2]))
    log.time_ms = T0 + 10
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [3, 2, 1]}, {0: [3]}, {0: [1]}), 1))
    if cancelled_to is not None:
        log.time_ms = T0 + 200
        log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: cancelled_to}), 2))
    return log


def ends_on(replicas: Sequence[int], czxid: int, **reassigning: Mapping[int, tuple[int, ...]]) -> Any:
    state = final_state({"t": {0: replicas}}, {("t", 0): (replicas[0], 3, list(replicas))})
    return dataclasses.replace(state, topics={"t": TopicState(czxid, {0: tuple(replicas)}, **reassigning)})


def topic_czxid(log: Log) -> int:
    return next(r.zxid for r in log.records if r.path == "/brokers/topics/t" and r.op == "create")


# ---- cancellations ---------------------------------------------------------------------------------


def test_a_cancellation_back_on_kafkas_original_order_is_valid_and_the_reordering_excused() -> None:
    log = reassignment_log(cancelled_to=(2, 1))
    h = history(reassign_api([3, 2]), cancel())
    v = cancellations_reverted(h.ops, log.records, ends_on((2, 1), topic_czxid(log)))
    assert v.validity == "valid", v.message
    assert v.excused == {"cancellation_keeps_reassignment_order": (f"{CANCEL_NOT_REVERTED} t-0",)}


def test_a_cancellation_back_on_the_original_order_is_valid_with_nothing_excused() -> None:
    log = reassignment_log(cancelled_to=(1, 2))
    v = cancellations_reverted(
        history(reassign_api([3, 2]), cancel()).ops, log.records, ends_on((1, 2), topic_czxid(log))
    )
    assert v.validity == "valid", v.message
    assert v.excused == {}


def test_a_cancellation_that_leaves_the_target_replicas_is_invalid() -> None:
    log = reassignment_log(cancelled_to=(3, 2))
    v = cancellations_reverted(
        history(reassign_api([3, 2]), cancel()).ops, log.records, ends_on((3, 2), topic_czxid(log))
    )
    assert v.validity == "invalid"
    assert "t-0 ends on [3, 2]" in v.message
    assert "original replicas [1, 2]" in v.message
    assert any(e.get("f") == "cancel_reassignment" for e in v.evidence)


def test_a_cancellation_that_leaves_the_partition_mid_reassignment_is_invalid() -> None:
    log = reassignment_log(cancelled_to=None)
    final = ends_on((3, 2, 1), topic_czxid(log), adding={0: (3,)}, removing={0: (1,)})
    v = cancellations_reverted(history(reassign_api([3, 2]), cancel()).ops, log.records, final)
    assert v.validity == "invalid"
    assert "t-0 ends on [3, 2, 1] (adding [3], removing [1]), not its original replicas [1, 2]" in v.message


def test_a_later_reassignment_wins_over_a_cancellation() -> None:
    log = reassignment_log(cancelled_to=(2, 1))
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [3]}), 3))
    h = history(reassign_api([3, 2]), cancel(), reassign_api([3]))
    final = ends_on((3,), topic_czxid(log))
    assert cancellations_reverted(h.ops, log.records, final).validity == "valid"
    assert reassignments_completed(h.ops, log.records, final).validity == "valid"


def test_a_failed_cancellation_is_not_judged_and_without_a_log_an_acked_one_is_unknown() -> None:
    log = reassignment_log(cancelled_to=None)
    final = ends_on((3, 2), topic_czxid(log))
    failed = history(reassign_api([3, 2]), cancel("fail", 85))
    assert cancellations_reverted(failed.ops, log.records, final).validity == "valid"
    v = cancellations_reverted(history(reassign_api([3, 2]), cancel()).ops, None, final)
    assert v.validity == "unknown"
    assert "no transaction log" in v.message


# ---- API reassignments: the latest request wins ------------------------------------------------------


def test_an_acknowledged_api_reassignment_must_reach_its_target() -> None:
    log = reassignment_log(cancelled_to=None)
    v = reassignments_completed(history(reassign_api([3, 2])).ops, log.records, ends_on((1, 2), 0x40))
    assert v.validity == "invalid"
    assert "not target [3, 2]" in v.message


def test_an_api_reassignment_after_a_znode_one_wins() -> None:
    znode: Step = ("reassign", {"topic": "t", "assignment": {"0": [1, 3]}}, "ok", None)
    h = history(znode, reassign_api([3, 2]))
    assert reassignments_completed(h.ops, None, ends_on((3, 2), 0x40)).validity == "valid"
    v = reassignments_completed(h.ops, None, ends_on((1, 3), 0x40))
    assert v.validity == "invalid"
    assert "not target [3, 2]" in v.message


# ---- /admin/reassign_partitions ---------------------------------------------------------------------


def reassign_znode() -> bytes:
    return b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2]}]}'


def test_a_controller_that_creates_the_reassignment_znode_is_invalid() -> None:
    log = reassignment_log(cancelled_to=None)
    log.fenced(SESSION_A, create("/admin/reassign_partitions", reassign_znode()))
    v = reassign_znode_created_by_admin(history(reassign_api([3, 2])).ops, log.records, None)
    assert v.validity == "invalid"
    assert "by controller session" in v.message


def test_the_reassignment_znode_is_created_only_as_often_as_znode_reassignments_asked() -> None:
    log = reassignment_log(cancelled_to=None)
    log.write(ADMIN, create("/admin/reassign_partitions", reassign_znode()))
    znode: Step = ("reassign", {"topic": "t", "assignment": {"0": [3, 2]}}, "info", None)
    assert reassign_znode_created_by_admin(history(znode).ops, log.records, None).validity == "valid"
    v = reassign_znode_created_by_admin(history(reassign_api([3, 2])).ops, log.records, None)
    assert v.validity == "invalid"
    assert "only 0 znode reassignment(s)" in v.message


# ---- listings ------------------------------------------------------------------------------------------


def listing(
    *entries: tuple[Sequence[int], Sequence[int], Sequence[int]], started_ms: int, ended_ms: int
) -> Step:
    shown = [
        {"topic": "t", "partition": 0, "replicas": list(r), "adding": list(a), "removing": list(m)}
        for r, a, m in entries
    ]
    extra = {"reassigning": shown, "started_ms": started_ms, "ended_ms": ended_ms}
    return ("list_reassignments", {"partitions": None}, "ok", extra)


def test_a_listing_of_what_the_topic_znode_held_during_the_request_is_valid() -> None:
    log = reassignment_log(cancelled_to=(2, 1))  # reassigning from T0+10 to T0+200
    mid = listing(([3, 2, 1], [3], [1]), started_ms=T0 + 500, ended_ms=T0 + 600)  # stale by > slack
    for step in (
        listing(([3, 2, 1], [3], [1]), started_ms=T0 + 20, ended_ms=T0 + 30),
        listing(started_ms=T0 + 500, ended_ms=T0 + 600),
    ):
        v = listings_agree_with_topic_znode(history(step).ops, log.records, None)
        assert v.validity == "valid", v.message
    v = listings_agree_with_topic_znode(history(mid).ops, log.records, None)
    assert v.validity == "invalid"
    assert "t-0 listed as replicas [3, 2, 1], adding [3], removing [1]" in v.message
    assert "held (replicas, adding, removing) [[[2, 1], [], []]]" in v.message
    assert [e["f"] for e in v.evidence] == ["list_reassignments"]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (([3, 2, 1], [2], [1]), "the topic znode held"),
        (([2, 3, 1], [3], [1]), "the topic znode held"),
        (([1, 2], [], []), "no adding and no removing"),
    ],
)
def test_a_listing_the_topic_znode_never_showed_is_invalid(
    entry: tuple[Sequence[int], Sequence[int], Sequence[int]], problem: str
) -> None:
    log = reassignment_log(cancelled_to=(2, 1))
    v = listings_agree_with_topic_znode(
        history(listing(entry, started_ms=T0 + 20, ended_ms=T0 + 30)).ops, log.records, None
    )
    assert v.validity == "invalid"
    assert problem in v.message


def test_a_listing_without_times_is_not_judged() -> None:
    log = reassignment_log(cancelled_to=(2, 1))
    step: Step = ("list_reassignments", {"partitions": None}, "ok", {"reassigning": []})
    v = listings_agree_with_topic_znode(history(step).ops, log.records, None)
    assert v.validity == "valid"
    assert "0 listing(s)" in v.message


# ---- unclean leaders -----------------------------------------------------------------------------------


def unclean_log(*, config_at: int | None = None, unclean: str = "true") -> Log:
    """t-0 on [1, 2, 3] with ISR [1]; at T0+100 a controller elects 3 (outside the ISR). With
    ``config_at``, ``/config/topics/t`` is set to ``unclean.leader.election.enable=<unclean>`` at
    that time (before or after the election's write)."""
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2, 3]})
    log.write(ADMIN, create("/config/topics/t", b'{"version":1,"config":{}}'))
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1]))
    config = f'{{"version":1,"config":{{"unclean.leader.election.enable":"{unclean}"}}}}'.encode()
    if config_at is not None and config_at < 100:
        log.time_ms = T0 + config_at
        log.write(ADMIN, set_data("/config/topics/t", config, 1))
    log.time_ms = T0 + 100
    log.set_state(SESSION_A, "t", 0, state_data(3, 1, [3]))
    if config_at is not None and config_at >= 100:
        log.time_ms = T0 + config_at
        log.write(ADMIN, set_data("/config/topics/t", config, 1))
    return log


def elect(kind: str, outcome: OpType, *, started: int = 50, ended: int | None = 150) -> Step:
    value = {"election_type": kind, "partitions": [{"topic": "t", "partition": 0}]}
    extra: dict[str, Any] = {"results": [], "started_ms": T0 + started}
    if ended is not None:
        extra["ended_ms"] = T0 + ended
    return ("elect_leaders", value, outcome, extra)


def test_an_unclean_leader_nobody_asked_for_is_invalid() -> None:
    v = partition_states_valid([], unclean_log().records, None)
    assert v.validity == "invalid"
    assert "leader 3 elected from outside the previous ISR [1]" in v.message


@pytest.mark.parametrize(
    "step",
    [
        elect("UNCLEAN", "ok"),
        elect("UNCLEAN", "info", ended=60),
        elect("UNCLEAN", "info", started=20, ended=None),
    ],
    ids=["ok-around-the-write", "info-may-apply-later", "info-without-an-answer"],
)
def test_an_unclean_leader_an_unclean_election_asked_for_is_valid(step: Step) -> None:
    v = partition_states_valid(history(step).ops, unclean_log().records, None)
    assert v.validity == "valid", v.message


@pytest.mark.parametrize(
    "step",
    [
        elect("PREFERRED", "ok"),
        elect("UNCLEAN", "fail"),
        elect("UNCLEAN", "ok", started=-600, ended=-400),  # answered before the write
        elect("UNCLEAN", "ok", started=500, ended=600),  # started after the write
    ],
    ids=["preferred", "failed", "answered-before", "started-after"],
)
def test_an_unclean_leader_no_unclean_election_can_explain_is_invalid(step: Step) -> None:
    v = partition_states_valid(history(step).ops, unclean_log().records, None)
    assert v.validity == "invalid"
    assert "elected from outside the previous ISR" in v.message


def test_an_unclean_leader_the_topic_config_allowed_is_valid_and_one_it_forbade_is_not() -> None:
    assert partition_states_valid([], unclean_log(config_at=50).records, None).validity == "valid"
    assert (
        partition_states_valid([], unclean_log(config_at=50, unclean="false").records, None).validity
        == "invalid"
    )
    assert partition_states_valid([], unclean_log(config_at=300).records, None).validity == "invalid"


def dynamic_unclean_log(layers: Mapping[str, str], *, registered: bool = True) -> Log:
    """:func:`unclean_log`'s election, written by the controller of ``SESSION_A`` — broker 1
    (registered with that session unless ``registered`` is false) — with dynamic broker configs
    set before it: entity (``<default>`` or an id) → ``unclean.leader.election.enable``."""
    log = Log()
    if registered:
        log.write(SESSION_A, create("/brokers/ids/1", b'{"version":4}', ephemeral=True))
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2, 3]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1]))
    log.time_ms = T0 + 50
    for entity, value in layers.items():
        config = f'{{"version":1,"config":{{"unclean.leader.election.enable":"{value}"}}}}'.encode()
        log.write(ADMIN, create(f"/config/brokers/{entity}", config))
    log.time_ms = T0 + 100
    log.set_state(SESSION_A, "t", 0, state_data(3, 1, [3]))
    return log


@pytest.mark.parametrize(
    ("layers", "validity"),
    [
        ({"<default>": "true"}, "valid"),
        ({"1": "true"}, "valid"),
        ({"1": "true", "<default>": "false"}, "valid"),  # the broker's own layer wins
        ({"1": "false", "<default>": "true"}, "invalid"),  # ... either way
        ({"2": "true"}, "invalid"),  # another broker's own layer is not the controller's
        ({"<default>": "false"}, "invalid"),
    ],
    ids=[
        "default",
        "own",
        "own-over-default-false",
        "own-false-over-default",
        "other-broker",
        "default-false",
    ],
)
def test_an_unclean_leader_is_allowed_by_the_writing_controllers_dynamic_config_in_kafkas_order(
    layers: Mapping[str, str], validity: str
) -> None:
    v = partition_states_valid([], dynamic_unclean_log(layers).records, None)
    assert v.validity == validity, v.message


def test_a_controller_whose_session_registered_no_broker_gets_any_brokers_dynamic_config() -> None:
    log = dynamic_unclean_log({"2": "true"}, registered=False)
    assert partition_states_valid([], log.records, None).validity == "valid"
    log = dynamic_unclean_log({"2": "false"}, registered=False)
    assert partition_states_valid([], log.records, None).validity == "invalid"


def test_an_unclean_leader_written_outside_a_controllers_fenced_multi_is_invalid_even_when_asked() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1, 2, 3]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1]))
    log.time_ms = T0 + 100
    log.set_state(SESSION_A, "t", 0, state_data(3, 1, [3]), fenced=False)
    v = partition_states_valid(history(elect("UNCLEAN", "ok")).ops, log.records, None)
    assert v.validity == "invalid"
    assert "elected from outside the previous ISR" in v.message


# ---- the preferred-election znode stuck on a partition without state -----------------------------------


def preferred_log(*, with_state: bool, failover_after: bool = False) -> Log:
    """t on {0: [1], 1: [2]}; t-1 gets a state only ``with_state``; then the admin creates
    ``/admin/preferred_replica_election`` naming t-1 (and, with ``failover_after``, a new
    controller is elected)."""
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1], 1: [2]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1]))
    if with_state:
        log.set_state(SESSION_A, "t", 1, state_data(2, 0, [2]))
    body = b'{"version":1,"partitions":[{"topic":"t","partition":1}]}'
    log.write(ADMIN, create("/admin/preferred_replica_election", body))
    if failover_after:
        log.elect(SESSION_A + 1, 2)
    return log


def test_a_preferred_election_znode_left_for_a_partition_without_state_is_excused() -> None:
    state = final_state(preferred_replica_election=(TopicPartition("t", 1),))
    v = admin_znodes_cleaned([], preferred_log(with_state=False).records, state)
    assert v.validity == "valid", v.message
    assert v.excused == {
        "preferred_election_stuck_on_partition_without_state": (
            "admin znode /admin/preferred_replica_election",
        )
    }


@pytest.mark.parametrize(
    ("with_state", "failover_after"), [(True, False), (False, True)], ids=["had-state", "failover-since"]
)
def test_a_preferred_election_znode_left_otherwise_is_invalid(with_state: bool, failover_after: bool) -> None:
    state = final_state(preferred_replica_election=(TopicPartition("t", 1),))
    log = preferred_log(with_state=with_state, failover_after=failover_after)
    v = admin_znodes_cleaned([], log.records, state)
    assert v.validity == "invalid"
    assert "/admin/preferred_replica_election left with ['t-1']" in v.message


@pytest.mark.parametrize(
    ("mid", "failover_after", "excused"),
    [(True, False, True), (False, False, False), (True, True, False)],
    ids=["deleted-mid-reassignment", "deleted-idle", "failover-since"],
)
def test_a_preferred_election_of_a_partition_deleted_mid_reassignment(
    mid: bool, failover_after: bool, excused: bool
) -> None:
    """admin-api seed 12521 (simulated): t-1 (with a state) is being reassigned when the admin asks
    for its preferred election and t is deleted before the controller handles that; the deletion
    leaves t-1 among the reassignments, its ISR change completes that reassignment on an empty
    assignment, and the election event throws: the znode stays. Deleted while not reassigned, or
    with a failover since, it is a violation."""
    log = preferred_log(with_state=True)
    if mid:
        log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [1], 1: [2, 3]}, {1: [3]}), 1))
    for path in ("/brokers/topics/t/partitions/0/state", "/brokers/topics/t/partitions/1/state"):
        log.fenced(SESSION_A, delete(path))
    log.fenced(SESSION_A, delete("/brokers/topics/t"))
    if failover_after:
        log.elect(SESSION_A + 1, 2)
    state = final_state(preferred_replica_election=(TopicPartition("t", 1),))
    v = admin_znodes_cleaned([], log.records, state)
    # admin-api seed 84653: t created anew since, t-1 with a state again; the znode still stays
    log.create_topic(ADMIN, "t", {0: [1], 1: [2]})
    log.set_state(SESSION_A, "t", 1, state_data(2, 0, [2]))
    recreated = final_state({"t": {0: [1], 1: [2]}}, {("t", 1): (2, 0, [2])})
    recreated = dataclasses.replace(recreated, preferred_replica_election=(TopicPartition("t", 1),))
    assert admin_znodes_cleaned([], log.records, recreated).validity == v.validity
    if excused:
        assert v.validity == "valid", v.message
        assert list(v.excused) == ["preferred_election_stuck_on_partition_without_state"]
    else:
        assert v.validity == "invalid"
        assert "/admin/preferred_replica_election left with ['t-1']" in v.message


# ---- a cancellation's ISR removals after its topic-znode write -------------------------------------------


def dropped_log(*, adding: bool = True) -> Log:
    """t-0 on [2] → RS [2, 1, 3] adding [1, 3] (without ``adding``: a plain [2, 1, 3]); 1 and 3
    join the ISR, broker 2 fails (leader 3, ISR [3, 1]); then the topic znode back to [2] and the
    ISR removals of 1, then of 3."""
    log = Log()
    log.elect(SESSION_A, 3)
    log.create_topic(ADMIN, "t", {0: [2]})
    log.set_state(SESSION_A, "t", 0, state_data(2, 0, [2]))
    reassigning = topic_data({0: [2, 1, 3]}, {0: [1, 3]} if adding else {})
    log.fenced(SESSION_A, set_data("/brokers/topics/t", reassigning, 1))
    log.set_state(SESSION_A, "t", 0, state_data(2, 0, [2, 3, 1]), fenced=False)  # the leader's ISR write
    log.set_state(SESSION_A, "t", 0, state_data(3, 1, [3, 1]))  # broker 2 failed
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [2]}), 2))
    log.set_state(SESSION_A, "t", 0, state_data(3, 2, [3]))
    log.set_state(SESSION_A, "t", 0, state_data(-1, 3, [3]))
    return log


def test_the_isr_removals_of_dropped_adding_replicas_are_excused_to_the_final_state() -> None:
    log = dropped_log()
    final = final_state({"t": {0: [2]}}, {("t", 0): (-1, 3, [3])}, live=(1, 3))
    v = partition_states_valid([], log.records, final)
    assert v.validity == "valid", v.message
    (items,) = v.excused.values()
    assert list(v.excused) == ["isr_keeps_replicas_a_cancellation_dropped"]
    zxids = [f"0x{r.zxid:x}" for r in log.records[-2:]]
    assert set(items) == {
        f"state write t-0 at {zxids[0]}",
        f"state write t-0 at {zxids[1]}",
        "final ISR outside the replicas t-0",
    }


def test_a_later_reassignments_epoch_bump_carries_the_orphaned_isr_along() -> None:
    """composed seed 3160 (simulated): after the removals leave ISR [3] (leader -1) outside [2], a
    new reassignment of t-0 to [2, 1] writes its topic znode and bumps the leader epoch (A1),
    copying leader -1 and ISR [3] as they are: the same orphaned ISR, excused to the final state."""
    log = dropped_log()
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [2, 1]}, {0: [1]}), 3))
    log.set_state(SESSION_A, "t", 0, state_data(-1, 4, [3]))
    final = final_state({"t": {0: [2, 1]}}, {("t", 0): (-1, 4, [3])}, live=(1, 3))
    v = partition_states_valid([], log.records, final)
    assert v.validity == "valid", v.message
    (items,) = v.excused.values()
    assert f"state write t-0 at 0x{log.records[-1].zxid:x}" in items
    assert "final ISR outside the replicas t-0" in items


@pytest.mark.parametrize(
    "bump",
    [state_data(-1, 4, [3, 2]), state_data(-1, 5, [3])],
    ids=["isr-changed", "epoch-skipped"],
)
def test_a_write_that_does_more_than_bump_the_epoch_of_the_orphaned_isr_is_not_carried(bump: bytes) -> None:
    log = dropped_log()
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [1]}), 3))
    log.set_state(SESSION_A, "t", 0, bump)
    v = partition_states_valid([], log.records, None)
    assert v.validity == "invalid"
    assert f"at zxid 0x{log.records[-1].zxid:x}" in v.message


@pytest.mark.parametrize("isr", [(3,), (3, 2)], ids=["no-replica-left", "a-replica-left"])
def test_a_reassignment_behind_an_isr_of_dropped_replicas_only_stays(isr: tuple[int, ...]) -> None:
    """partition seed 3727 (simulated): t-0's ISR is [3], a dropped adding replica (leader -1); a
    reassignment to [1] is written (RS [1, 2], adding [1], removing [2]) and bumps the epoch. No
    replica of [1, 2] is in the ISR, so nothing can be elected and 1 never joins: the reassignment
    and its znode entry stay. With a replica (2) still in the ISR it could be elected: no excuse."""
    log = dropped_log()
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [1, 2]}, {0: [1]}, {0: [2]}), 3))
    log.set_state(SESSION_A, "t", 0, state_data(-1, 4, list(isr)))
    final = final_state({"t": {0: [1, 2]}}, {("t", 0): (-1, 4, list(isr))}, live=(1, 2, 3))
    final = dataclasses.replace(
        final,
        topics={"t": TopicState(0x40, {0: (1, 2)}, {0: (1,)}, {0: (2,)})},
        reassign_partitions={TopicPartition("t", 0): (1,)},
    )
    for checker in (reassignments_completed, admin_znodes_cleaned):
        v = checker([], log.records, final)
        if isr == (3,):
            assert v.validity == "valid", (checker.name, v.message)
            assert list(v.excused) == ["isr_keeps_replicas_a_cancellation_dropped"], checker.name
        else:
            assert v.validity != "valid", checker.name
            assert "isr_keeps_replicas_a_cancellation_dropped" not in v.excused, checker.name


@pytest.mark.parametrize("then", [None, "departure", "failover"])
def test_a_dropped_adding_replica_that_led_leaves_the_partition_leaderless(then: str | None) -> None:
    """process seed 19166 (simulated): t-0 [2] → RS [3, 1, 2] adding [3, 1]; 3 joins the ISR and
    is elected (preferred); a new target [2, 1] drops 3, whose ISR removal leaves leader -1, ISR
    [2]; the new reassignment's A1 bumps the epoch. Nothing elects an online partition until a
    broker departure or a failover: leaderless and its reassignment stuck, as in Kafka — after
    either of those, a violation."""
    log = Log()
    log.elect(SESSION_A, 3)
    log.create_topic(ADMIN, "t", {0: [2]})
    log.set_state(SESSION_A, "t", 0, state_data(2, 0, [2]))
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [3, 1, 2]}, {0: [3, 1]}), 1))
    log.set_state(SESSION_A, "t", 0, state_data(2, 1, [2]))
    log.set_state(SESSION_A, "t", 0, state_data(2, 1, [2, 3]), fenced=False)
    log.set_state(SESSION_A, "t", 0, state_data(3, 2, [2, 3]))  # preferred election
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [2, 1]}, {0: [1]}), 2))
    log.set_state(SESSION_A, "t", 0, state_data(-1, 3, [2]))  # 3 out of the ISR: it led
    log.set_state(SESSION_A, "t", 0, state_data(-1, 4, [2]))  # A1
    if then == "departure":
        log.write(0x77, TxnOp("closeSession", closed_paths=("/brokers/ids/1",)))
    elif then == "failover":
        log.elect(SESSION_A + 1, 2)
    final = final_state({"t": {0: [2, 1]}}, {("t", 0): (-1, 4, [2])}, live=(1, 2, 3))
    final = dataclasses.replace(
        final,
        topics={"t": TopicState(0x40, {0: (2, 1)}, {0: (1,)}, {0: ()})},
        reassign_partitions={TopicPartition("t", 0): (2, 1)},
    )
    for checker in (partitions_have_leaders, reassignments_completed, admin_znodes_cleaned):
        v = checker([], log.records, final)
        if then is None:
            assert v.validity == "valid", (checker.name, v.message)
            assert list(v.excused) == ["isr_keeps_replicas_a_cancellation_dropped"], checker.name
        else:
            assert v.validity != "valid", (then, checker.name)


def test_an_isr_outside_the_replicas_that_no_reassignment_dropped_is_invalid() -> None:
    v = partition_states_valid([], dropped_log(adding=False).records, None)
    assert v.validity == "invalid"
    assert "ISR [3] not within replicas [2]" in v.message


# ---- a replica a given-up reassignment added, never started, kept in the ISR --------------------------


def never_started_log(
    *, state_first: bool = False, failover: bool = False, failover_after: bool = False
) -> Log:
    """admin-api seed 9773 (simulated) in miniature: t-0 [3] is created while broker 3 is down (no
    state); a reassignment to [3, 1, 2] is written (U1, adding [1, 2]) and given up (A1 throws), so
    1 and 2 are never started; 3 returns and the partition goes online with every live replica in
    the ISR; a reassignment to [3, 1] then completes, and removing 2 (NonExistentReplica →
    OfflineReplica) is refused: 2 stays in the ISR. ``state_first``: the partition had a state at
    the first U1 (A2 started 1 and 2); ``failover``: a controller elected before the removal."""
    log = Log()
    for b in (1, 2):
        log.write(0x50 + b, create(f"/brokers/ids/{b}", None, ephemeral=True))
    log.elect(SESSION_A, 2)
    log.create_topic(ADMIN, "t", {0: [3]})
    if state_first:
        log.set_state(SESSION_A, "t", 0, state_data(3, 0, [3]))
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [3, 1, 2]}, {0: [1, 2]}), 1))
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [3, 1, 2]}), 2))
    log.write(0x53, create("/brokers/ids/3", None, ephemeral=True))
    log.set_state(SESSION_A, "t", 0, state_data(3, 1, [3, 1, 2]))
    if failover:
        log.elect(0x61, 1)
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [3, 1, 2]}, {}, {0: [2]}), 3))
    log.set_state(SESSION_A, "t", 0, state_data(3, 2, [3, 1, 2]))  # B3
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [3, 1]}), 4))  # B6, no B4 write
    if failover_after:  # admin-api seed 49931: a new controller knows assigned replicas only
        log.elect(0x62, 1)
    return log


def test_a_replica_never_started_stays_in_the_isr_when_a_reassignment_removes_it() -> None:
    final = final_state({"t": {0: [3, 1]}}, {("t", 0): (3, 2, [3, 1, 2])})
    for after in (False, True):
        v = partition_states_valid([], never_started_log(failover_after=after).records, final)
        assert v.validity == "valid", (after, v.message)
        assert v.excused == {"isr_keeps_a_replica_never_started": ("final ISR outside the replicas t-0",)}
    # a later write carrying that ISR is excused too
    log = never_started_log()
    log.set_state(SESSION_A, "t", 0, state_data(3, 3, [3, 1, 2]))
    final = final_state({"t": {0: [3, 1]}}, {("t", 0): (3, 3, [3, 1, 2])})
    v = partition_states_valid([], log.records, final)
    assert v.validity == "valid", v.message
    (items,) = v.excused.values()
    assert f"state write t-0 at 0x{log.records[-1].zxid:x}" in items


@pytest.mark.parametrize("how", ["state_first", "failover"])
def test_a_started_replica_left_in_the_isr_is_invalid(how: str) -> None:
    final = final_state({"t": {0: [3, 1]}}, {("t", 0): (3, 2, [3, 1, 2])})
    v = partition_states_valid([], never_started_log(**{how: True}).records, final)
    assert v.validity == "invalid"
    assert "isr_keeps_a_replica_never_started" not in v.excused


def test_a_target_not_reached_behind_a_dropped_leader_is_explained_too() -> None:
    """process seed 40790 (simulated): t-0 [1] → [1, 2, 3] (adding 2, 3); 1 dies and 3 leads with
    ISR [3]; a cancellation back to [1] drops 3 (leader -1, ISR [3]); a new reassignment to [2, 3]
    (RS [2, 3, 1], removing 1) bumps the epoch. Nothing elects 3: the acknowledged target is not
    reached, as in Kafka."""
    log = Log()
    log.elect(SESSION_A, 1)
    log.create_topic(ADMIN, "t", {0: [1]})
    log.set_state(SESSION_A, "t", 0, state_data(1, 0, [1]))
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [1, 2, 3]}, {0: [2, 3]}), 1))
    log.set_state(SESSION_A, "t", 0, state_data(1, 1, [1, 3]), fenced=False)
    log.set_state(SESSION_A, "t", 0, state_data(3, 2, [3]))  # 1 died
    log.fenced(SESSION_A, set_data("/brokers/topics/t", topic_data({0: [1]}), 2))  # cancelled
    log.set_state(SESSION_A, "t", 0, state_data(-1, 3, [3]))  # 3 out: it led
    moving = topic_data({0: [2, 3, 1]}, {0: [2, 3]}, {0: [1]})
    log.fenced(SESSION_A, set_data("/brokers/topics/t", moving, 3))
    log.set_state(SESSION_A, "t", 0, state_data(-1, 4, [3]))  # A1
    h = history(("reassign", {"topic": "t", "assignment": {"0": [2, 3]}}, "ok", None))
    final = final_state({"t": {0: [2, 3, 1]}}, {("t", 0): (-1, 4, [3])}, live=(2, 3))
    final = dataclasses.replace(final, topics={"t": TopicState(0x40, {0: (2, 3, 1)}, {0: (2, 3)}, {0: (1,)})})
    v = reassignments_completed(h.ops, log.records, final)
    assert v.validity == "valid", v.message
    assert "reassignment target not reached t-0" in v.excused["isr_keeps_replicas_a_cancellation_dropped"]
