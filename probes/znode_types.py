"""Typed values of Kafka's znodes and their pure decoders (spec §1; drivers ring, no I/O).

Each ``decode_*(path, raw)`` takes the data exactly as read (``None`` for a null-data znode)
and returns a frozen dataclass, or raises :class:`MalformedZnode` naming the path and the
bytes. Decoders read by key like Kafka's (key order is not significant), are strict about the
type of every field they read, and ignore keys they do not know.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

# the kit's one TopicPartition (kafkawire), re-exported: the chaos checkers import it from here
from kafkawire.states import TopicPartition as TopicPartition  # noqa: PLC0414 - explicit re-export
from probes.errors import MalformedZnode

T = TypeVar("T")

_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")  # Kafka's EndPoint
_SEQUENCE = re.compile(r"(\d{10})$")


@dataclass(frozen=True, slots=True)
class EndPoint:
    listener_name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class ControllerZNode:
    broker_id: int
    version: int | None
    timestamp: str | None  # Kafka writes the ms timestamp as a JSON *string*


@dataclass(frozen=True, slots=True)
class BrokerIdZNode:
    broker_id: int  # from the path
    version: int
    host: str | None
    port: int
    endpoints: tuple[EndPoint, ...]
    jmx_port: int
    timestamp: str | None
    rack: str | None
    listener_security_protocol_map: dict[str, str] = field(default_factory=dict)
    features: dict[str, tuple[int, int]] | None = None  # v5: name → (min_version, max_version)


@dataclass(frozen=True, slots=True)
class TopicZNode:
    version: int
    partitions: dict[int, tuple[int, ...]]
    adding_replicas: dict[int, tuple[int, ...]]  # missing key (v1) ⇒ empty
    removing_replicas: dict[int, tuple[int, ...]]
    topic_id: str | None = None  # v3 (2.8, IBP ≥ 2.8-IV0)


@dataclass(frozen=True, slots=True)
class PartitionStateZNode:
    """``LeaderAndIsr`` + controller epoch; the zkVersion is the znode's ``stat.version``."""

    version: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class PartitionReplicas:
    topic: str
    partition: int
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReassignPartitionsZNode:
    version: int
    partitions: tuple[PartitionReplicas, ...]

    def as_mapping(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {TopicPartition(p.topic, p.partition): p.replicas for p in self.partitions}


@dataclass(frozen=True, slots=True)
class PreferredReplicaElectionZNode:
    version: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class DeleteTopicZNode:
    topic: str  # the znode name
    data: bytes | None  # Kafka writes null


@dataclass(frozen=True, slots=True)
class IsrChangeNotificationZNode:
    sequence: int
    version: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class LogDirEventNotificationZNode:
    sequence: int
    version: int
    broker_id: int
    event: int  # 1 = LogDirFailure


@dataclass(frozen=True, slots=True)
class TopicConfigZNode:
    version: int
    config: dict[str, str]


@dataclass(frozen=True, slots=True)
class ClusterIdZNode:
    id: str
    version: str | int  # Kafka writes the *string* "1"


class _Obj:
    """A JSON object read from a znode, with typed accessors that raise ``MalformedZnode``."""

    def __init__(self, path: str, raw: bytes | None, value: object) -> None:
        if not isinstance(value, dict):
            raise MalformedZnode(path, raw, f"expected a JSON object, got {value!r}")
        self.path, self.raw = path, raw
        self.value: dict[str, object] = value

    @classmethod
    def parse(cls, path: str, raw: bytes | None) -> _Obj:
        if raw is None:
            raise MalformedZnode(path, raw, "null data, expected a JSON object")
        try:
            value = json.loads(raw)
        except ValueError as e:  # includes UnicodeDecodeError
            raise MalformedZnode(path, raw, f"invalid JSON ({e})") from None
        return cls(path, raw, value)

    def bad(self, reason: str) -> MalformedZnode:
        return MalformedZnode(self.path, self.raw, reason)

    def _typed(self, key: str, kind: Callable[[object], T | None], what: str) -> T | None:
        """The value of ``key`` converted by ``kind``; None when absent or JSON null."""
        value = self.value.get(key)
        if value is None:
            return None
        got = kind(value)
        if got is None:
            raise self.bad(f"{key!r} must be {what}, got {value!r}")
        return got

    def _required(self, key: str, got: T | None) -> T:
        if got is None:
            raise self.bad(f"missing {key!r}")
        return got

    def req_int(self, key: str) -> int:
        return self._required(key, self.opt_int(key))

    def opt_int(self, key: str) -> int | None:
        return self._typed(key, _as_int, "an int")

    def req_str(self, key: str) -> str:
        return self._required(key, self.opt_str(key))

    def opt_str(self, key: str) -> str | None:
        return self._typed(key, _as_str, "a string")

    def ints(self, key: str) -> tuple[int, ...]:
        return self.int_list(repr(key), self.value.get(key))

    def int_list(self, label: str, value: object) -> tuple[int, ...]:
        if not isinstance(value, list) or any(_as_int(v) is None for v in value):
            raise self.bad(f"{label} must be a list of ints, got {value!r}")
        return tuple(value)

    def obj(self, key: str, *, required: bool = True) -> _Obj:
        if key not in self.value and required:
            raise self.bad(f"missing object {key!r}")
        return _Obj(self.path, self.raw, self.value.get(key, {}))

    def objs(self, key: str) -> list[_Obj]:
        value = self.value.get(key)
        if not isinstance(value, list):
            raise self.bad(f"{key!r} must be a list, got {value!r}")
        return [_Obj(self.path, self.raw, v) for v in value]

    def replica_map(self, key: str, *, required: bool = False) -> dict[int, tuple[int, ...]]:
        """``{"0":[1,2]}`` → ``{0: (1, 2)}``; a missing optional key is an empty map."""
        out: dict[int, tuple[int, ...]] = {}
        for p, replicas in self.obj(key, required=required).value.items():
            if not p.lstrip("-").isdigit():
                raise self.bad(f"{key!r} has a non-integer partition key {p!r}")
            out[int(p)] = self.int_list(f"{key}[{p!r}]", replicas)
        return out

    def str_map(self, key: str, *, required: bool = False) -> dict[str, str]:
        m = self.obj(key, required=required).value
        if any(not isinstance(v, str) for v in m.values()):
            raise self.bad(f"{key!r} must map strings to strings, got {m!r}")
        return {k: str(v) for k, v in m.items()}


def _as_int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _as_str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _topic_partitions(o: _Obj) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(p.req_str("topic"), p.req_int("partition")) for p in o.objs("partitions"))


def _sequence(path: str, raw: bytes | None) -> int:
    m = _SEQUENCE.search(path)
    if not m:
        raise MalformedZnode(path, raw, "name lacks a 10-digit sequence suffix")
    return int(m.group(1))


def decode_controller(path: str, raw: bytes | None) -> ControllerZNode:
    o = _Obj.parse(path, raw)
    return ControllerZNode(o.req_int("brokerid"), o.opt_int("version"), o.opt_str("timestamp"))


def decode_controller_epoch(path: str, raw: bytes | None) -> int:
    text = (raw or b"").decode("ascii", errors="replace")
    if raw is None or not text.lstrip("-").isdigit():
        raise MalformedZnode(path, raw, "expected a plain decimal integer")
    return int(text)


def decode_endpoint(o: _Obj, text: object) -> EndPoint:
    m = _ENDPOINT.match(text) if isinstance(text, str) else None
    if not m:
        raise o.bad(f"bad endpoint {text!r}, expected <LISTENER>://<host>:<port>")
    return EndPoint(m.group(1), m.group(2), int(m.group(3)))


def decode_broker(path: str, raw: bytes | None) -> BrokerIdZNode:
    o = _Obj.parse(path, raw)
    endpoints = o.value.get("endpoints", [])
    if not isinstance(endpoints, list):
        raise o.bad(f"'endpoints' must be a list, got {endpoints!r}")
    features = None
    if "features" in o.value:
        ranges = o.obj("features").value.items()
        features = {k: _version_range(_Obj(path, raw, v)) for k, v in ranges}
    port, jmx_port = o.opt_int("port"), o.opt_int("jmx_port")
    return BrokerIdZNode(
        broker_id=_broker_id_from_path(path, raw),
        version=o.req_int("version"),
        host=o.opt_str("host"),
        port=-1 if port is None else port,
        endpoints=tuple(decode_endpoint(o, e) for e in endpoints),
        jmx_port=-1 if jmx_port is None else jmx_port,
        timestamp=o.opt_str("timestamp"),
        rack=o.opt_str("rack"),
        listener_security_protocol_map=o.str_map("listener_security_protocol_map"),
        features=features,
    )


def _version_range(r: _Obj) -> tuple[int, int]:
    return (r.req_int("min_version"), r.req_int("max_version"))


def _broker_id_from_path(path: str, raw: bytes | None) -> int:
    name = path.rsplit("/", 1)[-1]
    if not name.lstrip("-").isdigit():
        raise MalformedZnode(path, raw, f"broker id {name!r} is not an integer")
    return int(name)


def decode_topic(path: str, raw: bytes | None) -> TopicZNode:
    o = _Obj.parse(path, raw)
    return TopicZNode(
        o.req_int("version"),
        o.replica_map("partitions", required=True),
        o.replica_map("adding_replicas"),
        o.replica_map("removing_replicas"),
        o.opt_str("topic_id"),
    )


def decode_partition_state(path: str, raw: bytes | None) -> PartitionStateZNode:
    o = _Obj.parse(path, raw)
    return PartitionStateZNode(
        o.req_int("version"),
        o.req_int("leader"),
        o.req_int("leader_epoch"),
        o.ints("isr"),
        o.req_int("controller_epoch"),
    )


def decode_reassign_partitions(path: str, raw: bytes | None) -> ReassignPartitionsZNode:
    o = _Obj.parse(path, raw)
    parts = tuple(
        PartitionReplicas(p.req_str("topic"), p.req_int("partition"), p.ints("replicas"))
        for p in o.objs("partitions")
    )
    return ReassignPartitionsZNode(o.req_int("version"), parts)


def decode_preferred_replica_election(path: str, raw: bytes | None) -> PreferredReplicaElectionZNode:
    o = _Obj.parse(path, raw)
    return PreferredReplicaElectionZNode(o.req_int("version"), _topic_partitions(o))


def decode_delete_topic(path: str, raw: bytes | None) -> DeleteTopicZNode:
    return DeleteTopicZNode(path.rsplit("/", 1)[-1], raw)


def decode_isr_change(path: str, raw: bytes | None) -> IsrChangeNotificationZNode:
    o = _Obj.parse(path, raw)
    return IsrChangeNotificationZNode(_sequence(path, raw), o.req_int("version"), _topic_partitions(o))


def decode_log_dir_event(path: str, raw: bytes | None) -> LogDirEventNotificationZNode:
    o = _Obj.parse(path, raw)
    return LogDirEventNotificationZNode(
        _sequence(path, raw), o.req_int("version"), o.req_int("broker"), o.req_int("event")
    )


def decode_topic_config(path: str, raw: bytes | None) -> TopicConfigZNode:
    o = _Obj.parse(path, raw)
    return TopicConfigZNode(o.req_int("version"), o.str_map("config", required=True))


def decode_cluster_id(path: str, raw: bytes | None) -> ClusterIdZNode:
    o = _Obj.parse(path, raw)
    version = o.opt_str("version") if isinstance(o.value.get("version"), str) else o.opt_int("version")
    if version is None:
        raise o.bad("missing 'version'")
    return ClusterIdZNode(o.req_str("id"), version)
