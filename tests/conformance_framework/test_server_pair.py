"""A split-topology server: two real processes handled as one (cluster/server_pair.py)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.server_pair import ServerPair
from harness.launcher import Handle, LaunchSpec
from harness.process_launcher import ProcessLauncher
from harness.wait import wait_for

pytestmark = pytest.mark.integration

# Records SIGTERM (with the time) in its log, then exits 0; sleeps otherwise.
PROGRAM = """
import signal, sys, time
def term(*_):
    print("TERM", time.monotonic(), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
print("up", flush=True)
while True:
    time.sleep(0.05)
"""


def spawn(tmp_path: Path, name: str) -> Handle:
    return ProcessLauncher().spawn(
        LaunchSpec(
            role="node",
            name=name,
            argv=[sys.executable, "-c", PROGRAM],
            cwd=tmp_path,
            log_path=tmp_path / f"{name}.log",
        )
    )


def log_of(tmp_path: Path, name: str) -> str:
    return (tmp_path / f"{name}.log").read_text(encoding="utf-8")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[ServerPair]:
    broker, controller = spawn(tmp_path, "broker"), spawn(tmp_path, "controller")
    pair = ServerPair(broker, controller)
    wait_for(
        lambda: "up" in log_of(tmp_path, "broker") and "up" in log_of(tmp_path, "controller"), 30, "both up"
    )
    yield pair
    pair.remove()


def test_sigterm_stops_the_broker_first_then_its_controller(pair: ServerPair, tmp_path: Path) -> None:
    pair.send_signal(signal.SIGTERM)
    assert pair.wait(30) == 0
    broker_at = float(log_of(tmp_path, "broker").split("TERM")[1].split()[0])
    controller_at = float(log_of(tmp_path, "controller").split("TERM")[1].split()[0])
    assert broker_at < controller_at
    assert pair.controller.poll() == 0


def test_sigkill_hits_both_processes(pair: ServerPair) -> None:
    pair.send_signal(signal.SIGKILL)
    assert pair.wait(30) == -signal.SIGKILL
    assert pair.controller.poll() == -signal.SIGKILL


def test_the_server_is_down_when_its_controller_process_dies(pair: ServerPair) -> None:
    assert pair.poll() is None
    pair.controller.send_signal(signal.SIGKILL)
    wait_for(lambda: pair.poll() is not None, 30, "the pair seen down")
    assert pair.part() == ("controller", -signal.SIGKILL)
    assert pair.broker.poll() is None  # the broker still runs until the pair is removed
