"""Scenarios of Kafka 2.5.1's own controller tests, ported black-box (conformance ring).

Each check names the Kafka test it ports (``core/src/test/scala/unit/kafka/...`` at tag 2.5.1)
and asserts that test's expected values — leaders, leader epochs, ISRs, znodes, metadata answers —
taken from the test or, where the test leaves a value open, from Kafka 2.5.1's controller source
(cited). Kafka's brokers 0, 1, 2 are this suite's 1, 2, 3; the roles (controller, "other broker")
are placed as the Kafka test has them by starting the controller first. Kafka's
``server.shutdown()`` with controlled shutdown enabled is ``cluster.stop`` (SIGTERM). A broker's
``metadataCache.getPartitionInfo`` is read through a Metadata request (v9) to that broker.
The mapping of every Kafka controller test to the suite's checks is ``conformance/KAFKA-TESTS.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from kio.schema.controlled_shutdown.v3 import request as cs3
from kio.schema.metadata.v9 import request as md9
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i64

from cluster import admin
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import (
    Step,
    create_topic,
    fmt,
    journal,
    pinned,
    requests_for,
    settle,
    wait_cluster_known,
    wait_state,
)
from conformance.topology import NO_CONTROLLER_ENDPOINT
from probes.logdirs import scan_log_dirs
from probes.request_proxy import send_request

pytestmark = pytest.mark.conformance


class PartitionInfo(NamedTuple):
    """One partition of a broker's Metadata answer (its metadata cache)."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


def _placed(cluster_factory: ClusterFactory, controller: int, n: int, **kw: Any) -> Cluster:
    """``n`` brokers whose controller is ``controller`` (started first, alone); every broker known."""
    cluster = cluster_factory(n, start=False, **kw)
    cluster.start([controller])
    assert cluster.wait_controller() == controller, cluster.summary()
    cluster.start([b for b in cluster.broker_ids if b != controller])
    wait_cluster_known(cluster)
    return cluster


def _partition_info(cluster: Cluster, bid: int, topic: str, partition: int) -> PartitionInfo | None:
    """``bid``'s metadata for ``topic``-``partition`` (None: the broker does not know it, or does
    not answer — a waiting check keeps polling, an asserting one says so)."""
    req = md9.MetadataRequest(
        topics=(md9.MetadataRequestTopic(name=TopicName(topic)),),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    try:
        resp = send_request(*cluster.endpoint(bid), req, timeout_s=cluster.deadline(5))
    except OSError:
        return None
    for t in resp.topics:
        if str(t.name) != topic or int(t.error_code) != 0:
            continue
        for p in t.partitions:
            if int(p.partition_index) == partition:
                return PartitionInfo(
                    int(p.leader_id),
                    tuple(int(b) for b in p.replica_nodes),
                    tuple(int(b) for b in p.isr_nodes),
                    tuple(int(b) for b in p.offline_replicas),
                )
    return None


def _wait_info(
    cluster: Cluster, bids: tuple[int, ...], tp: tuple[str, int], want: PartitionInfo, what: str
) -> None:
    """Every broker of ``bids`` answers exactly ``want`` for the partition ``tp``."""
    topic, partition = tp

    def seen() -> dict[int, PartitionInfo | None]:
        return {b: _partition_info(cluster, b, topic, partition) for b in bids}

    wait_for(
        lambda: all(info == want for info in seen().values()),
        cluster.deadline(20),
        lambda: f"{what}: brokers {bids} should answer {want} for {topic}-{partition}; got {seen()}",
    )


def _is(controller_epoch: int, leader: int, leader_epoch: int) -> Callable[[dict[str, Any]], bool]:
    """Kafka's ``isExpectedPartitionState``: (controller epoch, leader, leader epoch) of a state."""
    return lambda s: (
        (s["controller_epoch"], s["leader"], s["leader_epoch"])
        == (
            controller_epoch,
            leader,
            leader_epoch,
        )
    )


def _topic(cluster: Cluster, topic: str) -> dict[str, Any]:
    got = cluster.get_json(f"/brokers/topics/{topic}")
    assert isinstance(got, dict), f"/brokers/topics/{topic}: {got}"
    return got


# --- ControllerIntegrationTest ------------------------------------------------------------------


@pytest.mark.behaviour("REASSIGN-14", "BROKER-2")
def test_reassignment_halted_by_an_offline_replica_resumes_when_it_comes_back(
    cluster_factory: ClusterFactory,
) -> None:
    """ControllerIntegrationTest ``testPartitionReassignmentWithOfflineReplicaHaltingProgress`` and
    ``testPartitionReassignmentResumesAfterReplicaComesOnline`` (2 brokers, ``t`` = [controller],
    the other broker shut down, ``t-0`` reassigned to [other]): while the target is offline the
    partition stays led by the controller at leader epoch 1 (A1's bump) and
    ``/admin/reassign_partitions`` stays; once the target starts, ``t-0`` ends led by it at leader
    epoch 4 (``initialLeaderEpoch + 4``: A1 again on resume (``onBrokerStartup`` →
    ``maybeResumeReassignments``, KafkaController.scala@2.5.1 L367-370), B3's leader move, B4's
    removal of the old replica from the ISR), the topic znode holds exactly [other] and the
    reassignment znode is gone."""
    ctl, other = 2, 1
    cluster = _placed(cluster_factory, ctl, 2)
    ce = (cluster.controller_epoch() or (0, 0))[0]
    create_topic(cluster, "t", {0: [ctl]})
    cluster.stop(other)
    cluster.wait_unregistered(other)
    admin.reassign_zk(cluster, {("t", 0): [other]})
    wait_state(
        cluster,
        "t",
        0,
        _is(ce, ctl, 1),
        f"leader {ctl} at leader epoch 1 during the reassignment to offline {other}",
    )
    settle(cluster, ctl)  # the reassignment event is fully handled: nothing more may happen
    assert cluster.zk.exists("/admin/reassign_partitions"), (
        "the reassignment path must remain while the reassignment is in progress (target offline)"
    )
    pinned(
        cluster,
        "t",
        0,
        [Step(ctl, 0, (ctl,), ce, 0), Step(ctl, 1, (ctl,), ce, 1)],
        f"reassignment halted by offline replica {other}",
    )
    cluster.start([other])
    wait_state(
        cluster,
        "t",
        0,
        _is(ce, other, 4),
        f"leader {other} at leader epoch 4 once {other} is back (Kafka: initialLeaderEpoch + 4)",
        deadline_s=30,
    )
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"),
        cluster.deadline(20),
        "reassign partitions path removed after completion",
    )
    wait_for(
        lambda: (
            (
                _topic(cluster, "t")["partitions"],
                _topic(cluster, "t").get("adding_replicas") or {},
                _topic(cluster, "t").get("removing_replicas") or {},
            )
            == ({"0": [other]}, {}, {})
        ),
        cluster.deadline(10),
        lambda: f"topic znode after the reassignment: {_topic(cluster, 't')} (Kafka: RS [{other}], no AR/RR)",
    )
    settle(cluster, other)
    st = cluster.partition_state("t", 0)
    assert st is not None, "t-0 has no state after the reassignment"
    assert (st["leader"], st["leader_epoch"], st["isr"]) == (other, 4, [other]), (
        f"t-0 after the completed reassignment: {st}; Kafka: leader {other}, leader epoch 4, ISR [{other}]"
    )


@pytest.mark.behaviour("SHUTDOWN-1", "ELECT-4")
@pytest.mark.combined_only(NO_CONTROLLER_ENDPOINT)
def test_controlled_shutdown_of_every_replica_in_turn(cluster_factory: ClusterFactory) -> None:
    """ControllerIntegrationTest ``testControlledShutdown`` (3 brokers started in reverse order, so
    the last one is the controller; ``test`` = [0, 1, 2]; ``controller.controlledShutdown`` for 2,
    then 1, then 0, none of them actually stopping). Here [1, 2, 3], controller 3, and the
    ControlledShutdown requests are sent to the controller with each broker's current broker epoch:
    ControlledShutdown(3) → no partition remaining, every other broker's metadata ISR [1, 2] and
    leader 1 (and offline replicas [3]: Kafka counts a shutting-down broker's replicas offline);
    ControlledShutdown(2) → none remaining, leader 1; ControlledShutdown(1) → exactly ``test-0``
    remaining (no live replica outside the shutting-down set), leader still 1
    everywhere."""
    cluster = _placed(cluster_factory, 3, 3)
    create_topic(cluster, "test", {0: [1, 2, 3]})
    wait_state(cluster, "test", 0, lambda s: s["isr"] == [1, 2, 3], "ISR [1, 2, 3]")

    def shutdown(bid: int) -> list[tuple[str, int]]:
        req = cs3.ControlledShutdownRequest(
            broker_id=BrokerId(bid), broker_epoch=i64(cluster.broker_epoch(bid) or 0)
        )
        resp = send_request(*cluster.endpoint(3), req, timeout_s=cluster.deadline(20))
        assert int(resp.error_code) == 0, f"ControlledShutdown({bid}) failed: error {int(resp.error_code)}"
        return sorted((str(p.topic_name), int(p.partition_index)) for p in resp.remaining_partitions)

    assert shutdown(3) == [], "ControlledShutdown(3) of a follower: Kafka answers no remaining partition"
    # Kafka waits until no active broker has an ISR of 3 any more, then reads the first one. The
    # offline replicas are Kafka's too: a shutting-down broker is not live for UpdateMetadata
    # (ControllerChannelManager.scala@2.5.1 L413, ControllerContext.scala@2.5.1 L187, L203-207).
    _wait_info(
        cluster, (1, 2), ("test", 0), PartitionInfo(1, (1, 2, 3), (1, 2), (3,)), "after ControlledShutdown(3)"
    )
    assert shutdown(2) == [], "ControlledShutdown(2) of a follower: Kafka answers no remaining partition"
    after = {b: _partition_info(cluster, b, "test", 0) for b in (1, 2, 3)}
    assert all(i is not None and i.leader == 1 for i in after.values()), (
        f"leader after ControlledShutdown(2): {after}; Kafka: 1 on every broker"
    )
    assert shutdown(1) == [("test", 0)], (
        "ControlledShutdown(1) of the leader whose other replicas are all shutting down: Kafka answers"
        " test-0 as remaining (the controlled-shutdown election finds no replica)"
    )
    # The controller answers once the ControlledShutdown event is handled (its writes are done);
    # no broker is left outside the shutting-down set to host a settle barrier topic.
    ce = (cluster.controller_epoch() or (0, 0))[0]
    pinned(
        cluster,
        "test",
        0,
        [Step(1, 0, (1, 2, 3), ce, 0), Step(1, 1, (1, 2), ce, 1), Step(1, 2, (1,), ce, 2)],
        "ControlledShutdown of 3, 2, then 1 (the last election fails and writes nothing)",
        # brokers 3 and 2 stay up: a fetch of theirs in flight when StopReplica arrives can bring
        # them back into leader 1's ISR (the leader's write, in Kafka as here); and CS(2)'s
        # LeaderAndIsr goes to every replica but 2 (ReplicaStateMachine.scala@2.5.1 L224), so the
        # still-running 3 follows 1 again and is taken back (Partition.scala@2.5.1 L679-L701 has no
        # shutting-down test): seen as isr [1, 3] at leader epoch 2 after the controller's [1]
        without_leader_isr_writes=True,
    )
    for b in (1, 2, 3):
        got = _partition_info(cluster, b, "test", 0)
        assert got is not None, f"broker {b} does not know test-0"
        assert got.leader == 1, (
            f"broker {b}: leader {got}; Kafka: leader stays 1 since all the replicas are shut down"
        )


@pytest.mark.behaviour("SHUTDOWN-1", "BROKER-2")
def test_offline_replica_in_metadata_after_a_follower_stops_and_returns(
    cluster_factory: ClusterFactory,
) -> None:
    """ControllerIntegrationTest ``testMetadataPropagationOnBrokerChange`` (3 brokers, the test
    broker is not the controller; ``topic1`` = {0: [remaining(0), test], 1: remaining}; shutting
    the test broker down needs no leader change). Here controller 3, test broker 1, remaining
    [2, 3]: after 1 stops, brokers 2 and 3 answer topic1-0 with replicas [2, 1], ISR [2] and
    offline replicas [1], topic1-1 with replicas [2, 3] and no offline replica; after 1 starts
    again every broker answers both partitions with their assignment and no offline replica."""
    cluster = _placed(cluster_factory, 3, 3)
    test_broker, remaining = 1, (2, 3)
    assignment = {0: [remaining[0], test_broker], 1: list(remaining)}
    create_topic(cluster, "topic1", assignment)
    cluster.stop(test_broker)
    cluster.wait_unregistered(test_broker)

    def infos(bids: tuple[int, ...], p: int) -> dict[int, PartitionInfo | None]:
        return {b: _partition_info(cluster, b, "topic1", p) for b in bids}

    def offline_shown() -> bool:
        p0, p1 = infos(remaining, 0), infos(remaining, 1)
        return all(
            i is not None and i.offline == (test_broker,) and i.isr == (remaining[0],) for i in p0.values()
        ) and all(i is not None and i.offline == () for i in p1.values())

    wait_for(
        offline_shown,
        cluster.deadline(20),
        lambda: f"metadata after broker {test_broker} stopped: {infos(remaining, 0)} {infos(remaining, 1)}",
    )
    for b, i in infos(remaining, 0).items():
        assert i is not None, f"broker {b} does not know topic1-0"
        assert (i.replicas, i.isr, i.offline) == ((2, 1), (2,), (1,)), f"broker {b}: {i}"
    for b, i in infos(remaining, 1).items():
        assert i is not None, f"broker {b} does not know topic1-1"
        assert (i.replicas, i.offline) == ((2, 3), ()), f"broker {b}: {i}"
    cluster.start([test_broker])
    everyone = tuple(cluster.broker_ids)

    def consistent() -> bool:
        return all(
            i is not None and i.offline == () and list(i.replicas) == replicas
            for p, replicas in assignment.items()
            for i in infos(everyone, p).values()
        )

    wait_for(
        consistent,
        cluster.deadline(20),
        lambda: f"inconsistent metadata after broker startup: {infos(everyone, 0)} {infos(everyone, 1)}",
    )


@pytest.mark.behaviour("FAILOVER-3", "BROKER-2", "BROKER-4")
def test_restarted_brokers_learn_a_leaderless_partition(cluster_factory: ClusterFactory) -> None:
    """ControllerIntegrationTest ``testMetadataPropagationForOfflineReplicas`` (3 brokers,
    ``topic1`` = [a non-controller broker]; the third broker, the replica's broker and the
    controller shut down in that order; the controller's broker, then the third, start again and
    each must answer ``topic1-0`` with leader -1 and non-empty replicas, ISR and offline replicas).
    Here controller 3, replica broker 1, other 2. Kafka's values behind the test's non-empty
    checks: replicas [1], ISR [1] (the last ISR member is kept, BROKER-4), offline replicas [1]."""
    cluster = _placed(cluster_factory, 3, 3)
    replica, other, ctl = 1, 2, 3
    create_topic(cluster, "topic1", {0: [replica]})
    for bid in (other, replica, ctl):
        cluster.stop(bid)
        cluster.wait_unregistered(bid)
    for bid in (ctl, other):
        cluster.start([bid])
        _wait_info(
            cluster,
            (bid,),
            ("topic1", 0),
            PartitionInfo(-1, (replica,), (replica,), (replica,)),
            f"broker {bid} started again",
        )
    # Kafka's writes behind those answers: the replica's failure takes it offline (leader -1, ISR
    # kept, +1); the restarted controller's replica state machine startup does so again (+1, new
    # controller epoch: doRemoveReplicasFromIsr writes whenever the ISR holds the replica); no
    # election can succeed, on failover nor on the other broker's startup.
    settle(cluster, other)
    pinned(
        cluster,
        "topic1",
        0,
        [Step(replica, 0, (replica,), 1, 0), Step(-1, 1, (replica,), 1, 1), Step(-1, 2, (replica,), 2, 2)],
        "every broker down, then the controller's and the other broker restarted",
    )


@pytest.mark.behaviour("TOPIC-5")
def test_partition_expansion_with_an_offline_replica(cluster_factory: ClusterFactory) -> None:
    """ControllerIntegrationTest ``testTopicPartitionExpansionWithOfflineReplica`` (2 brokers,
    ``t`` = {0: [other, controller]}, the other broker shut down, the topic znode rewritten with
    ``t-1`` = [other, controller]): ``t-1`` is created led by the controller at leader epoch 0 in
    the first controller epoch, and the controller's broker knows it."""
    ctl, other = 2, 1
    cluster = _placed(cluster_factory, ctl, 2)
    ce = (cluster.controller_epoch() or (0, 0))[0]
    create_topic(cluster, "t", {0: [other, ctl]})
    cluster.stop(other)
    cluster.wait_unregistered(other)
    cluster.zk.set("/brokers/topics/t", admin.topic_znode({0: [other, ctl], 1: [other, ctl]}))
    st = wait_state(
        cluster,
        "t",
        1,
        _is(ce, ctl, 0),
        f"t-1 created led by {ctl} at leader epoch 0",
    )
    assert st["isr"] == [ctl], f"t-1 ISR {st['isr']}; Kafka: the live replicas [{ctl}]"
    wait_for(
        lambda: (_partition_info(cluster, ctl, "t", 1) or PartitionInfo(-1, (), (), ())).leader == ctl,
        cluster.deadline(15),
        lambda: f"broker {ctl} metadata for t-1: {_partition_info(cluster, ctl, 't', 1)}",
    )


@pytest.mark.behaviour("PREFERRED-1")
def test_preferred_election_with_the_preferred_replica_offline(cluster_factory: ClusterFactory) -> None:
    """ControllerIntegrationTest ``testPreferredReplicaLeaderElectionWithOfflinePreferredReplica``
    (2 brokers, ``t`` = [other, controller], the other broker shut down, then a preferred election
    for ``t-0``): the controller gives up — ``/admin/preferred_replica_election`` is deleted — and
    ``t-0`` stays led by the controller at leader epoch 1 (the shutdown's election)."""
    ctl, other = 2, 1
    cluster = _placed(cluster_factory, ctl, 2)
    ce = (cluster.controller_epoch() or (0, 0))[0]
    create_topic(cluster, "t", {0: [other, ctl]})
    cluster.stop(other)
    cluster.wait_unregistered(other)
    admin.preferred_election_zk(cluster, [("t", 0)])
    wait_for(
        lambda: not cluster.zk.exists("/admin/preferred_replica_election"),
        cluster.deadline(15),
        "preferred replica election path removed after giving up",
    )
    settle(cluster, ctl)
    pinned(
        cluster,
        "t",
        0,
        [Step(other, 0, (other, ctl), ce, 0), Step(ctl, 1, (ctl,), ce, 1)],
        f"preferred election with preferred replica {other} offline",
    )


#: ``KeeperException.Code.BADVERSION``: a multi's ``/controller_epoch`` check failed.
BAD_VERSION = -103
#: The broker id the check registers as controller (Kafka: ``servers.size``, no such broker).
FAKE_CONTROLLER = 2


def _move_controller_away(cluster: Cluster) -> None:
    """Kafka's ``zkClient.deleteController(epochZkVersion)`` then
    ``registerControllerAndIncrementControllerEpoch(servers.size)`` (KafkaZkClient.scala@2.5.1):
    two multis, each fenced on ``/controller_epoch``'s version; ``/controller`` names a broker
    that does not exist and the epoch is incremented."""
    data, stat = cluster.zk.get("/controller_epoch")
    epoch, version = int(data), stat.version
    delete = cluster.zk.transaction()
    delete.check("/controller_epoch", version)
    delete.delete("/controller")
    assert all(r is True for r in delete.commit()), "deleteController failed"
    register = cluster.zk.transaction()
    register.create(
        "/controller",
        admin.encode({"version": 1, "brokerid": FAKE_CONTROLLER, "timestamp": "0"}),
        ephemeral=True,
    )
    register.set_data("/controller_epoch", str(epoch + 1).encode(), version=version)
    results = register.commit()
    assert not any(isinstance(r, Exception) for r in results), f"registerController failed: {results}"


#: The controller event each action triggers (KafkaController.scala@2.5.1 L2068-2101).
EVENT = {
    "topic-creation": "TopicChange",
    "topic-deletion": "TopicDeletion",
    "preferred-replica-election": "ReplicaLeaderElection",
    "partition-reassignment": "ZkPartitionReassignment",
}


def _action(cluster: Cluster, action: str) -> None:
    if action == "topic-creation":
        admin.create_topic_zk(cluster, "t", {0: [1]})
    elif action == "topic-deletion":
        admin.delete_topic_zk(cluster, "t")
    elif action == "preferred-replica-election":
        admin.preferred_election_zk(cluster, [("t", 0)])
    else:
        admin.reassign_zk(cluster, {("t", 0): [1]})


@pytest.mark.behaviour("FENCE-1")
@pytest.mark.parametrize(
    "action", ["topic-creation", "topic-deletion", "preferred-replica-election", "partition-reassignment"]
)
def test_controller_moved_while_an_event_is_queued_resigns(
    cluster_factory: ClusterFactory, action: str
) -> None:
    """ControllerIntegrationTest ``testControllerMoveOnTopicCreation``, ``…OnTopicDeletion``,
    ``…OnPreferredReplicaElection``, ``…OnPartitionReassignment`` (``testControllerMove``: one
    broker; its event thread held; the action done; ``/controller`` deleted and re-registered for
    another id with the epoch incremented; the event thread released): the controller handles the
    action's event first, its fenced write fails on ``/controller_epoch``'s version, and it logs
    "Controller moved to another broker when processing <the action's event>" at INFO with a
    ControllerMovedException (KafkaController.scala@2.5.1 L1866-1869) and resigns. Here the event
    thread is held by pausing the node (SIGSTOP; a 20 s session so it stays registered); besides
    Kafka's log assertion, the failed fenced multi and the absence of any landed write are read
    from the transaction log."""
    cluster = cluster_factory(1, node_overrides={1: {"zookeeper.session.timeout.ms": "20000"}})
    assert cluster.wait_controller() == 1, cluster.summary()
    # the node's events so far must be handled before it is paused: its own /controller creation
    # queued a ControllerChange, and pausing it half-way (its /controller read not yet sent) would
    # make it read the moved /controller first, resign, and skip the action's event as inactive
    # (one run in 20 did). A topic created and delivered now is handled after all of them.
    if action == "topic-creation":
        settle(cluster, 1)
    else:
        create_topic(cluster, "t", {0: [1]})
    session = cluster.controller_session(1)
    cluster.pause(1)
    try:
        _action(cluster, action)
        _move_controller_away(cluster)
        mark = len(cluster.history())
    finally:
        cluster.resume(1)
    moved = f"Controller moved to another broker when processing {EVENT[action]}"
    wait_for(
        lambda: moved in cluster.log_tail(1, lines=400),
        cluster.deadline(15),
        lambda: f"INFO '{moved} …' in broker 1's log:\n{cluster.log_tail(1)}",
    )
    later = [r for r in cluster.history()[mark:] if r.session_id == session]
    rejected = [r for r in later if r.op == "multi" and r.failed and r.error_codes[0] == BAD_VERSION]
    assert rejected, (
        f"no fenced write of controller 1 rejected on /controller_epoch after the move ({action}):\n"
        f"{fmt(later)}"
    )
    landed = [
        r
        for r in later
        if not r.failed
        and r.op not in ("createSession", "closeSession")
        and not any((o.path or "").startswith("/brokers/ids") for o in (r.ops or (r.txn,)))
    ]
    assert not landed, f"writes of the moved controller landed ({action}):\n{fmt(landed)}"
    assert cluster.controller_id() == FAKE_CONTROLLER, cluster.summary()


# --- DeleteTopicTest ----------------------------------------------------------------------------

#: DeleteTopicTest's ``createTestTopicAndCluster``: 3 brokers, controlled shutdown disabled.
NO_CONTROLLED_SHUTDOWN = {"controlled.shutdown.enable": "false"}


def _topic_dirs(cluster: Cluster, bid: int, topic: str) -> set[tuple[int, str]]:
    """(partition, kind) of every directory of ``topic`` in ``bid``'s log dirs (live, -delete, -future)."""
    return {
        (p.partition, p.kind)
        for scan in scan_log_dirs(list(cluster.nodes[bid].log_dirs))
        for p in scan.partitions
        if p.topic == topic
    }


def _wait_logs(cluster: Cluster, topic: str, partition: int, bids: tuple[int, ...]) -> None:
    """Every broker of ``bids`` has the partition's log (DeleteTopicTest: "Replicas ... created")."""
    wait_for(
        lambda: all((partition, "live") in _topic_dirs(cluster, b, topic) for b in bids),
        cluster.deadline(15),
        lambda: f"{topic}-{partition} log on {bids}: {[_topic_dirs(cluster, b, topic) for b in bids]}",
    )


def _verify_topic_deletion(cluster: Cluster, topic: str, partitions: int) -> None:
    """TestUtils.verifyTopicDeletion@2.5.1: the marker, then the topic znode, are gone and no broker
    keeps a directory of the topic's first ``partitions`` partitions (neither live nor -delete)."""
    wait_for(
        lambda: not cluster.zk.exists(f"/admin/delete_topics/{topic}"),
        cluster.deadline(30),
        f"admin path /admin/delete_topics/{topic} deleted",
    )
    wait_for(
        lambda: not cluster.zk.exists(f"/brokers/topics/{topic}"),
        cluster.deadline(10),
        f"topic path /brokers/topics/{topic} deleted after the admin path",
    )

    def left() -> dict[int, set[tuple[int, str]]]:
        return {
            b: {d for d in _topic_dirs(cluster, b, topic) if d[0] < partitions} for b in cluster.broker_ids
        }

    wait_for(
        lambda: not any(left().values()),
        cluster.deadline(15),
        lambda: f"logs of {topic} removed from every broker: left {left()}",
    )


def _deletion_cluster(cluster_factory: ClusterFactory, n: int = 3) -> Cluster:
    """Kafka's ``createServer`` starts brokers one by one: broker 0 (here 1) is the controller."""
    return _placed(cluster_factory, 1, n, overrides=NO_CONTROLLED_SHUTDOWN)


@pytest.mark.behaviour("DELETE-3", "FAILOVER-2")
def test_deletion_halted_across_a_controller_failover_resumes(cluster_factory: ClusterFactory) -> None:
    """DeleteTopicTest ``testResumeDeleteTopicOnControllerFailover`` (``test`` = [0, 1, 2], leader
    and controller 0; the follower that is neither shut down, deletion started, the controller shut
    down): the deletion stays halted (``/admin/delete_topics/test`` remains) under the new
    controller; once the old controller and the follower start again it completes. Here [1, 2, 3],
    controller and leader 1, follower 3, new controller 2."""
    cluster = _deletion_cluster(cluster_factory)
    create_topic(cluster, "test", {0: [1, 2, 3]})
    _wait_logs(cluster, "test", 0, (1, 2, 3))
    cluster.stop(3)
    cluster.wait_unregistered(3)
    admin.delete_topic_zk(cluster, "test")
    cluster.stop(1)
    assert cluster.wait_controller(not_in=[1]) == 2, cluster.summary()
    settle(cluster, 2)  # the new controller has handled its failover (and the queued deletion)
    assert cluster.zk.exists("/admin/delete_topics/test"), (
        "admin path /admin/delete_topics/test deleted even when a replica is down"
    )
    assert cluster.zk.exists("/brokers/topics/test"), "topic deleted even when a replica is down"
    cluster.start([1, 3])
    _verify_topic_deletion(cluster, "test", 1)


@pytest.mark.behaviour("DELETE-1", "DELETE-2", "FAILOVER-3")
def test_partially_deleted_topic_is_deleted_by_the_next_controller(cluster_factory: ClusterFactory) -> None:
    """DeleteTopicTest ``testDeletingPartiallyDeletedTopic`` (``test`` = {0: [0, 1, 2],
    1: [0, 1, 2]}; every broker shut down; ``/brokers/topics/test/partitions/0`` deleted
    recursively, as a controller that crashed mid-deletion leaves it; the topic marked for
    deletion; every broker started): the deletion of both partitions completes."""
    cluster = _deletion_cluster(cluster_factory)
    create_topic(cluster, "test", {0: [1, 2, 3], 1: [1, 2, 3]})
    for p in (0, 1):
        _wait_logs(cluster, "test", p, (1, 2, 3))
    for bid in (1, 2, 3):
        cluster.stop(bid)
        cluster.wait_unregistered(bid)
    cluster.zk.delete("/brokers/topics/test/partitions/0", recursive=True)
    admin.delete_topic_zk(cluster, "test")
    cluster.start([1, 2, 3])
    cluster.wait_controller()
    _verify_topic_deletion(cluster, "test", 2)


@pytest.mark.behaviour("REASSIGN-14", "DELETE-3")
def test_reassignment_of_a_topic_being_deleted_fails(cluster_factory: ClusterFactory) -> None:
    """DeleteTopicTest ``testPartitionReassignmentDuringDeleteTopic`` (4 brokers, ``test`` =
    [0, 1, 2]; a follower shut down; deletion started, then ``test-0`` reassigned to [1, 2, 3]):
    the reassignment fails — it leaves ``/admin/reassign_partitions`` and the assignment stays
    [0, 1, 2] (``checkIfPartitionReassignmentSucceeded`` = ReassignmentFailed) — and the deletion
    completes once the follower is back. Here [1, 2, 3] on brokers 1-4, follower 3, target
    [2, 3, 4]."""
    cluster = _placed(cluster_factory, 1, 4, overrides=NO_CONTROLLED_SHUTDOWN)
    create_topic(cluster, "test", {0: [1, 2, 3]})
    _wait_logs(cluster, "test", 0, (1, 2, 3))
    cluster.stop(3)
    cluster.wait_unregistered(3)
    admin.delete_topic_zk(cluster, "test")
    admin.reassign_zk(cluster, {("test", 0): [2, 3, 4]})

    def in_progress() -> bool:
        pending = cluster.get_json("/admin/reassign_partitions")
        return bool(pending) and any(
            (p["topic"], p["partition"]) == ("test", 0) for p in pending.get("partitions", [])
        )

    wait_for(lambda: not in_progress(), cluster.deadline(15), "reassignment of test-0 no longer pending")
    assigned = _topic(cluster, "test")["partitions"]["0"]
    assert assigned == [1, 2, 3], f"partition should not be reassigned to [2, 3, 4]: {assigned}"
    cluster.start([3])
    _verify_topic_deletion(cluster, "test", 1)


@pytest.mark.behaviour("TOPIC-5", "DELETE-3", "FAILOVER-2")
def test_partitions_added_to_a_topic_being_deleted_are_undone(cluster_factory: ClusterFactory) -> None:
    """DeleteTopicTest ``testIncreasePartitionCountDuringDeleteTopic`` (4 brokers, ``test`` =
    [0, 1, 2]; a follower shut down; deletion started; once every live replica's deletion was
    tried, the partition count raised to 2 (``TopicCommand --alter``: the topic znode rewritten
    with a partition 1); the controller shut down and another one elected; the follower and the
    old controller started): the deletion of both partitions completes. Black-box, "every live
    replica's deletion tried" is their answered StopReplica(delete=true). The controller's answer
    to the partition addition is TOPIC-5's: a topic queued for deletion gets its znode restored
    (``processPartitionModifications`` → ``restorePartitionReplicaAssignment``,
    KafkaController.scala@2.5.1), so ``test-1`` is never created. Here [1, 2, 3] on brokers 1-4,
    controller and leader 1, follower 3, partition 1 = [2, 3, 4]."""
    cluster = _placed(cluster_factory, 1, 4, overrides=NO_CONTROLLED_SHUTDOWN)
    create_topic(cluster, "test", {0: [1, 2, 3]})
    _wait_logs(cluster, "test", 0, (1, 2, 3))
    cluster.stop(3)
    cluster.wait_unregistered(3)
    mark = journal(cluster).mark()
    admin.delete_topic_zk(cluster, "test")

    def deletion_tried() -> bool:
        return all(
            any(
                r.delete_partitions and r.error_code is not None
                for r in requests_for(cluster, "StopReplica", dest=b, topic="test", since=mark)
            )
            for b in (1, 2)
        )

    wait_for(
        deletion_tried,
        cluster.deadline(15),
        lambda: f"StopReplica(delete=true) for test answered by 1 and 2:\n{journal(cluster).dump(mark)}",
    )
    cluster.zk.set("/brokers/topics/test", admin.topic_znode({0: [1, 2, 3], 1: [2, 3, 4]}))
    wait_for(
        lambda: _topic(cluster, "test")["partitions"] == {"0": [1, 2, 3]},
        cluster.deadline(15),
        lambda: f"topic znode restored to {{0: [1, 2, 3]}} (TOPIC-5): {_topic(cluster, 'test')}",
    )
    settle(cluster, 2)
    assert not cluster.zk.exists("/brokers/topics/test/partitions/1"), (
        "partition 1 of a topic queued for deletion was created"
    )
    cluster.stop(1)
    assert cluster.wait_controller(not_in=[1]) != 1, cluster.summary()
    cluster.start([3, 1])
    _verify_topic_deletion(cluster, "test", 2)


@pytest.mark.behaviour("TOPIC-5", "DELETE-3")
def test_deletion_during_partition_addition_removes_the_new_partition(
    cluster_factory: ClusterFactory,
) -> None:
    """DeleteTopicTest ``testDeleteTopicDuringAddPartition`` (``test`` = [0, 1, 2]; a follower shut
    down and unregistered; partition 1 = [0, 1, 2] added; deletion started; the follower started):
    the deletion completes and no broker keeps a log of ``test-1``. Here follower 3."""
    cluster = _deletion_cluster(cluster_factory)
    create_topic(cluster, "test", {0: [1, 2, 3]})
    _wait_logs(cluster, "test", 0, (1, 2, 3))
    cluster.stop(3)
    cluster.wait_unregistered(3)
    cluster.zk.set("/brokers/topics/test", admin.topic_znode({0: [1, 2, 3], 1: [1, 2, 3]}))
    admin.delete_topic_zk(cluster, "test")
    cluster.start([3])
    _verify_topic_deletion(cluster, "test", 2)


@pytest.mark.behaviour("DELETE-2", "TOPIC-2")
def test_topic_recreated_after_deletion(cluster_factory: ClusterFactory) -> None:
    """DeleteTopicTest ``testRecreateTopicAfterDeletion`` (``test`` = [0, 1, 2] deleted, then
    created again on the same replicas): every replica's log is created again. The new topic's
    partition must also be a fresh one (leader epoch 0, zkVersion 0: Kafka creates it anew)."""
    cluster = _deletion_cluster(cluster_factory)
    create_topic(cluster, "test", {0: [1, 2, 3]})
    _wait_logs(cluster, "test", 0, (1, 2, 3))
    admin.delete_topic_zk(cluster, "test")
    _verify_topic_deletion(cluster, "test", 1)
    create_topic(cluster, "test", {0: [1, 2, 3]})
    _wait_logs(cluster, "test", 0, (1, 2, 3))
    got = cluster.partition_state_stat("test", 0)
    assert got is not None, "test-0 has no state after re-creation"
    st, version = got
    assert (st["leader"], st["leader_epoch"], st["isr"], version) == (1, 0, [1, 2, 3], 0), (
        f"re-created test-0: {st} zkVersion {version};"
        " Kafka: leader 1, leader epoch 0, ISR [1, 2, 3], zkVersion 0"
    )


# --- UncleanLeaderElectionTest ------------------------------------------------------------------


@pytest.mark.behaviour("ELECT-5", "ELECT-1", "FAILOVER-3")
@pytest.mark.parametrize(
    ("broker_unclean", "topic_unclean"),
    [("true", None), ("false", "true"), ("true", "false")],
    ids=["enabled", "enabled-by-topic-override", "disabled-by-topic-override"],
)
@pytest.mark.combined_only(NO_CONTROLLER_ENDPOINT)  # its pinned states come from controlled shutdowns
def test_unclean_election_after_the_whole_cluster_went_down(
    cluster_factory: ClusterFactory, broker_unclean: str, topic_unclean: str | None
) -> None:
    """UncleanLeaderElectionTest ``testUncleanLeaderElectionEnabled``, ``…EnabledByTopicOverride``
    and ``…DisabledByTopicOverride`` (2 brokers, controlled shutdown on; ``topic`` = [0, 1], the
    brokers' ``unclean.leader.election.enable``, and the topic's overriding it where given): the
    follower shuts down, then the leader (the last broker: no controller is left), then the
    follower starts again alone and becomes the controller. Enabled: it is elected leader
    (uncleanly). Disabled: the partition stays leaderless (-1); the old leader starts and leads
    again; once the follower is back in the ISR (seen in its own metadata), the old leader shuts
    down and leadership moves cleanly to the follower. The produce/consume and metric assertions
    of the Kafka test are not ported (the reference nodes implement no Produce). Here [1, 2],
    leader and first controller 1, follower 2.

    Kafka's states behind the test's leader checks are pinned (controller epochs 1, then 2):
    created (1, 0, [1, 2]); the follower's controlled shutdown removes it from the ISR (1, 1, [1]);
    the leader's controlled shutdown cannot move anything (no write); the new controller's replica
    state machine startup takes dead 1 offline (-1, 2, [1]) (FAILOVER-2); enabled: the offline
    election elects 2 with ISR [2] (2, 3, [2]) (ELECT-1). Disabled: 1's return elects it (1, 3,
    [1]), its ISR expansion (1, 3, [1, 2]), its controlled shutdown moves leadership (2, 4, [2])."""
    leader, follower = 1, 2
    cluster = _placed(
        cluster_factory, leader, 2, overrides={"unclean.leader.election.enable": broker_unclean}
    )
    config = {} if topic_unclean is None else {"unclean.leader.election.enable": topic_unclean}
    create_topic(cluster, "topic", {0: [leader, follower]}, config=config)
    wait_state(cluster, "topic", 0, lambda s: s["leader"] == leader, f"leader {leader}")
    cluster.stop(follower)
    cluster.wait_unregistered(follower)
    cluster.stop(leader)
    cluster.wait_unregistered(leader)
    cluster.start([follower])
    assert cluster.wait_controller() == follower, cluster.summary()
    down = [
        Step(leader, 0, (leader, follower), 1, 0),
        Step(leader, 1, (leader,), 1, 1),
        Step(-1, 2, (leader,), 2, 2),
    ]
    if (topic_unclean or broker_unclean) == "true":
        wait_state(
            cluster, "topic", 0, lambda s: s["leader"] == follower, f"unclean election of follower {follower}"
        )
        settle(cluster, follower)
        pinned(cluster, "topic", 0, [*down, Step(follower, 3, (follower,), 2, 3)], "unclean election")
        return
    wait_state(cluster, "topic", 0, lambda s: s["leader"] == -1, "no leader: unclean election disabled")
    settle(cluster, follower)
    pinned(cluster, "topic", 0, down, f"no unclean election to non-ISR follower {follower}")
    cluster.start([leader])
    wait_state(cluster, "topic", 0, lambda s: s["leader"] == leader, f"old leader {leader} elected again")
    wait_for(
        lambda: (
            follower in (_partition_info(cluster, follower, "topic", 0) or PartitionInfo(-1, (), (), ())).isr
        ),
        cluster.deadline(30),
        lambda: (
            f"follower {follower} in the ISR of its metadata:"
            f" {_partition_info(cluster, follower, 'topic', 0)}"
        ),
    )
    cluster.stop(leader)
    wait_state(
        cluster, "topic", 0, lambda s: s["leader"] == follower, f"clean transition to ISR follower {follower}"
    )
    settle(cluster, follower)
    back = [
        Step(leader, 3, (leader,), 2, 3),
        Step(leader, 3, (leader, follower), 2, 4),
        Step(follower, 4, (follower,), 2, 5),
    ]
    pinned(cluster, "topic", 0, [*down, *back], f"{leader} back, {follower} in the ISR, {leader} shut down")


# --- ReassignPartitionsClusterTest --------------------------------------------------------------


@pytest.mark.behaviour("REASSIGN-15", "REASSIGN-14")
def test_reassignment_written_while_every_broker_is_down_runs_at_startup(
    cluster_factory: ClusterFactory,
) -> None:
    """ReassignPartitionsClusterTest ``shouldTriggerReassignmentOnControllerStartup`` (3 brokers,
    ``orders`` = {0: [0, 1], 1: [1, 2]}; every broker shut down; ``/admin/reassign_partitions``
    written with orders-0 → [2, 1] (moves), orders-1 → [1, 2] (stays) and customers-0 → [1, 2]
    (no such topic); every broker started): the reassignment completes (the znode is removed),
    orders-0 = [2, 1], orders-1 = [1, 2], and no ``customers`` topic exists. Here ids + 1."""
    cluster = _placed(cluster_factory, 1, 3)
    create_topic(cluster, "orders", {0: [1, 2], 1: [2, 3]})
    for bid in (1, 2, 3):
        cluster.stop(bid)
        cluster.wait_unregistered(bid)
    admin.reassign_zk(cluster, {("orders", 0): [3, 2], ("orders", 1): [2, 3], ("customers", 0): [2, 3]})
    cluster.start([1, 2, 3])
    wait_for(
        lambda: not cluster.zk.exists("/admin/reassign_partitions"),
        cluster.deadline(30),
        lambda: (
            f"reassignment completed at controller startup: {cluster.get_json('/admin/reassign_partitions')}"
        ),
    )
    orders = _topic(cluster, "orders")
    assert orders["partitions"] == {"0": [3, 2], "1": [2, 3]}, f"orders after the reassignment: {orders}"
    assert not cluster.zk.exists("/brokers/topics/customers"), "a reassignment created topic customers"
