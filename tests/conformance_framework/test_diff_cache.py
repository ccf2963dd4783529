"""The reference-trace cache: by scenario, profile and kit version; golden folders first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.diff.cache import ReferenceCache, kit_version

pytestmark = pytest.mark.unit

TRACE = {"format": "kzk-diff-trace/1", "scenario": "abc", "status": "ok", "segments": [{"step": -1}]}


def test_a_trace_is_found_by_scenario_profile_and_kit_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KZK_DIFF_CACHE", str(tmp_path / "cache"))
    cache = ReferenceCache("2.5")
    assert cache.get("abc") is None
    path = cache.put("abc", TRACE)
    assert path.parent.name == f"2.5-{kit_version()}"
    assert cache.get("abc") == TRACE
    assert ReferenceCache("2.5", version="another").get("abc") is None, "another kit version never reuses it"
    assert ReferenceCache("2.5", enabled=False).get("abc") is None, "--no-cache"


def test_golden_traces_are_read_first_and_failed_runs_never_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KZK_DIFF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KZK_DIFF_GOLDEN", str(tmp_path / "golden"))
    golden = {**TRACE, "segments": [{"step": -1, "golden": True}]}
    ReferenceCache("2.5").put("abc", golden, directory=tmp_path / "golden")
    ReferenceCache("2.5").put("abc", TRACE)
    assert ReferenceCache("2.5").get("abc") == golden
    failed = tmp_path / "cache" / f"2.5-{kit_version()}" / "bad.json"
    failed.write_text(json.dumps({**TRACE, "scenario": "bad", "status": "target-error"}))
    assert ReferenceCache("2.5").get("bad") is None, "a failed reference run is never a reference trace"


def test_a_damaged_or_misplaced_golden_trace_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shipped trace that does not parse, is cut short, or belongs to another scenario (a file
    renamed or swapped) is never taken as the reference's trace: the next dir's is, else none
    (and the reference runs)."""
    monkeypatch.setenv("KZK_DIFF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KZK_DIFF_GOLDEN", str(tmp_path / "golden"))
    shipped = tmp_path / "golden" / f"2.5-{kit_version()}"
    shipped.mkdir(parents=True)
    whole = json.dumps(TRACE)
    for content in (
        whole[: len(whole) // 2],
        json.dumps({**TRACE, "scenario": "xyz"}),
        "[]",
        '{"status": "ok"}',
    ):
        (shipped / "abc.json").write_text(content, encoding="utf-8")
        assert ReferenceCache("2.5").get("abc") is None, content
    ReferenceCache("2.5").put("abc", TRACE)  # the user's cache holds a whole one
    assert ReferenceCache("2.5").get("abc") == TRACE


def test_the_kit_ships_the_reference_traces_of_the_gates_scenarios() -> None:
    """The main job's first run on a fresh machine runs only the target's side of its differential
    section when the kit ships the reference's traces for this kit version. A change to the
    reference or the harness is a new kit version: run the command below and commit its output."""
    import catalogue  # noqa: PLC0415
    from conformance.diff.cache import GOLDEN_DIR  # noqa: PLC0415
    from conformance.diff.cli import _stale_golden, parse_args, scenarios_of  # noqa: PLC0415

    profile = catalogue.DEFAULT_PROFILE
    shipped = GOLDEN_DIR / f"{profile}-{kit_version()}"
    missing = []
    for s in scenarios_of(parse_args(["golden", "--gate"])):
        try:
            trace = json.loads((shipped / f"{s.key()}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            trace = {}
        if trace.get("status") != "ok" or trace.get("scenario") != s.key():
            missing.append(s.name())
    stale = [p.name for p in _stale_golden(GOLDEN_DIR, profile, kit_version())]
    fix = "run `.venv/bin/python -m conformance diff golden --gate` and commit conformance/diff/golden"
    assert not missing, f"no golden trace for {missing} at kit version {kit_version()}: {fix}"
    assert not stale, f"golden dirs of earlier kit versions: {stale}: {fix}"
