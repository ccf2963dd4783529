"""Kafka-style `server.properties` for a reference node (ring: shared, pure).

Keys carry Kafka's names and Kafka 2.5's defaults (KafkaConfig.scala@2.5.1). Keys under the
`reference.` prefix are clearly not Kafka's: they switch on behaviour of this implementation only
(broker-only mode, batched controller writes, ISR-propagation timing for tests).

Validation happens once, in `KafkaConfig.from_properties`; an invalid value raises `ConfigError`
naming the key. Numbers follow Kafka's ConfigDef types: INT keys (broker.id,
zookeeper.session.timeout.ms, …) must fit a signed 32-bit integer, LONG keys (replica.lag.time.max.ms,
log.segment.delete.delay.ms, …) a signed 64-bit one; digits are ASCII with an optional sign, as
Java's parseInt/parseLong read them (after ConfigDef's trim). A config file that holds binary
data (NUL or other control bytes) is refused as "cannot be read as properties"
(ConfigFileError). Unknown keys are returned in `KafkaConfig.unknown_keys` so the node can log and
ignore them, as Kafka does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from reference_controller.errors import ConfigError, ReferenceControllerError

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------
# inter.broker.protocol.version
# ---------------------------------------------------------------------------------------------
# Kafka's ApiVersion list (ApiVersion.scala@2.5.1), oldest first. Short forms ("2.5") map to the
# latest sub-version of that release, as Kafka's ApiVersion.apply does.
_IBP_ORDER: tuple[str, ...] = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0",
    "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
    "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2",
    "1.0-IV0", "1.1-IV0",
    "2.0-IV0", "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2",
    "2.2-IV0", "2.2-IV1", "2.3-IV0", "2.3-IV1", "2.4-IV0", "2.4-IV1", "2.5-IV0",
)  # fmt: skip


INT_RANGE = (-(2**31), 2**31 - 1)  # ConfigDef.Type.INT
LONG_RANGE = (-(2**63), 2**63 - 1)  # ConfigDef.Type.LONG
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_BINARY = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # controls other than \t \n \f \r


class ConfigFileError(ConfigError):
    """The config file itself cannot be read as Java properties (missing, unreadable, binary)."""

    def __init__(self, path: str | Path, reason: str) -> None:
        ReferenceControllerError.__init__(self, f"cannot read {path} as properties: {reason}")
        self.key = "CONFIG"


@dataclass(frozen=True, order=True)
class InterBrokerProtocolVersion:
    """An `inter.broker.protocol.version`, comparable by release order."""

    ordinal: int
    name: str = field(compare=False)

    @staticmethod
    def parse(text: str) -> InterBrokerProtocolVersion:
        value = text.strip()
        if value in _IBP_ORDER:
            return InterBrokerProtocolVersion(_IBP_ORDER.index(value), value)
        # "2.5" / "2.5.1" / "0.10.2" → the latest sub-version of that release.
        m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", value)
        if m:
            major, minor, patch = m.group(1), m.group(2), m.group(3)
            prefix = f"{major}.{minor}" if int(major) >= 1 else f"{major}.{minor}.{patch or '0'}"
            matches = [i for i, n in enumerate(_IBP_ORDER) if n == prefix or n.startswith(prefix + "-")]
            if matches:
                return InterBrokerProtocolVersion(matches[-1], _IBP_ORDER[matches[-1]])
        raise ValueError(f"unknown inter.broker.protocol.version {text!r}; known: {', '.join(_IBP_ORDER)}")

    def at_least(self, name: str) -> bool:
        return self.ordinal >= _IBP_ORDER.index(name)

    # Request versions the 2.5 controller sends (ControllerChannelManager.scala@2.5.1 L440-571).
    def leader_and_isr_version(self) -> int:
        for version, since in ((4, "2.4-IV1"), (3, "2.4-IV0"), (2, "2.2-IV0"), (1, "1.0-IV0")):
            if self.at_least(since):
                return version
        return 0

    def update_metadata_version(self) -> int:
        for version, since in (
            (6, "2.4-IV1"), (5, "2.2-IV0"), (4, "1.0-IV0"),
            (3, "0.10.2-IV0"), (2, "0.10.0-IV1"), (1, "0.9.0"),
        ):  # fmt: skip
            if self.at_least(since):
                return version
        return 0

    def stop_replica_version(self) -> int:
        for version, since in ((2, "2.4-IV1"), (1, "2.2-IV0")):
            if self.at_least(since):
                return version
        return 0

    def controlled_shutdown_version(self) -> int:
        # KafkaServer.controlledShutdown@2.5.1: v0 < 0.9; v1 < 2.2-IV0; v2 < 2.4-IV1; else v3.
        for version, since in ((3, "2.4-IV1"), (2, "2.2-IV0"), (1, "0.9.0")):
            if self.at_least(since):
                return version
        return 0

    def broker_znode_version(self) -> int:
        return 4 if self.at_least("0.10.0-IV1") else 2


# ---------------------------------------------------------------------------------------------
# listeners
# ---------------------------------------------------------------------------------------------
_LISTENER_RE = re.compile(r"^([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:\[\]]*):(\d+)$")


@dataclass(frozen=True)
class Listener:
    """One `NAME://host:port` entry of `listeners` / `advertised.listeners` (Kafka's EndPoint)."""

    name: str
    host: str
    port: int

    def connection_string(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listeners(key: str, text: str) -> tuple[Listener, ...]:
    result: list[Listener] = []
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            continue
        m = _LISTENER_RE.match(raw)
        if not m:
            raise ConfigError(key, f"{raw!r} is not of the form NAME://host:port")
        port = int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(key, f"port {port} in {raw!r} is out of range 0..65535")
        host = m.group(2).strip("[]")
        result.append(Listener(m.group(1).upper(), host, port))
    names = [listener.name for listener in result]
    if len(set(names)) != len(names):
        raise ConfigError(key, f"each listener must have a different name, got {names}")
    if not result:
        raise ConfigError(key, "at least one listener is required")
    return tuple(result)


def parse_protocol_map(key: str, text: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            continue
        name, sep, protocol = raw.partition(":")
        if not sep or not name or protocol.upper() not in {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}:
            raise ConfigError(key, f"{raw!r} is not LISTENER_NAME:SECURITY_PROTOCOL")
        result[name.strip().upper()] = protocol.strip().upper()
    return result


# ---------------------------------------------------------------------------------------------
# properties file
# ---------------------------------------------------------------------------------------------
def parse_properties(text: str) -> dict[str, str]:
    """Parse Java `.properties` text: `k=v`, `k:v`, `k v`, `#`/`!` comments, `\\` continuations."""
    props: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for entry in logical:
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", entry)
        if m is None:  # pragma: no cover - the pattern matches any string
            continue
        key = _unescape(m.group(1))
        props[key] = _unescape(m.group(2)).rstrip() if m.group(2) else ""
    return props


def properties_text(path: str | Path, raw: bytes) -> str:
    """The text of a properties file: UTF-8, else ISO-8859-1 (Java's `Properties.load` encoding);
    ConfigFileError when it holds control bytes other than tab, newline, form feed and return."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    if (m := _BINARY.search(text)) is not None:
        line = text.count("\n", 0, m.start()) + 1
        raise ConfigFileError(
            path,
            f"it holds binary data (character {ord(m.group()):#04x} on line {line}); "
            "expected key=value lines",
        )
    return text


def _unescape(text: str) -> str:
    escapes = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

    def repl(m: re.Match[str]) -> str:
        ch = m.group(1)
        if ch.startswith("u"):
            return chr(int(ch[1:], 16))
        return escapes.get(ch, ch)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", repl, text)


# ---------------------------------------------------------------------------------------------
# the config
# ---------------------------------------------------------------------------------------------
REFERENCE_PREFIX = "reference."

_DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"


@dataclass(frozen=True)
class KafkaConfig:
    """Validated node configuration. Field names are Kafka's keys with `.`→`_`; units last."""

    broker_id: int
    zookeeper_connect: str
    listeners: tuple[Listener, ...]
    advertised_listeners: tuple[Listener, ...]
    listener_security_protocol_map: Mapping[str, str]
    inter_broker_listener_name: str
    control_plane_listener_name: str | None
    log_dirs: tuple[Path, ...]
    broker_rack: str | None = None
    delete_topic_enable: bool = True
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    unclean_leader_election_enable: bool = False
    num_partitions: int = 1
    default_replication_factor: int = 1
    zookeeper_session_timeout_ms: int = 18000
    zookeeper_connection_timeout_ms: int = 18000
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_backoff_ms: int = 1000
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    controller_socket_timeout_ms: int = 30000
    request_timeout_ms: int = 30000
    inter_broker_protocol_version: InterBrokerProtocolVersion = field(
        default_factory=lambda: InterBrokerProtocolVersion.parse("2.5")
    )
    log_segment_delete_delay_ms: int = 60000
    # ---- not Kafka: behaviour switches of this implementation (prefix `reference.`) ----
    reference_controller_enable: bool = True
    reference_controller_zk_batch_writes: bool = False
    reference_isr_change_propagation_blackout_ms: int = 5000
    reference_isr_change_propagation_interval_ms: int = 60000
    unknown_keys: tuple[str, ...] = ()
    # The properties as given (Kafka's `originals`: DescribeConfigs reports them as STATIC_BROKER_CONFIG)
    originals: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    # --------------------------------------------------------------------------------------
    def listener(self, name: str) -> Listener:
        for listener in self.listeners:
            if listener.name == name:
                return listener
        raise KeyError(name)

    def advertised(self, name: str) -> Listener:
        for listener in self.advertised_listeners:
            if listener.name == name:
                return listener
        raise KeyError(name)

    @property
    def controller_listener_name(self) -> str:
        """The listener the controller connects to on every broker (control plane, else inter-broker)."""
        return self.control_plane_listener_name or self.inter_broker_listener_name

    # --------------------------------------------------------------------------------------
    @staticmethod
    def from_file(path: str | Path, overrides: Mapping[str, str] | None = None) -> KafkaConfig:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigFileError(path, exc.strerror or str(exc)) from exc
        props = parse_properties(properties_text(path, raw))
        props.update(overrides or {})
        return KafkaConfig.from_properties(props)

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> KafkaConfig:
        """Validate `props` once, in Kafka's order of concerns: ZooKeeper, listeners, log dirs,
        the session timeout and protocol version, then the remaining settings (each bad value is a
        `ConfigError` naming its key)."""
        r = _Reader(props)
        zk = _zookeeper_connect(r)
        listeners, advertised, proto_map = _listeners(r)
        inter, control = _listener_names(r, {lst.name for lst in listeners})
        log_dirs = _log_dirs(r)
        session_ms = r.integer("zookeeper.session.timeout.ms", 18000, minimum=1)
        ibp = _inter_broker_protocol_version(r)
        config = KafkaConfig(
            broker_id=r.integer("broker.id", -1, minimum=-1),
            zookeeper_connect=zk,
            listeners=listeners,
            advertised_listeners=advertised,
            listener_security_protocol_map=proto_map,
            inter_broker_listener_name=inter,
            control_plane_listener_name=control,
            log_dirs=log_dirs,
            **_controller_settings(r, session_ms),
            inter_broker_protocol_version=ibp,
            **_node_settings(r),
            unknown_keys=(),
        )
        return replace(
            _with_unknown(config, r.unknown()), originals={k.strip(): v.strip() for k, v in props.items()}
        )


def _zookeeper_connect(r: _Reader) -> str:
    zk = r.required("zookeeper.connect")
    if not re.fullmatch(r"[^,/\s]+(,[^,/\s]+)*(/[^\s]*)?", zk):
        raise ConfigError("zookeeper.connect", f"{zk!r} is not host:port[,host:port...][/chroot]")
    return zk


def _on_loopback(listeners: tuple[Listener, ...]) -> tuple[Listener, ...]:
    """An empty host means "all interfaces" in Kafka; this kit binds to loopback by default."""
    return tuple(Listener(lst.name, lst.host or "127.0.0.1", lst.port) for lst in listeners)


def _listeners(r: _Reader) -> tuple[tuple[Listener, ...], tuple[Listener, ...], dict[str, str]]:
    """`listeners`, `advertised.listeners` (default: the listeners) and the protocol map; every
    listener must be PLAINTEXT and every advertised one must be a listener."""
    listeners = _on_loopback(parse_listeners("listeners", r.get("listeners", "PLAINTEXT://:9092")))
    advertised_text = r.get("advertised.listeners", "")
    advertised = _on_loopback(
        parse_listeners("advertised.listeners", advertised_text) if advertised_text else listeners
    )
    proto_map = parse_protocol_map(
        "listener.security.protocol.map", r.get("listener.security.protocol.map", _DEFAULT_PROTOCOL_MAP)
    )
    for lst in listeners:
        _check_plaintext(lst, proto_map)
    names = {lst.name for lst in listeners}
    for a in advertised:
        if a.name not in names:
            raise ConfigError("advertised.listeners", f"{a.name} is not one of listeners {sorted(names)}")
    return listeners, advertised, proto_map


def _check_plaintext(lst: Listener, proto_map: Mapping[str, str]) -> None:
    if lst.name not in proto_map:
        raise ConfigError(
            "listener.security.protocol.map",
            f"listener {lst.name} has no security protocol; add {lst.name}:PLAINTEXT",
        )
    if proto_map[lst.name] != "PLAINTEXT":
        raise ConfigError(
            "listener.security.protocol.map",
            f"listener {lst.name} uses {proto_map[lst.name]}; the reference node speaks PLAINTEXT only",
        )


def _listener_names(r: _Reader, names: set[str]) -> tuple[str, str | None]:
    """`inter.broker.listener.name` (default PLAINTEXT) and the optional, distinct
    `control.plane.listener.name`, both among the listeners."""
    inter = r.get("inter.broker.listener.name", "").upper() or "PLAINTEXT"
    if inter not in names:
        raise ConfigError("inter.broker.listener.name", f"{inter} is not one of listeners {sorted(names)}")
    control = r.get("control.plane.listener.name", "").upper() or None
    if control is not None and control not in names:
        raise ConfigError("control.plane.listener.name", f"{control} is not one of listeners {sorted(names)}")
    if control is not None and control == inter:
        raise ConfigError("control.plane.listener.name", "must differ from inter.broker.listener.name")
    return inter, control


def _log_dirs(r: _Reader) -> tuple[Path, ...]:
    log_dirs_text = r.get("log.dirs", "") or r.get("log.dir", "/tmp/kafka-logs")
    log_dirs = tuple(Path(p.strip()) for p in log_dirs_text.split(",") if p.strip())
    if not log_dirs:
        raise ConfigError("log.dirs", "at least one directory is required")
    return log_dirs


def _inter_broker_protocol_version(r: _Reader) -> InterBrokerProtocolVersion:
    """Versions after 2.5 are unknown to `parse`, so they fail here with the known list."""
    try:
        return InterBrokerProtocolVersion.parse(r.get("inter.broker.protocol.version", "2.5"))
    except ValueError as exc:
        raise ConfigError("inter.broker.protocol.version", str(exc)) from exc


def _controller_settings(r: _Reader, session_ms: int) -> dict[str, Any]:
    """Rack, topic defaults, elections, ZooKeeper timeouts, replication and controlled shutdown
    (read in this order, so the first bad value reported is the same as before the split)."""
    return {
        "broker_rack": r.get("broker.rack", "") or None,
        "delete_topic_enable": r.boolean("delete.topic.enable", True),
        "auto_leader_rebalance_enable": r.boolean("auto.leader.rebalance.enable", True),
        "leader_imbalance_check_interval_seconds": r.integer(
            "leader.imbalance.check.interval.seconds", 300, minimum=1, kind=LONG_RANGE
        ),
        "leader_imbalance_per_broker_percentage": r.integer(
            "leader.imbalance.per.broker.percentage", 10, minimum=0
        ),
        "unclean_leader_election_enable": r.boolean("unclean.leader.election.enable", False),
        "num_partitions": r.integer("num.partitions", 1, minimum=1),
        "default_replication_factor": r.integer("default.replication.factor", 1, minimum=1),
        "zookeeper_session_timeout_ms": session_ms,
        "zookeeper_connection_timeout_ms": r.integer(
            "zookeeper.connection.timeout.ms", session_ms, minimum=1
        ),
        "replica_lag_time_max_ms": r.integer("replica.lag.time.max.ms", 30000, minimum=1, kind=LONG_RANGE),
        "replica_fetch_wait_max_ms": r.integer("replica.fetch.wait.max.ms", 500, minimum=0),
        "replica_fetch_backoff_ms": r.integer("replica.fetch.backoff.ms", 1000, minimum=0),
        "controlled_shutdown_enable": r.boolean("controlled.shutdown.enable", True),
        "controlled_shutdown_max_retries": r.integer("controlled.shutdown.max.retries", 3, minimum=0),
        "controlled_shutdown_retry_backoff_ms": r.integer(
            "controlled.shutdown.retry.backoff.ms", 5000, minimum=0, kind=LONG_RANGE
        ),
        "controller_socket_timeout_ms": r.integer("controller.socket.timeout.ms", 30000, minimum=1),
        "request_timeout_ms": r.integer("request.timeout.ms", 30000, minimum=1),
    }


def _node_settings(r: _Reader) -> dict[str, Any]:
    """Log deletion and this kit's own `reference.*` switches."""
    return {
        "log_segment_delete_delay_ms": r.integer(
            "log.segment.delete.delay.ms", 60000, minimum=0, kind=LONG_RANGE
        ),
        "reference_controller_enable": r.boolean("reference.controller.enable", True),
        "reference_controller_zk_batch_writes": r.boolean("reference.controller.zk.batch.writes", False),
        "reference_isr_change_propagation_blackout_ms": r.integer(
            "reference.isr.change.propagation.blackout.ms", 5000, minimum=0, kind=LONG_RANGE
        ),
        "reference_isr_change_propagation_interval_ms": r.integer(
            "reference.isr.change.propagation.interval.ms", 60000, minimum=0, kind=LONG_RANGE
        ),
    }


def _with_unknown(config: KafkaConfig, unknown: tuple[str, ...]) -> KafkaConfig:
    return replace(config, unknown_keys=unknown)


# Keys Kafka knows that this implementation accepts and ignores (they do not change what the
# controller does), so they are not reported as unknown.
KNOWN_IGNORED_KEYS = frozenset(
    {
        "num.network.threads", "num.io.threads", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
        "socket.request.max.bytes", "num.recovery.threads.per.data.dir", "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor", "transaction.state.log.min.isr", "log.retention.hours",
        "log.segment.bytes", "log.retention.check.interval.ms", "group.initial.rebalance.delay.ms",
        "log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes", "min.insync.replicas",
        "security.inter.broker.protocol", "zookeeper.set.acl", "broker.id.generation.enable",
        "reserved.broker.max.id", "log.message.format.version", "port", "host.name",
    }
)  # fmt: skip


class _Reader:
    """Reads keys from raw properties, records which were used, and validates types."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._props = {k.strip(): v.strip() for k, v in props.items()}
        self._used: set[str] = set()

    def get(self, key: str, default: str) -> str:
        self._used.add(key)
        return self._props.get(key, default)

    def required(self, key: str) -> str:
        self._used.add(key)
        value = self._props.get(key, "")
        if not value:
            raise ConfigError(key, "is required and missing")
        return value

    def _convert(self, key: str, default: T, convert: Callable[[str], T]) -> T:
        self._used.add(key)
        if key not in self._props:
            return default
        return convert(self._props[key])

    def integer(
        self, key: str, default: int, *, minimum: int | None = None, kind: tuple[int, int] = INT_RANGE
    ) -> int:
        """An INT key (or LONG with `kind=LONG_RANGE`), as ConfigDef parses it."""
        type_name = "INT" if kind == INT_RANGE else "LONG"

        def convert(text: str) -> int:
            if not _JAVA_INTEGER.fullmatch(text):
                raise ConfigError(key, f"{text!r} is not an integer")
            value = int(text)
            if not kind[0] <= value <= kind[1]:
                raise ConfigError(
                    key, f"{text} is not a number of type {type_name} (range {kind[0]}..{kind[1]})"
                )
            if minimum is not None and value < minimum:
                raise ConfigError(key, f"{value} is below the minimum {minimum}")
            return value

        return self._convert(key, default, convert)

    def boolean(self, key: str, default: bool) -> bool:
        def convert(text: str) -> bool:
            lowered = text.lower()
            if lowered not in {"true", "false"}:
                raise ConfigError(key, f"{text!r} is not true or false")
            return lowered == "true"

        return self._convert(key, default, convert)

    def unknown(self) -> tuple[str, ...]:
        return tuple(sorted(k for k in self._props if k not in self._used and k not in KNOWN_IGNORED_KEYS))
