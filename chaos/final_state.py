"""The final phase's waits and the checkers' :class:`FinalState`, from the live cluster (ring: drivers).

After the nemesis healed every fault, :func:`quiesce` waits — deadline-based, on real signals —
in two stages:

1. **healed** (``time_to_heal``, records.METRICS): every node registered, ``/controller`` names a
   registered broker, every partition has a live leader and its ISR ⊆ live brokers;
2. **quiet**: the liveness checkers themselves (:data:`chaos.checkers.LIVENESS_CHECKERS`) all
   hold on a fresh :class:`FinalState`: admin znodes drained, reassignments and deletions done,
   every live broker's Metadata answer agrees with ZooKeeper.

When the bound runs out the last state is handed over with ``quiesced=False`` and the liveness
checkers judge it as it is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from chaos.checkers import LIVENESS_CHECKERS
from chaos.checkers.final_state import (
    BrokerMetadata,
    FinalState,
    fetch_broker_metadata,
    journals_from_requests,
    read_zookeeper_state,
)
from chaos.history import Op
from chaos.links import ChaosCluster
from fixtures.probes.txnrecords import TxnRecord

__all__ = ["Quiescence", "build_final_state", "heal_problem", "quiesce"]


@dataclass(frozen=True)
class Quiescence:
    """What the final phase saw: when it healed, whether it got quiet, and the state it handed on."""

    time_to_heal_s: float | None
    quiesced: bool
    waited_s: float
    final_state: FinalState | None
    last_problem: str | None


def heal_problem(cluster: ChaosCluster) -> str | None:
    """None when the healed invariants hold, else the first one that does not (for the trace)."""
    zk = cluster.zk
    live = {int(b) for b in zk.get_children("/brokers/ids")}
    missing = set(cluster.broker_ids) - live
    if missing:
        return f"brokers {sorted(missing)} not registered"
    controller = cluster.controller_id()
    if controller not in live:
        return f"controller {controller} not a live broker"
    for topic in zk.get_children("/brokers/topics"):
        try:
            parts = zk.get_children(f"/brokers/topics/{topic}/partitions")
        except Exception:
            return f"topic {topic} has no partitions znode yet"
        for p in parts:
            data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
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
    cluster: ChaosCluster, *, quiesced: bool, metadata_timeout_s: float = 3.0
) -> FinalState:
    """A :class:`FinalState` of ``cluster`` now: ZooKeeper, every live broker's Metadata, journals."""
    zk_fields = read_zookeeper_state(cluster.zk)
    journals = journals_from_requests(cluster.journal.requests()) if cluster.journal is not None else {}
    return FinalState(
        **zk_fields,
        metadata=_metadata(cluster, zk_fields["live_brokers"], metadata_timeout_s),
        journals=journals,
        quiesced=quiesced,
    )


def _liveness_problem(ops: Sequence[Op], records: Sequence[TxnRecord], state: FinalState) -> str | None:
    for checker in LIVENESS_CHECKERS:
        verdict = checker(ops, records, state)
        if not verdict.is_valid:
            return f"{verdict.checker}: {verdict.message}"
    return None


def quiesce(cluster: ChaosCluster, ops: Sequence[Op], deadline_s: float, poll_s: float = 0.1) -> Quiescence:
    """Wait for the healed invariants, then for quiet (module docstring); never raises on timeout."""
    start = time.monotonic()
    give_up = start + deadline_s
    healed_at: float | None = None
    problem: str | None = "not polled yet"
    while time.monotonic() < give_up:
        try:
            problem = heal_problem(cluster)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            healed_at = time.monotonic()
            break
        time.sleep(poll_s)
    state: FinalState | None = None
    while healed_at is not None:
        try:
            state = build_final_state(cluster, quiesced=True)
            problem = _liveness_problem(ops, cluster.history(), state)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None or time.monotonic() >= give_up:
            break
        time.sleep(max(poll_s, 0.25))
    quiet = healed_at is not None and problem is None
    if not quiet:
        try:
            state = build_final_state(cluster, quiesced=False)
        except Exception as exc:
            problem, state = f"final state unreadable: {type(exc).__name__}: {exc}", None
    return Quiescence(
        None if healed_at is None else healed_at - start,
        quiet,
        time.monotonic() - start,
        state,
        problem,
    )
