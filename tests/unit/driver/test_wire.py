"""Controller request encoding with kio 0.5.0: every version the 2.5 controller can send round-trips.

Each request is encoded at version v (framed, with its request header), decoded as a broker would
(`wire.decode_request`) and mapped back to the version-independent effect; it must equal the
original minus the fields version v cannot carry.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkawire import framing
from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition
from reference_controller.config import InterBrokerProtocolVersion
from reference_controller.controller.driver import wire
from reference_controller.controller.effects import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from reference_controller.controller.events import (
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from reference_controller.zkdata import BrokerInfo, EndPoint

pytestmark = pytest.mark.unit


def lai_state(topic: str, p: int, **kw: Any) -> LeaderAndIsrPartitionState:
    base = LeaderAndIsrPartitionState(
        topic=topic, partition=p, controller_epoch=3, leader=1, leader_epoch=7, isr=(1, 2), zk_version=4,
        replicas=(1, 2, 3), adding_replicas=(3,), removing_replicas=(2,), is_new=True,
    )  # fmt: skip
    return dataclasses.replace(base, **kw)


LAI = LeaderAndIsrRequest(
    broker_id=2, broker_epoch=4242, controller_id=1, controller_epoch=3,
    partition_states=(lai_state("a", 0), lai_state("b", 1, is_new=False), lai_state("a", 2, leader=-1)),
    live_leaders=(LiveLeader(1, "127.0.0.1", 9092),),
)  # fmt: skip


def um_state(topic: str, p: int, leader: int = 1) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(
        topic=topic, partition=p, controller_epoch=3, leader=leader, leader_epoch=7, isr=(1, 2),
        zk_version=4, replicas=(1, 2, 3), offline_replicas=(3,),
    )  # fmt: skip


def broker(bid: int, *, custom: bool, rack: str | None = "r1") -> BrokerInfo:
    eps = [EndPoint("PLAINTEXT", "127.0.0.1", 9090 + bid)]
    if custom:
        eps.append(EndPoint("CONTROLLER", "127.0.0.1", 9190 + bid, "PLAINTEXT"))
    return BrokerInfo(bid, tuple(eps), rack=rack)


def um_request(*, custom: bool) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(
        broker_id=2, broker_epoch=4242, controller_id=1, controller_epoch=3,
        partition_states=(um_state("a", 0), um_state("b", 0, leader=-2), um_state("a", 1)),
        live_brokers=(broker(1, custom=custom), broker(2, custom=custom, rack=None)),
    )  # fmt: skip


SR = StopReplicaRequest(
    broker_id=2, broker_epoch=4242, controller_id=1, controller_epoch=3, delete_partitions=True,
    partitions=(TopicPartition("a", 0), TopicPartition("b", 3), TopicPartition("a", 1)),
)  # fmt: skip


def roundtrip(request: Any, version: int) -> tuple[Any, Any]:
    frame = wire.encode_frame(wire.to_kio(request, version), correlation_id=17, client_id="1")
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    header, payload = framing.decode_request(frame[4:])
    assert (header.request_api_key, header.request_api_version) == (wire.api_key_of(request), version)
    assert (header.correlation_id, header.client_id) == (17, "1")
    return header, payload


def ungroup(
    payload: Any, version: int, grouped_from: int, attr: str = "topic_states"
) -> list[tuple[str, Any]]:
    if version < grouped_from:
        return [(s.topic_name, s) for s in payload.ungrouped_partition_states]
    return [(t.topic_name, s) for t in getattr(payload, attr) for s in t.partition_states]


@pytest.mark.parametrize("version", range(5))
def test_leader_and_isr_roundtrips_at_every_version(version: int) -> None:
    _, payload = roundtrip(LAI, version)
    decoded = tuple(
        LeaderAndIsrPartitionState(
            topic=t, partition=s.partition_index, controller_epoch=s.controller_epoch, leader=s.leader,
            leader_epoch=s.leader_epoch, isr=tuple(s.isr), zk_version=s.partition_epoch,
            replicas=tuple(s.replicas),
            adding_replicas=tuple(s.adding_replicas) if version >= 3 else (3,),
            removing_replicas=tuple(s.removing_replicas) if version >= 3 else (2,),
            is_new=s.is_new if version >= 1 else LAI.partition_states[0].is_new,
        )
        for t, s in ungroup(payload, version, 2)
    )  # fmt: skip
    expected = sorted(
        (s if version >= 1 else dataclasses.replace(s, is_new=True) for s in LAI.partition_states),
        key=lambda s: (s.topic, s.partition),
    )
    assert sorted(decoded, key=lambda s: (s.topic, s.partition)) == expected
    assert (payload.controller_id, payload.controller_epoch) == (1, 3)
    assert [(x.broker_id, x.host_name, x.port) for x in payload.live_leaders] == [(1, "127.0.0.1", 9092)]
    assert (payload.broker_epoch if version >= 2 else 4242) == 4242


def test_leader_and_isr_v2_groups_partitions_by_topic_in_first_appearance_order() -> None:
    _, payload = roundtrip(LAI, 2)
    assert [
        (t.topic_name, [s.partition_index for s in t.partition_states]) for t in payload.topic_states
    ] == [
        ("a", [0, 2]),
        ("b", [1]),
    ]


@pytest.mark.parametrize("version", range(7))
def test_update_metadata_roundtrips_at_every_version(version: int) -> None:
    request = um_request(custom=version >= 3)
    _, payload = roundtrip(request, version)
    decoded = [
        (t, s.partition_index, s.controller_epoch, s.leader, s.leader_epoch, tuple(s.isr), s.zk_version,
         tuple(s.replicas), tuple(s.offline_replicas) if version >= 4 else (3,))
        for t, s in ungroup(payload, version, 5)
    ]  # fmt: skip
    expected = [
        (s.topic, s.partition, s.controller_epoch, s.leader, s.leader_epoch, s.isr, s.zk_version, s.replicas,
         s.offline_replicas)
        for s in request.partition_states
    ]  # fmt: skip
    assert sorted(decoded) == sorted(expected)
    assert (payload.broker_epoch if version >= 5 else 4242) == 4242
    assert [b.id_ for b in payload.live_brokers] == [1, 2]


def live_broker_shape(version: int, b: Any) -> Any:
    if version == 0:
        return (b.id_, b.v0_host, b.v0_port)
    eps = [(e.host, e.port, e.security_protocol, e.listener if version >= 3 else None) for e in b.endpoints]
    return (b.id_, eps, b.rack if version >= 2 else "n/a")


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (0, [(1, "127.0.0.1", 9091), (2, "127.0.0.1", 9092)]),
        (1, [(1, [("127.0.0.1", 9091, 0, None)], "n/a"), (2, [("127.0.0.1", 9092, 0, None)], "n/a")]),
        (2, [(1, [("127.0.0.1", 9091, 0, None)], "r1"), (2, [("127.0.0.1", 9092, 0, None)], None)]),
        (
            3,
            [
                (1, [("127.0.0.1", 9091, 0, "PLAINTEXT"), ("127.0.0.1", 9191, 0, "CONTROLLER")], "r1"),
                (2, [("127.0.0.1", 9092, 0, "PLAINTEXT"), ("127.0.0.1", 9192, 0, "CONTROLLER")], None),
            ],
        ),
    ],
)
def test_update_metadata_live_broker_shapes_follow_the_version(version: int, expected: list[Any]) -> None:
    _, payload = roundtrip(um_request(custom=version >= 3), version)
    assert [live_broker_shape(version, b) for b in payload.live_brokers] == expected


@pytest.mark.parametrize("version", [1, 2])
def test_update_metadata_below_v3_refuses_custom_listener_names(version: int) -> None:
    with pytest.raises(wire.UnsupportedVersionError, match="does not support custom listeners"):
        wire.to_kio(um_request(custom=True), version)


@pytest.mark.parametrize("version", range(3))
def test_stop_replica_roundtrips_at_every_version(version: int) -> None:
    _, payload = roundtrip(SR, version)
    if version == 0:
        partitions = [(p.topic_name, p.partition_index) for p in payload.ungrouped_partitions]
    else:
        partitions = [(t.name, p) for t in payload.topics for p in t.partition_indexes]
        assert (payload.broker_epoch, [t.name for t in payload.topics]) == (4242, ["a", "b"])
    assert sorted(partitions) == sorted(SR.partitions)
    assert (payload.controller_id, payload.controller_epoch, payload.delete_partitions) == (1, 3, True)


@pytest.mark.parametrize(
    ("ibp", "versions"),
    [("2.5", (4, 6, 2)), ("2.4-IV0", (3, 5, 1)), ("2.2", (2, 5, 1)), ("1.0", (1, 4, 0)),
     ("0.10.2", (0, 3, 0)), ("0.10.0-IV1", (0, 2, 0)), ("0.9.0", (0, 1, 0)), ("0.8.2", (0, 0, 0))],
)  # fmt: skip
def test_inter_broker_protocol_version_selects_request_versions(ibp: str, versions: tuple[int, ...]) -> None:
    v = InterBrokerProtocolVersion.parse(ibp)
    assert (v.leader_and_isr_version(), v.update_metadata_version(), v.stop_replica_version()) == versions


def response_for(request: Any, version: int, error_: int, partition_error_: int) -> Any:
    error, partition_error = ErrorCode(error_), ErrorCode(partition_error_)
    api_key = wire.api_key_of(request)
    m = wire.schema(api_key, version, "response")
    if api_key == wire.UPDATE_METADATA:
        return m.UpdateMetadataResponse(error_code=error)
    if api_key == wire.LEADER_AND_ISR:
        errors = (
            m.LeaderAndIsrPartitionError(topic_name="a", partition_index=0, error_code=partition_error),
        )
        return m.LeaderAndIsrResponse(error_code=error, partition_errors=errors)
    errors = (m.StopReplicaPartitionError(topic_name="a", partition_index=0, error_code=partition_error),)
    return m.StopReplicaResponse(error_code=error, partition_errors=errors)


@pytest.mark.parametrize(("request_", "version"), [(LAI, 4), (LAI, 0), (um_request(custom=True), 6), (SR, 2)])
def test_responses_decode_into_the_events_the_core_expects(request_: Any, version: int) -> None:
    api_key = wire.api_key_of(request_)
    response = response_for(request_, version, 0, 11)
    frame = framing.encode_response(type(response), 99, response)
    decoded = wire.decode_response(api_key, version, frame[4:])
    assert decoded.correlation_id == 99
    event = wire.response_event(request_, decoded.body)
    expected = {
        wire.LEADER_AND_ISR: LeaderAndIsrResponseReceived(2, 0, ((TopicPartition("a", 0), 11),)),
        wire.UPDATE_METADATA: UpdateMetadataResponseReceived(2, 0),
        wire.STOP_REPLICA: TopicDeletionStopReplicaResponseReceived(2, 0, ((TopicPartition("a", 0), 11),)),
    }[api_key]
    assert event == expected


def test_stop_replica_without_delete_produces_no_event() -> None:
    request = dataclasses.replace(SR, delete_partitions=False)
    assert wire.response_event(request, response_for(request, 2, 0, 0)) is None
