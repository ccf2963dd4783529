"""The broker's metadata cache, filled only by UpdateMetadata (ring: drivers, pure state).

As `MetadataCache.updateMetadata`@2.5.1: the request replaces the live-broker list (all
endpoints of every broker) and the controller id; each partition state either replaces the cached
one or, with leader -2 (`LeaderDuringDelete`), removes the partition (and the topic when it has no
partitions left). Serves the Metadata API per listener: a broker without an endpoint on the
request's listener is left out, a partition whose leader is not alive gets LEADER_NOT_AVAILABLE.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkawire.states import TopicPartition
from reference_controller.zkdata import LEADER_DURING_DELETE

_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


@dataclass(frozen=True)
class BrokerEndpoints:
    broker_id: int
    endpoints: dict[str, tuple[str, int]]  # listener name -> (host, port)
    rack: str | None = None


@dataclass(frozen=True)
class PartitionState:
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass
class MetadataCache:
    controller_id: int = -1
    live_brokers: dict[int, BrokerEndpoints] = field(default_factory=dict)
    partitions: dict[str, dict[int, PartitionState]] = field(default_factory=dict)

    def update(
        self,
        controller_id: int,
        brokers: Iterable[BrokerEndpoints],
        states: Iterable[tuple[TopicPartition, PartitionState]],
    ) -> list[TopicPartition]:
        """Apply one UpdateMetadata; returns the partitions it deleted."""
        self.controller_id = controller_id
        self.live_brokers = {b.broker_id: b for b in brokers}
        deleted: list[TopicPartition] = []
        for (topic, partition), state in states:
            if state.leader == LEADER_DURING_DELETE:
                parts = self.partitions.get(topic)
                if parts is not None:
                    parts.pop(partition, None)
                    if not parts:
                        del self.partitions[topic]
                deleted.append(TopicPartition(topic, partition))
            else:
                self.partitions.setdefault(topic, {})[partition] = state
        return deleted

    def contains(self, topic: str) -> bool:
        return topic in self.partitions

    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def partition_state(self, tp: TopicPartition) -> PartitionState | None:
        return self.partitions.get(tp[0], {}).get(tp[1])

    def endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        broker = self.live_brokers.get(broker_id)
        return broker.endpoints.get(listener) if broker else None

    def has_leaders(self, topic: str, partitions: Iterable[int]) -> bool:
        """DelayedCreatePartitions: every partition is known with a leader."""
        parts = self.partitions.get(topic, {})
        return all(p in parts and parts[p].leader >= 0 for p in partitions)


def _endpoints_of(broker: Any) -> dict[str, tuple[str, int]]:
    if hasattr(broker, "v0_host"):
        return {"PLAINTEXT": (broker.v0_host, int(broker.v0_port))}
    result: dict[str, tuple[str, int]] = {}
    for ep in broker.endpoints:
        name = getattr(ep, "listener", None) or _PROTOCOL_NAMES.get(int(ep.security_protocol), "PLAINTEXT")
        result[str(name)] = (ep.host, int(ep.port))
    return result


def brokers_from_request(request: Any) -> list[BrokerEndpoints]:
    """Live brokers of an UpdateMetadata request of any version 0-6."""
    return [
        BrokerEndpoints(int(b.id_), _endpoints_of(b), getattr(b, "rack", None)) for b in request.live_brokers
    ]


def partition_states_from_request(request: Any) -> list[tuple[TopicPartition, PartitionState]]:
    """Partition states of an UpdateMetadata request of any version 0-6 (grouped by topic from v5)."""
    if hasattr(request, "topic_states"):
        raw = [(t.topic_name, p) for t in request.topic_states for p in t.partition_states]
    else:
        raw = [(p.topic_name, p) for p in request.ungrouped_partition_states]
    return [
        (
            TopicPartition(str(topic), int(p.partition_index)),
            PartitionState(
                controller_epoch=int(p.controller_epoch),
                leader=int(p.leader),
                leader_epoch=int(p.leader_epoch),
                isr=tuple(int(r) for r in p.isr),
                zk_version=int(p.zk_version),
                replicas=tuple(int(r) for r in p.replicas),
                offline_replicas=tuple(int(r) for r in getattr(p, "offline_replicas", ())),
            ),
        )
        for topic, p in raw
    ]
