"""Jepsen-style checkers of a chaos run (decisions ring: pure functions, no I/O).

A checker judges ``(history, txn_records, final_state)``:

- ``history``: the run's ops (:mod:`chaos.history`);
- ``txn_records``: the transaction-log records of the run's chroot, chroot-relative
  (``ChrootView(chroot).filter(...)``), from before the run's cluster started to the final
  state — read *before* the runner deletes the chroot (its recursive delete would look like
  unfenced controller writes) — or None when the log could not be read. They are replayed once
  into a typed :class:`~chaos.checkers.timeline.Timeline` (one path classifier,
  :mod:`chaos.checkers.paths`) that every checker and quirk reads; a caller that already holds
  one (the runner's quiescence wait) hands it in instead;
- ``final_state``: :class:`FinalState` taken after heal and quiescence, or None when the cluster
  never healed.

Each checker computes its property naively; what Kafka 2.5.1 itself does that breaks it is
declared as data in :mod:`chaos.checkers.quirks` and subtracted in one place
(:mod:`chaos.checkers.judge`): a verdict lists those items under ``excused``. A checker answers
``unknown`` when the data it needs is missing, never a guess. The wall: this package imports
``probes`` types and :mod:`chaos.history`, never the implementation under test, and does no I/O
(the final state's builders are in :mod:`chaos.final_state`).

========================================  =========  ==================================================
checker                                   kind       property
========================================  =========  ==================================================
controller_epoch_increases                safety     ``/controller_epoch`` strictly increasing
one_controller_per_epoch                  safety     one session writes fenced writes per epoch
no_write_after_epoch_superseded           safety     no controller write lands after a newer election
controller_writes_fenced                  safety     every controller-only write checks the epoch zk
                                                     version its own controller's election wrote
partition_states_valid                    safety     leader ∈ ISR ∪ {-1}, ISR ⊆ replicas, ISR ≠ ∅,
                                                     leader epoch non-decreasing per incarnation
elections_drop_the_old_leader             safety     a leader move keeps the old leader in the ISR
                                                     only as a preferred or reassignment election
brokers_apply_requests_in_epoch_order     safety     no broker applies an older controller request
acknowledged_creations_survive            safety     an ``ok`` topic creation is never lost
reassign_znode_created_by_admin           safety     ``/admin/reassign_partitions`` created only by
                                                     the admin's ``reassign`` ops (never by the API)
listings_agree_with_topic_znode           safety     a ListPartitionReassignments entry is a state
                                                     the topic znode held during the request
controller_elected                        liveness   a live controller after heal
partitions_have_leaders                   liveness   live ISR ⇒ live leader; live replica ⇒ state
reassignments_completed                   liveness   reassignments (znode and API) reach their targets
cancellations_reverted                    liveness   an ``ok`` cancellation ends on the original replicas
deletions_completed                       liveness   acknowledged deletions remove the topic
dead_brokers_leave_the_isr                liveness   a broker whose registration a controller saw go
                                                     leaves every ISR it shared (not while deleting)
admin_znodes_cleaned                      liveness   ``/admin/*`` cleaned
metadata_agrees_with_zookeeper            liveness   every live broker's Metadata view = ZooKeeper
========================================  =========  ==================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from chaos.checkers.admin_api import (
    cancellations_reverted,
    listings_agree_with_topic_znode,
    reassign_znode_created_by_admin,
)
from chaos.checkers.cleanup import admin_znodes_cleaned, metadata_agrees_with_zookeeper
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
from chaos.checkers.findings import RunInputs
from chaos.checkers.isr import dead_brokers_leave_the_isr
from chaos.checkers.judge import Checker, judge_all
from chaos.checkers.liveness import (
    controller_elected,
    deletions_completed,
    partitions_have_leaders,
    reassignments_completed,
)
from chaos.checkers.requests import brokers_apply_requests_in_epoch_order
from chaos.checkers.safety import (
    acknowledged_creations_survive,
    controller_epoch_increases,
    controller_writes_fenced,
    elections_drop_the_old_leader,
    no_write_after_epoch_superseded,
    one_controller_per_epoch,
    partition_states_valid,
)
from chaos.checkers.timeline import Timeline
from chaos.checkers.verdict import Validity, Verdict, aggregate, excused_counts, excused_items
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
    "RunInputs",
    "Timeline",
    "TopicState",
    "Validity",
    "Verdict",
    "aggregate",
    "check_all",
    "excused_counts",
    "excused_items",
    "final_state_from_json",
    "final_state_to_json",
    "judge_all",
]

SAFETY_CHECKERS: tuple[Checker, ...] = (
    controller_epoch_increases,
    one_controller_per_epoch,
    no_write_after_epoch_superseded,
    controller_writes_fenced,
    partition_states_valid,
    elections_drop_the_old_leader,
    brokers_apply_requests_in_epoch_order,
    acknowledged_creations_survive,
    reassign_znode_created_by_admin,
    listings_agree_with_topic_znode,
)
LIVENESS_CHECKERS: tuple[Checker, ...] = (
    controller_elected,
    partitions_have_leaders,
    reassignments_completed,
    cancellations_reverted,
    deletions_completed,
    dead_brokers_leave_the_isr,
    admin_znodes_cleaned,
    metadata_agrees_with_zookeeper,
)
ALL_CHECKERS: tuple[Checker, ...] = SAFETY_CHECKERS + LIVENESS_CHECKERS


def check_all(
    history: Iterable[Op],
    txn_records: Iterable[TxnRecord] | Timeline | None,
    final_state: FinalState | None,
    checkers: Sequence[Checker] = ALL_CHECKERS,
) -> list[Verdict]:
    """Every checker's verdict, in ``checkers`` order, over one replay of the log; a checker that
    raises is ``unknown`` (with the error) rather than a crash of the run — and that is a bug to
    fix in the checker."""
    return judge_all(checkers, RunInputs.of(history, txn_records, final_state))
