"""`DynamicBrokerConfig`: the broker's dynamic `unclean.leader.election.enable` (ring: drivers).

What the controller needs of Kafka's DynamicBrokerConfig@2.5.1 (spec §13.4.4): the effective value
is the per-broker dynamic config (`/config/brokers/<own id>`) if set, else the cluster-wide dynamic
default (`/config/brokers/<default>`), else `server.properties` (`updateCurrentConfig`,
L516-531). Each update replaces one layer whole (`updateDefaultConfig` / `updateBrokerConfig`,
L287-307) after `fromPersistentProps` has dropped what cannot apply: a value that is not a
BOOLEAN (ConfigDef: trimmed, either case) is removed with Kafka's error line
(`removeInvalidConfigs`, L395-413). When the effective value turns from false to true,
DynamicLogConfig.reconfigure calls `enableDefaultUncleanLeaderElection()` (L642-661): the caller
enqueues `UncleanLeaderElectionEnable`, which only the active controller acts on.

Other broker ids' configs are not this broker's (BrokerConfigHandler, ConfigHandler.scala@2.5.1
L193-200) and change nothing here. Thread-safe: the config-change worker writes, the controller's
event thread reads.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping

log = logging.getLogger("kafka.server.DynamicBrokerConfig")

UNCLEAN_KEY = "unclean.leader.election.enable"
DEFAULT_ENTITY = "<default>"  # ConfigEntityName.Default


class MalformedEntityConfig(ValueError):
    """A config znode ConfigEntityZNode.decode rejects (a value that is not a JSON string)."""


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    """ConfigEntityZNode.decode (ZkData.scala@2.5.1 L329-338): null, non-JSON or no `config` object ⇒
    empty; a value that is not a string fails (Kafka's `v.to[String]` throws)."""
    if data is None:
        return {}
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    config = obj.get("config") if isinstance(obj, dict) else None
    if not isinstance(config, dict):
        return {}
    bad = {k: v for k, v in config.items() if not isinstance(v, str)}
    if bad:
        raise MalformedEntityConfig(f"config values are not strings: {bad}")
    return dict(config)


def parse_boolean(value: str) -> bool | None:
    """ConfigDef.Type.BOOLEAN: trimmed, case-insensitive; None when it is not a boolean."""
    match value.strip().lower():
        case "true":
            return True
        case "false":
            return False
        case _:
            return None


class DynamicBrokerConfig:
    def __init__(self, broker_id: int, static_unclean_leader_election_enable: bool) -> None:
        self.broker_id = broker_id
        self._static = static_unclean_leader_election_enable
        self._default: bool | None = None
        self._broker: bool | None = None
        self._lock = threading.Lock()

    def unclean_leader_election_enable(self) -> bool:
        with self._lock:
            return self._effective()

    def _effective(self) -> bool:
        for layer in (self._broker, self._default):
            if layer is not None:
                return layer
        return self._static

    def update_default(self, props: Mapping[str, str]) -> bool:
        """Apply `/config/brokers/<default>`; True when the effective value turned false → true."""
        return self._update(self._layer_value(props, "default cluster"), default=True)

    def update_broker(self, props: Mapping[str, str]) -> bool:
        """Apply `/config/brokers/<own id>`; True when the effective value turned false → true."""
        return self._update(self._layer_value(props, "broker"), default=False)

    def _update(self, value: bool | None, *, default: bool) -> bool:
        with self._lock:
            before = self._effective()
            if default:
                self._default = value
            else:
                self._broker = value
            return self._effective() and not before

    def _layer_value(self, props: Mapping[str, str], source: str) -> bool | None:
        raw = props.get(UNCLEAN_KEY)
        if raw is None:
            return None
        value = parse_boolean(raw)
        if value is None:
            log.error(
                "Dynamic %s config contains invalid values: Map(%s -> %s), these configs will be ignored",
                source,
                UNCLEAN_KEY,
                raw,
            )
        return value
