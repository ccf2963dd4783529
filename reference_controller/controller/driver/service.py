"""`ControllerService`: the controller as the broker node hosts it (ring: drivers — assembly).

Wires the deterministic core (`KafkaController`) to its drivers, as Kafka's `KafkaController.startup()`
does (spec §2.1): the kazoo `ZkPort`, the event manager (one queue, one thread), the channel manager
(one send thread per broker), the scheduler and the `/config/changes` watcher; then enqueues
`Startup`. The node owns the `KazooClient` (started, session established, broker registered) and
calls this API:

- `startup()` / `shutdown()` (idempotent; `ShutdownEventThread` pre-empts the queue; no thread
  survives it);
- `on_broker_registered(broker_epoch)` after re-registering `/brokers/ids/<id>` on a new session
  ⇒ `RegisterBrokerAndReelect` (the LOST listener has already put `Expire` first);
- `is_active()`;
- `controlled_shutdown(broker_id, broker_epoch, timeout_s)` for the ControlledShutdown API;
- `alter_partition_reassignments`, `list_partition_reassignments`, `elect_leaders` for the admin
  APIs (KafkaController.scala@2.5.1 L1686-1702): each only enqueues its event; the event thread
  calls `reply` — or never, where Kafka 2.5.1 never answers (§13.0).

The broker's dynamic `unclean.leader.election.enable` (`/config/brokers/<default>` and
`/config/brokers/<id>`) is loaded before `Startup` is enqueued, as KafkaServer initialises its
dynamic config before the controller starts, and kept current by the `/config/changes` watcher.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from kazoo.retry import KazooRetry

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller.config import KafkaConfig
from reference_controller.controller.core import KafkaController
from reference_controller.controller.driver.channel import ControllerChannelManager
from reference_controller.controller.driver.config_watcher import ConfigWatcher, initialize_dynamic_config
from reference_controller.controller.driver.dynamic_broker_config import DynamicBrokerConfig
from reference_controller.controller.driver.event_manager import ControllerEventManager
from reference_controller.controller.driver.scheduler import ControllerScheduler
from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.effects import AddBroker, BrokerRequest, Effect, RemoveBroker, Resigned
from reference_controller.controller.events import (
    ApiPartitionReassignment,
    ControlledShutdown,
    ControlledShutdownResult,
    ControllerEvent,
    ElectionResults,
    ElectionTrigger,
    ElectionType,
    ListPartitionReassignments,
    RegisterBrokerAndReelect,
    ReplicaLeaderElection,
    ShutdownEventThread,
    Startup,
)
from reference_controller.controller.ports import Clock, ZkPort
from reference_controller.zkdata import BrokerInfo, ReplicaAssignment

log = logging.getLogger("kafka.controller.KafkaController")

SHUTDOWN_JOIN_S = 10.0


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class Core(Protocol):
    """What the service needs of `KafkaController`."""

    def process(self, event: ControllerEvent) -> list[Effect]: ...


CoreFactory = Callable[[KafkaConfig, ZkPort, Clock, int], Core]


class Channel(Protocol):
    def add_broker(self, broker: BrokerInfo) -> None: ...
    def remove_broker(self, broker_id: int) -> None: ...
    def send(self, request: BrokerRequest) -> None: ...
    def shutdown(self) -> None: ...


def _default_core(config: KafkaConfig, zk: ZkPort, clock: Clock, broker_epoch: int) -> Core:
    controller: Core = KafkaController(config, zk, clock, broker_epoch)
    return controller


class ControllerService:
    def __init__(
        self,
        config: KafkaConfig,
        zk: Any,
        *,
        broker_epoch: int,
        core_factory: CoreFactory | None = None,
        channel_factory: Callable[[KafkaConfig, Callable[[ControllerEvent], None]], Channel] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.zk = zk
        self.broker_epoch = broker_epoch
        self._core_factory = core_factory or _default_core
        self._channel_factory = channel_factory or ControllerChannelManager
        self.clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self.events: ControllerEventManager | None = None
        self.port: KazooZkPort | None = None
        self.core: Core | None = None
        self.channel: Channel | None = None
        self.scheduler: ControllerScheduler | None = None
        self.config_watcher: ConfigWatcher | None = None
        self.dynamic_config = DynamicBrokerConfig(config.broker_id, config.unclean_leader_election_enable)

    # ---- life cycle -----------------------------------------------------------------------------
    def startup(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            events = ControllerEventManager(self._process, self)
            self.events = events
            self.port = KazooZkPort(
                self.zk, events.put, self.config.reference_controller_zk_batch_writes,
                clear_and_put=events.clear_and_put,
            )  # fmt: skip
            self.core = self._core_factory(self.config, self.port, self.clock, self.broker_epoch)
            if isinstance(self.core, KafkaController):
                self.core.channel_now = self._channel_now  # channels change inside the event, as Kafka
                self.core.dynamic_config = self.dynamic_config
            self.channel = self._channel_factory(self.config, events.put)
            self.scheduler = ControllerScheduler(events.put)
            # KafkaZkClient sends a request again after a lost connection (retryRequestsUntilConnected)
            # for up to zookeeper.connection.timeout.ms: one ConnectionLoss is not fatal to start-up
            KazooRetry(
                max_tries=-1, delay=0.1, max_delay=1.0,
                deadline=self.config.zookeeper_connection_timeout_ms / 1000,
            )(initialize_dynamic_config, self.zk, self.dynamic_config)  # fmt: skip
            self.config_watcher = ConfigWatcher(
                self.zk, events.put, self.is_active, dynamic_config=self.dynamic_config
            )
            events.put(Startup())
            events.start()
            self.config_watcher.start()

    def shutdown(self) -> None:
        with self._lock:
            if not self._started or self._stopped:
                return
            self._stopped = True
        assert self.events is not None
        assert self.port is not None
        if self.config_watcher is not None:
            self.config_watcher.shutdown()
        self.events.clear_and_put(ShutdownEventThread())
        self.events.join(SHUTDOWN_JOIN_S)
        if self.events.is_alive():  # blocked in ZooKeeper (e.g. SUSPENDED): fail its call
            log.warning("Controller event thread still busy after %.0f s; closing its ZooKeeper port",
                        SHUTDOWN_JOIN_S)  # fmt: skip
        self.port.close()
        self.events.join()
        if self.channel is not None:
            self.channel.shutdown()
        if self.scheduler is not None:
            self.scheduler.shutdown()

    # ---- API used by the node ----------------------------------------------------------------------
    def on_broker_registered(self, broker_epoch: int) -> None:
        self.broker_epoch = broker_epoch
        if self.events is not None:
            self.events.put(RegisterBrokerAndReelect(broker_epoch))

    def is_active(self) -> bool:
        return self.events is not None and self.events.is_active and not self._stopped

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, timeout_s: float
    ) -> ControlledShutdownResult:
        done = threading.Event()
        answer: list[ControlledShutdownResult] = []

        def reply(result: ControlledShutdownResult) -> None:
            if not done.is_set():
                answer.append(result)
                done.set()

        if self.events is None or self._stopped:
            return ControlledShutdownResult(Errors.STALE_CONTROLLER_EPOCH)
        self.events.put(ControlledShutdown(broker_id, broker_epoch, reply))
        if not done.wait(timeout_s):
            return ControlledShutdownResult(Errors.STALE_CONTROLLER_EPOCH)
        return answer[0]

    def alter_partition_reassignments(
        self,
        reassignments: dict[TopicPartition, tuple[int, ...] | None],
        reply: Callable[[dict[TopicPartition, ApiError] | ApiError], None],
    ) -> None:
        self._put_api_event(ApiPartitionReassignment(tuple(reassignments.items()), reply))

    def list_partition_reassignments(
        self,
        partitions: frozenset[TopicPartition] | None,
        reply: Callable[[dict[TopicPartition, ReplicaAssignment] | ApiError], None],
    ) -> None:
        self._put_api_event(ListPartitionReassignments(partitions, reply))

    def elect_leaders(
        self,
        partitions: frozenset[TopicPartition],
        election_type: ElectionType,
        reply: Callable[[ElectionResults], None],
    ) -> None:
        self._put_api_event(
            ReplicaLeaderElection(partitions, election_type, ElectionTrigger.ADMIN_CLIENT_TRIGGERED, reply)
        )

    def _put_api_event(self, event: ControllerEvent) -> None:
        """Enqueue an API event; once the event thread has stopped, nothing would ever answer it,
        so it is dropped (the request goes unanswered, as one dropped by a queue clear)."""
        if self.events is not None and not self._stopped:
            self.events.put(event)

    # ---- the event thread's view ------------------------------------------------------------------
    def _process(self, event: ControllerEvent) -> list[Effect]:
        assert self.core is not None
        return self.core.process(event)

    def _channel_now(self, effect: AddBroker | RemoveBroker | Resigned) -> None:
        if self.channel is None:
            return
        if isinstance(effect, AddBroker):
            self.channel.add_broker(effect.broker)
        elif isinstance(effect, RemoveBroker):
            self.channel.remove_broker(effect.broker_id)
        else:
            self.channel.shutdown()

    # EffectSink
    def send(self, request: BrokerRequest) -> None:
        if self.channel is not None:
            self.channel.send(request)

    def add_broker(self, broker: BrokerInfo) -> None:
        if self.channel is not None:
            self.channel.add_broker(broker)

    def remove_broker(self, broker_id: int) -> None:
        if self.channel is not None:
            self.channel.remove_broker(broker_id)

    def remove_all_brokers(self) -> None:
        """The event manager's part of Resigned; done already, inside the event, when the core
        applies channel changes at once (``channel_now``)."""
        eager = isinstance(self.core, KafkaController) and self.core.channel_now is not None
        if self.channel is not None and not eager:
            self.channel.shutdown()

    def schedule(self, key: str, delay_ms: int, event: ControllerEvent) -> None:
        if self.scheduler is not None:
            self.scheduler.schedule(key, delay_ms, event)

    def cancel(self, key: str | None) -> None:
        if self.scheduler is not None:
            self.scheduler.cancel(key)
