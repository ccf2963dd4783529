"""A cluster lent to checks that leave it as they found it (conformance.sharing), on a real
ZooKeeper with real reference nodes: it goes back to the pool only when the check passed and
nothing changed — a znode written, a node stopped, a topic created through the controller — and a
cluster not given back is closed with its chroot; a change while it sat idle is caught when it is
lent again. The fingerprint's comparison is also tested on its own with hand-made values."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from cluster.cluster import Cluster
from cluster.targets import load_target
from conformance.ahead import AheadStarter, cluster_on
from conformance.scenarios import create_topic, wait_cluster_known
from conformance.sharing import Fingerprint, SharedClusters, differences
from harness.zookeeper import ZooKeeperServer
from tests.conformance_framework.live_nodes import alive
from tests.conformance_framework.live_nodes import pids as pids_of
from tests.conformance_framework.test_gate import certificate, run_cli


@pytest.fixture
def pool(zk_server: ZooKeeperServer, admin: KazooClient, tmp_path: Path) -> Iterator[SharedClusters]:
    target = load_target("reference")

    def build(chroot: str, base_dir: Path) -> Cluster:
        return cluster_on(target, zk_server, chroot, base_dir)

    shared = SharedClusters(build, admin, tmp_path, settle=lambda c: wait_cluster_known(c, 15))
    yield shared
    shared.close()


def _closed(admin: KazooClient, cluster: Cluster, pids: list[int]) -> bool:
    return not any(alive(p) for p in pids) and admin.exists(cluster.chroot) is None


@pytest.mark.integration
def test_a_check_that_only_reads_hands_the_same_running_cluster_to_the_next(
    pool: SharedClusters, admin: KazooClient
) -> None:
    first = pool.lend("check-a", None)
    assert first.started.error is None, first.started.error
    cluster = first.started.cluster
    assert cluster is not None
    assert first.baseline is not None, "a healthy reference cluster settles"
    assert cluster.chroot.startswith("/t/shared-")
    assert sorted(admin.get_children(f"{cluster.chroot}/brokers/ids")) == ["1", "2", "3"]
    pids = pids_of(cluster)
    # what a read-only check does: reads znodes, the transaction log, the watches
    cluster.wait_controller()
    cluster.history()
    cluster.zk.get("/controller_epoch")
    pool.give_back(first, passed=True)
    assert pool.will_have_one
    second = pool.lend("check-b", None)
    assert second.started.cluster is cluster
    assert second.used_by == ["check-a", "check-b"]
    assert pids_of(cluster) == pids
    assert all(alive(p) for p in pids)
    assert "check-a" in second.evidence()["cluster sharing"]
    pool.give_back(second, passed=True)
    pool.close()
    assert _closed(admin, cluster, pids)


@pytest.mark.integration
def test_a_check_that_writes_or_fails_or_stops_a_node_closes_the_cluster(
    pool: SharedClusters, admin: KazooClient
) -> None:
    # a znode written under the chroot by the check itself
    lent = pool.lend("writes-a-znode", None)
    cluster = lent.started.cluster
    assert cluster is not None
    pids = pids_of(cluster)
    admin.create(f"{cluster.chroot}/scribble", b"x")
    pool.give_back(lent, passed=True)
    assert not pool.will_have_one
    assert _closed(admin, cluster, pids)

    # a topic created: the controller writes its partition state and sends requests
    lent = pool.lend("creates-a-topic", None)
    cluster = lent.started.cluster
    assert cluster is not None
    pids = pids_of(cluster)
    create_topic(cluster, "t", {0: [1, 2]})
    cluster.wait_controller()
    pool.give_back(lent, passed=True)
    assert _closed(admin, cluster, pids)

    # a node stopped (and started again: a new process, a new registration)
    lent = pool.lend("bounces-a-node", None)
    cluster = lent.started.cluster
    assert cluster is not None
    cluster.stop(2)
    cluster.start([2])
    pids = pids_of(cluster)
    pool.give_back(lent, passed=True)
    assert _closed(admin, cluster, pids)

    # a check that failed, though it changed nothing
    lent = pool.lend("failed", None)
    cluster = lent.started.cluster
    assert cluster is not None
    pids = pids_of(cluster)
    pool.give_back(lent, passed=False)
    assert not pool.will_have_one
    assert _closed(admin, cluster, pids)


@pytest.mark.integration
def test_a_change_while_idle_is_caught_when_lent_again(pool: SharedClusters, admin: KazooClient) -> None:
    lent = pool.lend("reads", None)
    cluster = lent.started.cluster
    assert cluster is not None
    pids = pids_of(cluster)
    pool.give_back(lent, passed=True)
    cluster.kill(3)  # while it sat in the pool
    again = pool.lend("next", None)
    assert again.started.cluster is not cluster
    assert again.used_by == ["next"]
    assert _closed(admin, cluster, pids)
    pool.give_back(again, passed=True)


@pytest.mark.integration
def test_a_cluster_started_ahead_is_lent_and_released_into_the_pool(
    zk_server: ZooKeeperServer, pool: SharedClusters, admin: KazooClient, tmp_path: Path
) -> None:
    target = load_target("reference")
    ahead = AheadStarter(lambda c, d: cluster_on(target, zk_server, c, d), admin, tmp_path / "ahead")
    ahead.begin()
    lent = pool.lend("first", ahead)
    assert not ahead.pending
    cluster = lent.started.cluster
    assert cluster is not None
    assert cluster.chroot.startswith("/t/ahead-")
    pids = pids_of(cluster)
    pool.give_back(lent, passed=True)
    pool.close()
    assert _closed(admin, cluster, pids)


def _print(**znodes: tuple[bytes | None, int, int, int, int, int, int]) -> Fingerprint:
    return Fingerprint(
        znodes={f"/{k}": v for k, v in znodes.items()},
        processes={1: (0x10, True, False), 2: (0x20, True, False)},
        requests=7,
        log_dirs={1: ("d0/meta.properties",), 2: ("d0/meta.properties",)},
    )


@pytest.mark.unit
def test_differences_name_every_kind_of_change() -> None:
    base = _print(a=(b"1", 5, 5, 5, 0, 0, 0), b=(None, 6, 6, 9, 0, 2, 0))
    assert differences(base, base) == []
    assert differences(base, _print(a=(b"1", 5, 5, 5, 0, 0, 0))) == ["znode /b deleted"]
    grown = _print(a=(b"1", 5, 5, 5, 0, 0, 0), b=(None, 6, 6, 9, 0, 2, 0), c=(b"", 11, 11, 11, 0, 0, 0))
    assert differences(base, grown) == ["znode /c created"]
    # the same data written again: only the stat tells
    rewritten = _print(a=(b"1", 5, 12, 5, 1, 0, 0), b=(None, 6, 6, 9, 0, 2, 0))
    assert differences(base, rewritten) == ["znode /a changed (stat: mzxid 0x5 -> 0xc, pzxid 0x5 -> 0x5)"]
    # a child created and deleted again: pzxid and cversion moved
    churned = _print(a=(b"1", 5, 5, 5, 0, 0, 0), b=(None, 6, 6, 13, 0, 4, 0))
    assert differences(base, churned) == ["znode /b changed (stat: mzxid 0x6 -> 0x6, pzxid 0x9 -> 0xd)"]
    other = Fingerprint(
        znodes=base.znodes,
        processes={1: (0x10, True, False), 2: (0x20, False, False)},
        requests=9,
        log_dirs={1: ("d0/meta.properties", "d0/t-0"), 2: ("d0/meta.properties",)},
    )
    assert differences(base, other) == [
        "node 2 process: process 0x20 running -> process 0x20 ended",
        "controller requests recorded: 7 -> 9",
        "node 1 log dirs: added ['d0/t-0'], removed []",
    ]
    many = _print(**{f"n{i:02}": (b"", i, i, i, 0, 0, 0) for i in range(20)})
    listed = differences(base, many, limit=5)
    assert len(listed) == 6
    assert listed[-1] == "... and 17 more"


def _spans(results: Path) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for path in sorted(results.glob("timings-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            spans.extend(json.loads(line)["spans"])
    return spans


@pytest.mark.integration
@pytest.mark.slow
def test_the_checks_marked_as_leaving_their_cluster_as_found_do_so_on_the_reference(tmp_path: Path) -> None:
    """The four marked checks on one worker: the first starts a cluster, the other three borrow it,
    and none is refused — the marks hold for the reference, as the fingerprints judged them. With
    ``--no-share-clusters`` each starts its own and the verdicts are the same."""
    marked = "EPOCH-1,EPOCH-2,EPOCH-5,BADINPUT-3"
    shared = tmp_path / "shared"
    out = run_cli("--ids", marked, "-n", "1", "--diff-scenarios", "0", results=shared)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    spans = _spans(shared)
    lent = [
        s for s in spans if s["name"] == "cluster-adopt" and s["attrs"] == {"how": "shared", "as_found": True}
    ]
    refused = [s for s in spans if s["name"] == "cluster-share-refused"]
    assert (len(lent), refused) == (3, []), (lent, refused)
    own = tmp_path / "own"
    out = run_cli(
        "--ids", marked, "-n", "1", "--diff-scenarios", "0", "--", "--no-share-clusters", results=own
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert not [s for s in _spans(own) if s["name"] == "cluster-adopt" and s["attrs"].get("how") == "shared"]
    starts = [sum(1 for s in _spans(d) if s["name"] == "node-start") for d in (shared, own)]
    assert starts[0] == starts[1] - 9, starts  # three clusters of three nodes not started

    def verdicts(results: Path) -> dict[str, str]:
        return {bid: v["verdict"] for bid, v in certificate(results)["verdicts"].items()}

    assert verdicts(shared) == verdicts(own)
    assert set(verdicts(shared).values()) == {"pass"}
