"""Kafka 2.5.1's topic configs (LogConfig) and their validation (ring: drivers — pure).

`LogConfig.validate(props)` (LogConfig.scala@2.5.1 L327-349): every name must be a topic config
(else `InvalidConfigurationException` "Unknown topic config name: <k>", INVALID_CONFIG 40), every
value parse and pass its validator (`ConfigException`, which AdminManager turns into
INVALID_REQUEST 42), and min.compaction.lag.ms ≤ max.compaction.lag.ms (INVALID_CONFIG). The
table keeps LogConfig's definition order, defaults, validators and the broker config each topic
config defaults to (`TopicConfigSynonyms`, L359-384); DescribeConfigs reports the value, the
source and (v1+) the synonyms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_controller.config import InterBrokerProtocolVersion
from reference_controller.node.config_def import (
    ConfigException,
    ConfigKey,
    at_least,
    between,
    list_of,
    one_of,
    parse,
    parse_type,
)

LONG_MAX = 2**63 - 1
UNCLEAN_KEY = "unclean.leader.election.enable"


class InvalidConfigurationException(ValueError):
    """Kafka's `InvalidConfigurationException` (an ApiException: INVALID_CONFIG, 40)."""


def _api_version(name: str, value: Any) -> None:
    """ApiVersionValidator: `ApiVersion(value)` keeps 2 dot-segments (3 for 0.x) of a known version."""
    text = str(value)
    key = ".".join(text.split(".")[: 3 if text.startswith("0.") else 2])
    try:
        InterBrokerProtocolVersion.parse(key)
    except ValueError:
        raise ConfigException.invalid(name, text, f"Version `{text}` is not a valid version") from None


def _throttled_replicas(name: str, value: Any) -> None:
    """ThrottledReplicaListValidator (ConfigHandler.scala@2.5.1 L211-232)."""
    items = [str(v).strip() for v in value]
    valid = all(i == "" or _replica_pair(i) for i in items) or (items[:1] == ["*"])
    if not valid:
        raise ConfigException.invalid(
            name,
            "[" + ", ".join(str(v) for v in value) + "]",
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId],[brokerId]:[partitionId],[brokerId]:...",
        )


def _replica_pair(item: str) -> bool:
    left, colon, right = item.partition(":")
    return bool(colon) and left.isascii() and left.isdigit() and right.isascii() and right.isdigit()


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

# (key, broker synonym or None) in LogConfig's definition order
LOG_CONFIGS: tuple[tuple[ConfigKey, str | None], ...] = (
    (ConfigKey("segment.bytes", "INT", 1073741824, at_least(14)), "log.segment.bytes"),
    (ConfigKey("segment.ms", "LONG", 604800000, at_least(1)), "log.roll.ms"),
    (ConfigKey("segment.jitter.ms", "LONG", 0, at_least(0)), "log.roll.jitter.ms"),
    (ConfigKey("segment.index.bytes", "INT", 10485760, at_least(0)), "log.index.size.max.bytes"),
    (ConfigKey("flush.messages", "LONG", LONG_MAX, at_least(0)), "log.flush.interval.messages"),
    (ConfigKey("flush.ms", "LONG", LONG_MAX, at_least(0)), "log.flush.interval.ms"),
    (ConfigKey("retention.bytes", "LONG", -1), "log.retention.bytes"),
    (ConfigKey("retention.ms", "LONG", 604800000, at_least(-1)), "log.retention.ms"),
    (ConfigKey("max.message.bytes", "INT", 1048588, at_least(0)), "message.max.bytes"),
    (ConfigKey("index.interval.bytes", "INT", 4096, at_least(0)), "log.index.interval.bytes"),
    (ConfigKey("delete.retention.ms", "LONG", 86400000, at_least(0)), "log.cleaner.delete.retention.ms"),
    (ConfigKey("min.compaction.lag.ms", "LONG", 0, at_least(0)), "log.cleaner.min.compaction.lag.ms"),
    (ConfigKey("max.compaction.lag.ms", "LONG", LONG_MAX, at_least(1)), "log.cleaner.max.compaction.lag.ms"),
    (ConfigKey("file.delete.delay.ms", "LONG", 60000, at_least(0)), "log.segment.delete.delay.ms"),
    (ConfigKey("min.cleanable.dirty.ratio", "DOUBLE", 0.5, between(0, 1)), "log.cleaner.min.cleanable.ratio"),
    (ConfigKey("cleanup.policy", "LIST", ["delete"], list_of("compact", "delete")), "log.cleanup.policy"),
    (ConfigKey(UNCLEAN_KEY, "BOOLEAN", False), UNCLEAN_KEY),
    (ConfigKey("min.insync.replicas", "INT", 1, at_least(1)), "min.insync.replicas"),
    (ConfigKey("compression.type", "STRING", "producer", one_of(*COMPRESSION_TYPES)), "compression.type"),
    (ConfigKey("preallocate", "BOOLEAN", False), "log.preallocate"),
    (ConfigKey("message.format.version", "STRING", "2.5-IV0", _api_version), "log.message.format.version"),
    (
        ConfigKey("message.timestamp.type", "STRING", "CreateTime", one_of("CreateTime", "LogAppendTime")),
        "log.message.timestamp.type",
    ),
    (
        ConfigKey("message.timestamp.difference.max.ms", "LONG", LONG_MAX, at_least(0)),
        "log.message.timestamp.difference.max.ms",
    ),
    (ConfigKey("leader.replication.throttled.replicas", "LIST", [], _throttled_replicas), None),
    (ConfigKey("follower.replication.throttled.replicas", "LIST", [], _throttled_replicas), None),
    (ConfigKey("message.downconversion.enable", "BOOLEAN", True), "log.message.downconversion.enable"),
)
LOG_CONFIG_KEYS: dict[str, ConfigKey] = {key.name: key for key, _ in LOG_CONFIGS}
TOPIC_CONFIG_SYNONYMS: dict[str, str] = {key.name: syn for key, syn in LOG_CONFIGS if syn is not None}

# The broker configs a topic config's default comes from, highest precedence first
# (DynamicBrokerConfig.brokerConfigSynonyms, L107-124).
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
    "log.roll.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
}
_TO_MS = {"hours": 3600000, "minutes": 60000}


def validate(props: Mapping[str, str | None]) -> dict[str, Any]:
    """`LogConfig.validate`; returns the parsed values of every topic config."""
    for name in props:
        if name not in LOG_CONFIG_KEYS:
            raise InvalidConfigurationException(f"Unknown topic config name: {name}")
    values = parse([key for key, _ in LOG_CONFIGS], props)
    low, high = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    if low > high:
        raise InvalidConfigurationException(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
        )
    return values


def broker_default(name: str, broker_props: Mapping[str, str]) -> Any:
    """The broker's value a topic config defaults to (`copyKafkaConfigToLog`): the synonym set in
    `broker_props` with the highest precedence (hours/minutes converted to ms), else LogConfig's
    default. A broker value that does not parse falls back to the default (the node started
    with it, so it is Kafka's own)."""
    key = LOG_CONFIG_KEYS[name]
    synonym = TOPIC_CONFIG_SYNONYMS.get(name)
    for broker_name in BROKER_SYNONYMS.get(synonym or "", (synonym,) if synonym else ()):
        raw = broker_props.get(broker_name)
        if raw is None:
            continue
        try:
            value = parse_type(broker_name, raw, key.type)
        except ConfigException:
            return key.default
        unit = broker_name.rsplit(".", 1)[-1]
        return value * _TO_MS[unit] if unit in _TO_MS else value
    return key.default
