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

from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

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
from harness.zookeeper.observer import DeadlineReads
from probes.txnrecords import TxnRecord
from probes.znodes import ZkReadClient, controller_id

__all__ = ["LAST_READ_S", "Quiescence", "build_final_state", "heal_problem", "quiesce"]

#: How long an unquiet cluster's last read may keep failing before the run has no final state.
LAST_READ_S = 10.0


@dataclass(frozen=True)
class Quiescence:
    """What the final phase saw: when it healed, whether it got quiet, and the state it handed on."""

    time_to_heal_s: float | None
    quiesced: bool
    waited_s: float
    final_state: FinalState | None
    last_problem: str | None


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


def _liveness_problem(ops: Sequence[Op], records: Sequence[TxnRecord], state: FinalState) -> str | None:
    for checker in LIVENESS_CHECKERS:
        verdict = checker(ops, records, state)
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
    while healed_at is not None:
        try:
            state = build_final_state(cluster, quiesced=True, zk=zk)
            problem = _liveness_problem(ops, cluster.history(), state)
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
    )
