"""Every link of a chaos cluster goes through its own named Toxiproxy proxy, and one fault cuts
exactly that link (real ZooKeeper, real reference nodes, the project's Toxiproxy server)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from chaos.links import ChaosCluster, LinkFabric, PortPool, use_toxiproxy
from chaos.nemesis import Nemesis, NodeGuard
from chaos.toxiproxy.launch import toxiproxy_server
from cluster import admin
from cluster.cluster import wait_for
from cluster.nodeconfig import split_zookeeper_connect
from cluster.targets import load_target
from harness.launcher import launcher_named
from harness.ports import CHAOS_LINK, claim_port
from harness.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.chaos


@pytest.fixture(scope="module")
def zk() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(name="chaos-links", tick_time_ms=500, max_session_timeout_ms=30000) as server:
        yield server


@pytest.fixture(scope="module")
def toxiproxy_url() -> Iterator[str]:
    with toxiproxy_server() as url:
        yield url


@pytest.fixture
def cluster(
    zk: ZooKeeperServer, toxiproxy_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ChaosCluster]:
    chroot = f"/links-{request.node.name[:30]}"
    root = KazooClient(hosts=zk.connect_string)
    root.start()
    root.ensure_path(chroot)
    ports = PortPool.for_slot(0, 1)
    made = ChaosCluster(
        load_target("reference"),
        fabric=LinkFabric(use_toxiproxy(toxiproxy_url), prefix=f"{request.node.name[:20]}_", ports=ports),
        ports=ports,
        launcher=launcher_named("process"),
        zk_connect_string=zk.connect_string,
        chroot=chroot,
        txn_log_dir=zk.txn_log_dir,
        base_dir=tmp_path,
        broker_ids=(1, 2, 3),
    )
    try:
        made.start()  # every node past its registration's reply (it has read /controller)
        made.wait_controller()
        yield made
    finally:
        made.close()
        root.delete(chroot, recursive=True)
        root.stop()
        root.close()


def _port(cluster: ChaosCluster, link: str) -> int:
    return int(str(cluster.fabric[link].listen).rsplit(":", 1)[1])


def test_every_registered_endpoint_is_its_links_proxy(cluster: ChaosCluster) -> None:
    assert len(cluster.fabric.names()) == 3 + 9 + 6 + 3
    for y in (1, 2, 3):
        assert cluster.endpoint(y, "CLIENT")[1] == _port(cluster, f"CLIENT_{y}")
        for x in (1, 2, 3):
            assert cluster.endpoint(y, f"CTRL_{x}")[1] == _port(cluster, f"CTRL_{x}_{y}")
            if x != y:
                assert cluster.endpoint(y, f"FROM_{x}")[1] == _port(cluster, f"FROM_{x}_{y}")


def test_each_node_reaches_zookeeper_through_its_own_proxy(cluster: ChaosCluster) -> None:
    for bid, node in cluster.nodes.items():
        hosts, chroot = split_zookeeper_connect(node.properties["zookeeper.connect"])
        assert hosts == [("127.0.0.1", _port(cluster, f"ZK_{bid}"))]
        assert chroot == cluster.chroot


def test_one_disabled_controller_link_holds_back_only_that_broker(cluster: ChaosCluster) -> None:
    """CTRL_c_y down: broker y gets no LeaderAndIsr for a new topic, the others do; the request
    journal (behind the fault proxy) records what got through; enabling the link delivers it."""
    assert cluster.journal is not None
    c = cluster.wait_controller()
    y = next(b for b in cluster.broker_ids if b != c)
    others = [b for b in cluster.broker_ids if b != y]
    cluster.fabric[f"CTRL_{c}_{y}"].disable()
    mark = cluster.journal.mark()
    admin.create_topic_zk(cluster, "cut", {0: [1, 2, 3]})

    def got_leader_and_isr(b: int) -> bool:
        return any(
            any(p.topic == "cut" for p in r.partitions)
            for r in cluster.journal.requests(dest=b, api="LeaderAndIsr", since=mark)  # type: ignore[union-attr]
        )

    wait_for(lambda: all(got_leader_and_isr(b) for b in others), 20.0, f"LeaderAndIsr for 'cut' at {others}")
    assert not got_leader_and_isr(y)
    cluster.fabric[f"CTRL_{c}_{y}"].enable()
    wait_for(
        lambda: got_leader_and_isr(y), 30.0, f"LeaderAndIsr for 'cut' at broker {y} once the link is back"
    )


def test_zk_session_expire_fault_expires_the_session_and_heals(cluster: ChaosCluster) -> None:
    nemesis = Nemesis(cluster, NodeGuard())
    victim = 2
    before = cluster.broker_epoch(victim)
    kind, value, error = nemesis.start({"id": "x-0", "fault": "zk_session_expire", "node": victim})
    assert (kind, error) == ("ok", None)
    assert value["node"] == victim
    assert not cluster.zk.exists(f"/brokers/ids/{victim}")
    assert nemesis.stop("x-0")[0] == "ok"
    cluster.wait_registered([victim], deadline_s=30.0)
    assert cluster.broker_epoch(victim) != before  # a new session registered it again


def test_partition_cuts_only_links_crossing_the_split(cluster: ChaosCluster) -> None:
    crossing = set(cluster.fabric.crossing([3]))
    assert "ZK_3" in crossing
    assert "ZK_1" not in crossing
    assert {"CTRL_1_3", "CTRL_3_1", "FROM_3_2", "FROM_2_3"} <= crossing
    assert not {"CTRL_1_2", "FROM_1_2", "CTRL_3_3", "CLIENT_3"} & crossing


def test_proxies_listen_on_claimed_pool_ports_that_a_disabled_proxy_keeps(cluster: ChaosCluster) -> None:
    """A ``down`` fault disables proxies, which closes their listeners: their ports must stay
    this run's (claimed, below the ephemeral range) so that nobody else is handed them meanwhile
    and enabling the proxy binds the same port again."""
    ports = {name: _port(cluster, name) for name in cluster.fabric.names()}
    assert all(port in CHAOS_LINK.ports for port in ports.values()), ports
    proxy = cluster.fabric["CLIENT_1"]
    proxy.disable()
    try:
        assert claim_port(ports["CLIENT_1"]) is None, "the disabled proxy's port is not claimed"
    finally:
        proxy.enable()
    with socket.create_connection(("127.0.0.1", ports["CLIENT_1"]), timeout=5.0):
        pass
    cluster.fabric.destroy_all()
    claims = [claim_port(port) for port in ports.values()]
    assert all(claims), "ports kept after destroy_all"
    for claim in claims:
        assert claim is not None
        claim.close()
