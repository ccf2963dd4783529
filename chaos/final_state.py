"""The final phase's waits and the checkers' :class:`FinalState`, from the live cluster (ring: drivers).

After the nemesis healed every fault, :func:`quiesce` waits — deadline-based, on real signals —
in two stages:

1. **healed** (``time_to_heal``, records.METRICS): every node registered, ``/controller`` names a
   registered broker, every partition has a live leader and its ISR ⊆ live brokers;
2. **quiet**: the liveness checkers themselves (:data:`chaos.checkers.LIVENESS_CHECKERS`) all
   hold on a fresh :class:`FinalState`: admin znodes drained, reassignments and deletions done,
   every live broker's Metadata answer agrees with ZooKeeper. The transaction log is replayed
   into one :class:`~chaos.checkers.timeline.Timeline` that each poll extends with the records
   it has not seen (never a replay from the start), and that the run's check then reuses.

When the bound runs out the last state is handed over with ``quiesced=False`` and the liveness
checkers judge it as it is.

The builders of :class:`FinalState` read three channels:

- ZooKeeper, through ``read_zookeeper_state`` (a chrooted ``KazooClient`` or anything with
  ``get``/``get_children``): ``/controller``, ``/controller_epoch``, topics, partition states,
  ``/admin/*``, ``/brokers/ids``;
- each live broker's Metadata API view: ``fetch_broker_metadata`` (a Metadata request to that
  broker alone), or ``metadata_from_view`` over the probes' ``ClusterView``;
- the request journals of the controller→broker links: ``journals_from_requests`` turns the
  probes' ``ControllerRequest`` items into per-broker :class:`ReceivedRequest` tuples.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from chaos.checkers import LIVENESS_CHECKERS, judge_all
from chaos.checkers.final_state import (
    BrokerMetadata,
    FinalState,
    MetadataPartition,
    PartitionState,
    ReceivedRequest,
    RequestPartition,
    TopicState,
)
from chaos.checkers.findings import RunInputs
from chaos.checkers.timeline import Timeline, follow
from chaos.history import Op
from chaos.links import ChaosCluster
from harness.zookeeper.observer import DeadlineReads
from probes.znode_types import TopicPartition
from probes.znodes import (
    ZkReadClient,
    controller_id,
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
    "CONTROLLER_REQUESTS",
    "LAST_READ_S",
    "Quiescence",
    "build_final_state",
    "fetch_broker_metadata",
    "heal_problem",
    "journals_from_requests",
    "metadata_from_view",
    "quiesce",
    "read_zookeeper_state",
    "received_request",
]

#: The controller→broker requests a journal entry must be to count.
CONTROLLER_REQUESTS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")

#: How long an unquiet cluster's last read may keep failing before the run has no final state.
LAST_READ_S = 10.0


@dataclass(frozen=True)
class Quiescence:
    """What the final phase saw: when it healed, whether it got quiet, the state it handed on,
    and the timeline of the log as far as it replayed it (None: it never read the log)."""

    time_to_heal_s: float | None
    quiesced: bool
    waited_s: float
    final_state: FinalState | None
    last_problem: str | None
    timeline: Timeline | None = None


def heal_problem(cluster: ChaosCluster, zk: ZkReadClient | None = None) -> str | None:
    """None when the healed invariants hold, else the first one that does not (for the trace);
    reads through ``zk`` (default: the cluster's own client)."""
    zk = cluster.zk if zk is None else zk
    live = {int(b) for b in zk.get_children("/brokers/ids")}
    missing = set(cluster.broker_ids) - live
    if missing:
        return f"brokers {sorted(missing)} not registered"
    controller = controller_id(zk)
    if controller not in live:
        return f"controller {controller} not a live broker"
    for topic in zk.get_children("/brokers/topics"):
        try:
            parts = zk.get_children(f"/brokers/topics/{topic}/partitions")
        except NoNodeError:
            return f"topic {topic} has no partitions znode yet"
        for p in parts:
            data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
            if data is None:
                return f"{topic}-{p} has a state znode without data"
            state = json.loads(data)
            if state["leader"] not in live or not set(state["isr"]) <= live:
                return f"{topic}-{p} leader {state['leader']} isr {state['isr']} live {sorted(live)}"
    return None


def _metadata(
    cluster: ChaosCluster, live: frozenset[int], timeout_s: float
) -> dict[int, BrokerMetadata | None]:
    out: dict[int, BrokerMetadata | None] = {}
    for bid in sorted(live):
        try:
            host, port = cluster.endpoint(bid)
            # that broker's own view: a client library may answer from any broker it knows
            out[bid] = fetch_broker_metadata(host, port, timeout_s=timeout_s)
        except Exception:
            out[bid] = None
    return out


def build_final_state(
    cluster: ChaosCluster, *, quiesced: bool, metadata_timeout_s: float = 3.0, zk: ZkReadClient | None = None
) -> FinalState:
    """A :class:`FinalState` of ``cluster`` now: ZooKeeper (through ``zk``, default the cluster's
    client), every live broker's Metadata, journals."""
    zk_fields = read_zookeeper_state(cluster.zk if zk is None else zk)
    journals = journals_from_requests(cluster.journal.requests()) if cluster.journal is not None else {}
    return FinalState(
        **zk_fields,
        metadata=_metadata(cluster, zk_fields["live_brokers"], metadata_timeout_s),
        journals=journals,
        quiesced=quiesced,
    )


def _last_state(cluster: ChaosCluster, give_up: float, poll_s: float) -> tuple[FinalState | None, str | None]:
    """The unquiet cluster's state for the checkers, retried until ``give_up``; else why not."""
    zk = DeadlineReads(cluster.zk, give_up)
    why: str | None = None
    while True:
        try:
            return build_final_state(cluster, quiesced=False, zk=zk), None
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}".splitlines()[0]
        if time.monotonic() + poll_s >= give_up:
            return None, why
        time.sleep(max(poll_s, 0.25))


def _liveness_problem(ops: Sequence[Op], timeline: Timeline, state: FinalState) -> str | None:
    for verdict in judge_all(LIVENESS_CHECKERS, RunInputs(tuple(ops), timeline, state)):
        if not verdict.is_valid:
            return f"{verdict.checker}: {verdict.message}"
    return None


def quiesce(
    cluster: ChaosCluster,
    ops: Sequence[Op],
    deadline_s: float,
    poll_s: float = 0.1,
    last_read_s: float = LAST_READ_S,
) -> Quiescence:
    """Wait for the healed invariants, then for quiet (module docstring); never raises on timeout.

    Every ZooKeeper read honours the deadline (:class:`DeadlineReads`). A cluster that did not get
    quiet is read once more for the checkers, retried for up to ``last_read_s`` when that read
    fails (a session the observer is re-establishing): only a ZooKeeper that stays unreadable
    leaves no final state, and ``last_problem`` then says why."""
    start = time.monotonic()
    give_up = start + deadline_s
    zk = DeadlineReads(cluster.zk, give_up)
    healed_at: float | None = None
    problem: str | None = "not polled yet"
    while time.monotonic() < give_up:
        try:
            problem = heal_problem(cluster, zk)
        except KazooTimeoutError:
            if time.monotonic() >= give_up:
                break  # the bound ran out mid-read: the last problem seen says more
            problem = "a ZooKeeper read timed out"
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            healed_at = time.monotonic()
            break
        time.sleep(poll_s)
    state: FinalState | None = None
    timeline: Timeline | None = None
    while healed_at is not None:
        try:
            state = build_final_state(cluster, quiesced=True, zk=zk)
            timeline = follow(timeline, cluster.history())
            problem = _liveness_problem(ops, timeline, state)
        except KazooTimeoutError:
            if time.monotonic() >= give_up:
                break  # the bound ran out mid-read: the last problem seen says more
            problem = "a ZooKeeper read timed out"
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None or time.monotonic() >= give_up:
            break
        time.sleep(max(poll_s, 0.25))
    quiet = healed_at is not None and problem is None
    if not quiet:
        state, unreadable = _last_state(cluster, time.monotonic() + last_read_s, poll_s)
        if state is None:
            problem = f"{problem}; final state unreadable: {unreadable}"
    return Quiescence(
        None if healed_at is None else healed_at - start,
        quiet,
        time.monotonic() - start,
        state,
        problem,
        timeline,
    )


# ---- the checkers' FinalState from a live cluster (through the ports the caller hands in) ----


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
        if r.api in CONTROLLER_REQUESTS:
            out.setdefault(r.dest, []).append(received_request(r))
    return {b: tuple(sorted(rs, key=lambda x: x.seq)) for b, rs in out.items()}


def fetch_broker_metadata(host: str, port: int, timeout_s: float = 10.0) -> BrokerMetadata:
    """One broker's own Metadata view (a Metadata v1 request for all topics, to it alone).

    A client library would pick any broker it knows; this asks exactly the broker at
    ``host:port``. Raises ``OSError`` when the broker cannot be reached.
    """
    from kio.schema.metadata.v1.request import MetadataRequest  # noqa: PLC0415 - kio only when fetching

    from probes.request_proxy import send_request  # noqa: PLC0415

    response = send_request(host, port, MetadataRequest(topics=None), timeout_s=timeout_s)
    view: dict[str, dict[int, MetadataPartition]] = {}
    for topic in response.topics:
        view[str(topic.name)] = {
            int(p.partition_index): MetadataPartition(
                int(p.leader_id),
                tuple(int(r) for r in p.replica_nodes),
                tuple(int(r) for r in p.isr_nodes),
                None if int(p.error_code) == 0 else str(int(p.error_code)),
            )
            for p in topic.partitions
        }
    return view
