"""A broker that dies and registers again before a new controller has read the live brokers is
never taken out of the ISRs: the controller only ever knew its new registration.

KafkaController.onControllerFailover@2.5.1 deletes the log-dir and ISR-change notifications
(L227-230, fenced writes) before ``initializeControllerContext`` reads ``/brokers/ids`` (L232);
``ReplicaStateMachine.startup`` then moves only the replicas of brokers it read as dead to
OfflineReplica (ReplicaStateMachine.scala@2.5.1 L35-44). A broker back by then is alive to it, and
no later BrokerChange shows it bounced (its registration is the one the controller read). Two kept
chaos runs of ``python -m chaos run --runs 300 --seed 3700 --parallel 2`` (2026-11-28, reference
target; trimmed and sealed again), both first judged invalid by ``dead_brokers_leave_the_isr``:

- ``data/broker-back-before-failover-read`` (``composed`` seed 3800): controller 1 killed (its
  session closed at 0x2a88); controller 2 elected (0x2a89) deleted an ISR-change notification
  (0x2a8d), broker 1 registered again (0x2a9e), and only then controller 2 read the brokers:
  "Currently active brokers in the cluster: [1, 2, 3]". The checker took the notification's
  deletion as proof that controller 2 had read broker 1 as gone.
- ``data/broker-back-before-new-controller-read`` (``partition`` seed 3953): controller 1 elected
  at 0x6bdd was still reading its context (3 s under a slow ZooKeeper link) when broker 2's session
  closed (0x6bf4) and broker 2 registered again (0x6c16); the checker took the departure as owed by
  a controller that had not yet read the brokers at all.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chaos.checkers import check_all
from probes.txnrecords import TxnRecord
from tests.chaos.checkers.builders import load_capture, verdict_of

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data"
FAILOVER = DATA / "broker-back-before-failover-read"
INITIALISING = DATA / "broker-back-before-new-controller-read"
CHECKER = "dead_brokers_leave_the_isr"


@pytest.mark.parametrize("run", [FAILOVER, INITIALISING], ids=["failover", "initialising"])
def test_the_run_is_valid(run: Path) -> None:
    history, records, state = load_capture(run)
    verdicts = check_all(history, records, state)
    assert [(v.checker, v.validity) for v in verdicts if not v.is_valid] == []


def test_the_new_controller_read_the_broker_alive() -> None:
    log = (FAILOVER / "node-2" / "server.log").read_text(encoding="utf-8")
    assert log.index("Deleting isr change notifications") < log.index("Initializing controller context")
    assert "Currently active brokers in the cluster: [1, 2, 3]" in log
    _, records, _ = load_capture(FAILOVER)
    by_zxid = {r.zxid: r for r in records}
    assert by_zxid[0x2A88].txn.op == "closeSession"
    cleanup = by_zxid[0x2A8D].txn
    assert [(op.op, op.path) for op in cleanup.ops] == [
        ("check", "/controller_epoch"),
        ("delete", "/isr_change_notification/isr_change_0000000000"),
    ]


def test_any_other_fenced_write_before_the_return_shows_the_departure_read() -> None:
    """The same run with the new controller's first write a topic znode's deletion request instead
    of the notification's clean-up: that write comes after the brokers were read, so broker 1 was
    read as gone and had to leave t1-1's ISR."""
    _, records, state = load_capture(FAILOVER)

    def not_a_cleanup(r: TxnRecord) -> TxnRecord:
        if r.zxid != 0x2A8D:
            return r
        check, delete = r.txn.ops
        return dataclasses.replace(
            r,
            txn=dataclasses.replace(
                r.txn, ops=(check, dataclasses.replace(delete, path="/admin/delete_topics/x"))
            ),
        )

    verdict = verdict_of(FAILOVER, CHECKER, [not_a_cleanup(r) for r in records], state)
    assert verdict.validity == "invalid"
    assert (
        "broker 1's registration went at zxid 0x2a88 while it was in the ISR [1, 2] of t1-1"
        in verdict.message
    )


def test_a_controller_that_had_written_before_the_departure_owes_it() -> None:
    """The second run with controller 1's first fenced write (its creation of t4-3's znode, 0x6c7c)
    moved to just before broker 2's departure: it had then read the brokers, so it saw broker 2
    go and had to take it out of the ISRs."""
    log = (INITIALISING / "node-1" / "server.log").read_text(encoding="utf-8")
    assert "Currently active brokers in the cluster: [1, 2]" in log
    _, records, state = load_capture(INITIALISING)
    by_zxid = {r.zxid: r for r in records}
    assert by_zxid[0x6BF4].txn.op == "closeSession"
    write = by_zxid[0x6C7C]
    assert write.session_id == by_zxid[0x6BDD].session_id  # controller 1's
    shifted = [
        dataclasses.replace(r, zxid=r.zxid + 1) if r.zxid >= 0x6BF4 else r for r in records if r is not write
    ]
    moved = dataclasses.replace(write, zxid=0x6BF4, time_ms=by_zxid[0x6BF4].time_ms)
    verdict = verdict_of(INITIALISING, CHECKER, sorted([*shifted, moved], key=lambda r: r.zxid), state)
    assert verdict.validity == "invalid"
    assert "broker 2's registration went at zxid 0x6bf5" in verdict.message
