"""Kafka 2.5.1's config validation as the admin APIs apply it: ConfigDef types, LogConfig and the
dynamic broker config rules (pure; expected messages are Kafka's, from ConfigDef.java,
LogConfig.scala and DynamicBrokerConfig.scala at 2.5.1)."""

from __future__ import annotations

import pytest

from reference_controller.node import broker_config, log_config
from reference_controller.node.config_def import ConfigException, convert_to_string, java_double, parse_type

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "kind", "parsed"),
    [
        (" TRUE ", "BOOLEAN", True),
        ("false", "BOOLEAN", False),
        (" 42 ", "INT", 42),
        ("-2147483648", "INT", -(2**31)),
        ("+7", "LONG", 7),
        ("9223372036854775807", "LONG", 2**63 - 1),
        ("0.5", "DOUBLE", 0.5),
        ("1e3", "DOUBLE", 1000.0),
        ("2d", "DOUBLE", 2.0),
        ("", "LIST", []),
        ("compact, delete", "LIST", ["compact", "delete"]),
        ("  lz4 ", "STRING", "lz4"),
        ("org.apache.Foo", "CLASS", "org.apache.Foo"),
    ],
)
def test_parse_type_accepts_what_configdef_accepts(value: str, kind: str, parsed: object) -> None:
    assert parse_type("k", value, kind) == parsed


@pytest.mark.parametrize(
    ("value", "kind", "message"),
    [
        (
            "maybe",
            "BOOLEAN",
            "Invalid value maybe for configuration k: Expected value to be either true or false",
        ),
        ("2147483648", "INT", "Invalid value 2147483648 for configuration k: Not a number of type INT"),
        ("1_000", "LONG", "Invalid value 1_000 for configuration k: Not a number of type LONG"),
        ("inf", "DOUBLE", "Invalid value inf for configuration k: Not a number of type DOUBLE"),
        (
            "no class",
            "CLASS",
            "Invalid value no class for configuration k: Class no class could not be found.",
        ),
    ],
)
def test_parse_type_refuses_with_kafkas_message(value: str, kind: str, message: str) -> None:
    with pytest.raises(ConfigException) as err:
        parse_type("k", value, kind)
    assert str(err.value) == message


def test_values_print_as_java_prints_them() -> None:
    assert [java_double(v) for v in (0.5, 1.0, 1e10, 1.5e-4, 100.0)] == [
        "0.5",
        "1.0",
        "1.0E10",
        "1.5E-4",
        "100.0",
    ]
    assert convert_to_string(["compact", "delete"], "LIST") == "compact,delete"
    assert convert_to_string(True, "BOOLEAN") == "true"


def test_log_config_validation_in_kafkas_order() -> None:
    with pytest.raises(log_config.InvalidConfigurationException, match=r"^Unknown topic config name: nope$"):
        log_config.validate({"retention.ms": "bad", "nope": "1"})
    with pytest.raises(ConfigException) as err:
        log_config.validate({"min.cleanable.dirty.ratio": "1.1"})
    assert (
        str(err.value)
        == "Invalid value 1.1 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"
    )
    with pytest.raises(ConfigException) as err:
        log_config.validate({"compression.type": "zip"})
    assert str(err.value).endswith("String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer")
    with pytest.raises(ConfigException, match=r"Version `2\.6` is not a valid version"):
        log_config.validate({"message.format.version": "2.6"})
    with pytest.raises(ConfigException, match="must be the literal"):
        log_config.validate({"leader.replication.throttled.replicas": "0:1,x"})
    with pytest.raises(
        log_config.InvalidConfigurationException, match=r"\(5\) > max.compaction.lag.ms \(4\)"
    ):
        log_config.validate({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "4"})
    values = log_config.validate({"cleanup.policy": "compact,delete", "message.format.version": "2.5.1"})
    assert values["cleanup.policy"] == ["compact", "delete"]
    assert values["unclean.leader.election.enable"] is False


def test_broker_defaults_follow_the_synonyms() -> None:
    assert log_config.broker_default("retention.ms", {"log.retention.hours": "1"}) == 3600000
    assert (
        log_config.broker_default("retention.ms", {"log.retention.minutes": "2", "log.retention.hours": "1"})
        == 120000
    )
    assert log_config.broker_default("segment.ms", {}) == 604800000
    assert log_config.broker_default(
        "unclean.leader.election.enable", {"unclean.leader.election.enable": "true"}
    )


@pytest.mark.parametrize(
    ("props", "per_broker", "message"),
    [
        ({"broker.id": "2"}, True, "Cannot update these configs dynamically: Set(broker.id)"),
        (
            {"ssl.keystore.location": "/k"},
            True,
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            "Set(ssl.keystore.location)",
        ),
        (
            {"listeners": "PLAINTEXT://:1"},
            False,
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "Set(listeners)",
        ),
        (
            {"log.segment.bytes": "13"},
            True,
            "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14",
        ),
        ({"num.io.threads": "17"}, True, "Invalid dynamic configuration"),
        (
            {"leader.replication.throttled.rate": "-1"},
            False,
            "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0",
        ),
    ],
)
def test_dynamic_broker_configs_refused_with_kafkas_reason(
    props: dict[str, str], per_broker: bool, message: str
) -> None:
    with pytest.raises(ConfigException) as err:
        broker_config.validate(props, per_broker=per_broker)
    assert str(err.value) == message


def test_custom_and_dynamic_broker_configs_pass_and_passwords_need_an_encoder() -> None:
    broker_config.validate(
        {"my.plugin.setting": "x", "num.io.threads": "16", "log.retention.ms": "5"}, per_broker=False
    )
    broker_config.validate({"listener.name.internal.ssl.keystore.location": "/k"}, per_broker=True)
    with pytest.raises(ConfigException, match=r"^Password config can be defined only at broker level$"):
        broker_config.to_persistent_props({"listener.name.a.ssl.key.password": "p"}, per_broker=False)
    with pytest.raises(ConfigException, match=r"^Password encoder secret not configured$"):
        broker_config.to_persistent_props({"listener.name.a.ssl.key.password": "p"}, per_broker=True)
    stored = {"broker.id": "9", "log.retention.ms": "x", "listeners": "PLAINTEXT://:1", "ok.custom": "1"}
    assert broker_config.from_persistent_props(stored, per_broker=False) == {"ok.custom": "1"}
