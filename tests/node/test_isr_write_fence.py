"""A leader's ISR write in flight holds back StopReplica for that partition (Kafka's
``leaderIsrUpdateLock``: ``Partition.shrinkIsr`` writes ZooKeeper under the partition's write lock,
which ``Partition.delete`` also takes).

ring: integration tests. Found by chaos (``partition`` seed 2051): a leader cut from ZooKeeper
shrank its ISR; the write waited for the connection while the partition was deleted on that broker
and recreated under the same name, then landed on the new incarnation's state znode (expected
version 0 matched the fresh znode). Here the test plays the controller: the leader's ZooKeeper link
goes through a Toxiproxy proxy that the test disables; the follower stops (SIGSTOP), so the leader
shrinks the ISR while it cannot reach ZooKeeper; StopReplica(delete) is sent; the link comes back.
The StopReplica answer must come only after the ISR write has landed — on the *old* znode.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import toxiproxy
from kazoo.client import KazooClient

from chaos.toxiproxy.launch import client_for, toxiproxy_server
from kafkawire.states import TopicPartition
from reference_controller import zkdata
from tests.node.helpers import (
    NodeFactory,
    NodeProcess,
    PartitionSpec,
    leader_and_isr,
    stop_replica,
    update_metadata,
)
from tests.polling import wait_for

pytestmark = pytest.mark.integration
BROKER_ONLY = {"reference.controller.enable": "false"}


@pytest.fixture
def zk_proxy(zk_connect: str) -> Iterator[tuple[toxiproxy.Proxy, str]]:
    """A Toxiproxy proxy to ZooKeeper and the connect string (with this test's chroot) through it."""
    hostport, _, chroot = zk_connect.partition("/")
    with toxiproxy_server() as url:
        proxy = client_for(url).create(upstream=hostport, name="zk-leader", listen="127.0.0.1:0")
        try:
            yield proxy, f"{proxy.listen}/{chroot}"
        finally:
            proxy.destroy()


def _state(zk: KazooClient) -> tuple[zkdata.LeaderIsrAndControllerEpoch, int]:
    path = zkdata.partition_state_path("fence", 0)
    data, stat = zk.get(path)
    return zkdata.decode_partition_state(data, stat.version, path), stat.version


def _leader_and_follower(
    node_factory: NodeFactory, zk_client: KazooClient, leader_overrides: dict[str, str]
) -> tuple[NodeProcess, NodeProcess, dict[int, tuple[str, int]]]:
    """Broker 1 leads fence-0 (ISR [1, 2], controller epoch 7), broker 2 follows; the test plays
    the controller (state znode, then UpdateMetadata and LeaderAndIsr to both)."""
    leader = node_factory.start(1, {**BROKER_ONLY, **leader_overrides})
    follower = node_factory.start(2, BROKER_ONLY)
    addresses = {1: leader.endpoint(zk_client), 2: follower.endpoint(zk_client)}
    spec = PartitionSpec(
        "fence", 0, leader=1, leader_epoch=0, isr=(1, 2), replicas=(1, 2), controller_epoch=7
    )
    zk_client.create(
        zkdata.partition_state_path("fence", 0),
        zkdata.encode_partition_state(zkdata.LeaderAndIsr(1, 0, (1, 2)), 7),
        makepath=True,
    )
    for bid in (1, 2):
        um = update_metadata(addresses[bid], addresses, [spec], controller_id=1, controller_epoch=7)
        assert int(um.error_code) == 0
        assert int(leader_and_isr(addresses[bid], [spec], controller_epoch=7).error_code) == 0
    return leader, follower, addresses


def test_stop_replica_waits_for_the_isr_write_in_flight(
    node_factory: NodeFactory, zk_client: KazooClient, zk_proxy: tuple[toxiproxy.Proxy, str]
) -> None:
    proxy, through_proxy = zk_proxy
    leader, follower, addresses = _leader_and_follower(
        node_factory, zk_client, {"zookeeper.connect": through_proxy}
    )

    answer: dict[str, Any] = {}
    proxy.disable()  # the leader's ZooKeeper session lives on (6 s) but nothing reaches ZooKeeper
    follower.signal(signal.SIGSTOP)
    try:
        wait_for(
            lambda: "Shrinking ISR from 1,2 to 1" in leader.read("server.log"), 15, "the leader's shrink"
        )
        assert _state(zk_client) == (
            zkdata.LeaderIsrAndControllerEpoch(zkdata.LeaderAndIsr(1, 0, (1, 2), 0), 7),
            0,
        ), "the ISR write cannot have reached ZooKeeper yet"

        def send_stop() -> None:
            response = stop_replica(addresses[1], [("fence", 0)], delete=True, controller_epoch=7)
            answer["state_when_answered"] = _state(zk_client)
            answer["error"] = int(response.error_code)

        sender = threading.Thread(target=send_stop, daemon=True)
        sender.start()
        proxy.enable()
        sender.join(30)
        assert not sender.is_alive(), "StopReplica not answered within 30 s of the link's return"
    finally:
        proxy.enable()
        follower.signal(signal.SIGCONT)
    assert answer["error"] == 0
    state, version = answer["state_when_answered"]
    assert (state.leader_and_isr.leader, state.leader_and_isr.isr, version) == (1, (1,), 1), (
        f"StopReplica answered before the ISR write landed: ZooKeeper then held {state} at version {version}"
    )


def _notified(zk: KazooClient) -> list[list[TopicPartition]]:
    children = sorted(zk.get_children(zkdata.ISR_CHANGE_NOTIFICATION))
    return [zkdata.decode_isr_change(zk.get(zkdata.isr_change_path(c))[0], c) for c in children]


def test_an_isr_change_notification_lost_in_flight_is_sent_again(
    node_factory: NodeFactory, zk_client: KazooClient, zk_proxy: tuple[toxiproxy.Proxy, str]
) -> None:
    """Chaos ``partition`` seed 2046: the leader's ``isr_change`` create was in flight when its
    ZooKeeper link went black; the connection loss must not lose the notification (Kafka's
    ``retryRequestUntilConnected`` resends it; the pending set is cleared only after the write)."""
    proxy, through_proxy = zk_proxy
    zk_client.ensure_path(zkdata.ISR_CHANGE_NOTIFICATION)
    leader, follower, _ = _leader_and_follower(
        node_factory,
        zk_client,
        {
            "zookeeper.connect": through_proxy,
            "zookeeper.session.timeout.ms": "12000",
            # propagation at the first 2.5 s tick >= 3 s after the change: well after the toxics
            "reference.isr.change.propagation.blackout.ms": "3000",
        },
    )
    follower.signal(signal.SIGSTOP)
    try:
        wait_for(lambda: _state(zk_client)[0].leader_and_isr.isr == (1,), 15, "the shrink written")
        # black out the link (data dropped, connection kept) before the propagation (>= 3 s after
        # the change): the notification's create goes out into the void
        proxy.add_toxic(type="timeout", attributes={"timeout": 0}, stream="upstream", name="black-up")
        proxy.add_toxic(type="timeout", attributes={"timeout": 0}, stream="downstream", name="black-down")
        # kazoo fails the requests in flight when it gives up on the connection (read timeout,
        # 2/3 of the 12 s session): wait for that, then bring the link back within the session
        wait_for(
            lambda: "Connection dropped" in leader.read("server.log"),
            20,
            "the leader's ZooKeeper client to drop the blacked-out connection",
        )
        assert _notified(zk_client) == [], "nothing can have reached ZooKeeper through the black link"
        for toxic in ("black-up", "black-down"):
            proxy.destroy_toxic(toxic)
        notes = wait_for(lambda: _notified(zk_client), 20, "the isr_change notification")
    finally:
        follower.signal(signal.SIGCONT)
    assert [("fence", 0)] in notes


def test_a_connection_lost_during_start_up_is_survived(
    node_factory: NodeFactory, zk_client: KazooClient, zk_proxy: tuple[toxiproxy.Proxy, str]
) -> None:
    """Chaos ``partition`` seed 2616: a node restarted while its ZooKeeper link misbehaved died of
    one ConnectionLoss while creating the top-level paths. Kafka resends such requests once
    reconnected (``retryRequestUntilConnected``). Here every connection through the proxy is cut
    after 600 bytes from ZooKeeper, so start-up's requests lose their connection again and again;
    the node must still register."""
    proxy, through_proxy = zk_proxy
    proxy.add_toxic(type="limit_data", attributes={"bytes": 600}, stream="downstream", name="cut")
    node = node_factory.start(1, {**BROKER_ONLY, "zookeeper.connect": through_proxy})
    wait_for(lambda: zk_client.exists(zkdata.broker_path(1)) is not None, 60, "broker 1 registered")
    assert node.proc.poll() is None, node.stderr()
    assert "ConnectionLoss" not in node.stderr()
