"""Whole stories pinned step by step, as Kafka's ControllerIntegrationTest does (conformance ring).

Each check drives a multi-step scenario from outside and states, at every step, the exact
(leader, leader_epoch, ISR, controller_epoch, zkVersion) of the partitions involved — the whole
written history of their state znodes, not only the end state — and the exact LeaderAndIsr each
broker received (``isNew`` included). Before asserting that something did *not* happen, a check
waits for evidence that its trigger was processed (:func:`~conformance.scenarios.settle`).
Values are Kafka 2.5.1's (spec §3, §6, §11, §12).
"""

from __future__ import annotations

from typing import Any

import pytest

from cluster import admin
from cluster.cluster import Cluster, ClusterFactory, wait_for
from cluster.targets import SAFETY_DEFAULTS
from conformance.scenarios import (
    Step,
    assert_invalid_transitions_in_kafka_shape,
    create_topic,
    fmt,
    journal,
    pinned,
    requests_for,
    settle,
    state_history,
    wait_cluster_known,
    wait_state,
    wait_told_gone,
)
from conformance.topology import NO_CONTROLLER_ENDPOINT
from probes.state_change_log import invalid_transitions

pytestmark = pytest.mark.conformance


def _placed(
    cluster_factory: ClusterFactory, controller: int, *, also: tuple[int, ...] | None = None, **kw: Any
) -> Cluster:
    """A cluster whose controller is ``controller`` (started first, alone), then ``also`` (default:
    every other broker) started; every started broker known to the controller."""
    cluster = cluster_factory(start=False, **kw)
    cluster.start([controller])
    assert cluster.wait_controller() == controller
    cluster.start([b for b in cluster.broker_ids if b != controller] if also is None else list(also))
    wait_cluster_known(cluster)
    return cluster


def _session(cluster: Cluster, bid: int) -> int:
    stat = cluster.zk.exists(f"/brokers/ids/{bid}")
    assert stat is not None, f"broker {bid} not registered: {cluster.summary()}"
    return int(stat.ephemeralOwner)


def _closed_at(cluster: Cluster, session: int) -> int:
    """zxid of ``session``'s closeSession (waits for it to reach the transaction log)."""
    return wait_for(
        lambda: next(
            (r.zxid for r in cluster.history() if r.op == "closeSession" and r.session_id == session), None
        ),
        cluster.deadline(10),
        f"closeSession of session 0x{session:x} in the transaction log",
    )


def _assert_written_before(cluster: Cluster, tp: tuple[str, int], step: Step, zxid: int, what: str) -> None:
    """The state write that produced ``step`` has a zxid below ``zxid``."""
    topic, partition = tp
    hist = state_history(cluster, topic, partition)
    assert step.zk_version is not None
    assert len(hist) > step.zk_version, f"{topic}-{partition}: no write of {step}"
    _, record = hist[step.zk_version]
    assert record.zxid < zxid, (
        f"{topic}-{partition}: the write of ({step}) came after {what} (zxid 0x{record.zxid:x} >"
        f" 0x{zxid:x}); Kafka writes it during the ControlledShutdown, before the session ends"
    )


def _lai(
    cluster: Cluster, topic: str, since: int
) -> list[tuple[int, int, bool | None, int | None, int | None]]:
    """(dest, partition, isNew, leader, leader_epoch) of every LeaderAndIsr entry for ``topic``."""
    return [
        (r.dest, p.partition, p.is_new, p.leader, p.leader_epoch)
        for r in requests_for(cluster, "LeaderAndIsr", topic=topic, since=since)
        for p in r.partitions
        if p.topic == topic
    ]


# --- graceful stop → restart → ISR rejoin → preferred leader back (ControllerIntegrationTest) -----


@pytest.mark.behaviour("SHUTDOWN-3", "SHUTDOWN-1", "ELECT-4", "PREFERRED-1", "ELECT-3", "REBALANCE-1")
@pytest.mark.parametrize("election", ["preferred-znode", "auto-rebalance"])
@pytest.mark.combined_only(NO_CONTROLLER_ENDPOINT)
def test_graceful_stop_restart_rejoin_and_preferred_leader_back(
    cluster_factory: ClusterFactory, election: str
) -> None:
    """ControllerIntegrationTest ``testPreferredReplicaLeaderElection`` (2 brokers, controller 0,
    ``t`` = [1, 0]; here ids 1 and 2: controller 1, ``t`` = [2, 1]): stop 2 gracefully → t-0 leader
    1 epoch 1, still 1 after 2 is gone; restart 2, ISR {1, 2} → preferred election (znode or
    auto-rebalance) → leader 2 epoch 2, never 3."""
    overrides = {"auto.leader.rebalance.enable": "true"} if election == "auto-rebalance" else {}
    cluster = _placed(cluster_factory, 1, broker_ids=(1, 2), overrides=overrides)
    ce = (cluster.controller_epoch() or (0, 0))[0]
    assert ce == 1, cluster.summary()
    create_topic(cluster, "t", {0: [2, 1]})
    s0 = Step(2, 0, (2, 1), ce, 0)
    pinned(cluster, "t", 0, [s0], "after creation")

    # 1. graceful stop of the leader: one epoch change (the controlled-shutdown election), before
    #    its session ends, and none when the session ends (SHUTDOWN-3)
    session, mark = _session(cluster, 2), journal(cluster).mark()
    cluster.stop(2)
    closed = _closed_at(cluster, session)
    wait_told_gone(cluster, 2, mark)
    settle(cluster, 1)
    s1 = Step(1, 1, (1,), ce, 1)
    pinned(cluster, "t", 0, [s0, s1], "after broker 2 stopped gracefully (SHUTDOWN-3: leader epoch 1, once)")
    _assert_written_before(cluster, ("t", 0), s1, closed, "broker 2's closeSession")

    # 2. restart: broker 2 gets LeaderAndIsr(isNew=false) with leader 1 epoch 1, rejoins the ISR
    mark = journal(cluster).mark()
    cluster.start([2])
    wait_state(
        cluster, "t", 0, lambda s: s["isr"] == [1, 2], "ISR [1, 2] after broker 2 restarted", deadline_s=20
    )
    got = wait_for(
        lambda: [e for e in _lai(cluster, "t", mark) if e[0] == 2],
        cluster.deadline(10),
        lambda: f"LeaderAndIsr for t-0 to the restarted broker 2:\n{journal(cluster).dump(mark)}",
    )
    assert got[0] == (2, 0, False, 1, 1), (
        f"restarted broker 2's first LeaderAndIsr for t-0: (dest, partition, isNew, leader, epoch) ="
        f" {got[0]}, Kafka sends (2, 0, False, 1, 1)"
    )
    s2 = Step(1, 1, (1, 2), ce, 2)
    if election == "preferred-znode":
        pinned(cluster, "t", 0, [s0, s1, s2], "after broker 2 rejoined the ISR")
        admin.preferred_election_zk(cluster, [("t", 0)])
        wait_for(
            lambda: not cluster.zk.exists("/admin/preferred_replica_election"),
            cluster.deadline(10),
            "/admin/preferred_replica_election processed and deleted",
        )

    # 3. the preferred leader is back: leader epoch 2, never 3
    wait_state(
        cluster,
        "t",
        0,
        lambda s: s["leader"] == 2,
        f"preferred leader 2 back ({election})",
        deadline_s=30 if election == "auto-rebalance" else 10,
    )
    settle(cluster, 1)
    pinned(cluster, "t", 0, [s0, s1, s2, Step(2, 2, (1, 2), ce, 3)], f"after the {election} election")


# --- topic creation with a replica on a dead broker ------------------------------------------------


@pytest.mark.behaviour("PSM-2", "RSM-3", "RSM-4", "BROKER-2", "TOPIC-2")
def test_creation_with_a_dead_replica_then_its_broker_returns(cluster_factory: ClusterFactory) -> None:
    """Leader = first live replica, ISR = live replicas only, LeaderAndIsr(isNew=true) to the ISR and
    nothing to the dead broker; when it registers it gets LeaderAndIsr(isNew=false) with the
    current state and joins the ISR without a leader-epoch change."""
    cluster = _placed(cluster_factory, 3)
    mark = journal(cluster).mark()
    cluster.kill(2, end_session=True)
    wait_told_gone(cluster, 2, mark)
    mark = journal(cluster).mark()
    create_topic(cluster, "dz", {0: [2, 1, 3], 1: [1, 2]})
    a0, b0 = Step(1, 0, (1, 3), 1, 0), Step(1, 0, (1,), 1, 0)
    pinned(cluster, "dz", 0, [a0], "created with replica 2 dead")
    pinned(cluster, "dz", 1, [b0], "created with replica 2 dead")
    sent = sorted(_lai(cluster, "dz", mark))
    assert sent == [(1, 0, True, 1, 0), (1, 1, True, 1, 0), (3, 0, True, 1, 0)], (
        f"LeaderAndIsr for dz (dest, partition, isNew, leader, epoch): {sent}; Kafka sends isNew=true to"
        f" the ISR (live replicas) only"
    )
    to_dead = journal(cluster).requests(dest=2, since=mark)
    assert not to_dead, "requests to dead broker 2:\n" + "\n".join(r.describe() for r in to_dead)

    mark = journal(cluster).mark()
    cluster.start([2])
    wait_state(cluster, "dz", 0, lambda s: s["isr"] == [1, 3, 2], "2 joins the ISR of dz-0", deadline_s=20)
    wait_state(cluster, "dz", 1, lambda s: s["isr"] == [1, 2], "2 joins the ISR of dz-1", deadline_s=20)
    settle(cluster, 1)
    got = sorted(e for e in _lai(cluster, "dz", mark) if e[0] == 2)
    assert got == [(2, 0, False, 1, 0), (2, 1, False, 1, 0)], (
        f"LeaderAndIsr for dz to returning broker 2: {got}; Kafka sends one isNew=false per partition"
        f" (OnlineReplica), leader 1, epoch 0"
    )
    first = journal(cluster).requests(dest=2, since=mark)[0]
    assert first.api == "UpdateMetadata", f"the returning broker's first request: {first.describe()}"
    pinned(cluster, "dz", 0, [a0, Step(1, 0, (1, 3, 2), 1, 1)], "after broker 2 returned")
    pinned(cluster, "dz", 1, [b0, Step(1, 0, (1, 2), 1, 1)], "after broker 2 returned")


# --- isNew: true exactly for created partitions and a reassignment's new replicas ------------------


@pytest.mark.behaviour("RSM-3", "RSM-4", "REASSIGN-2", "REASSIGN-3", "REASSIGN-7", "REASSIGN-8")
def test_is_new_exactly_for_creation_and_reassignment_additions(cluster_factory: ClusterFactory) -> None:
    cluster = _placed(cluster_factory, 3)
    mark = journal(cluster).mark()
    create_topic(cluster, "nw", {0: [1, 2]})
    created = sorted(_lai(cluster, "nw", mark))
    assert created == [(1, 0, True, 1, 0), (2, 0, True, 1, 0)], (
        f"creation LeaderAndIsr (dest, partition, isNew, leader, epoch): {created}; Kafka: isNew=true once"
        f" to each ISR member"
    )
    mark = journal(cluster).mark()
    admin.reassign_zk(cluster, {("nw", 0): [1, 3]})
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"), cluster.deadline(30), "reassignment done"
    )
    wait_state(cluster, "nw", 0, lambda s: s["isr"] == [1, 3], "ISR [1, 3]")
    settle(cluster, 1)
    sent = _lai(cluster, "nw", mark)
    new = [e for e in sent if e[2]]
    assert [(d, le) for d, _, _, _, le in new] == [(3, 1)], (
        f"isNew=true LeaderAndIsr during the reassignment: {new}; Kafka sends exactly one, A2's to the"
        f" adding replica 3 with A1's leader epoch 1\nall: {sent}"
    )
    to3 = [e for e in sent if e[0] == 3]
    assert to3[0][2] is False, f"A1's LeaderAndIsr to 3 comes first, isNew=false: {to3}"
    pinned(
        cluster,
        "nw",
        0,
        [
            Step(1, 0, (1, 2), 1, 0),
            Step(1, 1, (1, 2), 1, 1),  # A1
            Step(1, 1, (1, 2, 3), 1, 2),  # 3 caught up (leader's ISR expansion)
            Step(1, 2, (1, 2, 3), 1, 3),  # B3: leader 1 stays (in TRS), epoch bumped
            Step(1, 3, (1, 3), 1, 4),  # B4: 2 removed from the ISR
        ],
        "through reassignment [1, 2] → [1, 3]",
    )


# --- unclean.leader.election.enable: default false, topic override survives a failover -------------


@pytest.mark.behaviour("ELECT-6", "ELECT-5", "ELECT-1", "FAILOVER-3")
def test_topic_unclean_config_honoured_after_failover_and_default_is_clean(
    cluster_factory: ClusterFactory,
) -> None:
    """Keys absent (Kafka defaults). ``uncl`` carries ``unclean.leader.election.enable=true`` from
    creation, ``late`` gets it written to ``/config/topics/late`` (no change notification) once
    offline, ``clean`` has no override. All lose 2 (graceful stop: the controller removes it from
    the ISR, deterministic) then 1 (killed: leader -1, ISR [1]); controller 3 dies and 4 (running
    all along, no replicas) takes over (its failover writes the dead ISR member's OfflineReplica,
    +1 as in §11); 2 returns: the *new* controller
    elects 2 for ``uncl`` and ``late`` (it reads topic configs from ZooKeeper when it elects) and
    leaves ``clean`` leaderless (default false)."""
    cluster = _placed(cluster_factory, 3, broker_ids=(1, 2, 3, 4), kafka_defaults=True)
    create_topic(cluster, "uncl", {0: [1, 2]}, config={"unclean.leader.election.enable": "true"})
    create_topic(cluster, "late", {0: [1, 2]})
    create_topic(cluster, "clean", {0: [1, 2]})
    topics = ("uncl", "late", "clean")
    mark = journal(cluster).mark()
    cluster.stop(2)
    wait_told_gone(cluster, 2, mark)
    for t in topics:
        wait_state(cluster, t, 0, lambda s: s["isr"] == [1], "ISR [1] after 2 stopped")
    mark = journal(cluster).mark()
    cluster.kill(1, end_session=True)
    wait_told_gone(cluster, 1, mark)
    for t in topics:
        wait_state(cluster, t, 0, lambda s: s["leader"] == -1, "leader -1 after 1 died")
    before = [Step(1, 0, (1, 2), 1, 0), Step(1, 1, (1,), 1, 1), Step(-1, 2, (1,), 1, 2)]
    settle(cluster, 3)
    for t in topics:
        pinned(cluster, t, 0, before, "after 2 stopped and 1 died")
    cluster.zk.set(
        "/config/topics/late",
        admin.encode({"version": 1, "config": {"unclean.leader.election.enable": "true"}}),
    )
    cluster.kill(3, end_session=True)
    wait_for(
        lambda: cluster.controller_epoch() == (2, 2) and cluster.controller_id() == 4,
        cluster.deadline(20),
        lambda: f"controller 4 elected at epoch 2; {cluster.summary()}",
    )
    settle(cluster, 4)
    # the new controller's replica state machine startup: dead 1 is in the ISR → OfflineReplica
    # rewrites (leader -1, ISR [1]) with epoch +1 (doRemoveReplicasFromIsr writes even then)
    before.append(Step(-1, 3, (1,), 2, 3))
    for t in topics:
        pinned(cluster, t, 0, before, "after the failover, no live replica")
    cluster.start([2])
    for t in ("uncl", "late"):
        wait_state(
            cluster,
            t,
            0,
            lambda s: s["leader"] == 2,
            "elected uncleanly (leader 2) by the NEW controller: the topic-level unclean.leader.election"
            ".enable=true written before the failover must be read from ZooKeeper at election time (ELECT-6)",
        )
    settle(cluster, 4)
    for t in ("uncl", "late"):
        pinned(cluster, t, 0, [*before, Step(2, 4, (2,), 2, 4)], "after 2 returned (unclean election)")
    pinned(
        cluster,
        "clean",
        0,
        before,
        "after 2 returned, unclean.leader.election.enable unset (Kafka 2.5 default false: stays leaderless)",
    )


# --- Kafka's defaults with the safety keys absent ---------------------------------------------------


@pytest.mark.behaviour("ELECT-6", "SHUTDOWN-1", "SHUTDOWN-3", "REBALANCE-1", "DELETE-1")
@pytest.mark.combined_only(NO_CONTROLLER_ENDPOINT)
def test_kafka_defaults_when_safety_keys_are_absent(cluster_factory: ClusterFactory) -> None:
    """``controlled.shutdown.enable`` (true): a graceful stop moves leadership before the session
    ends; ``auto.leader.rebalance.enable`` (true): the preferred leader gets its leadership back
    without being asked; ``delete.topic.enable`` (true): deletion completes.
    (``unclean.leader.election.enable``, false: the previous check.)"""
    cluster = _placed(cluster_factory, 3, kafka_defaults=True)
    for bid, node in cluster.nodes.items():
        present = sorted(set(SAFETY_DEFAULTS) & set(node.properties))
        assert not present, f"node {bid}'s server.properties sets {present}; this run must leave them out"
    create_topic(cluster, "df", {0: [1, 2]})
    s0 = Step(1, 0, (1, 2), 1, 0)
    session, mark = _session(cluster, 1), journal(cluster).mark()
    cluster.stop(1)
    closed = _closed_at(cluster, session)
    wait_told_gone(cluster, 1, mark)
    settle(cluster, 2)
    s1 = Step(2, 1, (2,), 1, 1)
    pinned(cluster, "df", 0, [s0, s1], "after broker 1 stopped with controlled.shutdown.enable unset")
    _assert_written_before(
        cluster, ("df", 0), s1, closed, "broker 1's closeSession (controlled shutdown is on by default)"
    )
    cluster.start([1])
    wait_state(
        cluster,
        "df",
        0,
        lambda s: s["leader"] == 1,
        "preferred leader 1 back by auto-rebalance (auto.leader.rebalance.enable unset: Kafka default true)",
        deadline_s=30,
    )
    settle(cluster, 2)
    pinned(cluster, "df", 0, [s0, s1, Step(2, 1, (2, 1), 1, 2), Step(1, 2, (2, 1), 1, 3)], "after rebalance")
    admin.delete_topic_zk(cluster, "df")
    gone = ("/brokers/topics/df", "/config/topics/df", "/admin/delete_topics/df")
    wait_for(
        lambda: not any(cluster.zk.exists(p) for p in gone),
        cluster.deadline(30),
        lambda: (
            f"df deleted (delete.topic.enable unset: Kafka default true);"
            f" still {[p for p in gone if cluster.zk.exists(p)]}"
        ),
    )


# --- PREFERRED-2 with a topic really queued for deletion -------------------------------------------


def _dying_and_pref(cluster_factory: ClusterFactory) -> tuple[Cluster, list[Step]]:
    """Controller 3, brokers 1, 2 (4 never registers): ``dying`` = [1, 2, 4] and ``pref`` = [1, 2],
    both led by 2 ≠ preferred 1 (live, in the ISR) after 1 bounced; their pinned history."""
    cluster = _placed(cluster_factory, 3, broker_ids=(1, 2, 3, 4), also=(1, 2))
    create_topic(cluster, "dying", {0: [1, 2, 4]})
    create_topic(cluster, "pref", {0: [1, 2]})
    mark = journal(cluster).mark()
    cluster.kill(1, end_session=True)
    wait_told_gone(cluster, 1, mark)
    cluster.start([1])
    for t in ("dying", "pref"):
        wait_state(
            cluster, t, 0, lambda s: s["isr"] == [2, 1], "leader 2, ISR [2, 1] after 1 bounced", deadline_s=20
        )
    return cluster, [Step(1, 0, (1, 2), 1, 0), Step(2, 1, (2,), 1, 1), Step(2, 1, (2, 1), 1, 2)]


@pytest.mark.behaviour("PREFERRED-2", "PREFERRED-1", "DELETE-3")
def test_preferred_election_skips_a_topic_queued_for_deletion(cluster_factory: ClusterFactory) -> None:
    """``dying`` (replica 4 never registers) is queued for deletion while the controller is paused,
    then the controller dies: the next one finds it queued and ineligible (offline replica), its
    partition online with leader 2 ≠ preferred 1 (live, in ISR). A preferred election naming
    ``dying-0`` and ``pref-0`` moves ``pref-0`` only."""
    cluster, history = _dying_and_pref(cluster_factory)
    cluster.pause(3)
    admin.delete_topic_zk(cluster, "dying")
    cluster.kill(3, end_session=True)
    new = cluster.wait_controller(not_in=[3], deadline_s=25)
    wait_cluster_known(cluster)
    settle(cluster, new)
    for t in ("dying", "pref"):
        pinned(cluster, t, 0, history, "after the failover")
    assert cluster.zk.exists("/brokers/topics/dying"), "dying was deleted with replica 4 offline"
    mark = journal(cluster).mark()
    admin.preferred_election_zk(cluster, [("dying", 0), ("pref", 0)])
    wait_for(
        lambda: not cluster.zk.exists("/admin/preferred_replica_election"),
        cluster.deadline(10),
        "/admin/preferred_replica_election processed and deleted",
    )
    wait_state(cluster, "pref", 0, lambda s: s["leader"] == 1, "pref-0 back to preferred leader 1")
    settle(cluster, new)
    pinned(cluster, "pref", 0, [*history, Step(1, 2, (2, 1), 2, 3)], "after the preferred election")
    pinned(cluster, "dying", 0, history, "queued for deletion: PREFERRED-2 skips it")
    moved = [e for e in _lai(cluster, "dying", mark) if e[3] == 1]
    assert not moved, f"LeaderAndIsr moving dying-0 to leader 1: {moved}"


@pytest.mark.behaviour("PREFERRED-2", "FAILOVER-2")
def test_preferred_election_pending_at_failover_skips_a_topic_queued_for_deletion(
    cluster_factory: ClusterFactory,
) -> None:
    """The same cluster, but the preferred-election znode is written together with the deletion
    marker while the controller is paused: the next controller's failover reads both (Kafka 2.5.1
    ``onControllerFailover``: the deletion manager is initialised before
    ``fetchPendingPreferredReplicaElections``), skips ``dying-0`` (queued for deletion) and resumes
    ``pref-0`` only."""
    cluster, history = _dying_and_pref(cluster_factory)
    cluster.pause(3)
    admin.delete_topic_zk(cluster, "dying")
    admin.preferred_election_zk(cluster, [("dying", 0), ("pref", 0)])
    mark = journal(cluster).mark()
    cluster.kill(3, end_session=True)
    new = cluster.wait_controller(not_in=[3], deadline_s=25)
    wait_state(
        cluster, "pref", 0, lambda s: s["leader"] == 1, "pref-0 back to preferred leader 1 at failover"
    )
    wait_for(
        lambda: not cluster.zk.exists("/admin/preferred_replica_election"),
        cluster.deadline(10),
        "/admin/preferred_replica_election processed and deleted",
    )
    settle(cluster, new)
    pinned(
        cluster, "pref", 0, [*history, Step(1, 2, (2, 1), 2, 3)], "after the failover's preferred election"
    )
    pinned(cluster, "dying", 0, history, "queued for deletion: the failover's preferred election skips it")
    assert cluster.zk.exists("/brokers/topics/dying"), "dying was deleted with replica 4 offline"
    moved = [e for e in _lai(cluster, "dying", mark) if e[3] == 1]
    assert not moved, f"LeaderAndIsr moving dying-0 to leader 1: {moved}"


# --- an invalid transition provoked from outside (RSM-2) -------------------------------------------


@pytest.mark.behaviour("RSM-2", "DELETE-1", "DELETE-2", "BROKER-2")
def test_broker_returning_during_deletion_meets_invalid_transitions(cluster_factory: ClusterFactory) -> None:
    """Deleting ``del`` = {0: [1, 2]} while broker 1 is paused (slow session: still live) leaves
    replica 1 in ReplicaDeletionStarted and replica 2 in ReplicaDeletionSuccessful. Broker 2 then
    stops and re-registers: Kafka's failReplicaDeletion asks ReplicaDeletionSuccessful →
    ReplicaDeletionIneligible and onBrokerStartup asks → OnlineReplica, both invalid: two ERROR lines
    in Kafka's shape, no LeaderAndIsr for ``del`` to broker 2, and the deletion completes once
    broker 1 answers."""
    slow = {"zookeeper.session.timeout.ms": "30000"}
    cluster = _placed(cluster_factory, 3, node_overrides={1: slow})
    create_topic(cluster, "del", {0: [1, 2]})
    jr = journal(cluster)
    cluster.pause(1)
    try:
        mark = jr.mark()
        admin.delete_topic_zk(cluster, "del")
        wait_for(
            lambda: [
                r
                for r in requests_for(cluster, "StopReplica", dest=2, topic="del", since=mark)
                if r.delete_partitions and r.error_code is not None
            ],
            cluster.deadline(15),
            lambda: f"StopReplica(delete=true) for del answered by broker 2:\n{jr.dump(mark)}",
        )
        settle(cluster, 2, among=(2, 3))  # the controller has handled 2's StopReplica response
        cluster.stop(2)
        mark = jr.mark()
        cluster.start([2])

        def errors() -> list[tuple[str, str]]:
            return [
                (t.from_state, t.to_state)
                for t in invalid_transitions(cluster.state_changes(3))
                if t.kind == "replica" and (t.topic, t.partition, t.replica) == ("del", 0, 2)
            ]

        wanted = [
            ("ReplicaDeletionSuccessful", "ReplicaDeletionIneligible"),
            ("ReplicaDeletionSuccessful", "OnlineReplica"),
        ]
        wait_for(
            lambda: errors() == wanted,
            cluster.deadline(20),
            lambda: (
                f"the invalid transitions of replica 2 of del-0 logged at ERROR, Kafka: {wanted}; logged:"
                f" {errors()}"
            ),
        )
        settle(cluster, 2, among=(2, 3))
        to2 = [e for e in _lai(cluster, "del", mark) if e[0] == 2]
        assert not to2, f"LeaderAndIsr for del to broker 2 after an invalid →OnlineReplica: {to2}"
        assert cluster.zk.exists("/brokers/topics/del"), "del deleted while replica 1 had not answered"
    finally:
        cluster.resume(1)
    assert_invalid_transitions_in_kafka_shape(cluster, "broker returning during a deletion")
    gone = ("/brokers/topics/del", "/config/topics/del", "/admin/delete_topics/del")
    wait_for(
        lambda: not any(cluster.zk.exists(p) for p in gone),
        cluster.deadline(30),
        lambda: (
            f"del deleted once broker 1 answered; still {[p for p in gone if cluster.zk.exists(p)]}"
            f"\n{fmt(cluster.history()[-40:])}"
        ),
    )
