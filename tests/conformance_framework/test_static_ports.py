"""The static (interposed-listener) ports of two xdist workers never overlap."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from cluster import cluster

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


def test_a_port_another_live_process_reserved_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two suite runs on one host (no xdist between them): a child process reserves ports from
    the same slice and holds them; every port this process picks meanwhile is a different one."""
    _slice(monkeypatch, None, None)
    code = (
        "import sys; from cluster import cluster; "
        "print(' '.join(map(str, cluster.pick_static_ports(200))), flush=True); sys.stdin.read()"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        theirs = set(map(int, child.stdout.readline().split()))
        assert len(theirs) == 200
        monkeypatch.setattr(cluster, "random", _Cycling(sorted(theirs)))
        mine = cluster.pick_static_ports(3)  # offered every one of theirs first
        assert not set(mine) & theirs
    finally:
        child.kill()
        child.wait(10)


class _Cycling:
    """Stands in for the module's ``random``: offers the given ports first, then any port."""

    def __init__(self, first: list[int]) -> None:
        self.first = list(first)

    def choice(self, ports: range) -> int:
        return self.first.pop(0) if self.first else random.choice(ports)
