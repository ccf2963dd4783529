"""Validation of dynamic broker configs sent through the admin APIs (ring: drivers — pure).

`DynamicBrokerConfig.validate` and `toPersistentProps` / `fromPersistentProps`
(DynamicBrokerConfig.scala@2.5.1 L127-160, L344-380, L424-442), in Kafka's order; each failure is
a `ConfigException` (AdminManager answers INVALID_REQUEST, 42):

1. a KafkaConfig key that is not dynamic ⇒ "Cannot update these configs dynamically: Set(…)";
2. an SSL store config without a listener prefix ⇒ "These security configs can be dynamically
   updated only per-listener using the listener prefix: Set(…)";
3. types (listener prefixes stripped): every dynamic key and the three throttle rates parse as
   their ConfigDef type and pass their KafkaConfig validator; unknown (custom) keys are free;
4. at the cluster default (empty resource name), a per-broker key (listener and SSL configs) ⇒
   "Cannot update these configs at default cluster level, broker id must be specified: Set(…)";
5. a thread-pool size below half or above double the broker's current value ⇒ "Invalid dynamic
   configuration" (DynamicThreadPool.validateReconfiguration, L679-691);
6. `toPersistentProps`: a password config at the default ⇒ "Password config can be defined only at
   broker level"; per broker, the reference has no `password.encoder.secret` ⇒ "Password encoder
   secret not configured".

Scala prints sets in hash order; the messages here list names sorted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from reference_controller.broker_config_keys import (
    CLUSTER_LEVEL_LISTENER_CONFIGS,
    DYNAMIC_CONFIGS,
    DYNAMIC_SECURITY_CONFIGS,
    KAFKA_CONFIG_TYPES,
    NON_DYNAMIC_CONFIGS,
    PASSWORD_CONFIGS,
    PER_BROKER_CONFIGS,
    THREAD_POOL_DEFAULTS,
    THROTTLE_RATE_CONFIGS,
)
from reference_controller.node.config_def import (
    ConfigException,
    Validator,
    at_least,
    list_of,
    one_of,
    parse_type,
)

log = logging.getLogger("kafka.server.DynamicBrokerConfig")
LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")

# KafkaConfig's validators of the dynamic keys (KafkaConfig.scala@2.5.1 L958-1200); the others
# have none beyond their type.
_VALIDATORS: dict[str, Validator] = {
    "background.threads": at_least(1),
    "num.io.threads": at_least(1),
    "num.network.threads": at_least(1),
    "num.recovery.threads.per.data.dir": at_least(1),
    "min.insync.replicas": at_least(1),
    "log.cleaner.backoff.ms": at_least(0),
    "log.cleaner.io.buffer.size": at_least(0),
    "log.cleaner.threads": at_least(0),
    "log.cleanup.policy": list_of("compact", "delete"),
    "log.flush.interval.messages": at_least(1),
    "log.index.interval.bytes": at_least(0),
    "log.index.size.max.bytes": at_least(4),
    "log.message.timestamp.type": one_of("CreateTime", "LogAppendTime"),
    "log.segment.bytes": at_least(14),
    "log.segment.delete.delay.ms": at_least(0),
    "max.connections": at_least(0),
    "max.connections.per.ip": at_least(0),
    "message.max.bytes": at_least(0),
    **{name: at_least(0) for name in THROTTLE_RATE_CONFIGS},
}


def scala_set(names: list[str]) -> str:
    return f"Set({', '.join(sorted(names))})"


def base_name(name: str) -> str:
    m = LISTENER_CONFIG.fullmatch(name)
    return m.group(1) if m else name


def is_password_config(name: str) -> bool:
    """`isPasswordConfig`: the name ends with a dynamic password config (listener prefix or not)."""
    return any(name.endswith(p) for p in PASSWORD_CONFIGS)


def per_broker_configs(props: Mapping[str, str]) -> list[str]:
    def listener_scoped(name: str) -> bool:
        m = LISTENER_CONFIG.fullmatch(name)
        return m is not None and m.group(1) not in CLUSTER_LEVEL_LISTENER_CONFIGS

    return [k for k in props if k in PER_BROKER_CONFIGS or listener_scoped(k)]


def validate_types(props: Mapping[str, str]) -> None:
    """`validateConfigTypes`: listener prefixes stripped, every dynamic key parsed and validated."""
    for name, value in props.items():
        base = base_name(name)
        kind = "LONG" if base in THROTTLE_RATE_CONFIGS else KAFKA_CONFIG_TYPES.get(base)
        if kind is None or (base not in DYNAMIC_CONFIGS and base not in THROTTLE_RATE_CONFIGS):
            continue  # a custom config (or one refused by rule 1 already)
        parsed = parse_type(base, value, kind)
        if (validator := _VALIDATORS.get(base)) is not None:
            validator(base, parsed)


def validate(props: Mapping[str, str], *, per_broker: bool) -> None:
    """Rules 1-5 of the module docstring."""
    if non_dynamic := [k for k in props if k in NON_DYNAMIC_CONFIGS]:
        raise ConfigException(f"Cannot update these configs dynamically: {scala_set(non_dynamic)}")
    if security := [k for k in props if k in DYNAMIC_SECURITY_CONFIGS]:
        raise ConfigException(
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            f"{scala_set(security)}"
        )
    validate_types(props)
    if not per_broker and (scoped := per_broker_configs(props)):
        raise ConfigException(
            "Cannot update these configs at default cluster level, broker id must be specified: "
            + scala_set(scoped)
        )
    _validate_thread_pools(props)


def _validate_thread_pools(props: Mapping[str, str]) -> None:
    for name, current in THREAD_POOL_DEFAULTS.items():
        if name not in props:
            continue
        value = int(parse_type(name, props[name], "INT"))
        if value != current and (value <= 0 or value < current // 2 or value > current * 2):
            raise ConfigException("Invalid dynamic configuration")


def to_persistent_props(props: Mapping[str, str], *, per_broker: bool) -> dict[str, str]:
    """Rule 6: passwords would be encoded with `password.encoder.secret`, which the reference lacks."""
    for name, value in props.items():
        if is_password_config(name) and value is not None:
            if not per_broker:
                raise ConfigException("Password config can be defined only at broker level")
            raise ConfigException("Password encoder secret not configured")
    return dict(props)


def from_persistent_props(stored: Mapping[str, str], *, per_broker: bool) -> dict[str, str]:
    """`fromPersistentProps`: drop (and log) what cannot apply — non-dynamic keys, SSL store configs
    without a listener prefix, per-broker keys at the default, values of the wrong type, passwords
    (which the reference cannot decode)."""
    props = dict(stored)

    def drop(names: list[str], why: str) -> None:
        if names:
            for name in names:
                props.pop(name, None)
            log.error("%s: %s", why, scala_set(names))

    drop(
        [k for k in props if k in NON_DYNAMIC_CONFIGS],
        "Non-dynamic configs configured in ZooKeeper will be ignored",
    )
    drop(
        [k for k in props if k in DYNAMIC_SECURITY_CONFIGS],
        "Security configs can be dynamically updated only using listener prefix, base configs will be "
        "ignored",
    )
    if not per_broker:
        drop(per_broker_configs(props), "Per-broker configs defined at default cluster level will be ignored")
    invalid = []
    for name, value in props.items():
        try:
            validate_types({name: value})
        except ConfigException:
            invalid.append(name)
    drop(invalid, "Dynamic config contains invalid values, these configs will be ignored")
    drop(
        [k for k in props if is_password_config(k)], "Dynamic password configs could not be decoded, ignoring"
    )
    return props
