"""Recogniser of Kafka 2.5.1's cancellation order quirk (decisions ring, pure).

A cancelled reassignment goes back to its original replicas as a set, in the order they have in
the reassignment's RS (``RS − adding``), not the order they had before (spec §13.1.6): the
naive "cancellation restores the original replicas" sees a reordering.
"""

from __future__ import annotations

from chaos.checkers.cancellation import acked_partitions, cancelled_reassignment
from chaos.checkers.findings import Item, RunInputs, tp_name
from chaos.checkers.quirks.recognition import Recognition
from chaos.history import pairs

__all__ = ["CANCEL_NOT_REVERTED", "reordered"]

#: Same text as :data:`chaos.checkers.admin_api.CANCEL_NOT_REVERTED` (that module imports the judge).
CANCEL_NOT_REVERTED = "cancelled reassignment not reverted"


def reordered(run: RunInputs) -> Recognition:
    """Acknowledged cancellations whose partition ends, not being reassigned, exactly on Kafka's
    ``RS − adding`` of the cancelled reassignment's last state, a permutation of the replicas it
    had before that reassignment started."""
    f, timeline = run.final_state, run.timeline
    if f is None or timeline is None:
        return Recognition()
    items = set()
    for q in pairs(run.history):
        if q.invoke.f != "cancel_reassignment" or q.outcome != "ok":
            continue
        for tp in acked_partitions(q):
            final = f.topics.get(tp.topic)
            if final is None or final.being_reassigned(tp.partition):
                continue
            cancelled = cancelled_reassignment(timeline, tp, final.czxid)
            ends = final.replicas.get(tp.partition)
            if (
                cancelled is not None
                and ends == cancelled.kafka_original
                and sorted(ends) == sorted(cancelled.original)
            ):
                items.add(Item(CANCEL_NOT_REVERTED, tp_name(tp)))
    return Recognition(frozenset(items))
