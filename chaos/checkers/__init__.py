"""Jepsen-style checkers of a chaos run (decisions ring: pure functions, no I/O).

Every checker is ``check(history, txn_records, final_state) -> Verdict``:

- ``history``: the run's ops (:mod:`chaos.history`);
- ``txn_records``: the transaction-log records of the run's chroot, chroot-relative
  (``ChrootView(chroot).filter(...)``), from before the run's cluster started to the final
  state — read *before* the runner deletes the chroot (its recursive delete would look like
  unfenced controller writes) — or None when the log could not be read;
- ``final_state``: :class:`FinalState` taken after heal and quiescence, or None when the cluster
  never healed.

A checker answers ``unknown`` when the data it needs is missing, never a guess. The wall: this
package imports ``probes`` types and :mod:`chaos.history`, never the implementation
under test. Building a final state from a live cluster (I/O, through ports) is in
:mod:`chaos.checkers.final_state`.

========================================  =========  ==================================================
checker                                   kind       property (issue 10 item 5)
========================================  =========  ==================================================
controller_epoch_increases                safety     ``/controller_epoch`` strictly increasing
one_controller_per_epoch                  safety     one session writes fenced writes per epoch
no_write_after_epoch_superseded           safety     no controller write lands after a newer election
controller_writes_fenced                  safety     every controller-only write checks the epoch
partition_states_valid                    safety     leader ∈ ISR ∪ {-1}, ISR ⊆ replicas, ISR ≠ ∅,
                                                     leader epoch non-decreasing per incarnation
brokers_apply_requests_in_epoch_order     safety     no broker applies an older controller request
acknowledged_creations_survive            safety     an ``ok`` topic creation is never lost
controller_elected                        liveness   a live controller after heal
partitions_have_leaders                   liveness   live ISR ⇒ live leader; live replica ⇒ state
reassignments_completed                   liveness   reassignments reach their targets
deletions_completed                       liveness   acknowledged deletions remove the topic
admin_znodes_cleaned                      liveness   ``/admin/*`` cleaned
metadata_agrees_with_zookeeper            liveness   every live broker's Metadata view = ZooKeeper
========================================  =========  ==================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from chaos.checkers.final_state import (
    BrokerMetadata,
    FinalState,
    MetadataPartition,
    PartitionState,
    ReceivedRequest,
    RequestPartition,
    TopicState,
    final_state_from_json,
    final_state_to_json,
)
from chaos.checkers.liveness import (
    admin_znodes_cleaned,
    controller_elected,
    deletions_completed,
    metadata_agrees_with_zookeeper,
    partitions_have_leaders,
    reassignments_completed,
)
from chaos.checkers.requests import brokers_apply_requests_in_epoch_order
from chaos.checkers.safety import (
    acknowledged_creations_survive,
    controller_epoch_increases,
    controller_writes_fenced,
    no_write_after_epoch_superseded,
    one_controller_per_epoch,
    partition_states_valid,
)
from chaos.checkers.verdict import Validity, Verdict, aggregate
from chaos.history import Op
from probes.txnrecords import TxnRecord

__all__ = [
    "ALL_CHECKERS",
    "LIVENESS_CHECKERS",
    "SAFETY_CHECKERS",
    "BrokerMetadata",
    "Checker",
    "FinalState",
    "MetadataPartition",
    "PartitionState",
    "ReceivedRequest",
    "RequestPartition",
    "TopicState",
    "Validity",
    "Verdict",
    "aggregate",
    "check_all",
    "final_state_from_json",
    "final_state_to_json",
]

Checker = Callable[[Sequence[Op], Sequence[TxnRecord] | None, FinalState | None], Verdict]

SAFETY_CHECKERS: tuple[Checker, ...] = (
    controller_epoch_increases,
    one_controller_per_epoch,
    no_write_after_epoch_superseded,
    controller_writes_fenced,
    partition_states_valid,
    brokers_apply_requests_in_epoch_order,
    acknowledged_creations_survive,
)
LIVENESS_CHECKERS: tuple[Checker, ...] = (
    controller_elected,
    partitions_have_leaders,
    reassignments_completed,
    deletions_completed,
    admin_znodes_cleaned,
    metadata_agrees_with_zookeeper,
)
ALL_CHECKERS: tuple[Checker, ...] = SAFETY_CHECKERS + LIVENESS_CHECKERS


def check_all(
    history: Iterable[Op],
    txn_records: Iterable[TxnRecord] | None,
    final_state: FinalState | None,
    checkers: Sequence[Checker] = ALL_CHECKERS,
) -> list[Verdict]:
    """Every checker's verdict, in ``checkers`` order; a checker that raises is ``unknown``
    (with the error) rather than a crash of the run — and that is a bug to fix in the checker."""
    ops = tuple(history)
    records = None if txn_records is None else tuple(txn_records)
    verdicts = []
    for checker in checkers:
        try:
            verdicts.append(checker(ops, records, final_state))
        except Exception as exc:  # one broken checker must not hide the others
            verdicts.append(Verdict.unknown(checker.__name__, f"checker failed: {type(exc).__name__}: {exc}"))
    return verdicts
