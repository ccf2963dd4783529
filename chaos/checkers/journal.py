"""What the brokers' request journals prove about order and deletion (decisions ring, pure).

Shared by the request checker (:mod:`chaos.checkers.requests`) and the quirks that read the
journals: which of two received requests surely came first, which LeaderAndIsr entries a broker
applied although it had applied a newer leader epoch, and when a broker was told a topic is
deleted (an UpdateMetadata whose partitions carry leader -2, ``LeaderDuringDelete``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from chaos.checkers.final_state import ReceivedRequest

__all__ = [
    "APPLIED_KINDS",
    "CONCURRENT_WINDOW_S",
    "LEADER_DURING_DELETE",
    "StaleEntry",
    "deletion_notice_times",
    "happened_before",
    "life",
    "stale_leader_epochs",
    "told_of_deletion",
]

APPLIED_KINDS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
LEADER_DURING_DELETE = -2

#: Requests of two controllers (two connections) recorded closer together than this may reach
#: the broker in either order; with no answer times they count as concurrent, never as ordered.
CONCURRENT_WINDOW_S = 0.2


def life(request: ReceivedRequest) -> int | None:
    """The broker life (its registration's czxid, the broker epoch) a request addressed."""
    return None if request.broker_epoch in (None, -1) else request.broker_epoch


def happened_before(a: ReceivedRequest, b: ReceivedRequest) -> bool:
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


@dataclass(frozen=True)
class StaleEntry:
    """LeaderAndIsr ``request`` applied for ``topic``-``partition`` with a leader epoch not newer
    than ``earlier`` (``earlier_epoch``), which the broker had surely applied before."""

    request: ReceivedRequest
    topic: str
    partition: int
    leader_epoch: int
    earlier: ReceivedRequest
    earlier_epoch: int


def stale_leader_epochs(
    requests: Iterable[ReceivedRequest], forgets: Iterable[ReceivedRequest] = ()
) -> list[StaleEntry]:
    """The stale LeaderAndIsr entries among one broker life's applied ``requests`` (journal order).

    An applied StopReplica(delete) removes the partition: its next incarnation starts afresh.
    ``forgets`` are further requests (in the same journal) after which what the broker applied
    for their partitions proves nothing any more.
    """
    forget = {r.seq for r in forgets}
    ordered = sorted([*requests, *forgets], key=lambda r: r.seq)
    seen: dict[tuple[str, int], list[tuple[int, ReceivedRequest]]] = {}
    out: list[StaleEntry] = []
    for request in ordered:
        for p in request.partitions:
            key = (p.topic, p.partition)
            if request.seq in forget:
                seen.pop(key, None)
                continue
            if p.error_code != 0:  # not applied, or no per-partition answer seen
                continue
            if request.kind == "StopReplica" and request.delete_partitions:
                seen.pop(key, None)
            if request.kind != "LeaderAndIsr" or p.leader_epoch is None:
                continue
            entries = seen.setdefault(key, [])
            stale = next(
                ((e, a) for e, a in entries if e >= p.leader_epoch and happened_before(a, request)), None
            )
            if stale is not None:
                out.append(StaleEntry(request, p.topic, p.partition, p.leader_epoch, stale[1], stale[0]))
            entries.append((p.leader_epoch, request))
    return out


def told_of_deletion(journal: Sequence[ReceivedRequest], topic: str) -> bool:
    """For every partition of ``topic`` the broker was given a live state of, it applied an
    UpdateMetadata marking that partition deleted after the last such state (a broker's metadata
    cache drops a topic partition by partition: ``MetadataCache.updateMetadata`` removes each
    partition sent with leader -2, so a partition whose notice never came stays shown)."""
    told: dict[int, bool] = {}
    for request in journal:
        if request.error_code != 0 or request.kind not in ("UpdateMetadata", "LeaderAndIsr"):
            continue
        for p in request.partitions:
            if p.topic == topic:
                told[p.partition] = request.kind == "UpdateMetadata" and p.leader == LEADER_DURING_DELETE
    return bool(told) and all(told.values())


def deletion_notice_times(journals: Mapping[int, Sequence[ReceivedRequest]]) -> dict[str, list[float]]:
    """Topic → times (sorted) at which an UpdateMetadata marking it deleted went to a broker."""
    told: dict[str, list[float]] = {}
    for requests in journals.values():
        for r in requests:
            at = r.sent_s if r.sent_s is not None else r.answered_s
            if r.kind != "UpdateMetadata" or at is None:
                continue
            for topic in {p.topic for p in r.partitions if p.leader == LEADER_DURING_DELETE}:
                told.setdefault(topic, []).append(at)
    return {t: sorted(times) for t, times in told.items()}
