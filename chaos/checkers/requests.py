"""Safety checker over the brokers' request journals (decisions ring, pure).

Brokers fence stale controllers themselves (spec §7.3): a request of an older controller epoch,
or a LeaderAndIsr partition whose leader epoch is not newer than the broker's, is answered with
an error and not applied. This checker verifies, from the journals of the controller→broker
links, that no broker *applied* (answered 0) something older than what it had already applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.final_state import FinalState, ReceivedRequest
from chaos.checkers.verdict import Verdict
from chaos.history import Op
from probes.txnrecords import TxnRecord

__all__ = ["CONCURRENT_WINDOW_S", "brokers_apply_requests_in_epoch_order"]


_APPLIED_KINDS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")


def brokers_apply_requests_in_epoch_order(
    history: Sequence[Op], txn_records: Sequence[TxnRecord] | None, final_state: FinalState | None
) -> Verdict:
    """No broker applied a controller request older than one it had already applied.

    Per broker life (the broker epoch the requests address): applied (error 0) requests never
    go back in controller epoch; per partition, applied LeaderAndIsr entries strictly increase
    the leader epoch, until an applied StopReplica(delete) removes the partition. Rejected
    requests (STALE_CONTROLLER_EPOCH and friends) are what fencing is for and do not count.
    "Before" is what the journal can prove (see :func:`_happened_before`): requests of two
    controllers that may have crossed on their two connections are not ordered.
    """
    name = "brokers_apply_requests_in_epoch_order"
    if final_state is None or not final_state.journals:
        return Verdict.unknown(name, "no request journals")
    problems: list[str] = []
    evidence: list[dict[str, Any]] = []
    count = 0
    for broker, journal in sorted(final_state.journals.items()):
        lives: dict[int | None, list[ReceivedRequest]] = {}
        for request in journal:
            if (request.kind in _APPLIED_KINDS and request.error_code == 0) or _maybe_deleted(request):
                lives.setdefault(_life(request), []).append(request)
        for applied in lives.values():
            count += len(applied)
            _check_life(broker, applied, problems, evidence)
    if problems:
        return Verdict.invalid(name, problems, evidence)
    return Verdict.valid(name, f"{count} applied request(s) across {len(final_state.journals)} broker(s)")


def _maybe_deleted(request: ReceivedRequest) -> bool:
    """A StopReplica(delete) whose answer the journal never saw (the sending controller's
    connection closed first: it resigned, or a fault cut the link): the broker may well have
    deleted the partitions, so what it applies for them afterwards starts afresh. Counting it as
    not applied would call a recreated partition's first LeaderAndIsr "not newer" (seen: seed 2030
    of the links scenario, where broker 2's own log shows the deletion applied)."""
    return request.kind == "StopReplica" and bool(request.delete_partitions) and request.error_code is None


def _life(request: ReceivedRequest) -> int | None:
    return None if request.broker_epoch in (None, -1) else request.broker_epoch


#: Requests of two controllers (two connections) recorded closer together than this may reach
#: the broker in either order; with no answer times they count as concurrent, never as ordered.
CONCURRENT_WINDOW_S = 0.2

_Applied = list[tuple[int, ReceivedRequest]]


def _check_life(
    broker: int, applied: list[ReceivedRequest], problems: list[str], evidence: list[dict[str, Any]]
) -> None:
    earlier: dict[int, list[ReceivedRequest]] = {}  # controller epoch → applied requests
    epochs: dict[tuple[str, int], _Applied] = {}
    for request in applied:
        if _maybe_deleted(request):  # not known to be applied: it only clears what it may delete
            _check_partitions(broker, request, epochs, problems, evidence)
            continue
        newer = next(
            (
                a
                for epoch, requests in earlier.items()
                if request.controller_epoch is not None and epoch > request.controller_epoch
                for a in requests
                if _happened_before(a, request)
            ),
            None,
        )
        if newer is not None:
            problems.append(
                f"broker {broker} applied {request.kind} #{request.seq} of controller epoch "
                f"{request.controller_epoch} after #{newer.seq} of epoch {newer.controller_epoch}"
            )
            evidence += [
                _request_evidence(broker, newer, "applied first"),
                _request_evidence(broker, request, "older, applied later"),
            ]
        if request.controller_epoch is not None:
            earlier.setdefault(request.controller_epoch, []).append(request)
        _check_partitions(broker, request, epochs, problems, evidence)


def _happened_before(a: ReceivedRequest, b: ReceivedRequest) -> bool:
    """The broker surely handled ``a`` before ``b``.

    One controller (same source and epoch) sends to a broker one request at a time, so journal
    order is delivery order. Across controllers: ``a`` answered before ``b`` was sent, when the
    journal has answer times; else ``b`` recorded more than :data:`CONCURRENT_WINDOW_S` after
    ``a``; with no times at all, journal order.
    """
    if a.source == b.source and a.controller_epoch == b.controller_epoch:
        return a.seq < b.seq
    if a.answered_s is not None and b.sent_s is not None:
        return a.answered_s <= b.sent_s
    if a.sent_s is not None and b.sent_s is not None:
        return b.sent_s - a.sent_s > CONCURRENT_WINDOW_S
    return a.seq < b.seq


def _check_partitions(
    broker: int,
    request: ReceivedRequest,
    epochs: dict[tuple[str, int], _Applied],
    problems: list[str],
    evidence: list[dict[str, Any]],
) -> None:
    for p in request.partitions:
        key = (p.topic, p.partition)
        if _maybe_deleted(request):
            epochs.pop(key, None)  # perhaps gone: nothing applied before it can prove a violation
            continue
        if p.error_code != 0:  # not applied, or no per-partition answer seen
            continue
        if request.kind == "StopReplica" and request.delete_partitions:
            epochs.pop(key, None)  # the partition is gone: its next incarnation starts afresh
        if request.kind != "LeaderAndIsr" or p.leader_epoch is None:
            continue
        seen = epochs.setdefault(key, [])
        stale = next((a for e, a in seen if e >= p.leader_epoch and _happened_before(a, request)), None)
        if stale is not None:
            problems.append(
                f"broker {broker} applied LeaderAndIsr #{request.seq} for {p.topic}-{p.partition} "
                f"with leader epoch {p.leader_epoch} after #{stale.seq} with "
                f"{next(e for e, a in seen if a is stale)}"
            )
            evidence += [
                _request_evidence(broker, stale, "applied first"),
                _request_evidence(broker, request, "not newer, applied later"),
            ]
        seen.append((p.leader_epoch, request))


def _request_evidence(broker: int, r: ReceivedRequest, note: str) -> dict[str, Any]:
    return {
        "kind": "request",
        "broker": broker,
        "seq": r.seq,
        "source": r.source,
        "api": r.kind,
        "controller_epoch": r.controller_epoch,
        "broker_epoch": r.broker_epoch,
        "error_code": r.error_code,
        "partitions": [[p.topic, p.partition, p.leader_epoch, p.error_code] for p in r.partitions],
        "note": note,
    }
