"""Transcript tests of the controller core against the in-memory ZooKeeper: events in, ZooKeeper
writes and effects out (spec §2, §5, §6, §8, §11)."""

from __future__ import annotations

import pytest

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller.effects import (
    AddBroker,
    BecameController,
    CancelScheduled,
    LeaderAndIsrRequest,
    Resigned,
    ScheduleEvent,
    SendRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from reference_controller.controller.events import (
    ControlledShutdown,
    ControlledShutdownResult,
    TopicChange,
    TopicDeletionStopReplicaResponseReceived,
    ZkReconnected,
)
from reference_controller.controller.ports import CreateOp, DeleteOp, SetDataOp
from tests.unit.controller.harness import (
    Cluster,
    Node,
    leader_and_isr_requests,
    stop_replica_requests,
    update_metadata_requests,
)

pytestmark = pytest.mark.unit


def is_active(node: Node) -> bool:
    return node.controller.is_active


def test_first_election_gives_epoch_1_at_data_version_1() -> None:
    cluster = Cluster()
    cluster.start(1)
    found = cluster.zk.get(zd.CONTROLLER_EPOCH)
    assert found is not None
    assert found[0] == b"1"
    assert found[1].version == 1
    controller = cluster.zk.get(zd.CONTROLLER)
    assert controller is not None
    assert zd.decode_controller(controller[0]) == 1
    assert controller[1].ephemeral_owner == cluster.nodes[1].client.session
    assert cluster.nodes[1].controller.epoch == 1
    assert BecameController(1, 1) in cluster.nodes[1].effects


def test_loser_of_election_never_sets_controller_epoch() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    assert cluster.controller().broker_id == 1
    sets = [
        t
        for t in cluster.zk.writes(cluster.nodes[2].client.session, ok_only=False)
        if any(isinstance(op, SetDataOp) and op.path == zd.CONTROLLER_EPOCH for op in t.ops)
    ]
    assert sets == []
    assert not cluster.nodes[2].controller.is_active
    assert cluster.nodes[2].controller.active_controller_id == 1


def test_controller_move_increments_controller_epoch() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.kill(1)
    assert cluster.controller().controller.epoch == 2
    cluster.kill(cluster.controller().broker_id)
    assert cluster.controller().controller.epoch == 3
    found = cluster.zk.get(zd.CONTROLLER_EPOCH)
    assert found is not None
    assert found[0] == b"3"


def test_failover_order_of_zookeeper_operations_and_requests() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [1, 2]})
    session2 = cluster.nodes[2].client.session
    cluster.admin.create(
        CreateOp(zd.isr_change_path("isr_change_"), zd.encode_isr_change([]), sequential=True)
    )
    reads_before = len(cluster.zk.reads)
    cluster.kill(1)
    node2 = cluster.nodes[2]
    assert node2.controller.is_active
    reads = [(kind, path) for s, kind, path in cluster.zk.reads[reads_before:] if s == session2]
    # registration (exists for the node handlers), then deletions, then the context
    order = [
        ("exists", zd.PREFERRED_REPLICA_ELECTION),
        ("exists", zd.REASSIGN_PARTITIONS),
        ("getChildren", zd.LOG_DIR_EVENT_NOTIFICATION),
        ("getChildren", zd.ISR_CHANGE_NOTIFICATION),
        ("getChildren", zd.BROKER_IDS),
        ("getChildren", zd.BROKER_TOPICS),
        ("getData", zd.topic_path("foo")),
        ("getData", zd.partition_state_path("foo", 0)),
        ("getChildren", zd.DELETE_TOPICS),
    ]
    positions = [reads.index(item) for item in order]
    assert positions == sorted(positions)
    writes = cluster.zk.writes(session2)
    deleted = [op.path for t in writes for op in t.ops if isinstance(op, DeleteOp)]
    assert deleted[0].startswith(zd.ISR_CHANGE_NOTIFICATION + "/isr_change_")
    # effects: BecameController, channel startup, UpdateMetadata(broker list), replica SM startup, ...
    effects = node2.effects[node2.effects.index(BecameController(2, 2)) :]
    assert isinstance(effects[1], AddBroker)
    first_request = next(e for e in effects if isinstance(e, SendRequest))
    assert isinstance(first_request.request, UpdateMetadataRequest)
    assert first_request.request.partition_states == ()
    assert ScheduleEvent("auto-leader-rebalance-task", 5000, effects[-1].event) == effects[-1]  # type: ignore[union-attr]


def test_topic_creation_znodes_and_is_new_leader_and_isr_to_the_isr() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    node = cluster.controller()
    before = len(cluster.zk.history)
    effects_before = len(node.effects)
    cluster.create_topic("foo", {0: [2, 3], 1: [3, 1]})
    writes = [t for t in cluster.zk.history[before:] if t.session_id == node.client.session]
    created = [op.path for t in writes for op in t.ops if isinstance(op, CreateOp)]
    assert created == [
        zd.topic_partitions_path("foo"),
        zd.partition_path("foo", 0),
        zd.partition_path("foo", 1),
        zd.partition_state_path("foo", 0),
        zd.partition_state_path("foo", 1),
    ]
    assert all(t.multi and len(t.ops) == 2 for t in writes)  # multi[check, op]
    found = cluster.zk.get(zd.partition_state_path("foo", 0))
    assert found is not None
    assert found[0] == b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3]}'
    assert found[1].version == 0
    lair = leader_and_isr_requests(node.effects[effects_before:])
    assert sorted(r.broker_id for r in lair) == [1, 2, 3]
    to_broker1 = next(r for r in lair if r.broker_id == 1)
    assert [(s.partition, s.is_new) for s in to_broker1.partition_states] == [(1, True)]
    um = update_metadata_requests(node.effects[effects_before:])
    assert sorted(r.broker_id for r in um) == [1, 2, 3]


def test_topic_with_no_live_replica_creates_nothing_until_a_replica_registers() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.create_topic("foo", {0: [2]})
    assert cluster.zk.get(zd.topic_partitions_path("foo")) is None
    cluster.start(2)
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (2, (2,), 0)


def test_leader_death_with_surviving_controller_bumps_leader_epoch_once() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("foo", {0: [2, 3]})
    cluster.kill(2)
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (3, (3,), 1)


def test_last_isr_member_death_sets_no_leader_and_keeps_isr() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [2]})
    cluster.kill(2)
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (-1, (2,), 1)


@pytest.mark.parametrize("controller_on", ["C", "B"])
def test_seed_002_scenario_same_outcome_for_both_controller_placements(controller_on: str) -> None:
    a, b, c = 1, 2, 3
    cluster = Cluster()
    first = c if controller_on == "C" else b
    cluster.start(first)
    cluster.start(*[x for x in (a, b, c) if x != first])
    assert cluster.controller().broker_id == first
    cluster.create_topic("foo", {0: [a, b]})
    cluster.kill(a)
    cluster.kill(b)
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (-1, (b,), 2)
    cluster.start(b)
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (b, (b,), 3)


def test_reassignment_123_to_456_ends_at_leader_epoch_5() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3, 4, 5, 6)
    cluster.create_topic("foo", {0: [1, 2, 3]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [4, 5, 6]}))
    )
    cluster.run()
    during = cluster.topic_assignment("foo")[0]
    assert during == zd.ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert cluster.state("foo", 0)[0].leader_epoch == 1  # A1
    cluster.expand_isr("foo", 0, [1, 2, 3, 4, 5, 6])
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (4, (4, 5, 6), 5)
    assert cluster.topic_assignment("foo")[0] == zd.ReplicaAssignment((4, 5, 6))
    assert cluster.zk.get(zd.REASSIGN_PARTITIONS) is None
    node = cluster.controller()
    deletes = stop_replica_requests(node.effects)
    assert {(r.broker_id, r.delete_partitions) for r in deletes} >= {(1, True), (2, True), (3, True)}
    # the watch was re-armed: a new znode triggers again
    assert zd.REASSIGN_PARTITIONS in node.client.data_watches


def test_reassignment_single_replica_ends_at_leader_epoch_3() -> None:
    cluster = Cluster()
    cluster.start(0, 1)
    cluster.create_topic("foo", {0: [0]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [1]}))
    )
    cluster.run()
    cluster.expand_isr("foo", 0, [0, 1])
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (1, (1,), 3)


def test_reassignment_to_unregistered_broker_waits_and_resumes_on_registration() -> None:
    cluster = Cluster()
    cluster.start(0)
    cluster.create_topic("foo", {0: [0]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [1]}))
    )
    cluster.run()
    assert cluster.topic_assignment("foo")[0].adding == (1,)
    cluster.start(1)
    cluster.expand_isr("foo", 0, [0, 1])
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (1, (1,), 4)


def test_reassignment_of_unknown_partition_is_removed_from_znode() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("nope", 0): [1]}))
    )
    cluster.run()
    assert cluster.zk.get(zd.REASSIGN_PARTITIONS) is None


def test_reassignment_with_invalid_json_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.admin.create(CreateOp(zd.REASSIGN_PARTITIONS, b"{not json"))
    cluster.run()
    assert "Ignoring partition reassignment due to invalid json" in caplog.text
    assert cluster.controller().controller.is_active


def test_failover_mid_reassignment_completes_from_topic_znode() -> None:
    cluster = Cluster()
    cluster.start(9, 1, 2)
    cluster.create_topic("foo", {0: [1]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [2]}))
    )
    cluster.run()
    cluster.kill(9)
    cluster.expand_isr("foo", 0, [1, 2])
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr) == (2, (2,))
    assert cluster.topic_assignment("foo")[0] == zd.ReplicaAssignment((2,))


def test_topic_deletion_removes_znodes_after_stop_replica_responses() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [1, 2]})
    node = cluster.controller()
    mark = len(node.effects)
    cluster.admin.create(CreateOp(zd.delete_topic_path("foo"), None))
    cluster.run()
    um = update_metadata_requests(node.effects[mark:])
    assert any(s.leader == -2 for r in um for s in r.partition_states)
    deletes = [r for r in stop_replica_requests(node.effects[mark:]) if r.delete_partitions]
    assert sorted(r.broker_id for r in deletes) == [1, 2]
    for r in deletes:
        cluster.process(
            node, TopicDeletionStopReplicaResponseReceived(r.broker_id, 0, ((TopicPartition("foo", 0), 0),))
        )
    cluster.run()
    assert cluster.zk.get(zd.topic_path("foo")) is None
    assert cluster.zk.get(zd.config_topic_path("foo")) is None
    assert cluster.zk.get(zd.delete_topic_path("foo")) is None


def test_delete_topic_disabled_removes_only_the_marker() -> None:
    cluster = Cluster(False, **{"delete.topic.enable": "false"})
    cluster.start(1)
    cluster.create_topic("foo", {0: [1]})
    cluster.admin.create(CreateOp(zd.delete_topic_path("foo"), None))
    cluster.run()
    assert cluster.zk.get(zd.delete_topic_path("foo")) is None
    assert cluster.zk.get(zd.topic_path("foo")) is not None


def test_controlled_shutdown_moves_leadership_and_shrinks_isr() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("foo", {0: [2, 3], 1: [3, 2]})
    node = cluster.controller()
    replies: list[ControlledShutdownResult] = []
    epoch = node.controller.context.live_broker_epochs[2]
    cluster.process(node, ControlledShutdown(2, epoch, replies.append))
    assert replies == [ControlledShutdownResult(0, ())]
    assert cluster.state("foo", 0)[0].leader == 3
    assert cluster.state("foo", 1)[0].isr == (3,)
    cluster.process(node, ControlledShutdown(2, epoch - 1, replies.append))
    assert replies[-1].error_code == 77
    cluster.process(node, ControlledShutdown(7, -1, replies.append))
    assert replies[-1].error_code == 8
    other = cluster.nodes[3]
    cluster.process(other, ControlledShutdown(2, epoch, replies.append))
    assert replies[-1].error_code == 11


def test_preferred_election_via_zookeeper_deletes_the_znode() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [1, 2]})
    cluster.nodes[1].controller  # noqa: B018
    cluster.kill(1)
    cluster.start(1)
    assert cluster.state("foo", 0)[0].leader == 2
    cluster.expand_isr("foo", 0, [2, 1])
    cluster.admin.create(
        CreateOp(zd.PREFERRED_REPLICA_ELECTION, zd.encode_preferred_election([TopicPartition("foo", 0)]))
    )
    cluster.run()
    assert cluster.state("foo", 0)[0].leader == 1
    assert cluster.zk.get(zd.PREFERRED_REPLICA_ELECTION) is None
    cluster.admin.create(
        CreateOp(zd.PREFERRED_REPLICA_ELECTION, zd.encode_preferred_election([TopicPartition("foo", 0)]))
    )
    cluster.run()
    assert cluster.zk.get(zd.PREFERRED_REPLICA_ELECTION) is None  # deleted even when nothing was elected


def test_fenced_write_after_epoch_bump_resigns_iff_controller_znode_names_another() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    node = cluster.controller()
    # bump the epoch externally: writes fail, but /controller still names us => stay active
    cluster.admin.set_data(zd.CONTROLLER_EPOCH, b"7")
    cluster.create_topic("foo", {0: [1, 2]})
    assert node.controller.is_active
    assert cluster.zk.get(zd.topic_partitions_path("foo")) is None
    # another broker owns /controller now => resign on the next failed write
    cluster.admin.delete(zd.CONTROLLER)
    node.client.drain_events()
    node.queue.clear()
    cluster.admin.create(CreateOp(zd.CONTROLLER, zd.encode_controller(2, 0), ephemeral=True))
    node.client.drain_events()
    cluster.create_topic("bar", {0: [1]}, run=False)
    node.client.drain_events()
    effects = cluster.process(node, TopicChange())
    assert not is_active(node)
    assert CancelScheduled(None) in effects
    assert Resigned() in effects


def test_isr_change_notification_refreshes_cache_and_deletes_children() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [1, 2]})
    node = cluster.controller()
    lai, epoch = cluster.state("foo", 0)
    cluster.admin.set_data(
        zd.partition_state_path("foo", 0),
        zd.encode_partition_state(zd.LeaderAndIsr(1, 0, (1,), 0), epoch),
        lai.zk_version,
    )
    mark = len(node.effects)
    cluster.admin.create(
        CreateOp(
            zd.isr_change_path("isr_change_"),
            zd.encode_isr_change([TopicPartition("foo", 0)]),
            sequential=True,
        )
    )
    cluster.run()
    assert cluster.zk.children(zd.ISR_CHANGE_NOTIFICATION) == []
    um = update_metadata_requests(node.effects[mark:])
    assert um
    assert all([s.isr for s in r.partition_states] == [(1,)] for r in um)
    assert not leader_and_isr_requests(node.effects[mark:])


def test_requests_order_leader_and_isr_then_update_metadata_then_stop_replica() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("foo", {0: [2, 3]})
    node = cluster.controller()
    mark = len(node.effects)
    cluster.kill(3)
    kinds = [type(e.request) for e in node.effects[mark:] if isinstance(e, SendRequest)]
    assert kinds.index(LeaderAndIsrRequest) < kinds.index(UpdateMetadataRequest)
    assert all(k is not StopReplicaRequest for k in kinds)  # broker 3 is gone: nothing sent to it


def test_zk_reconnected_rereads_every_watched_path_and_catches_up() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [2]})
    node = cluster.controller()
    node.client.drop_watches()
    cluster.kill(2)  # the controller misses the BrokerChange: its watch is gone
    assert cluster.state("foo", 0)[0].leader == 2
    cluster.process(node, ZkReconnected())
    cluster.run()
    assert cluster.state("foo", 0)[0].leader == -1
    assert zd.BROKER_IDS in node.client.child_watches
    assert zd.topic_path("foo") in node.client.data_watches
    assert zd.CONTROLLER in node.client.data_watches
