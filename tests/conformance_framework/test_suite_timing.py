"""The suite's timing: spans, timing records, node start instants, the profile table and the
longest-first order (unit: pure logic on hand-written inputs; expected values worked out by hand).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from bench.suite import compile_tree
from bench.suite_profile import profile, render
from cluster.boot import first_line_time, log_size
from conformance.order import expected_durations, longest_first, measured_durations, write_snapshot
from harness import timeline
from records.run_record import RunRecord, write_record
from records.timing import CheckTiming, Span, read_timings, write_timing

pytestmark = pytest.mark.unit


@pytest.fixture
def recording() -> Iterator[None]:
    timeline.enable()
    timeline.drain()
    yield
    timeline.disable()


def test_spans_nest_per_thread_and_record_nothing_when_off(recording: None) -> None:
    with timeline.span("cluster-start", nodes=[1]):
        with timeline.span("wait", what="registered"):
            pass
    timeline.record("node-start", 10.0, 12.5, node=1)
    spans = timeline.drain()
    assert [(s.name, s.parent) for s in spans] == [
        ("wait", "cluster-start"),
        ("cluster-start", None),
        ("node-start", None),
    ]
    assert spans[2].duration_s == 2.5
    assert spans[0].attrs == {"what": "registered"}
    timeline.disable()
    with timeline.span("cluster-close"):
        pass
    timeline.record("node-start", 1.0, 2.0)
    assert timeline.drain() == []


def test_timing_records_round_trip_and_a_cut_line_is_skipped(tmp_path: Path) -> None:
    timing = CheckTiming(
        "r1", "c.py::t", "gw0", "passed", {"setup": (1.0, 2.0), "call": (2.0, 5.0)}, (Span("wait", 2.5, 3.0),)
    )
    path = write_timing(tmp_path, timing)
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"run_id": "r1", "test_id": "cut')
    (back,) = read_timings([path], "r1")
    assert back == timing
    assert back.duration_s == 4.0
    assert list(read_timings([path], "other-run")) == []


def test_first_stamped_line_after_the_offset(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("[2026-01-02 03:04:05,100] INFO old start\n", encoding="utf-8")
    offset = log_size(log)
    assert first_line_time(log, offset) is None  # nothing written since
    with log.open("a", encoding="utf-8") as fh:
        fh.write("no stamp\n[2026-01-02 03:04:07,250] INFO starting\n")
    assert first_line_time(log, offset) == datetime(2026, 1, 2, 3, 4, 7, 250000).timestamp()
    assert log_size(tmp_path / "absent.log") == 0
    assert first_line_time(None, 0) is None


def _check(test_id: str, worker: str, start: float, spans: tuple[Span, ...]) -> CheckTiming:
    phases = {
        "setup": (start, start + 2.0),
        "call": (start + 2.0, start + 7.0),
        "teardown": (start + 7.0, start + 8.0),
    }
    return CheckTiming("r1", test_id, worker, "passed", phases, spans)


def test_profile_attributes_each_second_once() -> None:
    main = "MainThread"
    first = _check(
        "a.py::long",
        "gw0",
        100.0,
        (
            Span("zookeeper-start", 100.0, 101.0, None, main),
            Span("cluster-make", 101.0, 101.5, None, main),
            Span("cluster-start", 102.0, 104.0, None, main),
            Span("wait", 102.5, 104.0, "cluster-start", main),  # inside the start: counted there
            Span("node-start", 102.0, 103.8, None, main, {"node": 1, "first_log": 103.0}),
            Span("wait", 105.0, 106.0, None, main),
            Span("cluster-close", 107.0, 107.5, None, main),
            Span("chroot-delete", 107.5, 107.7, None, main),
        ),
    )
    second = _check("b.py::short", "gw1", 100.0, ())
    p = profile([second, first], {"wall_s": 12.0, "started_at": datetime.fromtimestamp(98.0).isoformat()})
    row = next(r for r in p.rows if r.test_id == "a.py::long")
    assert row.total_s == 8.0
    assert row.parts["zk"] == 1.0
    assert row.parts["make"] == 0.5
    assert row.parts["start"] == 2.0
    assert row.parts["waits"] == 1.0
    assert row.parts["close"] == 0.5
    assert row.parts["chroot"] == pytest.approx(0.2)
    # call 5 s = start 2 + wait 1 + body 2
    # setup + teardown 3 s = zk 1 + make 0.5 + close 0.5 + chroot 0.2 + fixtures 0.8
    assert row.parts["body"] == 2.0
    assert row.parts["fixtures"] == pytest.approx(0.8)
    assert p.node_starts == 1
    assert p.node_process_s == [1.0]
    assert p.node_init_s == [pytest.approx(0.8)]
    text = render(p)
    assert "node starts: 1" in text
    assert "worker gw0: busy 8.0 s, idle 4.0 s" in text


def _record(
    results: Path, test_id: str, duration_s: float, finished_at: str, outcome: str = "passed"
) -> None:
    now = "2026-01-01T00:00:00+00:00"
    write_record(
        results,
        RunRecord(
            kind="conformance-test",
            run_id="r1",
            run_order="20260101T000000.000000Z-r1",
            test_id=test_id,
            behaviour_ids=("EPOCH-1",),
            target="reference",
            profile="default",
            outcome=outcome,
            duration_s=duration_s,
            started_at=now,
            finished_at=finished_at,
            worker="gw0",
        ),
    )


def test_longest_first_from_the_latest_records_else_the_snapshot(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _record(results, "t::a", 9.0, "2026-01-01T00:00:01+00:00")
    _record(results, "t::a", 2.0, "2026-01-01T00:10:00+00:00")  # the later run wins
    _record(results, "t::b", 5.0, "2026-01-01T00:00:02+00:00")
    _record(results, "t::c", 99.0, "2026-01-01T00:00:03+00:00", outcome="skipped")  # not a duration
    assert measured_durations(results) == {"t::a": 2.0, "t::b": 5.0}
    items = ["a", "b", "c", "d"]
    names = {0: "t::a", 1: "t::b", 2: "t::c", 3: "t::d"}
    durations, source = expected_durations(results)
    assert "earlier runs" in source
    # unknown c and d count as the median 3.5: b, then c and d in collection order, then a
    assert longest_first(items, names, durations) == ["b", "c", "d", "a"]
    snapshot = write_snapshot({"t::d": 7.0, "t::a": 1.0}, tmp_path / "snap.json")
    durations, source = expected_durations(tmp_path / "empty", snapshot)
    assert "snap.json" in source
    assert durations == {"t::a": 1.0, "t::d": 7.0}
    assert longest_first(items, names, durations) == ["d", "b", "c", "a"]
    (tmp_path / "bad.json").write_text("not json", encoding="utf-8")
    assert expected_durations(None, tmp_path / "bad.json")[0] == {}
    assert json.loads(snapshot.read_text(encoding="utf-8"))["checks"]["t::d"] == 7.0


def test_a_compared_tree_is_compiled_to_bytecode_like_a_set_up_checkout(tmp_path: Path) -> None:
    """``bench.suite --compare-with`` compiles both trees first (a ``git archive`` has no .pyc)."""
    for package in ("pkg", ".venv"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
        (tmp_path / package / "mod.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "loose.py").write_text("Y = 2\n", encoding="utf-8")
    compile_tree(tmp_path)
    compiled = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*.pyc"))
    assert compiled == ["pkg", "pkg"]  # its __init__ and mod; no venv, nothing outside a package
