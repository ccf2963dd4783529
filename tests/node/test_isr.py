"""ISR-1: a follower cut off from its leader leaves the ISR after the lag time and rejoins after.

ring: integration tests. Two nodes in broker-only mode; the test plays the controller (writes the
state znode as the controller would, then sends UpdateMetadata and LeaderAndIsr with kio), and
cuts the follower off by stopping its process (SIGSTOP) for less than the session timeout.
"""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest
from kazoo.client import KazooClient

from kafkawire.states import TopicPartition
from reference_controller import zkdata
from tests.node.helpers import NodeFactory, PartitionSpec, leader_and_isr, update_metadata
from tests.polling import wait_for

pytestmark = pytest.mark.integration
BROKER_ONLY = {"reference.controller.enable": "false"}


def _state(zk: KazooClient) -> tuple[zkdata.LeaderIsrAndControllerEpoch, int]:
    path = zkdata.partition_state_path("isr", 0)
    data, stat = zk.get(path)
    return zkdata.decode_partition_state(data, stat.version, path), stat.version


def _notifications(zk: KazooClient) -> list[list[TopicPartition]]:
    children = sorted(zk.get_children(zkdata.ISR_CHANGE_NOTIFICATION))
    return [
        zkdata.decode_isr_change(zk.get(zkdata.isr_change_path(c))[0], c)
        for c in children
        if c.startswith("isr_")
    ]


def test_follower_cut_off_leaves_isr_after_lag_time_and_rejoins(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    leader, follower = node_factory.start(1, BROKER_ONLY), node_factory.start(2, BROKER_ONLY)
    addresses = {1: leader.endpoint(zk_client), 2: follower.endpoint(zk_client)}
    spec = PartitionSpec("isr", 0, leader=1, leader_epoch=0, isr=(1, 2), replicas=(1, 2), controller_epoch=7)
    zk_client.create(
        zkdata.partition_state_path("isr", 0),
        zkdata.encode_partition_state(zkdata.LeaderAndIsr(1, 0, (1, 2)), 7),
        makepath=True,
    )
    for bid in (1, 2):
        assert (
            int(
                update_metadata(
                    addresses[bid], addresses, [spec], controller_id=1, controller_epoch=7
                ).error_code
            )
            == 0
        )
        assert int(leader_and_isr(addresses[bid], [spec], controller_epoch=7).error_code) == 0
    time.sleep(2.5)  # longer than replica.lag.time.max.ms: the fetching follower stays in the ISR
    assert _state(zk_client)[0].leader_and_isr.isr == (1, 2)
    follower.signal(signal.SIGSTOP)
    try:
        cut_at = time.monotonic()
        shrunk: Any = wait_for(
            lambda: (s := _state(zk_client)) and s[0].leader_and_isr.isr == (1,) and s, 10, "ISR [1]"
        )
        assert time.monotonic() - cut_at >= 1.4
        assert shrunk[0] == zkdata.LeaderIsrAndControllerEpoch(zkdata.LeaderAndIsr(1, 0, (1,), shrunk[1]), 7)
        assert shrunk[1] == 1
        wait_for(lambda: [("isr", 0)] in _notifications(zk_client), 10, "isr_change notification")
    finally:
        follower.signal(signal.SIGCONT)
    expanded: Any = wait_for(
        lambda: (s := _state(zk_client)) and s[0].leader_and_isr.isr == (1, 2) and s, 10, "ISR [1,2]"
    )
    assert expanded[0].leader_and_isr.leader_epoch == 0
    assert expanded[0].controller_epoch == 7
    data = json.loads(zk_client.get(zkdata.partition_state_path("isr", 0))[0])
    assert data == {"controller_epoch": 7, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]}
    server_log = leader.read("server.log")
    assert "Shrinking ISR from 1,2 to 1" in server_log
    assert "Expanding ISR from 1 to 1,2" in server_log
