"""Clusters started ahead (conformance.ahead) on a real ZooKeeper with real reference nodes: the
cluster is registered and past start-up in a chroot of its own when it is taken, releasing it
kills its nodes and deletes its chroot, a cluster nobody took is released at the end, and what a
start raised comes back to whoever takes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from cluster.cluster import Cluster
from cluster.startup import TargetNodeError
from cluster.targets import load_target
from conformance.ahead import AheadStarter, cluster_on
from harness.zookeeper import ZooKeeperServer
from tests.conformance_framework.live_nodes import alive
from tests.conformance_framework.live_nodes import pids as pids_of


def _builder(zk_server: ZooKeeperServer, target_name: str = "reference") -> Callable[[str, Path], Cluster]:
    target = load_target(target_name)
    return lambda chroot, base_dir: cluster_on(target, zk_server, chroot, base_dir)


@pytest.mark.integration
def test_a_taken_cluster_is_up_in_its_own_chroot_and_release_removes_it(
    zk_server: ZooKeeperServer, admin: KazooClient, tmp_path: Path
) -> None:
    ahead = AheadStarter(_builder(zk_server), admin, tmp_path)
    assert ahead.take() is None  # nothing pending
    ahead.begin()
    assert ahead.pending is True
    ahead.begin()  # one at a time: a second begin while one is pending does nothing
    started = ahead.take()
    assert started is not None
    assert [ahead.pending] == [False]
    assert started.error is None, started.error
    cluster = started.cluster
    assert cluster is not None
    assert cluster.chroot == started.chroot
    assert started.chroot.startswith("/t/ahead-")
    # registered and past start-up, seen through ZooKeeper itself, not the cluster's own client
    ids = admin.get_children(f"{started.chroot}/brokers/ids")
    assert sorted(ids) == ["1", "2", "3"]
    assert admin.exists(f"{started.chroot}/controller") is not None
    for bid in cluster.broker_ids:
        journal = cluster.zk_journal(bid)
        assert any(r.path == "/controller" for r in journal.requests()), journal.dump()
    pids = pids_of(cluster)
    assert len(pids) == 3
    # a second cluster gets a chroot of its own
    ahead.begin()
    second = ahead.take()
    assert second is not None
    assert second.cluster is not None
    assert second.chroot != started.chroot
    ahead.release(started)
    ahead.release(second)
    assert not any(alive(p) for p in pids + pids_of(second.cluster))
    assert admin.exists(started.chroot) is None
    assert admin.exists(second.chroot) is None


@pytest.mark.integration
def test_a_cluster_nobody_took_is_closed_at_the_end(
    zk_server: ZooKeeperServer, admin: KazooClient, tmp_path: Path
) -> None:
    made: list[Cluster] = []
    build = _builder(zk_server)

    def keep(chroot: str, base_dir: Path) -> Cluster:
        made.append(build(chroot, base_dir))
        return made[-1]

    ahead = AheadStarter(keep, admin, tmp_path)
    ahead.begin()
    ahead.close()
    assert not ahead.pending
    (cluster,) = made
    assert cluster.nodes[1].exit_codes, "the node was not stopped"
    assert admin.exists(cluster.chroot) is None
    ahead.close()  # nothing pending: nothing to do


@pytest.mark.integration
def test_what_a_start_raised_comes_back_with_the_cluster(
    zk_server: ZooKeeperServer, admin: KazooClient, tmp_path: Path
) -> None:
    target_file = tmp_path / "target.toml"
    target_file.write_text(
        """name = "exits"
command = ["{python}", "-c", "import sys; print('no node here', file=sys.stderr); sys.exit(4)", "{config}"]
cwd = "{repo_root}"
""",
        encoding="utf-8",
    )
    ahead = AheadStarter(_builder(zk_server, str(target_file)), admin, tmp_path / "c")
    ahead.begin()
    started = ahead.take()
    assert started is not None
    assert isinstance(started.error, TargetNodeError), started.error
    assert "exited with code 4" in str(started.error)
    assert started.cluster is not None  # kept for the evidence of the check that takes it
    ahead.release(started)
    assert admin.exists(started.chroot) is None
