"""Black-box phase metrics (conformance ring): :data:`records.run_record.METRICS` computed from
what the checks already observe.

Every function is pure over its inputs: the chroot's ZooKeeper transaction log
(:meth:`Cluster.history <cluster.cluster.Cluster.history>`, record times ``time_ms``), the
request-recording proxy's journal (arrival times ``time_s``) or a wall-clock instant the check
took (``time.time()``). All three are wall clocks of the same host (the suite's ZooKeeper, the
proxies and the check run on one machine), so differences between them are meaningful to the
clock's resolution (ZooKeeper logs milliseconds). Each returns seconds, or ``None`` when the
phase did not happen in what it was given: a check then records nothing rather than a guess.

``time_to_heal`` is not computed here: it is a chaos metric (heal of a fault package → first
poll where every checker invariant holds), measured by the chaos runner.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from probes.request_proxy import ControllerRequest
from probes.txnrecords import TxnOp, TxnRecord

__all__ = [
    "controller_election",
    "failover_to_ready",
    "isr_expansion",
    "leader_reelection_after_broker_failure",
    "partition_online_after_create",
    "reassignment_completion",
]

_CREATES = ("create", "create2")


def _ops(record: TxnRecord) -> tuple[TxnOp, ...]:
    """The successful write ops of ``record`` (a multi's sub-ops), none if it failed."""
    if record.failed:
        return ()
    return record.ops if record.op == "multi" else (record.txn,)


def _creates(record: TxnRecord, path: str) -> bool:
    return any(o.op in _CREATES and o.path == path for o in _ops(record))


def _s(later_ms: float, earlier_ms: float) -> float:
    return (later_ms - earlier_ms) / 1000.0


def _state(op: TxnOp) -> dict[str, object] | None:
    try:
        body = json.loads(op.data or b"")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def controller_election(records: Sequence[TxnRecord], *, after_zxid: int = 0) -> float | None:
    """Start of the election → the txn creating the new ``/controller`` (the first after
    ``after_zxid``). The start is the last txn before that create removing the previous
    controller (a ``/controller`` delete, or a closeSession whose ephemerals include it); for the
    first election of a cluster (no such txn) it is the first broker registration
    (``/brokers/ids/<id>`` create)."""
    created = next((r for r in records if r.zxid > after_zxid and _creates(r, "/controller")), None)
    if created is None:
        return None
    before = [r for r in records if r.zxid < created.zxid]
    gone = [
        r
        for r in before
        if any(o.op == "delete" and o.path == "/controller" for o in _ops(r))
        or (r.op == "closeSession" and "/controller" in (r.txn.closed_paths or ()))
    ]
    if gone:
        return _s(created.time_ms, gone[-1].time_ms)
    registered = [
        r
        for r in before
        if any(o.op in _CREATES and (o.path or "").startswith("/brokers/ids/") for o in _ops(r))
    ]
    return _s(created.time_ms, registered[0].time_ms) if registered else None


def failover_to_ready(
    records: Sequence[TxnRecord], requests: Iterable[ControllerRequest], controller_epoch: int
) -> float | None:
    """The txn creating ``/controller`` for ``controller_epoch`` (the election multi that sets
    ``/controller_epoch`` to it) → the first UpdateMetadata of that epoch a broker receives."""
    election = next(
        (
            r
            for r in records
            if _creates(r, "/controller")
            and any(
                o.op == "setData"
                and o.path == "/controller_epoch"
                and o.data == str(controller_epoch).encode()
                for o in _ops(r)
            )
        ),
        None,
    )
    first = min(
        (q.time_s for q in requests if q.api == "UpdateMetadata" and q.controller_epoch == controller_epoch),
        default=None,
    )
    if election is None or first is None:
        return None
    return first - election.time_ms / 1000.0


def partition_online_after_create(records: Sequence[TxnRecord], topic: str, partitions: int) -> float | None:
    """The txn creating ``/brokers/topics/<topic>`` → the txn creating the last of its
    ``partitions`` state znodes with a leader (≠ -1)."""
    base = f"/brokers/topics/{topic}"
    created = next((r for r in records if _creates(r, base)), None)
    if created is None:
        return None
    online: dict[int, int] = {}
    for r in records:
        for o in _ops(r):
            if o.op not in _CREATES or not (o.path or "").startswith(f"{base}/partitions/"):
                continue
            parts = (o.path or "").split("/")
            state = _state(o)
            if parts[-1] == "state" and state is not None and state.get("leader", -1) != -1:
                online.setdefault(int(parts[-2]), r.time_ms)
    if len(online) < partitions:
        return None
    return _s(max(online.values()), created.time_ms)


def reassignment_completion(records: Sequence[TxnRecord]) -> float | None:
    """The txn creating ``/admin/reassign_partitions`` → the txn deleting it (the first pair)."""
    path = "/admin/reassign_partitions"
    created = next((r for r in records if _creates(r, path)), None)
    if created is None:
        return None
    deleted = next(
        (
            r
            for r in records
            if r.zxid > created.zxid and any(o.op == "delete" and o.path == path for o in _ops(r))
        ),
        None,
    )
    return None if deleted is None else _s(deleted.time_ms, created.time_ms)


def leader_reelection_after_broker_failure(
    records: Sequence[TxnRecord], broker: int, topic: str, partition: int
) -> float | None:
    """The closeSession txn removing ``/brokers/ids/<broker>`` → the first later write of the
    partition's state znode naming another leader (≠ -1, ≠ ``broker``)."""
    closed = next(
        (
            r
            for r in records
            if r.op == "closeSession" and f"/brokers/ids/{broker}" in (r.txn.closed_paths or ())
        ),
        None,
    )
    if closed is None:
        return None
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    for r in records:
        if r.zxid <= closed.zxid:
            continue
        for o in _ops(r):
            state = _state(o) if o.op == "setData" and o.path == path else None
            if state is not None and state.get("leader") not in (-1, broker, None):
                return _s(r.time_ms, closed.time_ms)
    return None


def isr_expansion(
    records: Sequence[TxnRecord], topic: str, partition: int, replica: int, *, since_s: float
) -> float | None:
    """``since_s`` (wall clock: the request-proxy arrival of the LeaderAndIsr making ``replica``
    a follower, the state znode's creation, or the moment the check let a paused follower run
    again) → the first later state-znode setData whose ISR contains ``replica``."""
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    for r in records:
        if r.time_ms < since_s * 1000.0 - 1:  # ZooKeeper logs whole milliseconds
            continue
        for o in _ops(r):
            state = _state(o) if o.op == "setData" and o.path == path else None
            isr = state.get("isr") if state is not None else None
            if isinstance(isr, list) and replica in isr:
                return max(0.0, r.time_ms / 1000.0 - since_s)
    return None
