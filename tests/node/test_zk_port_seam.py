"""The node's broker-side ZooKeeper logic through its port, on the in-memory ZooKeeper and on a real
ZooKeeper through kazoo: the same functions, the same assertions (ring: unit tests on the memory
world, integration tests on the real one).

Registration with the broker epoch and re-registration after expiry, ISR writes (including the
"already written" answer to BADVERSION) and `/isr_change_notification`, `/log_dir_event_notification`,
controlled shutdown's reads of `/controller` and the controller's registration, the admin writes,
start-up's paths and cluster id.
"""

from __future__ import annotations

import json

import pytest

from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller import zkdata
from reference_controller.controller.ports import CreateOp, ZkCode
from reference_controller.node import admin
from reference_controller.node.admin import AdminError
from reference_controller.node.controlled_shutdown import controller_address
from reference_controller.node.isr import conditional_update, propagate_isr_changes
from reference_controller.node.log_dir_failure import propagate_log_dir_event
from reference_controller.node.registration import RegistrationError, register_broker, register_with_retry
from reference_controller.node.zk_port import NodeZkError, NodeZkPort, SessionState, create_if_absent
from reference_controller.zkdata import BrokerInfo, EndPoint, LeaderAndIsr, ReplicaAssignment
from tests.node.zk_worlds import World, world, zookeeper_world

__all__ = ["world", "zookeeper_world"]  # each test runs in both; its layer marker comes with the world


def info(broker_id: int, port: int = 9092) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", port),), timestamp_ms=1)


def paths(zk: NodeZkPort) -> None:
    for path in zkdata.PERSISTENT_PATHS:
        create_if_absent(zk, path, None)


def no_pause() -> None:
    """Resending after a connection loss never happens here: both worlds stay connected."""


# ---- start-up ----------------------------------------------------------------------------------
def test_top_level_paths_are_created_once_with_null_data(world: World) -> None:
    paths(world.broker)
    paths(world.broker)  # a second start-up finds them
    for path in zkdata.PERSISTENT_PATHS:
        found = world.observer.get(path)
        assert found.stat is not None, path
        assert found.data is None, path


def test_the_first_cluster_id_stays(world: World) -> None:
    paths(world.broker)
    create_if_absent(world.broker, zkdata.CLUSTER_ID, zkdata.encode_cluster_id("first"))
    create_if_absent(world.observer, zkdata.CLUSTER_ID, zkdata.encode_cluster_id("second"))
    assert zkdata.decode_cluster_id(world.broker.get(zkdata.CLUSTER_ID).data) == "first"


# ---- registration ------------------------------------------------------------------------------
def test_registration_is_one_ephemeral_znode_whose_czxid_is_the_broker_epoch(world: World) -> None:
    paths(world.broker)
    epoch = register_broker(world.broker, info(1))
    stat = world.observer.exists(zkdata.broker_path(1))
    assert stat is not None
    assert (stat.czxid, stat.version, stat.ephemeral_owner) == (epoch, 1, world.broker.session_id())
    assert zkdata.decode_broker(1, world.observer.get(zkdata.broker_path(1)).data) == info(1)
    assert register_broker(world.broker, info(1)) == epoch  # our own znode: the registration stands


def test_a_registration_held_by_another_session_is_refused(world: World) -> None:
    paths(world.broker)
    register_broker(world.observer, info(1))
    with pytest.raises(RegistrationError, match="does not match current session"):
        register_broker(world.broker, info(1))


def test_after_session_expiry_the_broker_registers_again_with_a_new_epoch(world: World) -> None:
    paths(world.broker)
    old = register_broker(world.broker, info(1))
    session = world.broker.session_id()
    world.expire()
    assert world.observer.exists(zkdata.broker_path(1)) is None  # the ephemeral went with the session
    assert world.states[-2:] == [SessionState.LOST, SessionState.CONNECTED]
    assert world.broker.session_id() != session
    new = register_with_retry(
        world.broker, info(1), deadline_s=0.0, now_s=lambda: 0.0, sleep_s=lambda _s: None
    )
    assert new > old
    stat = world.observer.exists(zkdata.broker_path(1))
    assert stat is not None
    assert stat.ephemeral_owner == world.broker.session_id()


# ---- ISR writes and notifications ---------------------------------------------------------------
def _state(world: World, lai: LeaderAndIsr, controller_epoch: int = 7) -> None:
    paths(world.observer)
    path = zkdata.partition_state_path("t", 0)
    create_if_absent(world.observer, path, zkdata.encode_partition_state(lai, controller_epoch))


def test_an_isr_write_is_conditional_on_the_cached_zk_version(world: World) -> None:
    _state(world, LeaderAndIsr(1, 3, (1, 2), 0))
    tp = TopicPartition("t", 0)
    shrunk = LeaderAndIsr(1, 3, (1,), 0)
    assert conditional_update(world.broker, tp, shrunk, 7, no_pause) == 1
    written = world.observer.get(zkdata.partition_state_path("t", 0))
    assert written.stat is not None
    assert zkdata.decode_partition_state(written.data, written.stat.version, "state") == (
        zkdata.LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 3, (1,), 1), 7)
    )
    # the same write again at the stale version: ZooKeeper already holds it, so it counts as done
    assert conditional_update(world.broker, tp, shrunk, 7, no_pause) == 1
    # another write at the stale version is skipped ("Cached zkVersion … not equal")
    assert conditional_update(world.broker, tp, LeaderAndIsr(1, 3, (1, 2), 0), 7, no_pause) is None
    assert conditional_update(world.broker, TopicPartition("t", 9), shrunk, 7, no_pause) is None  # no znode


def test_isr_changes_are_propagated_as_sequential_notifications(world: World) -> None:
    paths(world.broker)
    first = propagate_isr_changes(world.broker, [TopicPartition("t", 0), TopicPartition("u", 1)], no_pause)
    second = propagate_isr_changes(world.broker, [TopicPartition("t", 0)], no_pause)
    assert (first, second) == (
        "/isr_change_notification/isr_change_0000000000",
        "/isr_change_notification/isr_change_0000000001",
    )
    assert zkdata.decode_isr_change(world.observer.get(first).data, first) == [("t", 0), ("u", 1)]
    assert sorted(world.observer.get_children(zkdata.ISR_CHANGE_NOTIFICATION) or []) == [
        "isr_change_0000000000",
        "isr_change_0000000001",
    ]


def test_a_log_dir_failure_is_one_sequential_notification_naming_the_broker(world: World) -> None:
    paths(world.broker)
    path = propagate_log_dir_event(world.broker, 3)
    assert path == "/log_dir_event_notification/log_dir_event_0000000000"
    assert json.loads(world.observer.get(path).data or b"") == {"version": 1, "broker": 3, "event": 1}
    world.close()
    with pytest.raises(NodeZkError):
        propagate_log_dir_event(world.broker, 3)  # a closed client is not retried forever


# ---- controlled shutdown's reads ---------------------------------------------------------------
def test_controlled_shutdown_finds_the_controller_through_its_registration(world: World) -> None:
    paths(world.observer)
    assert controller_address(world.broker, "PLAINTEXT") is None  # no controller
    world.observer.create(CreateOp(zkdata.CONTROLLER, zkdata.encode_controller(2, 1), ephemeral=True))
    assert controller_address(world.broker, "PLAINTEXT") is None  # not registered
    register_broker(world.observer, info(2, 9093))
    assert controller_address(world.broker, "PLAINTEXT") == (2, "127.0.0.1", 9093)
    assert controller_address(world.broker, "INTERNAL") is None  # no such listener


# ---- admin writes ------------------------------------------------------------------------------
def test_create_topic_writes_its_config_then_its_assignment(world: World) -> None:
    paths(world.broker)
    admin.create_topic_with_assignment(world.broker, "t", {"retention.ms": "1"}, {0: [1, 2], 1: [2, 1]})
    assert admin.read_assignment(world.observer, "t") == (
        {0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((2, 1))},
        0,
    )
    config = json.loads(world.observer.get(zkdata.config_topic_path("t")).data or b"")
    assert config["config"] == {"retention.ms": "1"}
    with pytest.raises(AdminError) as exists:
        admin.create_topic_with_assignment(world.broker, "t", {}, {0: [1]})
    assert exists.value.error_code == Errors.TOPIC_ALREADY_EXISTS
    admin.create_topic_with_assignment(world.broker, "a.b", {}, {0: [1]})
    with pytest.raises(AdminError) as collides:
        admin.validate_topic_create(world.broker, "a_b", {0: [1]})
    assert collides.value.error_code == Errors.INVALID_TOPIC_EXCEPTION


def test_delete_topic_marks_it_once_and_an_unknown_topic_is_refused(world: World) -> None:
    paths(world.broker)
    admin.create_topic_with_assignment(world.broker, "t", {}, {0: [1]})
    admin.delete_topic(world.broker, "t")
    admin.delete_topic(world.broker, "t")  # already marked: still a success
    marker = world.observer.get(zkdata.delete_topic_path("t"))
    assert marker.stat is not None
    assert marker.data is None
    with pytest.raises(AdminError) as unknown:
        admin.delete_topic(world.broker, "nope")
    assert unknown.value.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_adding_partitions_rewrites_the_assignment(world: World) -> None:
    paths(world.broker)
    admin.create_topic_with_assignment(world.broker, "t", {}, {0: [1]})
    assignment, version = admin.read_assignment(world.broker, "t")
    admin.write_assignment(world.broker, "t", {**assignment, 1: ReplicaAssignment((2,))})
    assert admin.read_assignment(world.observer, "t") == (
        {0: ReplicaAssignment((1,)), 1: ReplicaAssignment((2,))},
        version + 1,
    )
    with pytest.raises(AdminError):
        admin.read_assignment(world.broker, "nope")
    assert admin.require_children(world.broker, zkdata.BROKER_TOPICS) == ["t"]
    with pytest.raises(NodeZkError) as missing:
        admin.require_children(world.broker, "/nope")
    assert missing.value.code == ZkCode.NONODE
