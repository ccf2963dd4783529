"""Fixtures of the docker launcher's tests (ring: test tooling).

Every test here needs a running Docker daemon and the kit's images. Without a daemon they are
skipped with the reason and the command that enables Docker — never passed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from fixtures.containers import images

ENABLE = "as root: bash scripts/setup_docker.sh && python -m fixtures.cli build-images"


def kit_containers(label: str = "kzk.kit=1") -> list[str]:
    """Names of the containers (running or not) carrying ``label``."""
    out = subprocess.run(
        ["docker", "ps", "--all", "--filter", f"label={label}", "--format", "{{.Names}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def inspect(name: str, template: str) -> str:
    proc = subprocess.run(
        ["docker", "inspect", "--format", template, name], check=False, capture_output=True, text=True
    )
    return proc.stdout.strip() if proc.returncode == 0 else f"<no such container: {proc.stderr.strip()}>"


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Skip (loudly, with the fix) when no Docker daemon answers; build the images when missing."""
    reason = images.docker_available()
    if reason is not None:
        pytest.skip(f"docker launcher tests need Docker: {reason}. Enable: {ENABLE}")
    images.build_images()


@pytest.fixture
def no_leftovers(docker_ready: None) -> Iterator[None]:
    """The test's own containers are all gone when it ends (other runs' containers are not ours)."""
    mine = f"kzk.owner.pid={os.getpid()}"
    yield
    left = kit_containers(mine)
    assert not left, f"containers left behind by this test: {left}"
