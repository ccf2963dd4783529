"""One simulated node: the reference node's broker side and controller component, run by the
world's event loop instead of threads (ring: drivers — a simulated one).

The broker side is the reference node's own: `NodeContext`, `ReplicaManager`, `MetadataCache`,
`KafkaApis.handle` (called without a socket: the coroutine never waits, so one `send` runs it to
its answer) and `register_broker` on its ZooKeeper session; its `LogManager` keeps the log dirs
in the node's :class:`~chaos.sim.storage.MemoryStorage` instead of on disk. The controller component is the
reference `KafkaController` core over the same session (`MemoryZkClient` is both ports); its event
queue is this object's ``queue`` and the world decides when the next event runs, as the
`ControllerEventManager` thread would: one at a time, FIFO, `Expire` pre-empting the queue.
Effects are executed as the event manager and the service execute them: requests go to the
world's channels, timers to the world's clock, channel changes at once inside the event. The
node's config-change listener is the reference's `ConfigWatcher`, one pass per
:class:`ConfigChanges` event (its child watch on `/config/changes` fired, or the node started or
reconnected), and its `DynamicBrokerConfig` is read at start as the node's service reads it.

Not modelled here: replication (the world's :mod:`chaos.sim.replication` stands for the fetchers
and the ISR tasks), the log-dir tasks.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol, cast

from kazoo.exceptions import NoNodeError

from chaos.sim.storage import MemoryStorage
from kafkawire.states import LiveLeader, TopicPartition
from reference_controller import zkdata
from reference_controller.config import KafkaConfig
from reference_controller.controller.core import KafkaController
from reference_controller.controller.driver.config_watcher import ConfigWatcher, initialize_dynamic_config
from reference_controller.controller.driver.dynamic_broker_config import DynamicBrokerConfig
from reference_controller.controller.effects import (
    AddBroker,
    BecameController,
    BrokerRequest,
    CancelScheduled,
    Effect,
    RemoveBroker,
    Resigned,
    ScheduleEvent,
    SendRequest,
)
from reference_controller.controller.events import (
    ControllerEvent,
    Expire,
    RegisterBrokerAndReelect,
    ShutdownEventThread,
    Startup,
    ZkReconnected,
)
from reference_controller.controller.ports import ChildHandler
from reference_controller.node.apis import KafkaApis
from reference_controller.node.context import NodeContext
from reference_controller.node.isr import IsrManager
from reference_controller.node.journal import ControllerRequestJournal
from reference_controller.node.log_manager import LogManager
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.protocol import RequestContext
from reference_controller.node.registration import RegistrationError, register_broker
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.zk_port import NodeZkError, SessionState, create_if_absent
from reference_controller.testing.memory_zk import MemoryZkClient
from reference_controller.zkdata import CONFIG_CHANGES, BrokerInfo, EndPoint

__all__ = ["ConfigChanges", "Host", "SimNode", "run_coroutine"]

log = logging.getLogger("chaos.sim.node")


class Host(Protocol):
    """What a node needs of the world it runs in."""

    seed: int  # the run's seed: the node's own random choices (replica placement) derive from it

    def now_ms(self) -> int: ...
    def new_session(self) -> MemoryZkClient: ...
    def kick(self, node: SimNode) -> None: ...
    def send(self, node: SimNode, request: BrokerRequest) -> None: ...
    def open_channel(self, node: SimNode, broker: BrokerInfo) -> None: ...
    def close_channel(self, node: SimNode, broker_id: int | None) -> None: ...
    def set_timer(self, node: SimNode, key: str, delay_ms: int, event: ControllerEvent) -> None: ...
    def cancel_timer(self, node: SimNode, key: str | None) -> None: ...


class _SilentJournal(ControllerRequestJournal):
    """The node's own journal file is not the evidence here: the world's channels journal what
    each broker received and answered (as the real run's request proxies do)."""

    records = False

    def __init__(self) -> None:  # no file: nothing to open
        pass

    def record(self, entry: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


class _NoFetcher:
    def add_partitions(
        self, partitions: dict[TopicPartition, tuple[int, int]], hints: list[LiveLeader]
    ) -> None:
        pass

    def remove_partitions(self, partitions: Any) -> None:
        pass


def run_coroutine(coro: Any) -> Any:
    """Run a coroutine that never suspends (a handler whose awaits complete at once) to its value."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a simulated handler suspended: it needs a real event loop")


@dataclass(frozen=True)
class ConfigChanges:
    """The children of ``/config/changes`` changed (or the node started or reconnected): the node's
    config-change listener reads the new notifications. Queued with the controller's events, so
    a paused node reads them when it runs again; Kafka's listener has a thread of its own, so in a
    real node this may run beside a controller event instead of after it."""


class _KazooView:
    """The kazoo calls :class:`ConfigWatcher` makes, over a node's in-memory session: ``get`` and
    ``get_children`` raise ``NoNodeError``; a notification's ``ctime`` is now (a simulated run is
    far shorter than the 15 minutes after which notifications are purged)."""

    def __init__(self, zk: MemoryZkClient, now_ms: Callable[[], int]) -> None:
        self.zk, self.now_ms = zk, now_ms

    def get(self, path: str) -> tuple[bytes | None, Any]:
        found = self.zk.get(path)
        if found.stat is None:
            raise NoNodeError(path)
        return found.data, SimpleNamespace(ctime=self.now_ms())

    def get_children(self, path: str, watch: Any = None) -> list[str]:
        children = self.zk.get_children(path)  # arms the child watch: its handler is registered
        if children is None:
            raise NoNodeError(path)
        return children

    def delete(self, path: str, recursive: bool = False) -> None:
        self.zk.delete(path)


class SimNode:
    """One broker with its controller component (module docstring)."""

    def __init__(self, broker_id: int, props: dict[str, str], data_dir: Path, host: Host) -> None:
        self.broker_id = broker_id
        self.host = host
        self.config = KafkaConfig.from_properties(
            {**props, "broker.id": str(broker_id), "log.dirs": str(data_dir)}
        )
        self.data_dir = data_dir
        self.storage = MemoryStorage()  # the node's disk: outlives a restart, not the run
        self.info = BrokerInfo(
            broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + broker_id),), timestamp_ms=0
        )
        self.running = False
        self.paused = False
        self.zk: MemoryZkClient | None = None
        self.controller: KafkaController | None = None
        self.apis: KafkaApis | None = None
        self.context: NodeContext | None = None
        self.config_watcher: ConfigWatcher | None = None
        self.queue: deque[ControllerEvent] = deque()
        self.active = False
        self.registered = False
        self.session_lost = False  # waiting for a new session to register again
        self.incarnation = 0  # bumped on every start: stale callbacks of an old life are ignored
        self.handled = 0  # requests handled: the metadata cache changes only in one

    # ---- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self.incarnation += 1
        self.running, self.paused, self.active, self.registered = True, False, False, False
        self.session_lost = False
        self.queue.clear()
        zk = self.host.new_session()
        self.zk = zk
        for path in zkdata.PERSISTENT_PATHS:
            create_if_absent(zk, path, None)
        create_if_absent(zk, zkdata.CLUSTER_ID, zkdata.encode_cluster_id("simulated"))
        lm = LogManager((self.data_dir,), 1, 0, storage=self.storage)
        lm.startup("simulated")
        rm = ReplicaManager(self.broker_id, lm, MetadataCache(), _NoFetcher(), clock_ms=self._now)
        isr = IsrManager(zk, rm, 2000, 5000, 60_000, wall_clock_ms=self._now)
        self.context = NodeContext(self.config, zk, "simulated", rm, rm.metadata_cache, isr, _SilentJournal())
        # CreateTopics' placement start index: seeded per run, node and life (a str seed is hashed
        # with SHA-512, not Python's per-process hash)
        self.context.rng = random.Random(f"{self.host.seed}:{self.broker_id}:{self.incarnation}")
        self.apis = KafkaApis(self.context)
        zk.add_session_listener(self._on_session)
        self.controller = KafkaController(self.config, zk, self, -1)
        self.controller.channel_now = self._channel_now
        # dynamic broker configs and the config-change listener, as the node's controller service
        # sets them up: the layers read before the controller starts, every notification after
        view = _KazooView(zk, self.host.now_ms)
        dynamic = DynamicBrokerConfig(self.broker_id, self.config.unclean_leader_election_enable)
        initialize_dynamic_config(view, dynamic)
        self.controller.dynamic_config = dynamic
        self.config_watcher = ConfigWatcher(
            view, self.put, lambda: self.active, clock_ms=self._now, dynamic_config=dynamic
        )
        zk.register_child_handler(ChildHandler(CONFIG_CHANGES, cast("ControllerEvent", ConfigChanges())))
        self.try_register()
        self.put(Startup())
        self.put(cast("ControllerEvent", ConfigChanges()))

    def _now(self) -> float:
        return float(self.host.now_ms())

    def now_ms(self) -> int:  # the core's Clock
        return self.host.now_ms()

    def try_register(self) -> bool:
        """Register `/brokers/ids/<id>`; False while an earlier session's znode still stands."""
        assert self.zk is not None
        assert self.context is not None
        try:
            epoch = register_broker(self.zk, self.info)
        except (RegistrationError, NodeZkError):
            return False
        self.registered = True
        self.context.replica_manager.broker_epoch = epoch
        if self.controller is not None:
            self.controller.broker_epoch = epoch
        return True

    def stop(self, *, close_session: bool) -> None:
        """The process ends: a clean shutdown closes the session (its ephemerals go at once); a
        kill leaves it to expire on the server."""
        if self.controller is not None and close_session:
            self._process(ShutdownEventThread())
        self.running, self.active = False, False
        if self.zk is not None and close_session:
            self.zk.close()
        self.queue.clear()
        self.host.close_channel(self, None)
        self.host.cancel_timer(self, None)

    # ---- ZooKeeper session --------------------------------------------------------------------
    def _on_session(self, state: SessionState) -> None:
        if not self.running:
            return
        if state == SessionState.LOST:
            self.session_lost = True
            self.clear_and_put(Expire())
        elif state == SessionState.CONNECTED and self.session_lost:
            self.session_lost = False
            self.registered = False  # the world registers again on the new session
            self.put(cast("ControllerEvent", ConfigChanges()))  # its child watch went with the session
        elif state == SessionState.CONNECTED:
            self.put(ZkReconnected())
            self.put(cast("ControllerEvent", ConfigChanges()))  # a reconnect dropped the child watch

    def reregister(self) -> bool:
        """After a new session: register (new broker epoch), then RegisterBrokerAndReelect."""
        if not self.try_register():
            return False
        assert self.context is not None
        self.put(RegisterBrokerAndReelect(self.context.replica_manager.broker_epoch))
        return True

    # ---- the event queue --------------------------------------------------------------------------
    def put(self, event: ControllerEvent) -> None:
        self.queue.append(event)
        self.host.kick(self)

    def clear_and_put(self, event: ControllerEvent) -> None:
        from reference_controller.controller.driver.event_manager import preempt  # noqa: PLC0415

        dropped = list(self.queue)
        self.queue.clear()
        self.queue.append(event)
        for queued in dropped:
            try:
                preempt(queued)
            except Exception:
                log.debug("pre-empting %s failed", queued)
        self.host.kick(self)

    def process_next(self) -> None:
        if self.queue:
            self._process(self.queue.popleft())

    def _process(self, event: ControllerEvent) -> None:
        assert self.controller is not None
        if isinstance(event, ConfigChanges):
            if self.config_watcher is not None:
                try:
                    self.config_watcher.process_once()
                except NodeZkError:
                    log.debug("reading %s failed: the session is gone", CONFIG_CHANGES)
            return
        try:
            effects = self.controller.process(event)
        except Exception:
            log.debug("Error processing event %s", event, exc_info=True)
            return
        for effect in effects:
            self._execute(effect)

    def _execute(self, effect: Effect) -> None:
        match effect:
            case SendRequest(request=request):
                self.host.send(self, request)
            case AddBroker() | RemoveBroker():
                self._channel_now(effect)
            case ScheduleEvent(key=key, delay_ms=delay_ms, event=event):
                self.host.set_timer(self, key, delay_ms, event)
            case CancelScheduled(key=key):
                self.host.cancel_timer(self, key)
            case BecameController():
                self.active = True
            case Resigned():
                self.active = False

    def _channel_now(self, effect: AddBroker | RemoveBroker | Resigned) -> None:
        if isinstance(effect, AddBroker):
            self.host.open_channel(self, effect.broker)
        elif isinstance(effect, RemoveBroker):
            self.host.close_channel(self, effect.broker_id)
        else:
            self.host.close_channel(self, None)

    # ---- the broker side -----------------------------------------------------------------------
    def handle(self, api_key: int, version: int, correlation_id: int, request: Any) -> Any:
        assert self.apis is not None
        self.handled += 1
        ctx = RequestContext("PLAINTEXT", "simulated", api_key, version, correlation_id, "controller")
        return run_coroutine(self.apis.handle(ctx, request))
