"""The core on reconnects and failed ZooKeeper writes behaves as Kafka 2.5.1 (one test per behaviour)."""

from __future__ import annotations

import logging

import pytest

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import election
from reference_controller.controller.decisions.states import PartitionState
from reference_controller.controller.effects import Resigned, SendRequest
from reference_controller.controller.events import TopicDeletion, ZkReconnected
from reference_controller.controller.ports import CreateOp
from reference_controller.logutil import STATE_CHANGE_LOGGER, TRACE, KafkaLayout
from tests.unit.controller.harness import Cluster, Node

pytestmark = pytest.mark.unit


def controller_writes(cluster: Cluster, node: Node) -> list[object]:
    return list(cluster.zk.writes(session_id=node.client.session_id()))


def delete_by_hand(cluster: Cluster, path: str) -> None:
    for child in cluster.zk.children(path) or []:
        delete_by_hand(cluster, f"{path}/{child}")
    assert cluster.admin.delete(path).ok


# ---- ZkReconnected must not write or send what Kafka would not ---------------------------------
def test_reconnect_with_pending_reassignment_writes_and_sends_nothing() -> None:
    cluster = Cluster()
    cluster.start(0)
    cluster.create_topic("foo", {0: [0]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [1]}))
    )
    cluster.run()  # pending on unregistered broker 1
    node = cluster.controller()
    writes, effects, epoch = len(controller_writes(cluster, node)), len(node.effects), cluster.state("foo", 0)
    cluster.process(node, ZkReconnected())
    cluster.run()
    assert len(controller_writes(cluster, node)) == writes  # Kafka: no creation event, no A1 bump
    assert not [e for e in node.effects[effects:] if isinstance(e, SendRequest)]
    assert cluster.state("foo", 0) == epoch
    assert zd.REASSIGN_PARTITIONS in node.client.data_watches  # re-armed


def test_reconnect_processes_a_reassignment_created_while_disconnected() -> None:
    cluster = Cluster()
    cluster.start(0, 1)
    cluster.create_topic("foo", {0: [0]})
    node = cluster.controller()
    node.client.drop_watches()
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [1]}))
    )
    cluster.run()
    assert cluster.topic_assignment("foo")[0].adding == ()  # the watch was lost
    cluster.process(node, ZkReconnected())
    cluster.run()
    assert cluster.topic_assignment("foo")[0].adding == (1,)


def test_reconnect_with_ineligible_topic_deletion_writes_nothing() -> None:
    cluster = Cluster(auto_delete_responses=True)
    cluster.start(1, 2, 3)
    cluster.create_topic("foo", {0: [2]})
    cluster.kill(2)  # last ISR member dies: leader -1, ISR [2]
    cluster.admin.create(CreateOp(zd.delete_topic_path("foo"), None))
    cluster.run()
    node = cluster.controller()
    assert "foo" in node.controller.context.topics_ineligible_for_deletion
    writes, effects = len(controller_writes(cluster, node)), len(node.effects)
    cluster.process(node, ZkReconnected())
    cluster.run()
    assert len(controller_writes(cluster, node)) == writes  # no retry without a child change
    assert node.effects[effects:] == []
    assert zd.DELETE_TOPICS in node.client.child_watches


# ---- removeTopic keeps partition/replica states (ControllerContext.scala@2.5.1 L276-283) -----------
def test_topic_znode_recreated_by_hand_meets_its_stale_states_as_in_kafka(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("foo", {0: [1, 2]})
    delete_by_hand(cluster, zd.topic_path("foo"))
    cluster.run()
    node = cluster.controller()
    assert "foo" not in node.controller.context.all_topics
    caplog.set_level(TRACE, logger=STATE_CHANGE_LOGGER)
    cluster.create_topic("foo", {0: [2, 3]})
    assert cluster.zk.get(zd.partition_state_path("foo", 0)) is None
    assert (
        "Partition foo-0 should be in one of NonExistentPartition states before moving to NewPartition "
        "state. Instead it is in OnlinePartition state"
    ) in caplog.text
    missing = "LeaderAndIsr information doesn't exist for partition foo-0 in OnlinePartition state"
    assert missing in caplog.text
    # a new controller starts from ZooKeeper and creates it
    cluster.kill(node.broker_id)
    lai, _ = cluster.state("foo", 0)
    assert (lai.leader, lai.isr, lai.leader_epoch) == (2, (2, 3), 0)


# ---- KeeperException as Kafka renders KeeperException.create(code) ----------------------------------
def test_failed_state_znode_create_logs_kafkas_keeper_exception(caplog: pytest.LogCaptureFixture) -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.create_topic("foo", {0: [1]}, run=False)
    cluster.admin.create_recursive(zd.partition_state_path("foo", 0), b"{}")
    caplog.set_level(TRACE, logger=STATE_CHANGE_LOGGER)
    cluster.run()
    record = next(
        r for r in caplog.records if r.levelno == logging.ERROR and "failed to change state" in r.getMessage()
    )
    text = KafkaLayout().format(record)
    assert text.splitlines()[0].endswith(
        "ERROR [Controller id=1 epoch=1] Controller 1 epoch 1 failed to change state for partition foo-0 "
        "from NewPartition to OnlinePartition (state.change.logger)"
    )
    assert text.splitlines()[1] == (
        "org.apache.zookeeper.KeeperException$NodeExistsException: KeeperErrorCode = NodeExists"
    )


# ---- the in-memory model: a fenced op failing on its own is not a fencing failure ------------------
def test_memory_zk_fenced_op_failure_is_not_controller_moved() -> None:
    cluster = Cluster()
    cluster.start(1)
    node = cluster.controller()
    result = node.client.fenced([CreateOp(zd.BROKER_IDS, None)], node.controller.epoch_zk_version)[0]
    assert result.code.name == "NODEEXISTS"


# ---- Kafka 2.5.1's failover on a reassigning partition without a state znode -----------------------
def test_failover_with_reassigning_partition_without_state_moves_the_controller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.create_topic("foo", {0: [2]})  # no live replica: no state znode
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [3]}))
    )
    cluster.run()
    assert cluster.topic_assignment("foo")[0].adding == (3,)  # U1 written, then A1 threw
    assert cluster.zk.get(zd.REASSIGN_PARTITIONS) is None  # UNKNOWN_SERVER_ERROR: removed
    node = cluster.controller()
    caplog.set_level(logging.INFO)
    cluster.expire(1, run=False)  # /controller goes with the session; re-election resumes from ZK
    effects = cluster.process(node, node.queue.pop(0))  # RegisterBrokerAndReelect: elect + failover
    assert "Trigger controller movement immediately" in caplog.text
    assert "java.lang.IllegalStateException: Cannot update leader epoch for partition foo-0" in "\n".join(
        KafkaLayout().format(r) for r in caplog.records
    )
    assert not node.controller.is_active
    assert Resigned() in effects
    assert cluster.zk.get(zd.CONTROLLER) is None  # deleted by triggerControllerMove


def test_failed_parent_creates_are_ignored_and_the_state_create_error_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster()
    cluster.start(1)
    node = cluster.controller()
    ctx = node.controller.context
    ctx.update_partition_full_replica_assignment(TopicPartition("foo", 0), zd.ReplicaAssignment((1,)))
    ctx.partition_states[TopicPartition("foo", 0)] = PartitionState.NewPartition  # no /brokers/topics/foo
    caplog.set_level(TRACE, logger=STATE_CHANGE_LOGGER)
    node.controller.partition_state_machine.trigger_online_partition_state_change()
    record = next(r for r in caplog.records if r.levelno == logging.ERROR)
    lines = KafkaLayout().format(record).splitlines()
    assert "failed to change state for partition foo-0 from NewPartition to OnlinePartition" in lines[0]
    assert lines[1] == "org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode"


def test_reconnect_after_a_deletion_request_re_runs_one_topic_deletion_without_arming_its_watch() -> None:
    """Java's client restores the child watch and the server fires it once: one TopicDeletion, and
    no watch until that event's own read. A request created before the event runs adds no second
    event (a second processTopicDeletion would halt a topic with a partition being reassigned)."""
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [1]})
    cluster.create_topic("bar", {0: [2]})
    node = cluster.controller()
    node.client.drop_watches()
    cluster.admin.create(CreateOp(zd.delete_topic_path("foo"), None))
    reruns = list(election.events_to_rerun_after_reconnect(node.controller))
    assert reruns.count(TopicDeletion()) == 1
    assert zd.DELETE_TOPICS not in node.client.child_watches
    cluster.admin.create(CreateOp(zd.delete_topic_path("bar"), None))
    assert TopicDeletion() not in node.client.drain_events()
    cluster.process(node, TopicDeletion())
    assert zd.DELETE_TOPICS in node.client.child_watches
