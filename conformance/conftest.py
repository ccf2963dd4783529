"""Fixtures of the conformance checks: the target and a cluster factory (conformance ring).

Re-exports the plugin's hooks so ``pytest conformance/checks`` and ``python -m conformance`` behave
the same. ``cluster_factory(n=3, kafka_defaults=False, **options)`` builds a
:class:`~cluster.cluster.Cluster` in this test's chroot on the worker's ZooKeeper
(``kafka_defaults=True``: the safety-relevant keys are left out of ``server.properties``,
:data:`~cluster.targets.SAFETY_DEFAULTS`); every cluster is killed at teardown and its evidence
is attached when the check fails (in ``evidence/<check>.txt`` under the results dir).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster.cluster import Cluster, ClusterFactory
from cluster.targets import KAFKA_DEFAULTS_SUFFIX, Target
from conformance.evidence import CLUSTERS, add_evidence, cluster_evidence
from conformance.plugin import (
    conformance_target,
    phase_metrics,
    pytest_addoption,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)
from harness import timeline
from harness.zookeeper import ZooKeeperServer

__all__ = [
    "ClusterFactory",
    "cluster",
    "cluster_factory",
    "conformance_target",
    "phase_metrics",
    "pytest_addoption",
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
    "zk_server",
]


#: tickTime of the suite's ZooKeeper. Sessions expire on tick boundaries (a killed node's session
#: goes between ``session timeout`` and ``+ tickTime``) and the smallest session ZooKeeper grants
#: is 2 ticks (the largest 20 ticks; raised to 30 s for checks that need a slow session):
#: 500 ms keeps expiry within 0.5 s of the profile's 4 s session timeout.
ZK_TICK_TIME_MS = 500


@pytest.fixture(scope="session")
def zk_server(request: pytest.FixtureRequest) -> Iterator[ZooKeeperServer]:
    """The suite's own ZooKeeper (one per xdist worker), overriding the harness's 2 s-tick one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "master")
    server = ZooKeeperServer(
        name=f"conformance-{worker}", tick_time_ms=ZK_TICK_TIME_MS, max_session_timeout_ms=30000
    )
    with timeline.span("zookeeper-start"):
        server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def cluster_factory(
    request: pytest.FixtureRequest, conformance_target: Target, zk_server: Any, zk_chroot: str, tmp_path: Path
) -> Iterator[ClusterFactory]:
    made: list[Cluster] = []

    def make(
        n: int = 3,
        *,
        start: bool = True,
        broker_ids: tuple[int, ...] | None = None,
        kafka_defaults: bool = False,
        **kw: Any,
    ) -> Cluster:
        profile = str(request.config.getoption("--profile"))
        cluster = Cluster(
            conformance_target,
            zk_connect_string=zk_server.connect_string,
            chroot=zk_chroot,
            txn_log_dir=Path(zk_server.txn_log_dir),
            base_dir=tmp_path / f"cluster-{len(made)}",
            profile=profile + (KAFKA_DEFAULTS_SUFFIX if kafka_defaults else ""),
            broker_ids=broker_ids or tuple(range(1, n + 1)),
            four_letter=zk_server.four_letter,
            **kw,
        )
        made.append(cluster)
        request.node.stash.setdefault(CLUSTERS, []).append(cluster)
        add_evidence(request.node, lambda: cluster_evidence(cluster))
        if start:
            cluster.start()
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.close()


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    """Three started nodes with the default profile."""
    return cluster_factory()
