"""A single node in broker-only mode, driven by a hand-rolled controller (ring: integration tests)."""

from __future__ import annotations

import signal

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from reference_controller import zkdata
from tests.node.helpers import NodeFactory, PartitionSpec, leader_and_isr, update_metadata
from tests.polling import wait_for

pytestmark = pytest.mark.integration
BROKER_ONLY = {"reference.controller.enable": "false"}


def test_node_registers_and_serves_metadata_from_update_metadata(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    node = node_factory.start(1, BROKER_ONLY)
    address = node.endpoint(zk_client)
    _, stat = zk_client.get(zkdata.broker_path(1))
    assert stat.version == 1
    assert stat.ephemeralOwner != 0
    for path in zkdata.PERSISTENT_PATHS:
        assert zk_client.exists(path), path
    foo0 = PartitionSpec("foo", 0, leader=1, leader_epoch=0, isr=(1,), replicas=(1,))
    resp = leader_and_isr(address, [foo0], broker_epoch=stat.czxid)
    assert int(resp.error_code) == 0
    resp = update_metadata(address, {1: address}, [foo0], controller_id=1)
    assert int(resp.error_code) == 0
    admin = AdminClient({"bootstrap.servers": f"{address[0]}:{address[1]}"})
    md = admin.list_topics(timeout=10)
    assert md.controller_id == 1
    assert set(md.brokers) == {1}
    assert md.topics["foo"].partitions[0].leader == 1
    part_dir = node.data_dir / "foo-0"
    assert (part_dir / "00000000000000000000.log").exists()
    assert (part_dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    node.signal(signal.SIGTERM)
    assert node.wait(30) == 0, node.stderr()
    assert (node.data_dir / ".kafka_cleanshutdown").exists()
    assert zk_client.exists(zkdata.broker_path(1)) is None


def test_node_reregisters_with_a_new_broker_epoch_after_session_expiry(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    node = node_factory.start(1, {**BROKER_ONLY, "zookeeper.session.timeout.ms": "4000"})
    address = node.endpoint(zk_client)
    old_epoch = zk_client.exists(zkdata.broker_path(1)).czxid
    node.signal(signal.SIGSTOP)
    try:
        wait_for(lambda: zk_client.exists(zkdata.broker_path(1)) is None, 20, "ephemeral gone after expiry")
    finally:
        node.signal(signal.SIGCONT)
    stat = wait_for(lambda: zk_client.exists(zkdata.broker_path(1)), 20, "re-registration")
    assert stat.czxid > old_epoch
    assert stat.version == 1
    foo0 = PartitionSpec("foo", 0, leader=1, leader_epoch=0, isr=(1,), replicas=(1,))
    assert int(leader_and_isr(address, [foo0], broker_epoch=old_epoch).error_code) == 77
    assert int(leader_and_isr(address, [foo0], broker_epoch=stat.czxid).error_code) == 0
