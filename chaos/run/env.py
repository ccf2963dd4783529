"""`RunEnv`: what one chaos worker shares across its runs (chaos, drivers ring; a module of its own
so the runner and the artefact writer both use it without importing each other).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from chaos.links import PortPool
from chaos.nemesis import Ensemble
from cluster.targets import Target
from harness.launcher import Launcher

__all__ = ["RunEnv"]


@dataclass
class RunEnv:
    """What a worker shares across its runs: target, ZooKeeper, Toxiproxy, ports, launcher."""

    target: Target
    target_version: str | None
    slot: str
    launcher: Launcher
    ports: PortPool
    toxiproxy: Any
    zk_connect: str
    zk_txn_dir: Path
    zk_admin: KazooClient
    zk_log_tail: Callable[[], str]
    four_letter: Callable[[str], str] | None
    ensemble_env: Callable[[], RunEnv] | None = None
    ensemble: Ensemble | None = None
    commit: str | None = None
