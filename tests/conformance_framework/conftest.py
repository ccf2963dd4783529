"""Fixtures shared by the conformance framework's tests."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient


@pytest.fixture
def admin(_zk_admin_client: KazooClient) -> KazooClient:
    """A client of the whole session server (no chroot): sees every chroot, like the suite's own."""
    return _zk_admin_client
