"""The chaos history: recording, pairing, JSON lines and their validation."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from chaos.history import History, HistoryError, Op, pairs, validate

pytestmark = [pytest.mark.unit, pytest.mark.chaos]


def clock() -> History:
    return History(clock=iter(range(0, 10**9, 10)).__next__)


def test_invoke_and_complete_record_ops_in_order_with_monotonic_times() -> None:
    h = clock()
    a = h.invoke("client-0", "create_topic", {"topic": "t"})
    n = h.invoke("nemesis", "start_fault", {"fault": "kill", "broker_id": 1})
    done = h.complete(a, "ok")
    h.complete(n, "info", error="timed out")
    assert [(o.index, o.process, o.type, o.f) for o in h.ops] == [
        (0, "client-0", "invoke", "create_topic"),
        (1, "nemesis", "invoke", "start_fault"),
        (2, "client-0", "ok", "create_topic"),
        (3, "nemesis", "info", "start_fault"),
    ]
    assert [o.time_ns for o in h.ops] == [0, 10, 20, 30]
    assert done.value == {"topic": "t"}  # a completion repeats the invocation's value by default
    assert h.ops[3].error == "timed out"


def test_pairs_match_each_invocation_with_its_completion_and_leave_open_ones_info() -> None:
    h = clock()
    a = h.invoke("client-0", "delete_topic", {"topic": "t"})
    b = h.invoke("client-1", "reassign", {"topic": "t", "assignment": {"0": [1]}})
    h.complete(b, "fail", error="no such topic")
    got = [
        (p.invoke.index, None if p.completion is None else p.completion.index, p.outcome) for p in h.pairs()
    ]
    assert got == [(0, None, "info"), (1, 2, "fail")]
    assert h.open_invocations() == [a]


def test_a_process_cannot_invoke_twice_without_completing() -> None:
    h = clock()
    h.invoke("client-0", "create_topic", {"topic": "a"})
    with pytest.raises(HistoryError, match="still open"):
        h.invoke("client-0", "create_topic", {"topic": "b"})


def test_complete_refuses_an_op_that_is_not_open_and_a_non_completion_type() -> None:
    h = clock()
    a = h.invoke("client-0", "create_topic", {"topic": "a"})
    h.complete(a, "ok")
    with pytest.raises(HistoryError, match="not the open invocation"):
        h.complete(a, "ok")
    b = h.invoke("client-0", "create_topic", {"topic": "b"})
    with pytest.raises(HistoryError, match="completion type 'invoke'"):
        h.complete(b, "invoke")


def test_values_must_be_json() -> None:
    with pytest.raises(HistoryError, match="not JSON-serialisable"):
        clock().invoke("client-0", "create_topic", {"topic": object()})


def test_dump_and_load_round_trip(tmp_path: Path) -> None:
    h = clock()
    a = h.invoke("client-0", "create_topic", {"topic": "t", "assignment": {"0": [1, 2]}})
    h.complete(a, "ok", {"topic": "t", "created": True})
    h.invoke("nemesis", "heal", {})
    path = tmp_path / "history.jsonl"
    h.dump(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[1] == {
        "index": 1,
        "time_ns": 10,
        "process": "client-0",
        "type": "ok",
        "f": "create_topic",
        "value": {"topic": "t", "created": True},
        "error": None,
    }
    assert History.load(path).ops == h.ops


def line(**changes: object) -> str:
    """A JSON line of a valid first invocation, with ``changes`` (None values drop the key)."""
    base: dict[str, object] = {"index": 0, "time_ns": 0, "process": "p", "type": "invoke", "f": "x"}
    obj = {**base, "value": {}, "error": None, **changes}
    return json.dumps({k: v for k, v in obj.items() if changes.get(k, 0) is not None or k == "error"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON"),
        (line(index=1), "index is 1, expected 0"),
        (line(type="done"), "field 'type' is 'done'"),
        (line(time_ns="0"), "field 'time_ns' must be int"),
        (line(time_ns=None), r"fields missing \['time_ns'\]"),
        (line(type="ok"), "no open invocation"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_load_names_file_and_line_of_bad_input(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("\n" + text + "\n")  # the blank first line is skipped; the error is on line 2
    with pytest.raises(HistoryError, match=f"h.jsonl:2: .*{message}"):
        History.load(path)


def test_load_of_a_missing_file_is_a_history_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="cannot read the history"):
        History.load(tmp_path / "absent.jsonl")


def test_completion_with_a_different_f_is_rejected() -> None:
    ops = [
        Op(0, 0, "client-0", "invoke", "create_topic", {"topic": "a"}),
        Op(1, 1, "client-0", "ok", "delete_topic", {"topic": "a"}),
    ]
    with pytest.raises(HistoryError, match=r"op 1: .*open invocation \(op 0\) is 'create_topic'"):
        validate(ops)


def test_recording_from_many_threads_keeps_indices_dense_and_pairs_whole() -> None:
    h = History()

    def client(n: int) -> None:
        for i in range(200):
            h.complete(h.invoke(f"client-{n}", "create_topic", {"topic": f"t{n}-{i}"}), "ok")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [o.index for o in h.ops] == list(range(1600))
    validate(h.ops)
    assert all(p.outcome == "ok" for p in pairs(h.ops))
    assert len(h.pairs()) == 800
