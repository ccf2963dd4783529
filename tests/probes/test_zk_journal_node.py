"""A real node behind its ZooKeeper recording proxy (integration): the conformance cluster points
the node's ``zookeeper.connect`` at the proxy with the chroot kept, the node registers and is
elected through it, the journal names its session, and closing the cluster leaves no proxy."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.cluster import Cluster, wait_for
from cluster.targets import TargetError, load_target
from harness.zookeeper import ZooKeeperServer
from probes.zk_journal import ZkRequest
from tests.probes.nodes import reference_cluster


@pytest.fixture
def one_node(zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with reference_cluster(zk_server, zk_chroot, tmp_path, (1,)) as cluster:
        yield cluster


def _ops(r: ZkRequest) -> list[tuple[str, str | None]]:
    return [(o.op, o.path) for o in (r.sub_ops or ((r.op,) if r.op else ()))]


@pytest.mark.integration
def test_a_node_registers_and_is_elected_through_its_journalled_zookeeper_link(one_node: Cluster) -> None:
    cluster = one_node
    (proxy,) = cluster.zk_proxies[1]
    connect = cluster.nodes[1].properties["zookeeper.connect"]
    assert connect == f"127.0.0.1:{proxy.port}{cluster.chroot}"
    cluster.start()
    assert cluster.wait_controller() == 1
    journal = cluster.zk_journal(1)
    stat = cluster.zk.exists("/brokers/ids/1")
    assert stat is not None
    assert journal.sessions() == [stat.ephemeralOwner], journal.dump()
    registrations = [
        r for r in journal.requests(op=("create", "multi")) if ("create", "/brokers/ids/1") in _ops(r)
    ]
    assert registrations, journal.dump()
    reply = journal.reply_to(registrations[-1])
    assert reply is not None
    assert reply.ok
    elections = [r for r in journal.requests(op="multi") if ("create", "/controller") in _ops(r)]
    assert elections, journal.dump()
    wait_for(  # the controller arms its child watches after /controller is written
        lambda: journal.requests(op=("getChildren", "getChildren2"), path="/brokers/ids", watch=True),
        20,
        journal.dump,
    )
    records = journal.records()
    lines = (cluster.nodes[1].node_dir / "zk-journal.jsonl").read_text().splitlines()
    assert len(lines) >= len(records) - 2  # the last records may still be in flight
    assert json.loads(lines[0])["kind"] == "ZkConnect"


@pytest.mark.integration
def test_closing_the_cluster_stops_every_zookeeper_proxy(one_node: Cluster) -> None:
    one_node.start()
    port = one_node.zk_proxies[1][0].port
    one_node.close()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    assert one_node.proxy_loop is not None
    assert not one_node.proxy_loop.loop.is_running()


@pytest.mark.integration
def test_without_recording_the_node_connects_to_zookeeper_directly(
    zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    with reference_cluster(zk_server, zk_chroot, tmp_path, (1,), record_zookeeper=False) as cluster:
        assert cluster.nodes[1].properties["zookeeper.connect"] == f"{zk_server.connect_string}{zk_chroot}"
        with pytest.raises(LookupError, match="record_zookeeper=False"):
            cluster.zk_journal(1)


@pytest.mark.integration
def test_a_refused_cluster_leaves_no_zookeeper_proxy_behind(
    zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    def loops() -> int:
        return sum(t.name == "zk-journal" and t.is_alive() for t in threading.enumerate())

    before = loops()
    with pytest.raises(TargetError, match="unknown profile"):
        Cluster(
            load_target("reference"),
            zk_connect_string=zk_server.connect_string,
            chroot=zk_chroot,
            txn_log_dir=Path(zk_server.txn_log_dir),
            base_dir=tmp_path,
            broker_ids=(1,),
            profile="9.9",
        )
    assert loops() == before
