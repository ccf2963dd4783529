"""The final state a chaos run hands to its checkers: data and its JSON form (decisions ring, pure).

:class:`FinalState` is plain frozen data: the checkers read it. The runner builds it after the
final phase (every fault healed, quiescence awaited) with the builders of
:mod:`chaos.final_state` (drivers ring: ZooKeeper, each live broker's Metadata answer, the
request journals). Every field is documented on the class. Partitions are keyed by
``TopicPartition``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from probes.znode_types import TopicPartition

__all__ = [
    "BrokerMetadata",
    "FinalState",
    "MetadataPartition",
    "PartitionState",
    "ReceivedRequest",
    "RequestPartition",
    "TopicState",
    "final_state_from_json",
    "final_state_to_json",
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


# ---- JSON form (run directories, replay, checked-in captures) ---------------------------------


def _tp_key(tp: TopicPartition) -> str:
    return f"{tp.topic}/{tp.partition}"


def _tp_of(key: str) -> TopicPartition:
    topic, _, partition = key.rpartition("/")
    return TopicPartition(topic, int(partition))


def _int_map(m: Mapping[int, Iterable[int]]) -> dict[str, list[int]]:
    return {str(k): list(v) for k, v in sorted(m.items())}


def _from_int_map(m: Mapping[str, Iterable[int]]) -> dict[int, tuple[int, ...]]:
    return {int(k): tuple(v) for k, v in m.items()}


def final_state_to_json(state: FinalState) -> dict[str, Any]:
    """A JSON object holding every field of ``state`` (partitions keyed ``"<topic>/<p>"``)."""
    return {
        "controller": state.controller,
        "controller_epoch": state.controller_epoch,
        "controller_epoch_version": state.controller_epoch_version,
        "topics": {
            name: {
                "czxid": t.czxid,
                "replicas": _int_map(t.replicas),
                "adding": _int_map(t.adding),
                "removing": _int_map(t.removing),
            }
            for name, t in sorted(state.topics.items())
        },
        "partition_states": {
            _tp_key(tp): {**s.__dict__, "isr": list(s.isr)}
            for tp, s in sorted(state.partition_states.items())
        },
        "reassign_partitions": None
        if state.reassign_partitions is None
        else {_tp_key(tp): list(r) for tp, r in sorted(state.reassign_partitions.items())},
        "preferred_replica_election": None
        if state.preferred_replica_election is None
        else [_tp_key(tp) for tp in state.preferred_replica_election],
        "delete_topics": sorted(state.delete_topics),
        "live_brokers": sorted(state.live_brokers),
        "metadata": {
            str(b): None
            if view is None
            else {
                t: {
                    str(p): {**m.__dict__, "replicas": list(m.replicas), "isr": list(m.isr)}
                    for p, m in parts.items()
                }
                for t, parts in view.items()
            }
            for b, view in sorted(state.metadata.items())
        },
        "journals": {str(b): [_request_to_json(r) for r in rs] for b, rs in sorted(state.journals.items())},
        "quiesced": state.quiesced,
    }


def _request_to_json(r: ReceivedRequest) -> dict[str, Any]:
    return {**r.__dict__, "partitions": [p.__dict__ for p in r.partitions]}


def final_state_from_json(obj: Mapping[str, Any]) -> FinalState:
    """The inverse of :func:`final_state_to_json`; a missing or mistyped field raises
    ``ValueError`` naming it."""
    try:
        return FinalState(
            controller=obj["controller"],
            controller_epoch=obj["controller_epoch"],
            controller_epoch_version=obj["controller_epoch_version"],
            topics={
                name: TopicState(
                    t["czxid"],
                    _from_int_map(t["replicas"]),
                    _from_int_map(t["adding"]),
                    _from_int_map(t["removing"]),
                )
                for name, t in obj["topics"].items()
            },
            partition_states={
                _tp_of(k): PartitionState(**{**s, "isr": tuple(s["isr"])})
                for k, s in obj["partition_states"].items()
            },
            reassign_partitions=None
            if obj["reassign_partitions"] is None
            else {_tp_of(k): tuple(r) for k, r in obj["reassign_partitions"].items()},
            preferred_replica_election=None
            if obj["preferred_replica_election"] is None
            else tuple(_tp_of(k) for k in obj["preferred_replica_election"]),
            delete_topics=frozenset(obj["delete_topics"]),
            live_brokers=frozenset(obj["live_brokers"]),
            metadata={
                int(b): None if v is None else _metadata_from_json(v) for b, v in obj["metadata"].items()
            },
            journals={int(b): tuple(_request_from_json(r) for r in rs) for b, rs in obj["journals"].items()},
            quiesced=obj["quiesced"],
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"not a final state: {type(exc).__name__}: {exc}") from None


def _metadata_from_json(view: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> BrokerMetadata:
    return {
        t: {
            int(p): MetadataPartition(m["leader"], tuple(m["replicas"]), tuple(m["isr"]), m.get("error"))
            for p, m in parts.items()
        }
        for t, parts in view.items()
    }


def _request_from_json(r: Mapping[str, Any]) -> ReceivedRequest:
    parts = tuple(RequestPartition(**p) for p in r["partitions"])
    return ReceivedRequest(**{**r, "partitions": parts})
