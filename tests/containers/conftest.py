"""Fixtures of the docker launcher's tests (ring: test tooling).

Every test here needs a running Docker daemon and the kit's images. Without a daemon they are
skipped with the reason and the command that enables Docker — never passed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from harness.containers import images
from tests.containers.docker_helpers import kit_containers

ENABLE = "as root: bash scripts/setup_docker.sh && python -m harness build-images"


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
