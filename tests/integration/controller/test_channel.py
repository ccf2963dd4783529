"""ControllerChannelManager against a small kio broker: order, retries, offline brokers, errors."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from kafkawire.states import LeaderAndIsrPartitionState, TopicPartition
from reference_controller.config import KafkaConfig
from reference_controller.controller.driver import wire
from reference_controller.controller.driver.channel import ControllerChannelManager
from reference_controller.controller.effects import (
    BrokerRequest,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from reference_controller.controller.events import (
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from reference_controller.zkdata import BrokerInfo, EndPoint
from tests.integration.controller.fake_broker import FakeBroker
from tests.integration.controller.helpers import EventSink, wait_for

pytestmark = pytest.mark.integration


def config(**extra: str) -> KafkaConfig:
    props = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "listeners": "PLAINTEXT://127.0.0.1:0"}
    props.update(extra)
    return KafkaConfig.from_properties(props)


def broker_info(broker_id: int, port: int, listener: str = "PLAINTEXT") -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint(listener, "127.0.0.1", port),))


def lai(broker_id: int, partition: int) -> LeaderAndIsrRequest:
    state = LeaderAndIsrPartitionState("t", partition, 1, 2, 0, (2,), 0, (2,), (), (), True)
    return LeaderAndIsrRequest(broker_id, 100, 1, 1, (state,), ())


def um(broker_id: int) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(broker_id, 100, 1, 1, (), (broker_info(2, 9092),))


def stop_replica(broker_id: int, partition: int, delete: bool = True) -> StopReplicaRequest:
    return StopReplicaRequest(broker_id, 100, 1, 1, delete, (TopicPartition("t", partition),))


@pytest.fixture
def broker() -> Iterator[FakeBroker]:
    b = FakeBroker().start()
    yield b
    b.stop()


@pytest.fixture
def channel_and_events() -> Iterator[tuple[ControllerChannelManager, EventSink]]:
    events = EventSink()
    channel = ControllerChannelManager(config(), events.put)
    yield channel, events
    channel.shutdown()


def test_requests_to_one_broker_arrive_in_effect_order_with_kafka_headers(
    broker: FakeBroker, channel_and_events: tuple[ControllerChannelManager, EventSink]
) -> None:
    channel, events = channel_and_events
    channel.add_broker(broker_info(2, broker.port))
    sent: list[BrokerRequest] = []
    for i in range(10):
        sent += [lai(2, i), um(2), stop_replica(2, i)]
    for request in sent:
        channel.send(request)
    wait_for(lambda: len(broker.requests()) == len(sent), what="all requests")
    got = broker.requests()
    assert [(r.api_key, r.version) for r in got] == [
        (wire.api_key_of(s), {4: 4, 6: 6, 5: 2}[wire.api_key_of(s)]) for s in sent
    ]
    assert [r.correlation_id for r in got] == list(range(1, len(sent) + 1))
    assert {r.client_id for r in got} == {"1"}
    received = [events.next() for _ in range(len(sent))]
    assert received[:3] == [
        LeaderAndIsrResponseReceived(2, 0, ((TopicPartition("t", 0), 0),)),
        UpdateMetadataResponseReceived(2, 0),
        TopicDeletionStopReplicaResponseReceived(2, 0, ((TopicPartition("t", 0), 0),)),
    ]


def test_the_send_thread_retries_the_same_request_until_the_broker_is_back(
    channel_and_events: tuple[ControllerChannelManager, EventSink],
) -> None:
    channel, events = channel_and_events
    broker = FakeBroker().start()
    port = broker.port
    broker.stop()
    channel.add_broker(broker_info(2, port))
    channel.send(lai(2, 0))
    channel.send(lai(2, 1))
    time.sleep(0.5)  # a few failed attempts (100 ms back-off)
    restarted = FakeBroker(port=port).start()
    try:
        wait_for(lambda: len(restarted.requests()) == 2, what="requests after restart")
        assert [
            r.payload.topic_states[0].partition_states[0].partition_index for r in restarted.requests()
        ] == [0, 1]
        assert [type(events.next()) for _ in range(2)] == [LeaderAndIsrResponseReceived] * 2
    finally:
        channel.shutdown()
        restarted.stop()


def test_requests_to_a_broker_without_a_channel_are_dropped_with_kafkas_warning(
    channel_and_events: tuple[ControllerChannelManager, EventSink], caplog: pytest.LogCaptureFixture
) -> None:
    channel, events = channel_and_events
    with caplog.at_level(logging.WARNING):
        channel.send(um(7))
    assert "Not sending request" in caplog.text
    assert "to broker 7, since it is offline." in caplog.text
    assert events.drain(0.1) == []


def test_removing_a_broker_stops_its_retries_without_an_event(
    channel_and_events: tuple[ControllerChannelManager, EventSink],
) -> None:
    channel, events = channel_and_events
    dead = FakeBroker().start()
    port = dead.port
    dead.stop()
    channel.add_broker(broker_info(3, port))
    channel.send(stop_replica(3, 0))
    time.sleep(0.3)
    started = time.monotonic()
    channel.remove_broker(3)
    assert time.monotonic() - started < 2
    assert channel.broker_ids() == []
    assert events.drain(0.2) == []


def test_error_responses_reach_the_core_as_events(
    channel_and_events: tuple[ControllerChannelManager, EventSink],
) -> None:
    channel, events = channel_and_events
    broker = FakeBroker(error_code=11, partition_error_code=11).start()
    try:
        channel.add_broker(broker_info(4, broker.port))
        channel.send(lai(4, 5))
        assert events.next() == LeaderAndIsrResponseReceived(4, 11, ((TopicPartition("t", 5), 11),))
    finally:
        channel.shutdown()
        broker.stop()


def test_the_controller_listener_is_used_and_older_versions_follow_the_ibp() -> None:
    events = EventSink()
    cfg = config(
        listeners="PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        **{"control.plane.listener.name": "CONTROLLER", "listener.security.protocol.map":
           "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "inter.broker.protocol.version": "1.0"},
    )  # fmt: skip
    channel = ControllerChannelManager(cfg, events.put)
    control, data = FakeBroker().start(), FakeBroker().start()
    try:
        info = BrokerInfo(5, (EndPoint("PLAINTEXT", "127.0.0.1", data.port),
                              EndPoint("CONTROLLER", "127.0.0.1", control.port)))  # fmt: skip
        channel.add_broker(info)
        channel.send(lai(5, 0))
        channel.send(stop_replica(5, 0, delete=False))
        wait_for(lambda: len(control.requests()) == 2, what="requests on the control plane")
        assert [(r.api_key, r.version) for r in control.requests()] == [(4, 1), (5, 0)]
        assert data.requests() == []
        assert isinstance(events.next(), LeaderAndIsrResponseReceived)
        assert events.drain(0.2) == []  # StopReplica without delete: no event
    finally:
        channel.shutdown()
        control.stop()
        data.stop()
