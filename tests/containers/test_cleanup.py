"""No container outlives its run, even a killed one; a live owner's never go
(ring: tests, integration).

Real owner processes (:mod:`tests.containers.container_owner`) start real containers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.containers.launcher import reap_orphan_containers
from tests.containers.docker_helpers import inspect, kit_containers

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def _owner(run_dir: Path, mode: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.containers.container_owner", str(run_dir), mode],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    name = proc.stdout.readline().strip()
    assert name.startswith("kzk-owner-test-"), f"owner printed {name!r} (exit {proc.poll()})"
    return proc, name


def test_container_carries_the_owner_labels_and_goes_when_its_owner_exits(
    docker_ready: None, tmp_path: Path
) -> None:
    proc, name = _owner(tmp_path, "exit")
    assert proc.wait(timeout=120) == 0
    assert "no such container" in inspect(name, "{{.State.Status}}"), "atexit left the container"
    assert name not in kit_containers()


def test_killed_owners_containers_are_reaped_and_a_live_owners_never(
    docker_ready: None, tmp_path: Path
) -> None:
    (tmp_path / "dead").mkdir()
    (tmp_path / "live").mkdir()
    dead, dead_name = _owner(tmp_path / "dead", "wait")
    live, live_name = _owner(tmp_path / "live", "wait")
    try:
        assert inspect(dead_name, '{{index .Config.Labels "kzk.owner.pid"}}') == str(dead.pid)
        assert inspect(live_name, '{{index .Config.Labels "kzk.owner.pid"}}') == str(live.pid)
        dead.kill()  # SIGKILL: no hook runs, the container stays
        dead.wait(timeout=30)
        assert inspect(dead_name, "{{.State.Status}}") == "running"
        removed = reap_orphan_containers()  # what the next run's session start does
        assert dead_name in removed
        assert live_name not in removed
        assert "no such container" in inspect(dead_name, "{{.State.Status}}")
        assert inspect(live_name, "{{.State.Status}}") == "running"
    finally:
        live.send_signal(signal.SIGTERM)  # the owner's signal hook removes its containers
        live.wait(timeout=120)
        dead.kill()
    assert "no such container" in inspect(live_name, "{{.State.Status}}")
    assert not kit_containers(f"kzk.owner.pid={live.pid}")
    assert not kit_containers(f"kzk.owner.pid={dead.pid}")
    assert os.getpid() != live.pid
