"""Fixtures of the conformance checks: the target and a cluster factory (conformance ring).

Re-exports the plugin's hooks so ``pytest conformance/checks`` and ``python -m conformance`` behave
the same. ``cluster_factory(n=3, kafka_defaults=False, **options)`` builds a
:class:`~cluster.cluster.Cluster` in this test's chroot on the worker's ZooKeeper
(``kafka_defaults=True``: the safety-relevant keys are left out of ``server.properties``,
:data:`~cluster.targets.SAFETY_DEFAULTS`); every cluster is killed at teardown and its evidence
is attached when the check fails (in ``evidence/<check>.txt`` under the results dir).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from cluster.cluster import Cluster, ClusterFactory
from cluster.targets import KAFKA_DEFAULTS_SUFFIX, Target
from conformance.ahead import AHEAD, AheadStarter, Build, Started, cluster_on
from conformance.evidence import CLUSTERS, add_evidence, cluster_evidence
from conformance.plugin import (
    check_passed,
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
from conformance.scenarios import wait_cluster_known
from conformance.sharing import SHARED, Lent, SharedClusters, declares_sharing
from harness import timeline
from harness.launcher import chosen_launcher_name
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


@contextlib.contextmanager
def _stashed(config: pytest.Config, key: pytest.StashKey[Any], worker_part: Any) -> Iterator[None]:
    """``worker_part`` (the starter, the pool) is in ``config.stash`` for the hooks until the block
    ends, then closed."""
    config.stash[key] = worker_part
    try:
        yield
    finally:
        del config.stash[key]
        worker_part.close()


def _default_cluster(config: pytest.Config, target: Target, zk_server: Any) -> Build:
    """How the ``cluster`` fixture's clusters are built (three nodes, the run's profile)."""
    profile = str(config.getoption("--profile"))
    return lambda chroot, base_dir: cluster_on(target, zk_server, chroot, base_dir, profile=profile)


@pytest.fixture(scope="session")
def _ahead(
    request: pytest.FixtureRequest,
    conformance_target: Target,
    zk_server: Any,
    _zk_admin_client: KazooClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[AheadStarter | None]:
    """The worker's :class:`~conformance.ahead.AheadStarter` (``None`` with ``--no-start-ahead``
    or a container launcher)."""
    config = request.config
    if config.getoption("--no-start-ahead") or chosen_launcher_name() != "process":
        yield None
        return
    build = _default_cluster(config, conformance_target, zk_server)
    ahead = AheadStarter(build, _zk_admin_client, tmp_path_factory.mktemp("ahead"))
    with _stashed(config, AHEAD, ahead):
        yield ahead


@pytest.fixture(scope="session")
def _shared(
    request: pytest.FixtureRequest,
    conformance_target: Target,
    zk_server: Any,
    _zk_admin_client: KazooClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SharedClusters | None]:
    """The worker's pool of one default cluster lent to checks marked ``leaves_cluster_as_found``
    (:mod:`conformance.sharing`; ``None`` with ``--no-share-clusters``)."""
    config = request.config
    if config.getoption("--no-share-clusters"):
        yield None
        return
    pool = SharedClusters(
        _default_cluster(config, conformance_target, zk_server),
        _zk_admin_client,
        tmp_path_factory.mktemp("shared"),
        settle=lambda c: wait_cluster_known(c, 15),
    )
    with _stashed(config, SHARED, pool):
        yield pool


class _Factory:
    """What ``cluster_factory`` gives a check: ``factory(n=3, start=True, ...)`` builds (and
    starts) a cluster in the check's chroot; every cluster it made or adopted is closed at teardown."""

    def __init__(
        self, request: pytest.FixtureRequest, target: Target, zk_server: Any, chroot: str, tmp_path: Path
    ) -> None:
        self._request, self._target, self._zk = request, target, zk_server
        self._chroot, self._tmp = chroot, tmp_path
        self.made: list[Cluster] = []
        self.adopted: list[Started] = []
        self.lent: Lent | None = None

    def _own(self, cluster: Cluster) -> None:
        node = self._request.node
        self.made.append(cluster)
        node.stash.setdefault(CLUSTERS, []).append(cluster)
        add_evidence(node, lambda: cluster_evidence(cluster))

    def __call__(
        self,
        n: int = 3,
        *,
        start: bool = True,
        broker_ids: tuple[int, ...] | None = None,
        kafka_defaults: bool = False,
        **kw: Any,
    ) -> Cluster:
        profile = str(self._request.config.getoption("--profile"))
        cluster = cluster_on(
            self._target,
            self._zk,
            self._chroot,
            self._tmp / f"cluster-{len(self.made)}",
            profile=profile + (KAFKA_DEFAULTS_SUFFIX if kafka_defaults else ""),
            n=n,
            broker_ids=broker_ids,
            **kw,
        )
        self._own(cluster)
        if start:
            cluster.start()
        return cluster

    def adopt(self, started: Started) -> Cluster:
        """A default cluster started ahead (:mod:`conformance.ahead`); what its start raised is
        raised here, as the check's own start would have."""
        self.adopted.append(started)
        return self._take(started)

    def _take(self, started: Started) -> Cluster:
        """A cluster started elsewhere becomes this check's (evidence, target errors); what its
        start raised is raised here."""
        if started.cluster is not None:
            self._own(started.cluster)
        if started.error is not None:
            raise started.error
        assert started.cluster is not None
        return started.cluster

    def borrow(self, pool: SharedClusters, ahead: AheadStarter | None) -> Cluster:
        """A settled default cluster lent by ``pool`` (:mod:`conformance.sharing`); given back,
        or closed, at teardown."""
        self.lent = lent = pool.lend(self._request.node.nodeid, ahead)
        add_evidence(self._request.node, lent.evidence)
        return self._take(lent.started)

    def close(self, ahead: AheadStarter | None, pool: SharedClusters | None) -> None:
        adopted = {id(s.cluster) for s in self.adopted}
        if self.lent is not None:
            adopted.add(id(self.lent.started.cluster))
        for cluster in self.made:
            if id(cluster) not in adopted:
                cluster.close()
        if self.lent is not None and pool is not None:
            pool.give_back(self.lent, passed=check_passed(self._request.node))
        for started in self.adopted:
            if ahead is not None:  # always so: only a starter hands out clusters to adopt
                ahead.release(started)  # closes the cluster and deletes its chroot


@pytest.fixture
def cluster_factory(
    request: pytest.FixtureRequest,
    conformance_target: Target,
    zk_server: Any,
    zk_chroot: str,
    tmp_path: Path,
    _ahead: AheadStarter | None,
    _shared: SharedClusters | None,
) -> Iterator[_Factory]:
    factory = _Factory(request, conformance_target, zk_server, zk_chroot, tmp_path)
    try:
        yield factory
    finally:
        factory.close(_ahead, _shared)


@pytest.fixture
def cluster(
    request: pytest.FixtureRequest,
    cluster_factory: _Factory,
    _ahead: AheadStarter | None,
    _shared: SharedClusters | None,
) -> Cluster:
    """Three started nodes with the default profile (started while the check before ran, when
    that check's worker could: :mod:`conformance.ahead`; lent by an earlier check that left it
    as it found it, when this check too declares it will: :mod:`conformance.sharing`)."""
    if _shared is not None and declares_sharing(request.node):
        return cluster_factory.borrow(_shared, _ahead)
    started = _ahead.take() if _ahead is not None else None
    if started is None:
        return cluster_factory()
    return cluster_factory.adopt(started)
