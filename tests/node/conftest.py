"""Fixtures for the node tests: node processes that are always killed (ring: test tooling)."""

from __future__ import annotations

from tests.node.helpers import node_factory

__all__ = ["node_factory"]
