"""Kafka's znode paths and their exact encodings (ring: decisions — pure, no I/O).

Mirrors `kafka.zk.ZkData` (2.5.1); see spec §1. JSON is compact (Jackson's default), key order as
Kafka produces it where Kafka's order is fixed (Scala Map1..Map4 keep insertion order) and the
commonly observed order where Kafka's is hash order. Decoders read by key and raise
`MalformedZnodeError` naming the path and the bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkawire.states import TopicPartition
from reference_controller.errors import MalformedZnodeError

# ---------------------------------------------------------------------------------------------
# paths
# ---------------------------------------------------------------------------------------------
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
ADMIN = "/admin"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
DELETE_TOPICS = "/admin/delete_topics"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
CLUSTER_ID = "/cluster/id"

# ZkData.PersistentZkPaths@2.5.1, created (null data) by every broker at start-up.
PERSISTENT_PATHS: tuple[str, ...] = (
    "/consumers", BROKER_IDS, BROKER_TOPICS, CONFIG_CHANGES, DELETE_TOPICS, BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION, "/latest_producer_id_block", LOG_DIR_EVENT_NOTIFICATION, CONFIG_TOPICS,
    "/config/clients", "/config/users", "/config/brokers",
)  # fmt: skip

INITIAL_CONTROLLER_EPOCH = 0
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0
NO_LEADER = -1
LEADER_DURING_DELETE = -2


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def config_topic_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def isr_change_path(name: str) -> str:
    return f"{ISR_CHANGE_NOTIFICATION}/{name}"


def log_dir_event_path(name: str) -> str:
    return f"{LOG_DIR_EVENT_NOTIFICATION}/{name}"


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _load(path: str, data: bytes | None) -> Any:
    if data is None or data == b"":
        raise MalformedZnodeError(path, data, "expected JSON, found no data")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedZnodeError(path, data, f"invalid JSON ({exc})") from None


def _obj(path: str, data: bytes | None, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise MalformedZnodeError(path, data, "expected a JSON object")
    return value


def _int(path: str, data: bytes | None, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedZnodeError(path, data, f"{what} must be an integer, got {value!r}")
    return value


_INT_ONLY = frozenset({int})


def _int_list(path: str, data: bytes | None, value: Any, what: str) -> list[int]:
    if type(value) is list and set(map(type, value)) <= _INT_ONLY:
        return value  # the common case in one pass; anything else is checked (and named) below
    if not isinstance(value, list):
        raise MalformedZnodeError(path, data, f"{what} must be a list of integers, got {value!r}")
    return [_int(path, data, v, what) for v in value]


# ---------------------------------------------------------------------------------------------
# /controller, /controller_epoch
# ---------------------------------------------------------------------------------------------
def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})


def decode_controller(data: bytes | None, path: str = CONTROLLER) -> int:
    obj = _obj(path, data, _load(path, data))
    return _int(path, data, obj.get("brokerid"), "brokerid")


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes | None, path: str = CONTROLLER_EPOCH) -> int:
    try:
        return int((data or b"").decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise MalformedZnodeError(path, data, "expected a decimal controller epoch") from None


# ---------------------------------------------------------------------------------------------
# /brokers/ids/<id>
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EndPoint:
    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def connection_string(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"


@dataclass(frozen=True)
class BrokerInfo:
    """Content of `/brokers/ids/<id>` (BrokerIdZNode v4)."""

    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = 0
    version: int = 4

    def endpoint(self, listener: str) -> EndPoint | None:
        for ep in self.endpoints:
            if ep.listener == listener:
                return ep
        return None


def encode_broker(info: BrokerInfo) -> bytes:
    plaintext = next((ep for ep in info.endpoints if ep.security_protocol == "PLAINTEXT"), None)
    obj: dict[str, Any] = {}
    if info.version >= 4:
        obj["listener_security_protocol_map"] = {ep.listener: ep.security_protocol for ep in info.endpoints}
    obj["endpoints"] = [ep.connection_string() for ep in info.endpoints]
    if info.rack is not None and info.version >= 3:
        obj["rack"] = info.rack
    obj["jmx_port"] = info.jmx_port
    obj["host"] = plaintext.host if plaintext else None
    obj["timestamp"] = str(info.timestamp_ms)
    obj["port"] = plaintext.port if plaintext else -1
    obj["version"] = info.version
    return _dump(obj)


def decode_broker(broker_id: int, data: bytes | None, path: str | None = None) -> BrokerInfo:
    where = path or broker_path(broker_id)
    obj = _obj(where, data, _load(where, data))
    version = _int(where, data, obj.get("version"), "version")
    raw_endpoints = obj.get("endpoints")
    protocol_map = obj.get("listener_security_protocol_map") or {}
    if not isinstance(protocol_map, dict):
        raise MalformedZnodeError(where, data, "listener_security_protocol_map must be an object")
    endpoints: list[EndPoint] = []
    if raw_endpoints is None:  # v1: host/port only
        host, port = obj.get("host"), obj.get("port")
        if isinstance(host, str) and isinstance(port, int):
            endpoints.append(EndPoint("PLAINTEXT", host, port))
    elif isinstance(raw_endpoints, list):
        for raw in raw_endpoints:
            if not isinstance(raw, str) or "://" not in raw:
                raise MalformedZnodeError(where, data, f"endpoint {raw!r} is not NAME://host:port")
            name, _, rest = raw.partition("://")
            host, _, port_text = rest.rpartition(":")
            try:
                port = int(port_text)
            except ValueError:
                raise MalformedZnodeError(where, data, f"endpoint {raw!r} has no numeric port") from None
            protocol = str(protocol_map.get(name, name))
            endpoints.append(EndPoint(name, host.strip("[]"), port, protocol))
    else:
        raise MalformedZnodeError(where, data, "endpoints must be a list")
    rack = obj.get("rack")
    jmx = obj.get("jmx_port", -1)
    ts = obj.get("timestamp", "0")
    try:
        timestamp_ms = int(ts)
    except (TypeError, ValueError):
        timestamp_ms = 0
    return BrokerInfo(
        broker_id=broker_id,
        endpoints=tuple(endpoints),
        rack=rack if isinstance(rack, str) else None,
        jmx_port=jmx if isinstance(jmx, int) else -1,
        timestamp_ms=timestamp_ms,
        version=version,
    )


# ---------------------------------------------------------------------------------------------
# /brokers/topics/<t>
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplicaAssignment:
    """Kafka's `ReplicaAssignment`: replicas (RS), adding (AR), removing (RR)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """`reassignTo`: RS = (target ++ origin).distinct, AR = RS − origin, RR = RS − target."""
        origin = self.origin_replicas
        full = tuple(dict.fromkeys([*target, *origin]))
        return ReplicaAssignment(
            replicas=full,
            adding=tuple(r for r in full if r not in origin),
            removing=tuple(r for r in full if r not in target),
        )

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(
            tuple(r for r in self.replicas if r != replica),
            tuple(r for r in self.adding if r != replica),
            tuple(r for r in self.removing if r != replica),
        )


@dataclass(frozen=True)
class TopicAssignment:
    partitions: Mapping[int, ReplicaAssignment] = field(default_factory=dict)
    version: int = 2


def encode_topic(partitions: Mapping[int, ReplicaAssignment]) -> bytes:
    """TopicZNode v2 (2.4–2.7): Map4 with fixed top-level key order."""
    ordered = sorted(partitions)
    return _dump(
        {
            "version": 2,
            "partitions": {str(p): list(partitions[p].replicas) for p in ordered},
            "adding_replicas": {str(p): list(partitions[p].adding) for p in ordered if partitions[p].adding},
            "removing_replicas": {
                str(p): list(partitions[p].removing) for p in ordered if partitions[p].removing
            },
        }
    )


def decode_topic(topic: str, data: bytes | None, path: str | None = None) -> TopicAssignment:
    where = path or topic_path(topic)
    obj = _obj(where, data, _load(where, data))
    version = obj.get("version", 1)
    parts = obj.get("partitions")
    if not isinstance(parts, dict):
        raise MalformedZnodeError(where, data, "partitions must be an object")
    adding = obj.get("adding_replicas") or {}
    removing = obj.get("removing_replicas") or {}
    if not isinstance(adding, dict) or not isinstance(removing, dict):
        raise MalformedZnodeError(where, data, "adding_replicas/removing_replicas must be objects")
    result: dict[int, ReplicaAssignment] = {}
    for key, replicas in parts.items():
        try:
            partition = int(key)
        except ValueError:
            raise MalformedZnodeError(where, data, f"partition id {key!r} is not an integer") from None
        result[partition] = ReplicaAssignment(
            tuple(_int_list(where, data, replicas, "replicas")),
            tuple(_int_list(where, data, adding.get(key, []), "adding_replicas")),
            tuple(_int_list(where, data, removing.get(key, []), "removing_replicas")),
        )
    return TopicAssignment(result, version if isinstance(version, int) else 1)


# ---------------------------------------------------------------------------------------------
# …/partitions/<p>/state
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LeaderAndIsr:
    """Kafka's `LeaderAndIsr` with the znode's zkVersion (from the Stat, not the JSON)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = 0

    def new_leader_and_isr(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        """`newLeaderAndIsr`: leader_epoch + 1, same zkVersion."""
        return LeaderAndIsr(leader, self.leader_epoch + 1, tuple(isr), self.zk_version)

    def new_epoch(self) -> LeaderAndIsr:
        return LeaderAndIsr(self.leader, self.leader_epoch + 1, self.isr, self.zk_version)


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    leader_and_isr: LeaderAndIsr
    controller_epoch: int


def encode_partition_state(leader_and_isr: LeaderAndIsr, controller_epoch: int) -> bytes:
    return _dump(
        {
            "controller_epoch": controller_epoch,
            "leader": leader_and_isr.leader,
            "version": 1,
            "leader_epoch": leader_and_isr.leader_epoch,
            "isr": list(leader_and_isr.isr),
        }
    )


def decode_partition_state(data: bytes | None, zk_version: int, path: str) -> LeaderIsrAndControllerEpoch:
    obj = _obj(path, data, _load(path, data))
    lai = LeaderAndIsr(
        leader=_int(path, data, obj.get("leader"), "leader"),
        leader_epoch=_int(path, data, obj.get("leader_epoch"), "leader_epoch"),
        isr=tuple(_int_list(path, data, obj.get("isr"), "isr")),
        zk_version=zk_version,
    )
    return LeaderIsrAndControllerEpoch(lai, _int(path, data, obj.get("controller_epoch"), "controller_epoch"))


# ---------------------------------------------------------------------------------------------
# /admin/reassign_partitions, /admin/preferred_replica_election
# ---------------------------------------------------------------------------------------------


def _partition_entries(path: str, data: bytes | None) -> list[Mapping[str, Any]]:
    obj = _obj(path, data, _load(path, data))
    entries = obj.get("partitions")
    if not isinstance(entries, list):
        raise MalformedZnodeError(path, data, "partitions must be a list")
    out: list[Mapping[str, Any]] = []
    for entry in entries:
        entry_obj = _obj(path, data, entry)
        if not isinstance(entry_obj.get("topic"), str):
            raise MalformedZnodeError(path, data, f"entry {entry!r} has no topic")
        _int(path, data, entry_obj.get("partition"), "partition")
        out.append(entry_obj)
    return out


def encode_reassignment(assignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    return _dump(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": list(replicas)}
                for (t, p), replicas in assignment.items()
            ],
        }
    )


def decode_reassignment(
    data: bytes | None, path: str = REASSIGN_PARTITIONS
) -> dict[TopicPartition, list[int]]:
    result: dict[TopicPartition, list[int]] = {}
    for entry in _partition_entries(path, data):
        result[TopicPartition(entry["topic"], entry["partition"])] = _int_list(
            path, data, entry.get("replicas"), "replicas"
        )
    return result


def encode_preferred_election(partitions: Iterable[TopicPartition]) -> bytes:
    return _dump({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_preferred_election(
    data: bytes | None, path: str = PREFERRED_REPLICA_ELECTION
) -> list[TopicPartition]:
    return [TopicPartition(e["topic"], e["partition"]) for e in _partition_entries(path, data)]


# ---------------------------------------------------------------------------------------------
# notifications
# ---------------------------------------------------------------------------------------------
def encode_isr_change(partitions: Iterable[TopicPartition]) -> bytes:
    return _dump({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_isr_change(data: bytes | None, path: str) -> list[TopicPartition]:
    return [TopicPartition(e["topic"], e["partition"]) for e in _partition_entries(path, data)]


LOG_DIR_FAILURE_EVENT = 1


def encode_log_dir_event(broker_id: int) -> bytes:
    return _dump({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes | None, path: str) -> int:
    obj = _obj(path, data, _load(path, data))
    return _int(path, data, obj.get("broker"), "broker")


# ---------------------------------------------------------------------------------------------
# /config/topics/<t>, /cluster/id
# ---------------------------------------------------------------------------------------------
def encode_topic_config(config: Mapping[str, str]) -> bytes:
    return _dump({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes | None, path: str) -> dict[str, str]:
    obj = _obj(path, data, _load(path, data))
    config = obj.get("config", {})
    if not isinstance(config, dict):
        raise MalformedZnodeError(path, data, "config must be an object")
    return {str(k): str(v) for k, v in config.items()}


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None, path: str = CLUSTER_ID) -> str:
    obj = _obj(path, data, _load(path, data))
    value = obj.get("id")
    if not isinstance(value, str):
        raise MalformedZnodeError(path, data, "id must be a string")
    return value
