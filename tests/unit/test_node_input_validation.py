"""Pure checks behind the node's input validation (ring: tests, unit).

`partition_dir` is the only way a partition directory is named: for ANY topic string it either
refuses or yields a direct child of the log dir (property-tested). `null_field` finds a null in a
non-nullable field at any depth of a decoded request. Config INT/LONG ranges follow ConfigDef.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema

from kafkawire.framing import build
from kafkawire.states import TopicPartition
from reference_controller.config import INT_RANGE, LONG_RANGE, ConfigFileError, KafkaConfig, properties_text
from reference_controller.errors import ConfigError
from reference_controller.node.admin import topic_name_error
from reference_controller.node.apis_admin import MAX_PARTITIONS, fit_message
from reference_controller.node.log_manager import IllegalLogPath, partition_dir
from reference_controller.node.protocol import null_field
from reference_controller.node.wire import nested

pytestmark = pytest.mark.unit
BASE = {"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1"}


@given(topic=st.text(), partition=st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_a_partition_dir_is_always_a_direct_child_of_the_log_dir(topic: str, partition: int) -> None:
    log_dir = Path("/tmp/h5-log-dir-property")
    try:
        path = partition_dir(log_dir, TopicPartition(topic, partition))
    except IllegalLogPath:
        return
    assert path.resolve().parent == log_dir.resolve()
    assert path.name == f"{topic}-{partition}"


@pytest.mark.parametrize("topic", ["a/b", "../escape", "../../x", "x/../../y", "a\x00b"])
def test_escaping_names_are_refused(topic: str) -> None:
    with pytest.raises(IllegalLogPath):
        partition_dir(Path("/tmp/h5-log-dir"), TopicPartition(topic, 0))


@pytest.mark.parametrize(
    ("topic", "reason"),
    [
        ("", "can't be empty"),
        (".", 'cannot be "." or ".."'),
        ("..", 'cannot be "." or ".."'),
        ("x" * 250, "can't be longer than 249 characters"),
        ("a/b", "contains a character other than ASCII alphanumerics"),
        ("../escape", "contains a character other than ASCII alphanumerics"),
    ],
)
def test_illegal_topic_names_say_why(topic: str, reason: str) -> None:
    assert reason in (topic_name_error(topic) or "")


@pytest.mark.parametrize("topic", ["t", "x" * 249, "a.b_c-D9"])
def test_legal_topic_names_pass(topic: str) -> None:
    assert topic_name_error(topic) is None


def update_metadata_v6(isr: tuple[int, ...] | None, live: tuple[object, ...] | None) -> object:
    schema = load_request_schema(6, 6)
    ps, ts = nested(schema, "UpdateMetadataPartitionState"), nested(schema, "UpdateMetadataTopicState")
    part = build(
        ps, partition_index=0, controller_epoch=1, leader=1, leader_epoch=0, isr=isr, zk_version=0,
        replicas=(1,), offline_replicas=(),
    )  # fmt: skip
    topic = build(ts, topic_name="t", partition_states=(part,))
    return build(
        schema, controller_id=1, controller_epoch=1, broker_epoch=-1, topic_states=(topic,), live_brokers=live
    )


def test_null_field_names_the_first_null_non_nullable_field_at_any_depth() -> None:
    assert null_field(update_metadata_v6((1,), ())) is None
    assert null_field(update_metadata_v6((1,), None)) == "live_brokers"
    assert null_field(update_metadata_v6(None, ())) == "topic_states[0].partition_states[0].isr"


def test_null_in_a_nullable_field_is_fine() -> None:
    schema = load_request_schema(3, 9)  # Metadata v9: topics is nullable (all topics)
    request = build(
        schema, topics=None, allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False, include_topic_authorized_operations=False,
    )  # fmt: skip
    assert null_field(request) is None


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("broker.id", str(INT_RANGE[1]), True),
        ("broker.id", str(INT_RANGE[1] + 1), False),
        ("zookeeper.session.timeout.ms", "99999999999", False),
        ("replica.lag.time.max.ms", "99999999999", True),
        ("replica.lag.time.max.ms", str(LONG_RANGE[1] + 1), False),
        ("num.partitions", "+3", True),
        ("num.partitions", "1_000", False),
        ("num.partitions", "٣", False),
    ],
)
def test_numbers_follow_configdef_types(key: str, value: str, ok: bool) -> None:
    props = {**BASE, key: value}
    if ok:
        KafkaConfig.from_properties(props)
    else:
        with pytest.raises(ConfigError, match=f"'{key}'"):
            KafkaConfig.from_properties(props)


def test_binary_text_is_not_properties_but_latin_1_is() -> None:
    with pytest.raises(ConfigFileError, match="cannot read f as properties: it holds binary data"):
        properties_text("f", b"a=1\n\x00\x01")
    assert properties_text("f", b"# caf\xe9\na=1\n") == "# café\na=1\n"
    assert properties_text("f", "a=é\tb\r\n\f".encode()) == "a=é\tb\r\n\f"


def test_messages_are_cut_to_a_kafka_string() -> None:
    assert fit_message(None) is None
    assert fit_message("short") == "short"
    long = fit_message("é" * 40000)
    assert long is not None
    assert len(long.encode()) <= 32767
    assert long.endswith("...")


def test_the_partition_cap_is_what_a_jute_buffer_can_hold() -> None:
    assert MAX_PARTITIONS * 7 <= 0xFFFFF < (MAX_PARTITIONS + 1) * 7
