"""Handlers and helpers shared by the controller's handler modules (ring: core).

The ZooKeeper handler table of spec §2.3 (Kafka's ZNodeChangeHandlers as data), and the small
KafkaController helpers several handler groups use: `sendUpdateMetadataRequest`,
`updateLeaderAndIsrCache`, and the per-topic / per-broker handler registration.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.events import (
    BrokerChange,
    BrokerModifications,
    ControllerChange,
    ElectionTrigger,
    ElectionType,
    IsrChangeNotification,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    Reelect,
    ReplicaLeaderElection,
    TopicChange,
    TopicDeletion,
    ZkPartitionReassignment,
)
from reference_controller.controller.handler_ports import (
    ContextHolder,
    LeadershipCacheReader,
    NodeHandlerRegistry,
    UpdateMetadataSender,
)
from reference_controller.controller.ports import ChildHandler, NodeHandler

# The error names the controller's response logs spell out (any other code is logged as its number).
ERROR_NAMES = {
    e.value: e.name
    for e in (
        Errors.NONE,
        Errors.UNKNOWN_SERVER_ERROR,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.BROKER_NOT_AVAILABLE,
        Errors.STALE_CONTROLLER_EPOCH,
        Errors.NOT_CONTROLLER,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.STALE_BROKER_EPOCH,
    )
}

# ---- the handler table (spec §2.3) ----------------------------------------------------------
CONTROLLER_CHANGE_HANDLER = NodeHandler(
    zd.CONTROLLER, on_create=ControllerChange(), on_delete=Reelect(), on_data_change=ControllerChange()
)
BROKER_CHANGE_HANDLER = ChildHandler(zd.BROKER_IDS, BrokerChange())
TOPIC_CHANGE_HANDLER = ChildHandler(zd.BROKER_TOPICS, TopicChange())
TOPIC_DELETION_HANDLER = ChildHandler(zd.DELETE_TOPICS, TopicDeletion())
LOG_DIR_EVENT_NOTIFICATION_HANDLER = ChildHandler(zd.LOG_DIR_EVENT_NOTIFICATION, LogDirEventNotification())
ISR_CHANGE_NOTIFICATION_HANDLER = ChildHandler(zd.ISR_CHANGE_NOTIFICATION, IsrChangeNotification())
PREFERRED_REPLICA_ELECTION_HANDLER = NodeHandler(
    zd.PREFERRED_REPLICA_ELECTION,
    on_create=ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED),
)
PARTITION_REASSIGNMENT_HANDLER = NodeHandler(zd.REASSIGN_PARTITIONS, on_create=ZkPartitionReassignment())
CHILD_HANDLERS = (
    BROKER_CHANGE_HANDLER,
    TOPIC_CHANGE_HANDLER,
    TOPIC_DELETION_HANDLER,
    LOG_DIR_EVENT_NOTIFICATION_HANDLER,
    ISR_CHANGE_NOTIFICATION_HANDLER,
)


def partition_modifications_handler(topic: str) -> NodeHandler:
    return NodeHandler(zd.topic_path(topic), on_data_change=PartitionModifications(topic))


def broker_modifications_handler(broker_id: int) -> NodeHandler:
    return NodeHandler(zd.broker_path(broker_id), on_data_change=BrokerModifications(broker_id))


def partition_reassignment_isr_change_handler(tp: TopicPartition) -> NodeHandler:
    return NodeHandler(zd.partition_state_path(*tp), on_data_change=PartitionReassignmentIsrChange(tp))


# ---- helpers --------------------------------------------------------------------------------
def csv(items: Iterable[object]) -> str:
    return ",".join(str(i) for i in items)


def tps(partitions: Iterable[TopicPartition]) -> str:
    return ",".join(f"{t}-{p}" for t, p in partitions)


def send_update_metadata_request(
    ctl: UpdateMetadataSender, brokers: Sequence[int], partitions: Iterable[TopicPartition]
) -> None:
    ctl.batch.new_batch()
    ctl.batch.add_update_metadata_request_for_brokers(brokers, partitions)
    ctl.emit(ctl.batch.send_requests_to_brokers(ctl.context.epoch))


def live_or_shutting_down(ctl: ContextHolder) -> list[int]:
    return sorted(ctl.context.live_or_shutting_down_broker_ids)


def update_leader_and_isr_cache(
    ctl: LeadershipCacheReader, partitions: Sequence[TopicPartition] | None = None
) -> None:
    wanted = ctl.context.all_partitions() if partitions is None else list(partitions)
    ctl.context.partition_leadership_info.update(zkc.get_topic_partition_states(ctl.zk, wanted))


def register_partition_modifications_handlers(ctl: NodeHandlerRegistry, topics: Iterable[str]) -> None:
    for topic in topics:
        ctl.register_node_handler(partition_modifications_handler(topic))


def unregister_partition_modifications_handlers(ctl: NodeHandlerRegistry, topics: Iterable[str]) -> None:
    for topic in topics:
        ctl.unregister_node_handler(zd.topic_path(topic))


def register_broker_modifications_handlers(ctl: NodeHandlerRegistry, broker_ids: Iterable[int]) -> None:
    for broker_id in sorted(broker_ids):
        ctl.register_node_handler(broker_modifications_handler(broker_id), check_exists=True)


def unregister_broker_modifications_handlers(ctl: NodeHandlerRegistry, broker_ids: Iterable[int]) -> None:
    for broker_id in broker_ids:
        ctl.unregister_node_handler(zd.broker_path(broker_id))
