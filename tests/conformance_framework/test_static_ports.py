"""The static (interposed-listener) ports of two xdist workers never overlap."""

from __future__ import annotations

import pytest

from conformance import cluster

pytestmark = pytest.mark.unit


def _slice(monkeypatch: pytest.MonkeyPatch, worker: str | None, count: str | None) -> range:
    for name, value in (("PYTEST_XDIST_WORKER", worker), ("PYTEST_XDIST_WORKER_COUNT", count)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    return cluster._worker_static_ports()


def test_workers_get_disjoint_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    slices = [set(_slice(monkeypatch, f"gw{i}", "3")) for i in range(3)]
    assert all(len(s) == 4000 for s in slices)
    union: set[int] = set().union(*slices)
    assert len(union) == sum(map(len, slices)), "two workers share ports"
    assert union <= set(range(20000, 32000))


def test_serial_run_uses_the_whole_range(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _slice(monkeypatch, None, None) == range(20000, 32000)


def test_picked_ports_stay_in_the_worker_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _slice(monkeypatch, "gw1", "2")
    assert all(p in mine for p in cluster.pick_static_ports(5))
