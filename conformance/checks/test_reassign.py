"""REASSIGN checks: 12-step reassignment, milestones, epochs, edge cases, failover (spec §4, §11)."""

from __future__ import annotations

import json

import pytest

from cluster import admin
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.plugin import PhaseMetrics
from conformance.scenarios import (
    Step,
    assert_invalid_transitions_in_kafka_shape,
    create_topic,
    fmt,
    journal,
    pinned,
    settle,
    wait_cluster_known,
    wait_state,
    writes,
)
from probes.logdirs import scan_log_dirs
from probes.state_change_log import replica_transitions
from probes.txnrecords import TxnRecord
from records import phases

pytestmark = pytest.mark.conformance
Milestone = tuple[frozenset[int], int, frozenset[int]]


def _states(cluster: Cluster, topic: str) -> list[tuple[Milestone, str, dict[str, object]]]:
    """(RS, leader, ISR) after every topic-znode or state write of partition 0, with the write."""
    rs: frozenset[int] = frozenset()
    leader, isr = -1, frozenset[int]()
    out: list[tuple[Milestone, str, dict[str, object]]] = []
    for _, op in writes(cluster.history()):
        if op.op not in ("create", "create2", "setData") or not op.data:
            continue
        if op.path == f"/brokers/topics/{topic}":
            body = json.loads(op.data)
            rs = frozenset(body["partitions"]["0"])
            out.append(((rs, leader, isr), "topic", body))
        elif op.path == f"/brokers/topics/{topic}/partitions/0/state":
            body = json.loads(op.data)
            leader, isr = body["leader"], frozenset(body["isr"])
            out.append(((rs, leader, isr), "state", body))
    return out


def _subsequence(seen: list[Milestone], wanted: list[Milestone]) -> bool:
    it = iter(seen)
    return all(any(m == s for s in it) for m in wanted)


def _has_dir(cluster: Cluster, bid: int, topic: str) -> bool:
    return any((topic, 0) in s.live() for s in scan_log_dirs(list(cluster.nodes[bid].log_dirs)))


@pytest.mark.behaviour(
    "REASSIGN-1",
    "REASSIGN-2",
    "REASSIGN-3",
    "REASSIGN-4",
    "REASSIGN-5",
    "REASSIGN-6",
    "REASSIGN-7",
    "REASSIGN-8",
    "REASSIGN-9",
    "REASSIGN-10",
    "REASSIGN-11",
    "REASSIGN-12",
    "REASSIGN-13",
    "ELECT-2",
    "RSM-7",
)
def test_reassign_123_to_456(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(6)
    cid = cluster.wait_controller()
    create_topic(cluster, "r", {0: [1, 2, 3]})
    wait_state(cluster, "r", 0, lambda s: s["isr"] == [1, 2, 3], "ISR [1,2,3]")
    mark = journal(cluster).mark()
    admin.reassign_zk(cluster, {("r", 0): [4, 5, 6]})
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(40), "reassignment done"
    )
    # ISR order is join order (followers catch up in any order): compare as a set
    st = wait_state(cluster, "r", 0, lambda s: set(s["isr"]) == {4, 5, 6}, "ISR {4,5,6}")
    assert (st["leader"], st["leader_epoch"]) == (4, 5), f"final state {st} (spec §11: leader 4, epoch 5)"
    hist = _states(cluster, "r")
    seq = [m for m, _, _ in hist]
    full, old, new = frozenset(range(1, 7)), frozenset({1, 2, 3}), frozenset({4, 5, 6})
    milestones = [
        (old, 1, old),
        (full, 1, old),
        (full, 1, full),
        (full, 4, full),
        (full, 4, new),
        (new, 4, new),
    ]
    assert _subsequence(seq, milestones), "milestones missing:\n" + "\n".join(map(str, seq))
    topic_writes = [b for _, kind, b in hist if kind == "topic"]
    assert topic_writes[1] == {
        "version": 2,
        "partitions": {"0": [4, 5, 6, 1, 2, 3]},
        "adding_replicas": {"0": [4, 5, 6]},
        "removing_replicas": {"0": [1, 2, 3]},
    }, f"U1: {topic_writes}"
    assert hist[-1][1] == "topic", "B6 not the last write"
    assert topic_writes[-1]["partitions"] == {"0": [4, 5, 6]}, "B6 not the last write"
    assert topic_writes[-1]["adding_replicas"] == {}
    assert topic_writes[-1]["removing_replicas"] == {}
    full_isr = next(i for i, (m, _, _) in enumerate(hist) if m[2] == full)
    first_4 = next(i for i, (m, _, _) in enumerate(hist) if m[1] == 4)
    assert full_isr < first_4, "B3 before TRS ⊆ ISR"

    # the state znodes are final before the controller's per-broker queues have drained: wait for
    # the last requests of the reassignment (B5's StopReplica(delete=true) to 1,2,3 and B8's
    # UpdateMetadata with RS=TRS to all six) to be answered before reading the journal
    def drained() -> bool:
        done = journal(cluster).requests(since=mark)
        b5 = {
            r.dest
            for r in done
            if r.api == "StopReplica" and r.delete_partitions and r.error_code is not None
        }
        b8 = {
            r.dest
            for r in done
            if r.api == "UpdateMetadata"
            and r.error_code is not None
            and any(
                p.topic == "r" and p.replicas == (4, 5, 6) and p.leader_epoch == st["leader_epoch"]
                for p in r.partitions
            )
        }
        b4 = {
            r.dest
            for r in done
            if r.api == "LeaderAndIsr"
            and r.error_code is not None
            and any(p.topic == "r" and p.leader_epoch == st["leader_epoch"] for p in r.partitions)
        }
        return b5 >= old and b8 == full and b4 >= new

    wait_for(drained, cluster.deadline(15), lambda: journal(cluster).dump(mark))
    reqs = journal(cluster).requests(api="LeaderAndIsr", since=mark)
    a1 = {
        r.dest
        for r in reqs
        for p in r.partitions
        if p.topic == "r" and p.replicas == (4, 5, 6, 1, 2, 3) and p.leader_epoch == 1
    }
    assert a1 == set(range(1, 7)), f"A1 LeaderAndIsr to RS: {a1}"
    a2 = [
        (r.dest, p.leader_epoch, r.partition_errors.get(("r", 0)))
        for r in reqs
        for p in r.partitions
        if p.topic == "r" and p.is_new and r.dest in new
    ]
    assert {d for d, _, _ in a2} == new, f"A2 isNew=true to 4,5,6 at epoch 1: {a2}\n" + "\n".join(
        r.describe() for r in reqs
    )
    assert all(e == 1 for _, e, _ in a2), f"A2 isNew=true to 4,5,6 at epoch 1: {a2}"
    b3 = [
        r
        for r in reqs
        for p in r.partitions
        if p.topic == "r" and p.replicas == (4, 5, 6) and not p.adding and not p.removing
    ]
    assert b3, "B3 LeaderAndIsr with RS = TRS"
    for dest in old:
        flags = [
            r.delete_partitions for r in journal(cluster).requests(api="StopReplica", dest=dest, since=mark)
        ]
        assert flags[:2] == [False, True] or (
            False in flags and True in flags and flags.index(False) < flags.index(True)
        ), f"B4/B5 StopReplica to {dest}: {flags}"
    # RSM-7: B4 is one OfflineReplica state change of 1,2,3 = one batch, sent per broker in the
    # order LeaderAndIsr, UpdateMetadata, StopReplica: the removed replicas get UpdateMetadata
    # then StopReplica(delete=false); the remaining ones LeaderAndIsr then UpdateMetadata.
    b4_epoch = st["leader_epoch"]
    for dest in range(1, 7):
        mine = journal(cluster).requests(dest=dest, since=mark)
        listing = "\n".join(r.describe() for r in mine)
        if dest in old:
            i = next(
                (k for k, r in enumerate(mine) if r.api == "StopReplica" and not r.delete_partitions), -1
            )
            assert i > 0, f"B4 StopReplica(delete=false) to {dest}:\n{listing}"
            prev = mine[i - 1]
            assert prev.api == "UpdateMetadata", (
                f"B4 batch to {dest} must send UpdateMetadata first:\n{listing}"
            )
            assert any(p.topic == "r" and p.leader_epoch == b4_epoch for p in prev.partitions), listing
        else:
            i = next(
                (
                    k
                    for k, r in enumerate(mine)
                    if r.api == "LeaderAndIsr"
                    and any(p.topic == "r" and p.leader_epoch == b4_epoch for p in r.partitions)
                ),
                -1,
            )
            assert 0 <= i < len(mine) - 1, f"B4 LeaderAndIsr at epoch {b4_epoch} to {dest}:\n{listing}"
            nxt = mine[i + 1]
            assert nxt.api == "UpdateMetadata", (
                f"B4 batch to {dest}: UpdateMetadata after LeaderAndIsr:\n{listing}"
            )
            assert any(p.topic == "r" and p.leader_epoch == b4_epoch for p in nxt.partitions), listing
    ums = {
        r.dest
        for r in journal(cluster).requests(api="UpdateMetadata", since=mark)
        for p in r.partitions
        if p.topic == "r" and p.replicas == (4, 5, 6)
    }
    assert ums == set(range(1, 7)), f"B8 UpdateMetadata to every live broker: {ums}"
    wait_for(
        lambda: (
            all(_has_dir(cluster, b, "r") for b in new) and not any(_has_dir(cluster, b, "r") for b in old)
        ),
        cluster.deadline(10),
        "log dirs moved to 4,5,6",
    )
    online = [
        t
        for t in replica_transitions(cluster.state_changes(cid))
        if t.topic == "r"
        and t.replica in new
        and (t.from_state, t.to_state) == ("NewReplica", "OnlineReplica")
    ]
    assert {t.replica for t in online} == new, f"B1 TRACE lines: {online}"


@pytest.mark.behaviour("REASSIGN-13")
def test_single_replica_move_ends_at_epoch_3(cluster: Cluster, phase_metrics: PhaseMetrics) -> None:
    cluster.wait_controller()
    create_topic(cluster, "one", {0: [1]})
    admin.reassign_zk(cluster, {("one", 0): [2]})
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(30), "reassignment done"
    )
    completion = phases.reassignment_completion(cluster.history())
    if completion is not None:
        phase_metrics.record("reassignment_completion", completion)
    st = wait_state(cluster, "one", 0, lambda s: s["isr"] == [2], "ISR [2]")
    assert (st["leader"], st["leader_epoch"]) == (2, 3), f"[1]->[2] final state {st} (spec §11: epoch 3)"


@pytest.mark.behaviour("REASSIGN-14")
def test_reassignment_unknown_partition_and_same_target(cluster: Cluster) -> None:
    """Unknown partition → removed from the znode without effect; target = current → completes at
    once with a leader-epoch bump."""
    cluster.wait_controller()
    create_topic(cluster, "e", {0: [1, 2]})
    wait_state(cluster, "e", 0, lambda s: s["isr"] == [1, 2], "ISR [1,2]")
    admin.reassign_zk(cluster, {("nosuch", 0): [1], ("e", 0): [1, 2]})
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(20), "znode emptied"
    )
    st = wait_state(cluster, "e", 0, lambda s: s["leader_epoch"] == 1, "same-target bump to epoch 1")
    assert st["leader"] == 1
    assert not cluster.zk.exists("/brokers/topics/nosuch")


@pytest.mark.behaviour("REASSIGN-14")
def test_reassignment_to_unregistered_broker_waits_for_it(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(4, start=False)
    cluster.start([1, 2, 3])
    cluster.wait_controller()
    create_topic(cluster, "w", {0: [1, 2]})
    admin.reassign_zk(cluster, {("w", 0): [4, 2]})
    wait_for(
        lambda: (cluster.get_json("/brokers/topics/w") or {})["partitions"]["0"] == [4, 2, 1],
        cluster.deadline(10),
        "U1 with unregistered broker 4",
    )
    assert cluster.zk.exists("/admin/reassign_partitions"), "reassignment to an unregistered broker ended"
    cluster.start([4])
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(30), "resumed on 4"
    )
    topic = cluster.get_json("/brokers/topics/w") or {}
    assert (topic["partitions"]["0"], topic["adding_replicas"], topic["removing_replicas"]) == (
        [4, 2],
        {},
        {},
    )


#: The znodes deletion removes.
TOPIC_E = ("/brokers/topics/e", "/config/topics/e", "/admin/delete_topics/e")


def _deletion_writes(records: list[TxnRecord], me: int) -> list[TxnRecord]:
    """Writes (not the check's own) that only deletion makes: e-0 state with leader -1, deletes of
    e's znodes."""
    out: list[TxnRecord] = []
    for r, op in writes(records):
        if r.session_id == me:
            continue
        if op.path == "/brokers/topics/e/partitions/0/state" and op.op == "setData" and op.data:
            if json.loads(op.data)["leader"] == -1:
                out.append(r)
        elif op.op == "delete" and (op.path in TOPIC_E or (op.path or "").startswith("/brokers/topics/e/")):
            out.append(r)
    return out


@pytest.mark.behaviour("REASSIGN-14", "RSM-2")
def test_topic_under_reassignment_is_ineligible_for_deletion(cluster_factory: ClusterFactory) -> None:
    """Where Kafka 2.5.1 honours "a topic under reassignment is ineligible for deletion": a
    controller taking over finds the deletion queued and the reassignment pending (topic znode
    adding/removing) and marks the topic ineligible (``fetchTopicDeletionsInProgress``). The active
    controller does not: ``processTopicDeletion`` marks before it enqueues, and
    ``markTopicIneligibleForDeletion`` only marks queued topics, so a first deletion request starts
    deletion anyway. Nor does it keep the topic ineligible once the target broker registers:
    ``onBrokerStartup`` resumes deletion of queued topics with replicas on the new broker right
    after restarting the reassignment, before it completes (see the README)."""
    cluster = cluster_factory(4, start=False)
    cluster.start([3])
    assert cluster.wait_controller() == 3
    cluster.start([1, 2])
    jr = journal(cluster)
    me = cluster.zk.client_id[0]
    create_topic(cluster, "e", {0: [1, 2]})
    admin.reassign_zk(cluster, {("e", 0): [4, 2]})
    pending = {
        "version": 2,
        "partitions": {"0": [4, 2, 1]},
        "adding_replicas": {"0": [4]},
        "removing_replicas": {"0": [1]},
    }
    wait_for(
        lambda: cluster.get_json("/brokers/topics/e") == pending,
        cluster.deadline(10),
        lambda: f"U1 pending on unregistered broker 4: {cluster.get_json('/brokers/topics/e')}",
    )
    cluster.pause(3)
    mark = jr.mark()
    n = len(cluster.history())
    admin.delete_topic_zk(cluster, "e")
    cluster.kill(3, end_session=True)
    new = cluster.wait_controller(deadline_s=25, not_in=[3])
    wait_cluster_known(cluster, 25)
    # the new controller's failover work on reassignments (the znode entry of a topic queued for
    # deletion is dropped) runs just before its deletion work: once done, watch for a while
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"),
        cluster.deadline(10),
        "the new controller to drop e-0 (topic queued for deletion) from /admin/reassign_partitions",
    )

    def deletion_work() -> list[str]:
        stops = [
            r.describe()
            for r in jr.requests(api="StopReplica", since=mark)
            if any(p.topic == "e" for p in r.partitions)
        ]
        return stops + [r.describe() for r in _deletion_writes(cluster.history()[n:], me)]

    # evidence, not a sleep: the failover event (reassignments, then deletion work) and anything
    # queued behind it have been processed once a topic written now is created everywhere
    settle(cluster, new)
    done = deletion_work()
    assert not done, (
        f"controller {new} did deletion work for e while its reassignment is pending:\n" + "\n".join(done)
    )
    for path in TOPIC_E:
        assert cluster.zk.exists(path), f"{path} gone while e is under reassignment"
    assert cluster.get_json("/brokers/topics/e") == pending, "the pending reassignment was dropped"

    cluster.start([4])
    wait_for(
        lambda: not any(cluster.zk.exists(p) for p in TOPIC_E),
        cluster.deadline(30),
        lambda: f"deletion of e once broker 4 registered: {[p for p in TOPIC_E if cluster.zk.exists(p)]}",
    )
    later = cluster.history()[n:]
    registered = [
        r.zxid for r, op in writes(later) if op.op in ("create", "create2") and op.path == "/brokers/ids/4"
    ]
    early = [r for r in _deletion_writes(later, me) if not registered or r.zxid < registered[0]]
    assert not early, f"deletion work before broker 4 registered:\n{fmt(early)}"

    # NewReplica→ReplicaDeletionIneligible / OnlineReplica→NewReplica lines (README): Kafka's shape
    assert_invalid_transitions_in_kafka_shape(cluster, "REASSIGN-14")


@pytest.mark.behaviour("REASSIGN-15")
def test_failover_mid_reassignment_completes(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(4, start=False)
    cluster.start([4])
    assert cluster.wait_controller() == 4
    cluster.start([1, 2])
    create_topic(cluster, "f", {0: [1, 2]})
    admin.reassign_zk(cluster, {("f", 0): [3, 2]})
    wait_for(
        lambda: (cluster.get_json("/brokers/topics/f") or {})["partitions"]["0"] == [3, 2, 1],
        cluster.deadline(10),
        "U1 pending on broker 3",
    )
    wait_state(cluster, "f", 0, lambda s: s["leader_epoch"] == 1, "A1 (leader epoch 1) before the failover")
    cluster.kill(4, end_session=True)
    cluster.wait_controller(not_in=[4], deadline_s=25)
    cluster.start([3])
    wait_for(lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(30), "completed")
    topic = cluster.get_json("/brokers/topics/f") or {}
    assert topic["partitions"]["0"] == [3, 2]
    assert topic["adding_replicas"] == {}
    assert topic["removing_replicas"] == {}
    wait_state(cluster, "f", 0, lambda s: set(s["isr"]) == {2, 3}, "ISR {2,3}")
    settle(cluster, 2)
    # A1 ran three times (first controller, the new controller's failover, 3's registration), then
    # 3 joined the ISR, B3 elected 3 (first of TRS [3, 2] in the ISR) and B4 removed 1
    pinned(
        cluster,
        "f",
        0,
        [
            Step(1, 0, (1, 2), 1, 0),
            Step(1, 1, (1, 2), 1, 1),
            Step(1, 2, (1, 2), 2, 2),
            Step(1, 3, (1, 2), 2, 3),
            Step(1, 3, (1, 2, 3), 2, 4),
            Step(3, 4, (1, 2, 3), 2, 5),
            Step(3, 5, (2, 3), 2, 6),
        ],
        "through a reassignment resumed by a new controller and by its target's registration",
    )
