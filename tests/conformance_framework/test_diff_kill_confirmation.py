"""A differential kill counts only when both re-runs confirm it (pure logic of ``confirmed``)."""

from __future__ import annotations

import pytest

from conformance.diff.mutation import DiffKill, confirmed

pytestmark = pytest.mark.unit

SIG = "resume|requests|LeaderAndIsr.zk_version"
KILL = DiffKill("killed", f"s1-38: {SIG}", 30.0, 39, "s1-38", SIG, ("RSM-3",))
SAME = DiffKill("survived", "1 scenarios, no divergence", 0.0, 1)


def test_a_kill_both_re_runs_confirm_stands() -> None:
    assert confirmed(KILL, SAME, KILL) == KILL


def test_a_reference_that_differs_from_its_cached_trace_makes_it_unknown() -> None:
    again = DiffKill("killed", f"s1-38: {SIG}", 0.0, 1, "s1-38", SIG)
    got = confirmed(KILL, again, KILL)
    assert got.status == "unknown"
    assert "the reference run afresh on it: killed" in got.detail


def test_a_divergence_the_mutant_does_not_repeat_is_no_kill() -> None:
    got = confirmed(KILL, SAME, SAME)
    assert got.status == "unknown"
    assert "the mutant run again on it: survived" in got.detail
    assert got.scenario == "s1-38"  # still named, for whoever looks into the race


def test_a_different_divergence_on_the_second_run_is_no_kill() -> None:
    other = DiffKill("killed", "s1-38: kill|zk|/controller", 0.0, 1, "s1-38", "kill|zk|/controller")
    got = confirmed(KILL, SAME, other)
    assert got.status == "unknown"
    assert "killed at kill|zk|/controller" in got.detail


def test_no_second_run_is_no_kill() -> None:
    assert confirmed(KILL, SAME, None).status == "unknown"
