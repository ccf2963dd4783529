"""A dead broker leaves the ISRs it shared (decisions ring, pure).

Kafka 2.5.1's controller takes a broker out of every ISR it shares with other brokers once it has
seen the broker's registration go:

- a broker change (``BrokerChange``, ``KafkaController.onBrokerFailure`` →
  ``onReplicasBecomeOffline``): the replicas on the dead broker move to ``OfflineReplica``, and
  ``ReplicaStateMachine.doRemoveReplicasFromIsr`` writes each partition's ISR without it (the
  last member stays: ``if (isr.size == 1) isr``), retrying on a version conflict with the
  leader's own ISR writes. A broker that went and came back before the controller looked is a
  *bounced* broker (``bouncedBrokerIds``: a newer registration czxid) and is handled as a failure
  first, so a quick restart does not excuse it;
- a controller that starts while the broker is gone (``ReplicaStateMachine.startup``: the replicas
  that are not online go to ``OfflineReplica`` too — the fix of KAFKA-3143 in 2.3.0).

Excluded, as Kafka excludes them: topics queued for deletion — from their request under
``/admin/delete_topics`` until it is removed, whatever state writes the deletion itself makes
(their offline replicas become ``ReplicaDeletionIneligible``, their ISR is left alone),
partitions the broker is no longer a replica of, and an ISR the leader grew back to the dead
broker after the controller's write (a fetch that arrived before the broker died; the leader
shrinks it again after ``replica.lag.time.max.ms``).

The property is judged on the transaction log at the end of the run, so the final phase waits for
it like any liveness checker. An obligation belongs to the controller in place when the broker's
registration went, or to the next one elected; a controller elected while the broker is gone
inherits it only when it wrote something (a fenced write: its context was read by then) before the
broker registered again — otherwise it may have read the broker as alive, and nothing is judged.

A registration that comes and goes between two reads of the controller's is never seen by it: the
controller never had that broker alive, calls no ``onBrokerFailure`` for it, and an ISR the leader
grew to the broker meanwhile stays. When the run has request journals, a registration counts as
seen only if the broker received a controller request addressed to its broker epoch (the
registration's czxid: ``onBrokerStartup`` and a failover both send an UpdateMetadata to it); a
broker that died before any such request arrived leaves nothing to judge. Without a journal of
the broker, or one whose requests carry no broker epoch (below IBP 2.2), every registration
counts as seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checkers.events import (
    BrokerDeregistered,
    BrokerRegistered,
    ControllerWrite,
    DeletionRequested,
    DeletionRequestRemoved,
    Election,
    StateDeleted,
    StateWritten,
    TopicDeleted,
)
from chaos.checkers.findings import Finding, Findings, Item, RunInputs
from chaos.checkers.judge import checker
from chaos.checkers.verdict import record_evidence
from probes.txnrecords import TxnRecord

__all__ = ["DEAD_IN_ISR", "dead_brokers_leave_the_isr"]

DEAD_IN_ISR = "dead broker kept in an ISR"
_NO_LOG = "no transaction log of the run"
_NO_FINAL = "no final state (the cluster never healed)"


@dataclass
class _Obligation:
    """Broker ``broker`` must leave the ISR of ``topic``-``partition`` (one topic incarnation)."""

    broker: int
    topic: str
    partition: int
    incarnation: int | None
    died: TxnRecord
    holder: int | None  # the /controller_epoch zk version of the controller that owes it
    confirmed: bool  # the holder has certainly read the broker as gone
    isr: tuple[int, ...]


#: Notification znodes a new controller clears before it reads the live brokers
#: (KafkaController.onControllerFailover@2.5.1 L227-230: deleteLogDirEventNotifications and
#: deleteIsrChangeNotifications come before initializeControllerContext at L232).
_CLEARED_BEFORE_READING_BROKERS = ("/log_dir_event_notification/", "/isr_change_notification/")


def _notice_cleanup(e: ControllerWrite) -> bool:
    """A fenced write that only deletes notification znodes: a controller may make it before it
    has read the live brokers, so it shows nothing about what that controller read."""
    changes = [op for op in e.ops if op.op != "check"]
    return bool(changes) and all(
        op.op == "delete" and (op.path or "").startswith(_CLEARED_BEFORE_READING_BROKERS) for op in changes
    )


@checker("liveness")
def dead_brokers_leave_the_isr(run: RunInputs) -> Finding:
    """Once a controller has seen a broker's registration go, that broker leaves every ISR it
    shares with another broker (Kafka's ``OfflineReplica`` transition), unless the topic is
    being deleted; judged from the transaction log at the end of the run."""
    if run.final_state is None:
        return Finding(unknown=_NO_FINAL)
    if run.timeline is None:
        return Finding(unknown=_NO_LOG)
    isr: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], int | None]] = {}
    gone: set[int] = set()
    holder: int | None = None  # zk version of /controller_epoch of the latest election
    holder_read = False  # the holder made a fenced write (notice clean-up aside): it read the brokers
    open_: dict[tuple[int, str, int], _Obligation] = {}
    deaths = 0
    queued: set[str] = set()  # topics with a deletion request: their ISRs are left alone
    registered: dict[int, int] = {}  # broker → czxid of its latest registration in the log
    addressed = _addressed_epochs(run)
    for e in run.timeline.events:
        if isinstance(e, Election):
            holder, holder_read = e.epoch_zk_version, False
            for key, ob in list(open_.items()):
                if ob.broker in gone:
                    ob.holder, ob.confirmed = holder, False  # the new controller inherits it...
                else:
                    del open_[key]  # ...only if it can have read the broker as gone
        elif isinstance(e, ControllerWrite):
            if e.role == "fenced" and e.checked_epoch_zk_version is not None and not _notice_cleanup(e):
                holder_read = holder_read or e.checked_epoch_zk_version == holder
                for ob in open_.values():
                    if ob.holder == e.checked_epoch_zk_version:
                        ob.confirmed = True
        elif isinstance(e, BrokerRegistered):
            gone.discard(e.broker)
            registered[e.broker] = e.zxid
            for key, ob in list(open_.items()):
                if ob.broker == e.broker and not ob.confirmed:
                    del open_[key]
        elif isinstance(e, BrokerDeregistered):
            gone.add(e.broker)
            deaths += 1
            epoch = registered.get(e.broker)
            if epoch is not None and e.broker in addressed and epoch not in addressed[e.broker]:
                continue  # no controller was seen to know this registration: it never had it alive
            for (topic, partition), (members, replicas, incarnation) in isr.items():
                if topic in queued:
                    continue
                if e.broker in members and len(members) > 1 and e.broker in replicas:
                    # owed by the current controller; certain only once it has read the brokers (a
                    # controller still initialising may read the broker's next registration instead)
                    open_[(e.broker, topic, partition)] = _Obligation(
                        e.broker, topic, partition, incarnation, e.record, holder, holder_read, members
                    )
        elif isinstance(e, StateWritten):
            _state_written(e, isr, open_)
        elif isinstance(e, StateDeleted):
            isr.pop((e.topic, e.partition), None)
            _drop(open_, e.topic, e.partition)
        elif isinstance(e, TopicDeleted | DeletionRequested):
            for tp in [tp for tp in isr if tp[0] == e.topic]:
                del isr[tp]
            _drop(open_, e.topic)
            if isinstance(e, DeletionRequested):
                queued.add(e.topic)
        elif isinstance(e, DeletionRequestRemoved):
            queued.discard(e.topic)
    found = Findings()
    for ob in open_.values():
        if not ob.confirmed:
            continue
        members, _, _ = isr.get((ob.topic, ob.partition), ((), (), None))
        problem = (
            f"broker {ob.broker}'s registration went at zxid 0x{ob.died.zxid:x} while it was in the ISR"
            f" {list(ob.isr)} of {ob.topic}-{ob.partition}; at the end of the log the ISR is {list(members)}:"
            " no controller took the broker out"
        )
        found.violation(
            Item(DEAD_IN_ISR, f"{ob.topic}-{ob.partition} broker {ob.broker}"),
            problem,
            record_evidence(ob.died, problem),
        )
    return found.done(f"{deaths} broker departure(s) followed through the ISRs")


def _addressed_epochs(run: RunInputs) -> dict[int, set[int]]:
    """Broker → the broker epochs of the controller requests it received, for the brokers whose
    journal carries broker epochs at all (requests below IBP 2.2 have none: -1)."""
    journals = run.final_state.journals if run.final_state is not None else {}
    epochs = {
        broker: {r.broker_epoch for r in requests if r.broker_epoch is not None and r.broker_epoch > 0}
        for broker, requests in journals.items()
    }
    return {broker: seen for broker, seen in epochs.items() if seen}


def _state_written(
    e: StateWritten,
    isr: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], int | None]],
    open_: dict[tuple[int, str, int], _Obligation],
) -> None:
    tp = (e.topic, e.partition)
    if e.state is None:
        isr.pop(tp, None)
        _drop(open_, e.topic, e.partition)
        return
    members = tuple(e.state.isr)
    replicas = tuple(e.replicas or ())
    isr[tp] = (members, replicas, e.incarnation)
    before = set(e.previous.isr) if e.previous is not None else set()
    for key, ob in list(open_.items()):
        if (ob.topic, ob.partition) != tp:
            continue
        if (
            ob.incarnation != e.incarnation
            or ob.broker not in members
            or members == (ob.broker,)
            or ob.broker not in replicas
            or (not e.fenced and ob.broker not in before)  # the leader grew the ISR back to it
        ):
            del open_[key]


def _drop(open_: dict[tuple[int, str, int], _Obligation], topic: str, partition: int | None = None) -> None:
    """Forget the obligations on ``topic`` (one partition of it when given)."""
    for key in [k for k, ob in open_.items() if ob.topic == topic and partition in (None, ob.partition)]:
        del open_[key]
