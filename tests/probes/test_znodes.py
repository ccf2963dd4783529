"""Typed znode readers: the spec §1 example bytes decode, bad data is a typed error, and the
readers return data + stat + raw bytes from a real ZooKeeper (null and empty told apart)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from probes import (
    EndPoint,
    MalformedZnode,
    PartitionReplicas,
    TopicPartition,
    controller_id,
    read_all_topics,
    read_broker,
    read_broker_ids,
    read_brokers,
    read_cluster_id,
    read_controller,
    read_controller_epoch,
    read_delete_topics,
    read_isr_change_notifications,
    read_log_dir_event_notifications,
    read_partition_states,
    read_preferred_replica_election,
    read_reassign_partitions,
    read_topic,
    read_topic_config,
)
from probes import znode_types as zt

CONTROLLER = b'{"version":1,"brokerid":2,"timestamp":"1589212345678"}'
BROKER_V4 = (
    b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka1:9092"],'
    b'"jmx_port":-1,"host":"kafka1","timestamp":"1589212345678","port":9092,"version":4}'
)
TOPIC_V2 = (
    b'{"version":2,"partitions":{"0":[4,5,6,1,2,3]},'
    b'"adding_replicas":{"0":[4,5,6]},"removing_replicas":{"0":[1,2,3]}}'
)
TOPIC_V1 = b'{"version":1,"partitions":{"0":[1,2],"1":[2,3]}}'
STATE = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
REASSIGN = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[4,5,6]}]}'
PREFERRED = b'{"version":1,"partitions":[{"topic":"foo","partition":0}]}'
ISR_CHANGE = b'{"version":1,"partitions":[{"topic":"foo","partition":0},{"topic":"bar","partition":3}]}'
LOG_DIR_EVENT = b'{"version":1,"broker":1,"event":1}'
TOPIC_CONFIG = b'{"version":1,"config":{"retention.ms":"86400000"}}'
CLUSTER_ID = b'{"version":"1","id":"KZ7mLQkYQ0i5jtu2bGc9bA"}'


# --- pure decoders ---------------------------------------------------------------------------
@pytest.mark.unit
def test_spec_example_bytes_decode() -> None:
    assert zt.decode_controller("/controller", CONTROLLER) == zt.ControllerZNode(2, 1, "1589212345678")
    assert zt.decode_controller_epoch("/controller_epoch", b"17") == 17
    broker = zt.decode_broker("/brokers/ids/1", BROKER_V4)
    assert (broker.broker_id, broker.version, broker.host, broker.port, broker.jmx_port) == (
        1,
        4,
        "kafka1",
        9092,
        -1,
    )
    assert broker.endpoints == (EndPoint("PLAINTEXT", "kafka1", 9092),)
    assert broker.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT"}
    assert (broker.rack, broker.features) == (None, None)
    topic = zt.decode_topic("/brokers/topics/foo", TOPIC_V2)
    assert (topic.partitions, topic.adding_replicas, topic.removing_replicas) == (
        {0: (4, 5, 6, 1, 2, 3)},
        {0: (4, 5, 6)},
        {0: (1, 2, 3)},
    )
    state = zt.decode_partition_state("/s", STATE)
    assert state == zt.PartitionStateZNode(
        version=1, leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=1
    )
    reassign = zt.decode_reassign_partitions("/admin/reassign_partitions", REASSIGN)
    assert reassign.partitions == (PartitionReplicas("foo", 0, (4, 5, 6)),)
    assert reassign.as_mapping() == {TopicPartition("foo", 0): (4, 5, 6)}
    preferred = zt.decode_preferred_replica_election("/p", PREFERRED)
    assert preferred.partitions == (TopicPartition("foo", 0),)
    isr = zt.decode_isr_change("/isr_change_notification/isr_change_0000000042", ISR_CHANGE)
    assert (isr.sequence, isr.partitions) == (42, (TopicPartition("foo", 0), TopicPartition("bar", 3)))
    event = zt.decode_log_dir_event("/log_dir_event_notification/log_dir_event_0000000003", LOG_DIR_EVENT)
    assert event == zt.LogDirEventNotificationZNode(sequence=3, version=1, broker_id=1, event=1)
    assert zt.decode_topic_config("/config/topics/foo", TOPIC_CONFIG).config == {"retention.ms": "86400000"}
    assert zt.decode_cluster_id("/cluster/id", CLUSTER_ID) == zt.ClusterIdZNode("KZ7mLQkYQ0i5jtu2bGc9bA", "1")


@pytest.mark.unit
def test_topic_v1_without_adding_or_removing_reads_them_as_empty() -> None:
    topic = zt.decode_topic("/brokers/topics/t", TOPIC_V1)
    assert (topic.version, topic.partitions) == (1, {0: (1, 2), 1: (2, 3)})
    assert (topic.adding_replicas, topic.removing_replicas, topic.topic_id) == ({}, {}, None)


@pytest.mark.unit
def test_topic_v3_and_broker_v5_extras() -> None:
    v3 = (
        b'{"removing_replicas":{},"partitions":{"0":[1]},'
        b'"topic_id":"AAAAAAAAAAAAAAAAAAAAAA","adding_replicas":{},"version":3}'
    )
    assert zt.decode_topic("/brokers/topics/t", v3).topic_id == "AAAAAAAAAAAAAAAAAAAAAA"
    v5 = json.loads(BROKER_V4) | {
        "version": 5,
        "rack": "r1",
        "features": {"f": {"min_version": 1, "max_version": 2}},
        "endpoints": ["PLAINTEXT://[::1]:9092", "SSL://h:-1"],
    }
    broker = zt.decode_broker("/brokers/ids/7", json.dumps(v5).encode())
    assert (broker.rack, broker.features) == ("r1", {"f": (1, 2)})
    assert broker.endpoints == (EndPoint("PLAINTEXT", "::1", 9092), EndPoint("SSL", "h", -1))


MALFORMED: list[tuple[Callable[[str, bytes | None], object], bytes | None, str]] = [
    (zt.decode_controller, None, "null data"),
    (zt.decode_controller, b"", "invalid JSON"),
    (zt.decode_controller, b'{"version":1,', "invalid JSON"),
    (zt.decode_controller, b"[1,2]", "expected a JSON object"),
    (zt.decode_controller, b'{"version":1}', "missing 'brokerid'"),
    (zt.decode_controller, b'{"brokerid":"2"}', "'brokerid' must be an int"),
    (zt.decode_controller, b'{"brokerid":true}', "'brokerid' must be an int"),
    (zt.decode_controller, b"\xff\xfe", "invalid JSON"),
    (zt.decode_controller_epoch, b"one", "plain decimal"),
    (zt.decode_controller_epoch, None, "plain decimal"),
    (zt.decode_broker, b'{"version":4,"endpoints":["kafka1:9092"]}', "bad endpoint"),
    (zt.decode_topic, b'{"version":2}', "missing object 'partitions'"),
    (zt.decode_topic, b'{"version":2,"partitions":{"x":[1]}}', "non-integer partition key"),
    (zt.decode_topic, b'{"version":2,"partitions":{"0":[1,"2"]}}', "list of ints"),
    (zt.decode_topic, b'{"version":2,"partitions":{"0":[1]},"adding_replicas":[]}', "expected a JSON object"),
    (
        zt.decode_partition_state,
        b'{"version":1,"leader":1,"leader_epoch":0,"isr":1,"controller_epoch":1}',
        "'isr'",
    ),
    (zt.decode_reassign_partitions, b'{"version":1,"partitions":{}}', "must be a list"),
    (zt.decode_preferred_replica_election, b'{"version":1,"partitions":[7]}', "expected a JSON object"),
    (zt.decode_topic_config, b'{"version":1,"config":{"a":1}}', "map strings to strings"),
    (zt.decode_cluster_id, b'{"id":"x"}', "missing 'version'"),
]


@pytest.mark.unit
@pytest.mark.parametrize(("decode", "raw", "reason"), MALFORMED)
def test_malformed_data_is_a_typed_error_naming_path_and_bytes(
    decode: Callable[[str, bytes | None], object], raw: bytes | None, reason: str
) -> None:
    with pytest.raises(MalformedZnode, match=reason) as e:
        decode("/brokers/ids/1", raw)
    assert (e.value.path, e.value.raw) == ("/brokers/ids/1", raw)
    assert "/brokers/ids/1" in str(e.value)
    assert repr(raw) in str(e.value)


@pytest.mark.unit
def test_notification_without_a_sequence_suffix_is_malformed() -> None:
    with pytest.raises(MalformedZnode, match="sequence suffix"):
        zt.decode_isr_change("/isr_change_notification/isr_change_x", ISR_CHANGE)


# --- against ZooKeeper -----------------------------------------------------------------------
def populate(zk: KazooClient) -> None:
    """A small Kafka layout written the way Kafka writes it (null data where Kafka writes null)."""
    zk.create("/controller_epoch", b"3", makepath=True)
    zk.create("/controller", CONTROLLER, ephemeral=True)
    zk.create("/brokers/ids/1", BROKER_V4, ephemeral=True, makepath=True)
    zk.create("/brokers/ids/2", BROKER_V4.replace(b"kafka1", b"kafka2"), ephemeral=True)
    zk.create("/brokers/topics/foo", TOPIC_V2, makepath=True)
    zk.create("/brokers/topics/bar", TOPIC_V1)
    zk.create("/brokers/topics/foo/partitions", None)
    for p in (0, 1):
        zk.create(f"/brokers/topics/foo/partitions/{p}", None)
        zk.create(f"/brokers/topics/foo/partitions/{p}/state", STATE)
    zk.create("/admin/delete_topics/bar", None, makepath=True)
    zk.create("/admin/reassign_partitions", REASSIGN)
    zk.create("/admin/preferred_replica_election", PREFERRED)
    zk.create("/isr_change_notification/isr_change_", ISR_CHANGE, sequence=True, makepath=True)
    zk.create("/isr_change_notification/isr_change_", ISR_CHANGE, sequence=True)
    zk.create("/log_dir_event_notification/log_dir_event_", LOG_DIR_EVENT, sequence=True, makepath=True)
    zk.create("/config/topics/foo", TOPIC_CONFIG, makepath=True)
    zk.create("/cluster/id", CLUSTER_ID, makepath=True)
    zk.create("/brokers/seqid", b"")


@pytest.mark.integration
def test_readers_return_data_stat_and_raw_bytes(zk_client: KazooClient) -> None:
    populate(zk_client)
    session = zk_client.client_id[0]
    controller = read_controller(zk_client)
    assert controller is not None
    assert (controller.data.broker_id, controller.raw, controller.stat.ephemeral_owner) == (
        2,
        CONTROLLER,
        session,
    )
    assert controller_id(zk_client) == 2
    epoch = read_controller_epoch(zk_client)
    assert epoch is not None
    assert (epoch.data, epoch.stat.version, epoch.stat.ephemeral_owner) == (3, 0, 0)
    zk_client.set("/controller_epoch", b"4")
    epoch = read_controller_epoch(zk_client)
    assert epoch is not None
    assert (epoch.data, epoch.stat.version) == (4, 1)
    assert epoch.stat.mzxid > epoch.stat.czxid
    assert read_broker_ids(zk_client) == [1, 2]
    assert {b: r.data.host for b, r in read_brokers(zk_client).items()} == {1: "kafka1", 2: "kafka2"}
    topics = read_all_topics(zk_client)
    assert sorted(topics) == ["bar", "foo"]
    assert topics["bar"].data.adding_replicas == {}
    assert topics["foo"].stat.num_children == 1
    states = read_partition_states(zk_client, "foo")
    assert sorted(states) == [0, 1]
    assert states[0].data.isr == (1, 2)
    assert states[0].stat.version == 0  # Kafka's zkVersion of the LeaderAndIsr
    assert read_partition_states(zk_client, "bar") == {}


@pytest.mark.integration
def test_admin_notification_and_config_readers(zk_client: KazooClient) -> None:
    populate(zk_client)
    reassign = read_reassign_partitions(zk_client)
    assert reassign is not None
    assert reassign.data.as_mapping() == {TopicPartition("foo", 0): (4, 5, 6)}
    preferred = read_preferred_replica_election(zk_client)
    assert preferred is not None
    assert preferred.data.partitions == (TopicPartition("foo", 0),)
    assert [r.data.sequence for r in read_isr_change_notifications(zk_client)] == [0, 1]
    assert [r.data.broker_id for r in read_log_dir_event_notifications(zk_client)] == [1]
    config = read_topic_config(zk_client, "foo")
    assert config is not None
    assert config.data.config == {"retention.ms": "86400000"}
    cluster = read_cluster_id(zk_client)
    assert cluster is not None
    assert cluster.data.version == "1"


@pytest.mark.integration
def test_null_and_empty_data_are_told_apart(zk_client: KazooClient) -> None:
    populate(zk_client)
    delete_marker = read_delete_topics(zk_client)["bar"]
    assert (delete_marker.data.topic, delete_marker.raw, delete_marker.data.data) == ("bar", None, None)
    assert delete_marker.stat.data_length == 0
    null, null_stat = zk_client.get("/brokers/topics/foo/partitions")
    empty, empty_stat = zk_client.get("/brokers/seqid")
    assert (null, empty) == (None, b"")
    assert null_stat.dataLength == empty_stat.dataLength == 0  # the Stat cannot tell them apart


@pytest.mark.integration
def test_missing_znodes_read_as_none_or_empty(zk_client: KazooClient) -> None:
    assert read_controller(zk_client) is None
    assert controller_id(zk_client) is None
    assert read_controller_epoch(zk_client) is None
    assert read_topic(zk_client, "nope") is None
    assert read_broker(zk_client, 1) is None
    assert (read_broker_ids(zk_client), read_all_topics(zk_client)) == ([], {})
    assert read_isr_change_notifications(zk_client) == []


@pytest.mark.integration
def test_malformed_znode_on_the_server_names_path_and_bytes(zk_client: KazooClient) -> None:
    zk_client.create("/brokers/topics/broken", b'{"version":2,"partitions":', makepath=True)
    with pytest.raises(MalformedZnode) as e:
        read_all_topics(zk_client)
    assert (e.value.path, e.value.raw) == ("/brokers/topics/broken", b'{"version":2,"partitions":')
    zk_client.create("/controller", None)
    with pytest.raises(MalformedZnode, match="null data"):
        controller_id(zk_client)
