"""StopReplica(delete) responses and LeaderAndIsr live leaders behave as Kafka 2.5.1.

- StopReplica(delete=true) responses only count for topics whose deletion is in progress
  (`stopReplicaPartitionDeleteResponseCallback`, ControllerChannelManager.scala@2.5.1 L536-544) and
  only move replicas of topics queued for deletion (`TopicDeletionManager.completeReplicaDeletion`
  / `failReplicaDeletion`, TopicDeletionManager.scala@2.5.1 L151-162, L206-211). The driver turns
  every delete response into an event, so the core filters.
- LeaderAndIsr's live leaders are the leaders' inter-broker endpoints, with no fallback
  (`_.node(config.interBrokerListenerName)`, ControllerChannelManager.scala@2.5.1 L459-461;
  `Broker.node` throws BrokerEndPointNotAvailableException, Broker.scala@2.5.1 L64-68).
"""

from __future__ import annotations

import pytest

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.config import KafkaConfig
from reference_controller.controller.context import ControllerContext, replica_of
from reference_controller.controller.core import KafkaController
from reference_controller.controller.decisions.states import ReplicaState
from reference_controller.controller.events import TopicDeletionStopReplicaResponseReceived
from reference_controller.controller.ports import CreateOp
from reference_controller.controller.request_batch import (
    BrokerEndPointNotAvailableError,
    ControllerBrokerRequestBatch,
    IllegalBatchStateError,
)
from reference_controller.controller.state_change_log import StateChangeLogger
from reference_controller.testing.clock import ManualClock
from reference_controller.testing.memory_zk import MemoryZooKeeper
from reference_controller.zkdata import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch
from tests.unit.controller.harness import Cluster, leader_and_isr_requests, make_config

pytestmark = pytest.mark.unit

NONE, KAFKA_STORAGE_ERROR = 0, 56


# ---- StopReplica(delete) responses of topics not being deleted are ignored ------------------------
def _reassigned_away() -> Cluster:
    """foo-0 moved [0] → [1]: replica 0 got StopReplica(delete=true) and is NonExistentReplica."""
    cluster = Cluster()
    cluster.start(0, 1)
    cluster.create_topic("foo", {0: [0]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [1]}))
    )
    cluster.run()
    cluster.expand_isr("foo", 0, [0, 1])
    assert cluster.topic_assignment("foo")[0] == zd.ReplicaAssignment((1,))
    return cluster


@pytest.mark.parametrize(
    ("request_error", "partition_error"),
    [(NONE, NONE), (NONE, KAFKA_STORAGE_ERROR), (KAFKA_STORAGE_ERROR, NONE)],
)
def test_delete_response_for_a_reassigned_topic_changes_nothing(
    request_error: int, partition_error: int
) -> None:
    cluster = _reassigned_away()
    node = cluster.controller()
    ctx = node.controller.context
    states, ineligible = dict(ctx.replica_states), set(ctx.topics_ineligible_for_deletion)
    event = TopicDeletionStopReplicaResponseReceived(
        0, request_error, ((TopicPartition("foo", 0), partition_error),)
    )
    assert cluster.process(node, event) == []
    cluster.run()
    assert ctx.replica_states == states
    assert ctx.topics_ineligible_for_deletion == ineligible


def test_deletion_manager_moves_only_replicas_of_queued_topics() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("foo", {0: [1, 2]})
    cluster.create_topic("bar", {0: [1, 2]})
    node = cluster.controller()
    ctx, tdm = node.controller.context, node.controller.topic_deletion_manager
    cluster.admin.create(CreateOp(zd.delete_topic_path("foo"), None))
    cluster.run()  # foo: deletion started, waiting for the delete responses
    foo1, bar1 = replica_of(TopicPartition("foo", 0), 1), replica_of(TopicPartition("bar", 0), 1)
    assert ctx.replica_state(foo1) == ReplicaState.ReplicaDeletionStarted
    assert ctx.replica_state(bar1) == ReplicaState.OnlineReplica
    tdm.complete_replica_deletion([bar1])
    tdm.fail_replica_deletion([bar1])
    assert ctx.replica_state(bar1) == ReplicaState.OnlineReplica
    assert "bar" not in ctx.topics_ineligible_for_deletion
    tdm.fail_replica_deletion([foo1, bar1])
    assert ctx.replica_state(foo1) == ReplicaState.ReplicaDeletionIneligible
    assert ctx.topics_ineligible_for_deletion == {"foo"}
    assert ctx.replica_state(bar1) == ReplicaState.OnlineReplica


# ---- live leaders come from the inter-broker listener, without fallback ----------------------------
MULTI = {
    "listeners": "CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9093,CONTROL://127.0.0.1:9094",
    "listener.security.protocol.map": "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROL:PLAINTEXT",
    "inter.broker.listener.name": "REPLICATION",
    "control.plane.listener.name": "CONTROL",
}


def _batch(config: KafkaConfig, *brokers: BrokerInfo) -> ControllerBrokerRequestBatch:
    ctx = ControllerContext()
    ctx.epoch = 1
    ctx.set_live_broker_and_epochs({b.broker_id: (b, 10 + b.broker_id) for b in brokers})
    tp = TopicPartition("foo", 0)
    ctx.update_partition_full_replica_assignment(tp, zd.ReplicaAssignment((1, 2)))
    batch = ControllerBrokerRequestBatch(
        1, ctx, StateChangeLogger(1, lambda: 1), config.inter_broker_listener_name
    )
    lai = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2), 0), 1)
    ctx.partition_leadership_info[tp] = lai
    batch.add_leader_and_isr_request_for_brokers([2], tp, lai, zd.ReplicaAssignment((1, 2)), is_new=True)
    return batch


def _broker(broker_id: int, *endpoints: tuple[str, int]) -> BrokerInfo:
    return BrokerInfo(broker_id, tuple(EndPoint(name, "127.0.0.1", port) for name, port in endpoints))


def test_live_leaders_use_the_inter_broker_listener_not_the_control_plane() -> None:
    config = make_config(1, **MULTI)
    assert config.controller_listener_name == "CONTROL"
    leader = _broker(1, ("CLIENT", 9092), ("REPLICATION", 9093), ("CONTROL", 9094))
    batch = _batch(config, leader, _broker(2, ("CLIENT", 9192), ("REPLICATION", 9193), ("CONTROL", 9194)))
    (request,) = leader_and_isr_requests(batch.send_requests_to_brokers(1))
    assert [(x.broker_id, x.port) for x in request.live_leaders] == [(1, 9093)]


def test_a_leader_without_the_inter_broker_listener_fails_the_batch(caplog: pytest.LogCaptureFixture) -> None:
    config = make_config(1, **MULTI)
    leader = _broker(1, ("CLIENT", 9092), ("CONTROL", 9094))  # no REPLICATION endpoint: no fallback
    batch = _batch(config, leader, _broker(2, ("CLIENT", 9192), ("REPLICATION", 9193), ("CONTROL", 9194)))
    with pytest.raises(IllegalBatchStateError) as raised:
        batch.send_requests_to_brokers(1)
    assert isinstance(raised.value.__cause__, BrokerEndPointNotAvailableError)
    assert "End point with listener name REPLICATION not found for broker 1" in str(raised.value)
    assert "Haven't been able to send leader and isr requests" in caplog.text
    assert batch.is_empty()


def test_the_core_batch_is_built_with_the_inter_broker_listener() -> None:
    controller = KafkaController(make_config(1, **MULTI), MemoryZooKeeper().client(), ManualClock(), 1)
    assert controller.batch.inter_broker_listener == "REPLICATION"
