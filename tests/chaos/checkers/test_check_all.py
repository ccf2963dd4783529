"""check_all, the aggregate verdict rule, JSON of verdicts and final states."""

from __future__ import annotations

import json

import pytest

from chaos.checkers import (
    ALL_CHECKERS,
    Checker,
    RunInputs,
    Verdict,
    aggregate,
    check_all,
    final_state_from_json,
    final_state_to_json,
)
from chaos.checkers.findings import Finding
from chaos.checkers.verdict import MAX_EVIDENCE
from tests.chaos.checkers.builders import SESSION_A, SESSION_B, Log, create, final_state, history_of, request

pytestmark = [pytest.mark.unit, pytest.mark.chaos]


@pytest.mark.parametrize(
    ("validities", "expected"),
    [
        ([], "valid"),
        (["valid", "valid"], "valid"),
        (["valid", "unknown"], "unknown"),
        (["unknown", "invalid", "valid"], "invalid"),
    ],
)
def test_aggregate_is_invalid_then_unknown_then_valid(validities: list[str], expected: str) -> None:
    verdicts = [Verdict("c", v, "") for v in validities]  # type: ignore[arg-type]
    assert aggregate(verdicts) == expected


def test_check_all_runs_every_checker_once_in_order() -> None:
    verdicts = check_all([], None, None)
    assert [v.checker for v in verdicts] == [c.name for c in ALL_CHECKERS]
    assert aggregate(verdicts) == "unknown"


def test_a_checker_that_raises_is_unknown_and_the_others_still_run() -> None:
    def boom(run: RunInputs) -> Finding:
        raise KeyError("boom")

    broken = Checker("broken", "safety", boom)
    verdicts = check_all([], [], final_state(), checkers=(broken, *ALL_CHECKERS[:1]))
    assert verdicts[0].validity == "unknown"
    assert "KeyError" in verdicts[0].message
    assert verdicts[1].validity == "valid"


def test_invalid_verdicts_of_every_checker_are_json() -> None:
    log = Log()
    log.elect(SESSION_A, 1)
    log.elect(SESSION_B, 1, epoch=1)
    log.fenced(SESSION_A, create("/brokers/topics/x/partitions"), version=2)  # B's epoch
    h = history_of(("client-0", "create_topic", {"topic": "lost"}, "ok"))
    state = final_state(
        {"t": {0: [1, 2]}},
        {("t", 0): (3, 1, [3])},
        controller=None,
        journals={1: (request(0, "UpdateMetadata", 2), request(1, "UpdateMetadata", 1, source=2))},
    )
    verdicts = check_all(h.ops, log.records, state)
    assert aggregate(verdicts) == "invalid"
    for v in verdicts:
        assert json.loads(json.dumps(v.to_json())) == v.to_json()
    assert {v.checker for v in verdicts if v.is_invalid} >= {
        "controller_epoch_increases",
        "one_controller_per_epoch",
        "partition_states_valid",
        "brokers_apply_requests_in_epoch_order",
        "acknowledged_creations_survive",
        "controller_elected",
    }


def test_evidence_is_capped_and_the_message_says_so() -> None:
    v = Verdict.invalid("c", [f"p{i}" for i in range(30)], [{"kind": "x", "i": i} for i in range(30)])
    assert len(v.evidence) == MAX_EVIDENCE
    assert "30 violation(s)" in v.message
    assert "+25 more" in v.message
    assert f"truncated to {MAX_EVIDENCE} of 30" in v.message


def test_final_state_round_trips_through_json() -> None:
    state = final_state(
        {"t": {0: [1, 2], 1: [3]}},
        {("t", 0): (1, 2, [1, 2])},
        journals={2: (request(0, "LeaderAndIsr", 1, [("t", 0, 2, 0)]),)},
        delete_topics=frozenset({"x"}),
    )
    text = json.dumps(final_state_to_json(state))
    assert final_state_from_json(json.loads(text)) == state


def test_a_malformed_final_state_json_names_the_problem() -> None:
    bad = final_state_to_json(final_state())
    del bad["live_brokers"]
    with pytest.raises(ValueError, match="not a final state: KeyError: 'live_brokers'"):
        final_state_from_json(bad)
