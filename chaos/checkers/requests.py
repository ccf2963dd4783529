"""Safety checker over the brokers' request journals (decisions ring, pure).

Brokers fence stale controllers themselves (spec §7.3): a request of an older controller epoch,
or a LeaderAndIsr partition whose leader epoch is not newer than the broker's, is answered with
an error and not applied. This checker verifies, from the journals of the controller→broker
links, that no broker *applied* (answered 0) something older than what it had already applied.
"""

from __future__ import annotations

from typing import Any

from chaos.checkers.final_state import ReceivedRequest
from chaos.checkers.findings import Finding, Findings, Item, RunInputs, stale_item
from chaos.checkers.journal import APPLIED_KINDS, happened_before, life, stale_leader_epochs
from chaos.checkers.judge import checker

__all__ = ["brokers_apply_requests_in_epoch_order"]


@checker("safety")
def brokers_apply_requests_in_epoch_order(run: RunInputs) -> Finding:
    """No broker applied a controller request older than one it had already applied.

    Per broker life (the broker epoch the requests address): applied (error 0) requests never
    go back in controller epoch; per partition, applied LeaderAndIsr entries strictly increase
    the leader epoch, until an applied StopReplica(delete) removes the partition. Rejected
    requests (STALE_CONTROLLER_EPOCH and friends) are what fencing is for and do not count.
    "Before" is what the journal can prove (:func:`~chaos.checkers.journal.happened_before`):
    requests of two controllers that may have crossed on their two connections are not ordered.
    """
    f = run.final_state
    if f is None or not f.journals:
        return Finding(unknown="no request journals")
    found = Findings()
    count = 0
    for broker, journal in sorted(f.journals.items()):
        lives: dict[int | None, list[ReceivedRequest]] = {}
        for request in journal:
            if request.kind in APPLIED_KINDS and request.error_code == 0:
                lives.setdefault(life(request), []).append(request)
        for applied in lives.values():
            count += len(applied)
            _epoch_order(broker, applied, found)
            for s in stale_leader_epochs(applied):
                found.violation(
                    stale_item(broker, s.request.seq, s.topic, s.partition),
                    f"broker {broker} applied LeaderAndIsr #{s.request.seq} for {s.topic}-{s.partition} "
                    f"with leader epoch {s.leader_epoch} after #{s.earlier.seq} with {s.earlier_epoch}",
                    _request_evidence(broker, s.earlier, "applied first"),
                    _request_evidence(broker, s.request, "not newer, applied later"),
                )
    return found.done(f"{count} applied request(s) across {len(f.journals)} broker(s)")


def _epoch_order(broker: int, applied: list[ReceivedRequest], found: Findings) -> None:
    earlier: dict[int, list[ReceivedRequest]] = {}  # controller epoch → applied requests
    for request in applied:
        newer = next(
            (
                a
                for epoch, requests in earlier.items()
                if request.controller_epoch is not None and epoch > request.controller_epoch
                for a in requests
                if happened_before(a, request)
            ),
            None,
        )
        if newer is not None:
            found.violation(
                Item("request applied after a newer controller's", f"broker {broker} request #{request.seq}"),
                f"broker {broker} applied {request.kind} #{request.seq} of controller epoch "
                f"{request.controller_epoch} after #{newer.seq} of epoch {newer.controller_epoch}",
                _request_evidence(broker, newer, "applied first"),
                _request_evidence(broker, request, "older, applied later"),
            )
        if request.controller_epoch is not None:
            earlier.setdefault(request.controller_epoch, []).append(request)


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
