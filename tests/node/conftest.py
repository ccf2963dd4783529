"""Fixtures for the node tests: node processes that are always killed (ring: test tooling)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node.helpers import NodeFactory


@pytest.fixture
def node_factory(tmp_path: Path, zk_connect: str) -> Iterator[NodeFactory]:
    factory = NodeFactory(tmp_path, zk_connect)
    try:
        yield factory
    finally:
        factory.close()
