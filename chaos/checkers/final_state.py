"""The final state a chaos run hands to its checkers, and how to build it (data + drivers helpers).

:class:`FinalState` is plain frozen data: the checkers (pure) read it. The runner builds it
after the final phase (every fault healed, quiescence awaited) from three channels:

- ZooKeeper, through :func:`read_zookeeper_state` (a chrooted ``KazooClient`` or anything with
  ``get``/``get_children``): ``/controller``, ``/controller_epoch``, topics, partition states,
  ``/admin/*``, ``/brokers/ids``;
- each live broker's Metadata API view: :func:`metadata_from_view` turns the probes'
  :class:`~fixtures.probes.client_metadata.ClusterView` (one ``fetch_metadata`` per broker,
  bootstrapped on that broker alone) into a :data:`BrokerMetadata`;
- the request journals of the controller→broker links: :func:`journals_from_requests` turns the
  probes' ``ControllerRequest`` items into per-broker :class:`ReceivedRequest` tuples.

Then ``FinalState(**read_zookeeper_state(zk), metadata=..., journals=..., quiesced=...)``.
Every field is documented on the class. Partitions are keyed by ``TopicPartition``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from fixtures.probes.znode_types import TopicPartition
from fixtures.probes.znodes import (
    ZkReadClient,
    read_all_topics,
    read_broker_ids,
    read_controller,
    read_controller_epoch,
    read_delete_topics,
    read_partition_states,
    read_preferred_replica_election,
    read_reassign_partitions,
)

__all__ = [
    "BrokerMetadata",
    "FinalState",
    "MetadataPartition",
    "PartitionState",
    "ReceivedRequest",
    "RequestPartition",
    "TopicState",
    "journals_from_requests",
    "metadata_from_view",
    "read_zookeeper_state",
    "received_request",
]


@dataclass(frozen=True)
class TopicState:
    """``/brokers/topics/<t>``: ``replicas`` per partition (RS, including adding replicas while a
    reassignment runs), ``adding``/``removing`` (non-empty only mid-reassignment) and the znode's
    ``czxid``, which names the topic's incarnation (names are deleted and recreated)."""

    czxid: int
    replicas: Mapping[int, tuple[int, ...]]
    adding: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    def being_reassigned(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state``: LeaderAndIsr + its znode's stat ``version``
    (the zkVersion) and ``czxid``."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    version: int
    czxid: int = 0


@dataclass(frozen=True)
class MetadataPartition:
    """One partition as a broker's Metadata API answer shows it (leader -1 = none)."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None = None


#: One broker's Metadata view: topic → partition → what it says.
BrokerMetadata = Mapping[str, Mapping[int, MetadataPartition]]


@dataclass(frozen=True)
class RequestPartition:
    """One partition of a received controller request; ``error_code`` is the broker's answer for
    it (None: no per-partition answer seen)."""

    topic: str
    partition: int
    leader: int | None = None
    leader_epoch: int | None = None
    error_code: int | None = None


@dataclass(frozen=True)
class ReceivedRequest:
    """One controller request a broker received, in the broker's arrival order (``seq``).

    ``kind`` is ``LeaderAndIsr`` / ``UpdateMetadata`` / ``StopReplica``; ``source`` the sending
    controller's broker id; ``broker_epoch`` the epoch the controller addressed (the broker's
    registration czxid; -1/None when the version has none); ``error_code`` the broker's top-level
    answer (0 = applied, None = no answer seen); ``delete_partitions`` StopReplica's flag.
    ``sent_s`` / ``answered_s`` (wall clock) order requests from different controllers when known.
    """

    seq: int
    source: int
    kind: str
    controller_epoch: int | None
    broker_epoch: int | None
    error_code: int | None
    partitions: tuple[RequestPartition, ...] = ()
    delete_partitions: bool | None = None
    sent_s: float | None = None
    answered_s: float | None = None


@dataclass(frozen=True)
class FinalState:
    """What the cluster looks like after the final phase (all chroot-relative).

    - ``controller``: broker id in ``/controller`` (None: absent);
    - ``controller_epoch`` / ``controller_epoch_version``: value and stat version of
      ``/controller_epoch`` (None: absent);
    - ``topics``: every ``/brokers/topics/<t>``;
    - ``partition_states``: every ``…/partitions/<p>/state`` that exists;
    - ``reassign_partitions``: content of ``/admin/reassign_partitions`` (None: absent);
    - ``preferred_replica_election``: partitions in ``/admin/preferred_replica_election``
      (None: absent);
    - ``delete_topics``: children of ``/admin/delete_topics``;
    - ``live_brokers``: children of ``/brokers/ids``;
    - ``metadata``: per live broker its Metadata view (None: it could not be fetched);
    - ``journals``: per broker the controller requests it received, in arrival order (a broker
      absent from the mapping has no journal: the request checker is then unknown for it);
    - ``quiesced``: the final phase saw the cluster quiet before its bound (False: the state was
      taken when the bound ran out, which liveness checkers judge as is).
    """

    controller: int | None
    controller_epoch: int | None
    controller_epoch_version: int | None
    topics: Mapping[str, TopicState]
    partition_states: Mapping[TopicPartition, PartitionState]
    reassign_partitions: Mapping[TopicPartition, tuple[int, ...]] | None
    preferred_replica_election: tuple[TopicPartition, ...] | None
    delete_topics: frozenset[str]
    live_brokers: frozenset[int]
    metadata: Mapping[int, BrokerMetadata | None] = field(default_factory=dict)
    journals: Mapping[int, tuple[ReceivedRequest, ...]] = field(default_factory=dict)
    quiesced: bool = True


def read_zookeeper_state(zk: ZkReadClient) -> dict[str, Any]:
    """The ZooKeeper fields of :class:`FinalState`, read through a (chrooted) client."""
    controller = read_controller(zk)
    epoch = read_controller_epoch(zk)
    topics: dict[str, TopicState] = {}
    states: dict[TopicPartition, PartitionState] = {}
    for name, topic in read_all_topics(zk).items():
        t = topic.data
        topics[name] = TopicState(topic.stat.czxid, t.partitions, t.adding_replicas, t.removing_replicas)
        for p, s in read_partition_states(zk, name).items():
            d = s.data
            states[TopicPartition(name, p)] = PartitionState(
                d.leader, d.leader_epoch, d.isr, d.controller_epoch, s.stat.version, s.stat.czxid
            )
    reassign = read_reassign_partitions(zk)
    preferred = read_preferred_replica_election(zk)
    return {
        "controller": None if controller is None else controller.data.broker_id,
        "controller_epoch": None if epoch is None else epoch.data,
        "controller_epoch_version": None if epoch is None else epoch.stat.version,
        "topics": topics,
        "partition_states": states,
        "reassign_partitions": None if reassign is None else reassign.data.as_mapping(),
        "preferred_replica_election": None if preferred is None else preferred.data.partitions,
        "delete_topics": frozenset(read_delete_topics(zk)),
        "live_brokers": frozenset(read_broker_ids(zk)),
    }


class _PartitionViewLike(Protocol):
    @property
    def leader(self) -> int: ...
    @property
    def replicas(self) -> tuple[int, ...]: ...
    @property
    def isr(self) -> tuple[int, ...]: ...
    @property
    def error(self) -> str | None: ...


class _ClusterViewLike(Protocol):
    @property
    def topics(self) -> Mapping[str, Mapping[int, _PartitionViewLike]]: ...


def metadata_from_view(view: _ClusterViewLike) -> BrokerMetadata:
    """A :data:`BrokerMetadata` from the probes' ``ClusterView`` (``fetch_metadata``)."""
    return {
        topic: {
            p: MetadataPartition(v.leader, tuple(v.replicas), tuple(v.isr), v.error) for p, v in parts.items()
        }
        for topic, parts in view.topics.items()
    }


def received_request(request: Any) -> ReceivedRequest:
    """A :class:`ReceivedRequest` from a probes ``ControllerRequest`` (duck-typed: no kio import).

    Optional ``response_time_s`` on the request (when the journal records it) becomes
    ``answered_s``.
    """
    errors: Mapping[tuple[str, int], int] = request.partition_errors or {}
    parts = tuple(
        RequestPartition(p.topic, p.partition, p.leader, p.leader_epoch, errors.get((p.topic, p.partition)))
        for p in request.partitions
    )
    return ReceivedRequest(
        seq=request.seq,
        source=request.source,
        kind=request.api,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        error_code=request.error_code,
        partitions=parts,
        delete_partitions=request.delete_partitions,
        sent_s=request.time_s,
        answered_s=getattr(request, "response_time_s", None),
    )


def journals_from_requests(requests: Iterable[Any]) -> dict[int, tuple[ReceivedRequest, ...]]:
    """Per destination broker, its received controller requests in arrival order.

    Exchanges that did not decode (``api`` not one of the three controller requests) are left
    out: they carry no epochs.
    """
    out: dict[int, list[ReceivedRequest]] = {}
    for r in requests:
        if r.api in ("LeaderAndIsr", "UpdateMetadata", "StopReplica"):
            out.setdefault(r.dest, []).append(received_request(r))
    return {b: tuple(sorted(rs, key=lambda x: x.seq)) for b, rs in out.items()}
