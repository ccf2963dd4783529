"""Phase metrics of a chaos run (:data:`records.run_record.METRICS`), black-box (ring: drivers).

``time_to_heal`` comes from the final phase; ``controller_election`` is the run's last election
(a re-election when faults moved the controller, else the cluster's first);
``failover_to_ready`` is that epoch's first UpdateMetadata arrival at a broker (request journal);
``leader_reelection_after_broker_failure`` the first partition led by a broker the nemesis
killed or terminated, re-led by another broker after its session closed.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from chaos.history import History
from probes.txnrecords import TxnRecord
from records import phases
from records.run_record import PhaseMetric

if TYPE_CHECKING:
    from chaos.final_state import Quiescence
    from chaos.links import ChaosCluster

__all__ = ["phase_metrics"]


def _last_election_zxid(records: list[TxnRecord]) -> int:
    """The zxid just before the last txn creating ``/controller`` (0 if there is none)."""
    creates = [
        r.zxid
        for r in records
        if not r.failed
        and any(
            o.op in ("create", "create2") and o.path == "/controller"
            for o in (r.ops if r.op == "multi" else (r.txn,))
        )
    ]
    return creates[-1] - 1 if creates else 0


def _failed_brokers(history: History) -> list[int]:
    out = []
    for pair in history.pairs():
        c = pair.completion
        if c is None or pair.invoke.f != "start_fault" or c.type != "ok" or not c.value.get("node"):
            continue
        if c.value.get("fault") in ("kill", "terminate", "zk_session_expire"):
            out.append(int(c.value["node"]))
    return list(dict.fromkeys(out))


def phase_metrics(
    cluster: ChaosCluster | None, history: History, quiet: Quiescence | None
) -> list[PhaseMetric]:
    out: list[PhaseMetric] = []
    if quiet is not None and quiet.time_to_heal_s is not None:
        out.append(PhaseMetric("time_to_heal", round(quiet.time_to_heal_s, 4)))
    if cluster is None:
        return out
    records: list[TxnRecord] = []
    with contextlib.suppress(Exception):
        records = cluster.history()
    election = phases.controller_election(records, after_zxid=_last_election_zxid(records))
    if election is not None:
        out.append(PhaseMetric("controller_election", round(election, 4)))
    epoch = quiet.final_state.controller_epoch if quiet is not None and quiet.final_state else None
    if epoch is not None and cluster.journal is not None:
        ready = phases.failover_to_ready(records, cluster.journal.requests(), epoch)
        if ready is not None:
            out.append(PhaseMetric("failover_to_ready", round(ready, 4)))
    state = quiet.final_state if quiet is not None else None
    for broker in _failed_brokers(history):
        for tp in sorted(state.partition_states if state else (), key=lambda t: (t.topic, t.partition)):
            value = phases.leader_reelection_after_broker_failure(records, broker, tp.topic, tp.partition)
            if value is not None:
                out.append(PhaseMetric("leader_reelection_after_broker_failure", round(value, 4)))
                return out
    return out
