"""A 3-node reference cluster (broker + controller component per node) driven by confluent-kafka.

ring: integration tests. Checks that the admin APIs agree with ZooKeeper, that log dirs appear on
exactly the replica brokers, and that SIGTERM on a leader moves its leaderships before it exits.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

from reference_controller import zkdata
from tests.node.helpers import NodeFactory, NodeProcess
from tests.polling import wait_for

pytestmark = [
    pytest.mark.integration,
]


@pytest.fixture
def cluster(node_factory: NodeFactory, zk_client: KazooClient) -> list[NodeProcess]:
    nodes = [node_factory.start(i) for i in (1, 2, 3)]
    for n in nodes:
        n.endpoint(zk_client)
    wait_for(lambda: zk_client.exists(zkdata.CONTROLLER), 20, "/controller")
    return nodes


def _admin(zk: KazooClient, nodes: list[NodeProcess]) -> AdminClient:
    servers = ",".join(f"{h}:{p}" for h, p in (n.endpoint(zk) for n in nodes))
    return AdminClient({"bootstrap.servers": servers})


def _state(zk: KazooClient, topic: str, p: int) -> zkdata.LeaderIsrAndControllerEpoch:
    path = zkdata.partition_state_path(topic, p)
    data, stat = zk.get(path)
    return zkdata.decode_partition_state(data, stat.version, path)


def _partition_dirs(node: NodeProcess, prefix: str) -> set[str]:
    return {d.name for d in node.data_dir.iterdir() if d.is_dir() and d.name.startswith(prefix)}


def _dirs_are(node: NodeProcess, prefix: str, expected: set[str]) -> Callable[[], bool]:
    return lambda: _partition_dirs(node, prefix) == expected


def test_admin_apis_agree_with_zookeeper(cluster: list[NodeProcess], zk_client: KazooClient) -> None:
    admin = _admin(zk_client, cluster)
    md: Any = wait_for(
        lambda: (m := admin.list_topics(timeout=10)) and len(m.brokers) == 3 and m, 20, "3 brokers"
    )
    controller_id = zkdata.decode_controller(zk_client.get(zkdata.CONTROLLER)[0])
    assert md.controller_id == controller_id
    futures = admin.create_topics(
        [NewTopic("orders", num_partitions=3, replication_factor=2)], operation_timeout=20
    )
    futures["orders"].result(timeout=30)
    assignment = zkdata.decode_topic("orders", zk_client.get(zkdata.topic_path("orders"))[0]).partitions
    # CreateTopics returns once the controller's broker has the metadata (Kafka's delayed create);
    # the client may ask another broker, whose UpdateMetadata can still be in flight.
    md = wait_for(
        lambda: (
            (m := admin.list_topics(timeout=10))
            and "orders" in m.topics
            and len(m.topics["orders"].partitions) == len(assignment)
            and m
        ),
        20,
        "orders in the metadata of the broker the client asks",
    )
    for p, a in assignment.items():
        assert list(md.topics["orders"].partitions[p].replicas) == list(a.replicas)
        assert (
            md.topics["orders"].partitions[p].leader == _state(zk_client, "orders", p).leader_and_isr.leader
        )
    for n in cluster:
        expected = {f"orders-{p}" for p, a in assignment.items() if n.broker_id in a.replicas}
        wait_for(_dirs_are(n, "orders-", expected), 10, f"log dirs {expected} on broker {n.broker_id}")
    cluster_desc = admin.describe_cluster(request_timeout=10).result(timeout=10)
    assert cluster_desc.controller.id == controller_id
    assert {node.id for node in cluster_desc.nodes} == {1, 2, 3}
    admin.create_partitions([NewPartitions("orders", 5)], operation_timeout=20)["orders"].result(timeout=30)
    assert len(zkdata.decode_topic("orders", zk_client.get(zkdata.topic_path("orders"))[0]).partitions) == 5
    wait_for(lambda: len(admin.list_topics(timeout=10).topics["orders"].partitions) == 5, 20, "5 partitions")
    dup = admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])["orders"]
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS"):
        dup.result(timeout=30)
    admin.delete_topics(["orders"], operation_timeout=30)["orders"].result(timeout=40)
    wait_for(lambda: not zk_client.exists(zkdata.topic_path("orders")), 30, "topic znode deleted")
    assert "orders" not in admin.list_topics(timeout=10).topics


def test_sigterm_on_a_leader_moves_its_leaderships_before_it_exits(
    cluster: list[NodeProcess], zk_client: KazooClient
) -> None:
    admin = _admin(zk_client, cluster)
    wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == 3, 20, "3 brokers")
    admin.create_topics([NewTopic("moves", num_partitions=3, replication_factor=3)])["moves"].result(
        timeout=30
    )
    victim = next(n for n in cluster if n.broker_id == _state(zk_client, "moves", 0).leader_and_isr.leader)
    led = [p for p in range(3) if _state(zk_client, "moves", p).leader_and_isr.leader == victim.broker_id]
    victim.signal(signal.SIGTERM)
    assert victim.wait(60) == 0, victim.stderr()
    for p in led:
        assert _state(zk_client, "moves", p).leader_and_isr.leader != victim.broker_id
    assert "Controlled shutdown succeeded" in victim.read("server.log")


MULTI_LISTENER = {
    "listeners": "CLIENT://127.0.0.1:0,REPLICATION://127.0.0.1:0,CONTROL://127.0.0.1:0",
    "listener.security.protocol.map": "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROL:PLAINTEXT",
    "inter.broker.listener.name": "REPLICATION",
    "control.plane.listener.name": "CONTROL",
}


def _journaled(node: NodeProcess, api: str) -> Callable[[], bool]:
    return lambda: any(e["api"] == api for e in node.journal())


def test_named_listeners_are_each_bound_and_advertised_separately(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    nodes = [node_factory.start(i, MULTI_LISTENER) for i in (1, 2)]
    names = ("CLIENT", "REPLICATION", "CONTROL")
    ports = {n.broker_id: {name: n.endpoint(zk_client, name)[1] for name in names} for n in nodes}
    assert all(len(set(p.values())) == 3 for p in ports.values())
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[1]['CLIENT']}"})
    md: Any = wait_for(
        lambda: (m := admin.list_topics(timeout=10)) and len(m.brokers) == 2 and m, 20, "2 brokers"
    )
    assert {b.port for b in md.brokers.values()} == {ports[1]["CLIENT"], ports[2]["CLIENT"]}
    admin.create_topics([NewTopic("multi", num_partitions=2, replication_factor=2)])["multi"].result(
        timeout=30
    )
    for n in nodes:
        wait_for(_journaled(n, "LeaderAndIsr"), 10, f"LeaderAndIsr journaled on broker {n.broker_id}")
        assert {e["listener"] for e in n.journal()} == {"CONTROL"}
