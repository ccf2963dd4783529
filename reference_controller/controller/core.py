"""KafkaController: the deterministic, single-threaded controller core (ring: core).

`process(event)` runs one event to completion against the `ControllerContext`, reading and writing
ZooKeeper through the `ZkPort` and returning effects (broker requests, channel changes, timers,
controllership changes) as data. One exhaustive `match` dispatches to handlers grouped by topic:
`election` / `failover` (controllership), `brokers`, `topics` (creation, expansion, deletion),
`reassignment`, `notifications` (ISR changes, log-dir events), `leader_elections` (preferred,
auto-rebalance, unclean) and `shutdown` (controlled shutdown).

Loss of controllership (`ControllerMovedError`, a fenced write whose `/controller_epoch` check
failed) is caught here and answered with `maybeResign`; any other exception is logged as
"Error processing event <event>" and the controller stays active (KafkaController.process@2.5.1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from reference_controller.config import KafkaConfig
from reference_controller.controller import (
    api_reassignment,
    brokers,
    election,
    leader_elections,
    notifications,
    shutdown,
    topics,
)
from reference_controller.controller import reassignment as reassign
from reference_controller.controller.context import ControllerContext
from reference_controller.controller.dynamic_config import DynamicBrokerConfigView
from reference_controller.controller.effects import AddBroker, Effect, RemoveBroker, Resigned, ScheduleEvent
from reference_controller.controller.events import (
    ApiPartitionReassignment,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    BrokerModifications,
    ControlledShutdown,
    ControllerChange,
    ControllerEvent,
    Expire,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    ListPartitionReassignments,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    Reelect,
    RegisterBrokerAndReelect,
    ReplicaLeaderElection,
    ShutdownEventThread,
    Startup,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResponseReceived,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
    UpdateMetadataResponseReceived,
    ZkPartitionReassignment,
    ZkReconnected,
)
from reference_controller.controller.partition_state_machine import PartitionStateMachine
from reference_controller.controller.ports import (
    ChildHandler,
    Clock,
    ControllerMovedError,
    NodeHandler,
    ZkPort,
)
from reference_controller.controller.replica_state_machine import ReplicaStateMachine
from reference_controller.controller.request_batch import ControllerBrokerRequestBatch
from reference_controller.controller.state_change_log import StateChangeLogger, controller_logger
from reference_controller.controller.topic_deletion import TopicDeletionManager


class KafkaController:
    """Kafka 2.5's KafkaController without threads: feed it events, execute the effects it returns."""

    def __init__(self, config: KafkaConfig, zk: ZkPort, clock: Clock, broker_epoch: int) -> None:
        self.config = config
        self.zk = zk
        self.clock = clock
        self.broker_id = config.broker_id
        self.broker_epoch = broker_epoch
        self.context = ControllerContext()
        self.log = controller_logger(self.broker_id)
        self.state_change_log = StateChangeLogger(self.broker_id, lambda: self.context.epoch)
        self.batch = ControllerBrokerRequestBatch(
            self.broker_id, self.context, self.state_change_log, config.inter_broker_listener_name
        )
        self.replica_state_machine = ReplicaStateMachine(
            self.broker_id, self.context, zk, self.batch, self.state_change_log, self.emit
        )
        self.partition_state_machine = PartitionStateMachine(
            self.broker_id,
            self.context,
            zk,
            self.batch,
            self.state_change_log,
            self.emit,
            self.unclean_leader_election_enable,
        )
        self.topic_deletion_manager = TopicDeletionManager(
            self.broker_id,
            config.delete_topic_enable,
            self.context,
            self.replica_state_machine,
            self.partition_state_machine,
            topics.ControllerDeletionClient(self),
        )
        self.node_handlers: dict[str, NodeHandler] = {}
        # Whether each path existed at its last existence check (which armed an exists watch iff
        # it did not): lets ZkReconnected tell a creation Kafka would be told of from an old znode.
        self.existed_at_last_check: dict[str, bool] = {}
        self.child_handlers: dict[str, ChildHandler] = {}
        self._effects: list[Effect] = []
        # Set by the driver to open/close broker channels at once, inside the event: Kafka's
        # processBrokerChange calls controllerChannelManager.add/removeBroker synchronously
        # (KafkaController.scala@2.5.1 L1382-1385) before onBrokerFailure/onBrokerStartup, so the
        # old send thread of a bounced or dead broker can no longer deliver a request queued for
        # its previous registration (with its old broker epoch) while the rest of the event runs;
        # and onControllerResignation shuts every channel down at once (a controller that resigns
        # and wins again in one Reelect event opens fresh channels after that, in order).
        # Unset (the unit harnesses), channel changes are returned in order like other effects.
        self.channel_now: Callable[[AddBroker | RemoveBroker | Resigned], None] | None = None
        # Set by the driver that applies `/config/brokers/...` changes (ELECT-9); unset, the
        # controller uses server.properties (the unit harnesses).
        self.dynamic_config: DynamicBrokerConfigView | None = None

    # ---- public API -----------------------------------------------------------------------
    @property
    def active_controller_id(self) -> int:
        return self.context.controllership.active_controller_id

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def epoch_zk_version(self) -> int:
        return self.context.epoch_zk_version

    def process(self, event: ControllerEvent) -> list[Effect]:
        """Process one event; return the effects in the order they must be executed."""
        self._effects = []
        try:
            self._dispatch(event)
        except ControllerMovedError:
            self.log.info("Controller moved to another broker when processing %s.", event)
            self._safely(election.maybe_resign, event)
        except Exception:
            self.log.exception("Error processing event %s", event)
        effects, self._effects = self._effects, []
        return effects

    def unclean_leader_election_enable(self) -> bool:
        """The broker default elections merge topic configs with (dynamic when wired, §13.4.4)."""
        if self.dynamic_config is not None:
            return self.dynamic_config.unclean_leader_election_enable()
        return self.config.unclean_leader_election_enable

    # ---- services for the handler modules --------------------------------------------------
    def emit(self, effects: list[Effect]) -> None:
        for effect in effects:
            if self.channel_now is not None and isinstance(effect, AddBroker | RemoveBroker | Resigned):
                self.channel_now(effect)
                if isinstance(effect, Resigned):
                    self._effects.append(effect)  # the event manager's is_active still follows it
            else:
                self._effects.append(effect)

    def enqueue(self, event: ControllerEvent) -> None:
        """Kafka's `eventManager.put(event)` from inside a handler: a zero-delay timer."""
        self._effects.append(ScheduleEvent(f"enqueue:{type(event).__name__}", 0, event))

    def register_node_handler(self, handler: NodeHandler, check_exists: bool = False) -> bool:
        """Register in memory; with `check_exists`, `exists` the path (arming the watch)."""
        self.node_handlers[handler.path] = handler
        self.zk.register_node_handler(handler)
        if not check_exists:
            return False
        exists = self.zk.exists(handler.path) is not None
        self.existed_at_last_check[handler.path] = exists
        return exists

    def unregister_node_handler(self, path: str) -> None:
        self.node_handlers.pop(path, None)
        self.zk.unregister_node_handler(path)

    def register_child_handler(self, handler: ChildHandler) -> None:
        self.child_handlers[handler.path] = handler
        self.zk.register_child_handler(handler)

    def unregister_child_handler(self, path: str) -> None:
        self.child_handlers.pop(path, None)
        self.zk.unregister_child_handler(path)

    # ---- dispatch -------------------------------------------------------------------------
    def _safely(self, handler: object, event: ControllerEvent) -> None:
        try:
            assert callable(handler)
            handler(self)
        except Exception:
            self.log.exception("Error processing event %s", event)

    def _rerun(self, event: ControllerEvent) -> None:
        """One event re-run on a reconnect: it fails alone (logged), except for losing
        controllership, which ends the reconnect as it ends any event."""
        try:
            self._dispatch(event)
        except ControllerMovedError:
            raise
        except Exception:
            self.log.exception("Error processing event %s after reconnecting", election.rerun_name(event))

    def _dispatch(self, event: ControllerEvent) -> None:
        match event:
            case Startup():
                election.process_startup(self)
            case ControllerChange():
                election.maybe_resign(self)
            case Reelect():
                election.process_reelect(self)
            case RegisterBrokerAndReelect(broker_epoch=broker_epoch):
                self.broker_epoch = broker_epoch
                election.process_reelect(self)
            case Expire():
                election.process_expire(self)
            case ZkReconnected():
                election.process_reelect(self)
                for rerun in election.events_to_rerun_after_reconnect(self):
                    self._rerun(rerun)
            case ShutdownEventThread():
                election.process_shutdown(self)
            case BrokerChange():
                brokers.process_broker_change(self)
            case BrokerModifications(broker_id=broker_id):
                brokers.process_broker_modifications(self, broker_id)
            case TopicChange():
                topics.process_topic_change(self)
            case PartitionModifications(topic=topic):
                topics.process_partition_modifications(self, topic)
            case TopicDeletion():
                topics.process_topic_deletion(self)
            case LogDirEventNotification():
                notifications.process_log_dir_event_notification(self)
            case IsrChangeNotification():
                notifications.process_isr_change_notification(self)
            case ZkPartitionReassignment():
                reassign.process_zk_partition_reassignment(self)
            case PartitionReassignmentIsrChange(partition=tp):
                reassign.process_partition_reassignment_isr_change(self, tp)
            case TopicUncleanLeaderElectionEnable(topic=topic):
                leader_elections.process_topic_unclean_leader_election_enable(self, topic)
            case UncleanLeaderElectionEnable():
                leader_elections.process_unclean_leader_election_enable(self)
            case ReplicaLeaderElection():
                leader_elections.process_replica_leader_election(self, event)
            case AutoPreferredReplicaLeaderElection():
                leader_elections.process_auto_preferred_replica_leader_election(self)
            case ControlledShutdown():
                shutdown.process_controlled_shutdown(self, event)
            case ApiPartitionReassignment():
                api_reassignment.process_api_partition_reassignment(self, event)
            case ListPartitionReassignments():
                api_reassignment.process_list_partition_reassignments(self, event)
            case LeaderAndIsrResponseReceived():
                notifications.process_leader_and_isr_response(self, event)
            case UpdateMetadataResponseReceived():
                notifications.process_update_metadata_response(self, event)
            case TopicDeletionStopReplicaResponseReceived():
                topics.process_topic_deletion_stop_replica_response(self, event)
            case _:
                assert_never(event)
