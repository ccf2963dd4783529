"""SHUTDOWN-3 on one real node, deterministically (ring: tests).

Kafka 2.5.1's KafkaServer.shutdown sets `isShuttingDown` *before* the ControlledShutdown request,
and ReplicaManager.makeFollowers, seeing it, removes the fetchers of the partitions it is told to
follow and adds none (state-change TRACE "Skipped the adding-fetcher step …"). Here the test is
the controller: `/controller` names broker 9, whose endpoint is a test server that holds the
ControlledShutdown request until the test has sent the node a LeaderAndIsr making it a follower,
so the request surely arrives while the node is shutting down (in a real cluster that order races
with the ControlledShutdown response). A control case sends the same LeaderAndIsr to a running node.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kio.index import load_response_schema

from kafkawire.framing import build
from reference_controller import zkdata
from reference_controller.node.protocol import CloseConnection, KafkaProtocolServer, RequestContext
from reference_controller.zkdata import BrokerInfo, EndPoint
from tests.node.helpers import (
    NodeFactory,
    NodeProcess,
    PartitionSpec,
    leader_and_isr,
    update_metadata,
)
from tests.polling import wait_for

pytestmark = pytest.mark.integration
CONTROLLER_ID = 9
FETCH = 1
BROKER_ONLY = {"reference.controller.enable": "false", "controlled.shutdown.max.retries": "1"}


class HeldController:
    """A test-owned listener for broker 9 (the "controller") and broker 0 (the "leader").

    ControlledShutdown requests are held until `release` is set, then answered NONE with no
    remaining partitions. Every request received is recorded as (api_key, correlation_id)."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        self.received: list[tuple[int, int]] = []
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    async def _handle(self, ctx: RequestContext, request: Any) -> Any:
        self.received.append((ctx.api_key, ctx.correlation_id))
        if ctx.api_key == FETCH:
            raise CloseConnection("the test's leader 0 records Fetch requests and serves none")
        self.asked.set()
        await asyncio.to_thread(self.release.wait, 60)
        schema = load_response_schema(7, ctx.api_version)
        return build(schema, error_code=0, remaining_partitions=())

    async def _main(self) -> None:
        server = KafkaProtocolServer(
            "PLAINTEXT", "127.0.0.1", 0, supported={FETCH: (0, 11), 7: (0, 3)}, handler=self._handle
        )
        await server.start()
        self.port = server.bound_port
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._ready.set()
        await self._stop.wait()
        await server.stop()

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(10)

    def close(self) -> None:
        self.release.set()
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture
def held(zk_client: KazooClient) -> Iterator[HeldController]:
    fake = HeldController()
    fake.start()
    info = BrokerInfo(
        CONTROLLER_ID, (EndPoint("PLAINTEXT", "127.0.0.1", fake.port, "PLAINTEXT"),), None, 0, 4
    )
    zk_client.create(
        zkdata.broker_path(CONTROLLER_ID), zkdata.encode_broker(info), ephemeral=True, makepath=True
    )
    zk_client.create(zkdata.CONTROLLER, zkdata.encode_controller(CONTROLLER_ID, 0), ephemeral=True)
    try:
        yield fake
    finally:
        fake.close()


def lead_then_follow(node: NodeProcess, zk: KazooClient, held: HeldController) -> tuple[str, int]:
    """t-0 = [1, 0]: the node leads at epoch 0; returns its address."""
    address = node.endpoint(zk)
    brokers = {0: ("127.0.0.1", held.port), 1: address}
    lead = PartitionSpec("t", 0, leader=1, leader_epoch=0, isr=(1, 0), replicas=(1, 0))
    update_metadata(address, brokers, [lead], controller_id=CONTROLLER_ID)
    response = leader_and_isr(address, [lead], correlation_controller_id=CONTROLLER_ID)
    assert [p.error_code for p in response.partition_errors] == [0]
    return address


def follow(address: tuple[str, int], held: HeldController) -> Any:
    """LeaderAndIsr: t-0 led by 0 at epoch 1 (what the controlled-shutdown election sends)."""
    spec = PartitionSpec(
        "t", 0, leader=0, leader_epoch=1, isr=(0,), replicas=(1, 0), zk_version=1, is_new=False
    )
    leaders = [(0, "127.0.0.1", held.port)]
    return leader_and_isr(address, [spec], correlation_controller_id=CONTROLLER_ID, leaders=leaders)


def correlation_of_follow(node: NodeProcess) -> int:
    ids = [
        e["correlation_id"]
        for e in node.journal()
        if e["api"] == "LeaderAndIsr" and any(p["leader_epoch"] == 1 for p in e["partitions"])
    ]
    assert len(ids) == 1, node.journal()
    return int(ids[0])


def skipped_line(correlation_id: int) -> str:
    return (
        f" TRACE [Broker id=1] Skipped the adding-fetcher step of the become-follower state change with "
        f"correlation id {correlation_id} from controller {CONTROLLER_ID} epoch 1 for partition t-0 with "
        f"leader 0 since it is shutting down (state.change.logger)"
    )


def test_a_follower_request_during_controlled_shutdown_adds_no_fetcher(
    node_factory: NodeFactory, zk_client: KazooClient, held: HeldController
) -> None:
    node = node_factory.start(1, BROKER_ONLY)
    address = lead_then_follow(node, zk_client, held)
    node.signal(signal.SIGTERM)
    assert held.asked.wait(30), node.read("server.log")[-2000:]  # the node is in controlledShutdown()
    response = follow(address, held)
    assert [p.error_code for p in response.partition_errors] == [0]
    held.release.set()
    assert node.wait(60) == 0, node.stderr()
    text = node.read("state-change.log")
    assert skipped_line(correlation_of_follow(node)) in text, text[-3000:]
    assert "Started fetcher to new leader" not in text, text[-3000:]
    assert [api for api, _ in held.received] == [7], held.received  # no Fetch to leader 0, ever


def test_the_same_request_to_a_running_node_starts_a_fetcher(
    node_factory: NodeFactory, zk_client: KazooClient, held: HeldController
) -> None:
    """Control: without a shutdown in progress the become-follower transition adds the fetcher."""
    node = node_factory.start(1, BROKER_ONLY)
    address = lead_then_follow(node, zk_client, held)
    response = follow(address, held)
    assert [p.error_code for p in response.partition_errors] == [0]
    cid = correlation_of_follow(node)
    started = (
        f" TRACE [Broker id=1] Started fetcher to new leader as part of become-follower request from "
        f"controller {CONTROLLER_ID} epoch 1 with correlation id {cid} for partition t-0 with leader 0"
    )
    wait_for(lambda: started in node.read("state-change.log"), 20, "the Started fetcher line")
    wait_for(lambda: any(api == FETCH for api, _ in held.received), 20, "a Fetch to leader 0")
    assert "Skipped the adding-fetcher step" not in node.read("state-change.log")
