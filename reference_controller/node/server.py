"""A reference node: start-up and shutdown in KafkaServer@2.5.1's order (ring: drivers).

Start-up: (1) connect to ZooKeeper, retrying until `zookeeper.connection.timeout.ms` (then
`StartupError` naming the connect string), creating the chroot if missing; (2)
createTopLevelPaths (null data); (3) `/cluster/id` create-or-get; (4) log manager (meta.properties,
load existing partition dirs); (5) bind every listener (port 0 ⇒ a free port; the bound port is
what is advertised when `advertised.listeners` has no port for that listener); (6) replica
manager + ISR tasks; (7) register `/brokers/ids/<id>` (broker epoch = czxid); (8) start the
controller component unless `reference.controller.enable=false` or it is not installed; (9) serve.
Shutdown: set the replica manager's `is_shutting_down` (KafkaServer's `isShuttingDown`, so the
LeaderAndIsr requests the controlled shutdown causes add no fetcher: SHUTDOWN-3), controlled
shutdown (if enabled and registered), stop listeners (request processing), fetchers (the
replica manager), ISR tasks, controller component, ZooKeeper session, checkpoint files +
`.kafka_cleanshutdown`.
Log-dir failure (LOGDIR-5): the `LogDirFailureHandler` task and the reference health check task
(`log_dir_failure.py`); when Kafka would halt (every log dir offline, or any with IBP < 1.0-IV0)
the node logs FATAL-level (CRITICAL) and exits 1 at once: no controlled shutdown, nothing written.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from reference_controller import zkdata
from reference_controller.config import KafkaConfig
from reference_controller.controller.driver.kazoo_handler import LeanThreadingHandler
from reference_controller.controller.ports import ZkCode
from reference_controller.errors import ReferenceControllerError
from reference_controller.node import registration
from reference_controller.node.apis import SUPPORTED_VERSIONS, KafkaApis
from reference_controller.node.context import ControllerComponent, NodeContext
from reference_controller.node.controlled_shutdown import controlled_shutdown
from reference_controller.node.fetcher import ReplicaFetcherManager
from reference_controller.node.isr import IsrManager
from reference_controller.node.journal import ControllerRequestJournal
from reference_controller.node.log_dir_failure import (
    HEALTH_CHECK_INTERVAL_S,
    LogDirFailureChannel,
    run_health_check,
)
from reference_controller.node.log_dir_handler import LogDirFailureHandler
from reference_controller.node.log_manager import LogManager
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.protocol import KafkaProtocolServer
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.zk_driver import KazooNodeZk
from reference_controller.node.zk_port import (
    NodeZkError,
    NodeZkPort,
    SessionState,
    create_if_absent,
    create_recursive,
    expect,
)
from reference_controller.zkdata import BrokerInfo, EndPoint

log = logging.getLogger("kafka.server.KafkaServer")


class StartupError(ReferenceControllerError):
    """The node cannot start (ZooKeeper unreachable, port in use, inconsistent log dir …)."""


class NodeHalted(ReferenceControllerError):
    """Kafka's `Exit.halt(1)`: the node stops at once (every log dir failed …)."""


def load_controller_service() -> Callable[..., ControllerComponent]:
    """The controller component's class (mypy checks here that it is a `ControllerComponent`).
    Imported only when the controller is enabled (a broker-only node never loads it); it always
    ships with the node, so a failed import is an error that propagates, never a silent
    broker-only start."""
    from reference_controller.controller.driver.service import (  # noqa: PLC0415 - loaded on demand
        ControllerService,
    )

    return ControllerService


def generate_cluster_id() -> str:
    """`CoreUtils.generateUuidAsBase64`: 22-char URL-safe base64 of a random UUID."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


_T = TypeVar("_T")
UNTIL_CONNECTED_PAUSE_S = 0.1


class KafkaNode:
    def __init__(self, config: KafkaConfig, log_dir: Any) -> None:
        self.config = config
        self.log_dir = log_dir
        self.zk_client: KazooClient | None = None  # the session, shared with the controller
        self.zk: NodeZkPort | None = None  # the broker side's port on it
        self.servers: list[KafkaProtocolServer] = []
        self.controller: ControllerComponent | None = None
        self.node: NodeContext | None = None
        self.fetcher: ReplicaFetcherManager | None = None
        self.broker_info: BrokerInfo | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.shutdown_requested = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_lost = False
        self.registered = False
        self.halt_reason: str | None = None

    # -- start-up ------------------------------------------------------------------------------
    def _connect_zookeeper(self) -> KazooClient:
        cfg = self.config
        log.info(f"Connecting to zookeeper on {cfg.zookeeper_connect}")
        zk = KazooClient(
            hosts=cfg.zookeeper_connect,
            timeout=cfg.zookeeper_session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            # kazoo's threading handler with one poll per select and coalesced sends/read-ahead
            # receives (same bytes, order, session and timeouts; issue 13: creation throughput)
            handler=LeanThreadingHandler(),
        )
        try:
            zk.start(timeout=cfg.zookeeper_connection_timeout_ms / 1000)
        except KazooTimeoutError:
            zk.stop()
            zk.close()
            raise StartupError(
                f"Timed out waiting for connection to ZooKeeper at {cfg.zookeeper_connect} while in state: "
                f"CONNECTING (zookeeper.connection.timeout.ms={cfg.zookeeper_connection_timeout_ms})"
            ) from None
        chroot = zk.chroot
        if chroot:  # KafkaServer.initZkClient: create the chroot path if necessary
            zk.chroot = ""
            try:
                expect(create_recursive(KazooNodeZk(zk), chroot, None), ZkCode.NODEEXISTS)
            finally:
                zk.chroot = chroot
        return zk

    def _create_top_level_paths(self, zk: NodeZkPort) -> None:
        for path in zkdata.PERSISTENT_PATHS:
            self._until_connected(zk, functools.partial(create_if_absent, zk, path, None))

    def _create_or_get_cluster_id(self, zk: NodeZkPort) -> str:
        data = zkdata.encode_cluster_id(generate_cluster_id())
        self._until_connected(zk, lambda: create_if_absent(zk, zkdata.CLUSTER_ID, data))
        return zkdata.decode_cluster_id(self._until_connected(zk, lambda: zk.get(zkdata.CLUSTER_ID)).data)

    def _until_connected(self, zk: NodeZkPort, call: Callable[[], _T]) -> _T:
        """Kafka's `retryRequestUntilConnected` for start-up: a request that loses its connection
        is sent again once kazoo has reconnected (a node restarted while its ZooKeeper link is
        flaky must not die of one ConnectionLoss — chaos partition seed 2616), for at most
        `zookeeper.connection.timeout.ms`; then start-up fails with the reason."""
        give_up = time.monotonic() + self.config.zookeeper_connection_timeout_ms / 1000
        while True:
            try:
                return call()
            except NodeZkError as exc:
                if exc.code != ZkCode.CONNECTION_LOSS:
                    raise
                if zk.is_closed() or time.monotonic() >= give_up:
                    raise StartupError(
                        f"Lost the connection to ZooKeeper at {self.config.zookeeper_connect} during "
                        f"start-up and could not resend within zookeeper.connection.timeout.ms="
                        f"{self.config.zookeeper_connection_timeout_ms}"
                    ) from None
                time.sleep(UNTIL_CONNECTED_PAUSE_S)

    async def _bind_listeners(self, apis: KafkaApis) -> None:
        for listener in self.config.listeners:
            server = KafkaProtocolServer(
                listener.name, listener.host, listener.port, supported=SUPPORTED_VERSIONS, handler=apis.handle
            )
            try:
                await server.start()
            except OSError as exc:
                raise StartupError(
                    f"Socket server failed to bind to {listener.host}:{listener.port} ({listener.name}): "
                    f"{exc.strerror or exc}"
                ) from exc
            self.servers.append(server)

    def _broker_info(self) -> BrokerInfo:
        bound = {s.listener: s.bound_port for s in self.servers}
        endpoints = []
        for a in self.config.advertised_listeners:
            port = a.port or bound[a.name]
            protocol = self.config.listener_security_protocol_map.get(a.name, "PLAINTEXT")
            endpoints.append(EndPoint(a.name, a.host, port, protocol))
        return BrokerInfo(
            broker_id=self.config.broker_id,
            endpoints=tuple(endpoints),
            rack=self.config.broker_rack,
            timestamp_ms=int(time.time() * 1000),
            version=self.config.inter_broker_protocol_version.broker_znode_version(),
        )

    async def startup(self) -> None:
        cfg = self.config
        self._loop = asyncio.get_running_loop()
        log.info("starting")
        self.zk_client = await asyncio.to_thread(self._connect_zookeeper)
        zk = self.zk = KazooNodeZk(self.zk_client)
        await asyncio.to_thread(self._create_top_level_paths, zk)
        cluster_id = await asyncio.to_thread(self._create_or_get_cluster_id, zk)
        log.info(f"Cluster ID = {cluster_id}")
        channel = LogDirFailureChannel()
        log_manager = LogManager(cfg.log_dirs, cfg.broker_id, cfg.log_segment_delete_delay_ms, channel)
        try:
            log_manager.startup(cluster_id)
        except ReferenceControllerError as exc:
            raise StartupError(str(exc)) from exc
        cache = MetadataCache()
        self.fetcher = ReplicaFetcherManager(cfg, cache)
        rm = ReplicaManager(cfg.broker_id, log_manager, cache, self.fetcher)
        isr = IsrManager(
            zk,
            rm,
            cfg.replica_lag_time_max_ms,
            cfg.reference_isr_change_propagation_blackout_ms,
            cfg.reference_isr_change_propagation_interval_ms,
        )
        journal = ControllerRequestJournal(self.log_dir)
        self.node = NodeContext(cfg, zk, cluster_id, rm, cache, isr, journal)
        await self._bind_listeners(KafkaApis(self.node))
        loop = asyncio.get_running_loop()
        self.tasks += [
            loop.create_task(isr.run_isr_expiration(), name="isr-expiration"),
            loop.create_task(isr.run_isr_change_propagation(), name="isr-change-propagation"),
            loop.create_task(self._delete_logs(log_manager), name="kafka-delete-logs"),
            loop.create_task(
                LogDirFailureHandler(
                    channel, rm, zk, self.halt, not cfg.inter_broker_protocol_version.at_least("1.0-IV0")
                ).run(),
                name="LogDirFailureHandler",
            ),
            loop.create_task(
                run_health_check(channel, lambda: list(log_manager.live_log_dirs), HEALTH_CHECK_INTERVAL_S),
                name="log-dir-health-check",
            ),
        ]
        self.broker_info = self._broker_info()
        # a resent registration whose first try took effect finds its own ephemeral (NODEEXISTS,
        # same session): KafkaZkClient.checkedEphemeralCreate's case, handled by register_broker
        register = functools.partial(registration.register_broker, zk, self.broker_info)
        rm.broker_epoch = await asyncio.to_thread(self._until_connected, zk, register)
        self.registered = True
        zk.add_session_listener(self._zk_state_listener)
        await self._start_controller(rm.broker_epoch)
        log.info(f"[KafkaServer id={cfg.broker_id}] started")

    async def _start_controller(self, broker_epoch: int) -> None:
        service_cls = load_controller_service() if self.config.reference_controller_enable else None
        if service_cls is None:
            log.info("Controller component not started (broker-only mode)")
            return
        controller: ControllerComponent = service_cls(self.config, self.zk_client, broker_epoch=broker_epoch)
        self.controller = controller
        assert self.node is not None
        self.node.controller = controller
        await asyncio.to_thread(controller.startup)

    async def _delete_logs(self, log_manager: LogManager) -> None:
        while True:
            await asyncio.sleep(0.1)
            log_manager.delete_due()

    # -- session expiry ------------------------------------------------------------------------
    def _zk_state_listener(self, state: SessionState) -> None:
        """Runs on the ZooKeeper client's thread: never call ZooKeeper here, hand over to the loop."""
        if state == SessionState.LOST:
            self._session_lost = True
        elif state == SessionState.CONNECTED and self._session_lost and self._loop is not None:
            self._session_lost = False
            self._loop.call_soon_threadsafe(self._spawn_reregister)

    def _spawn_reregister(self) -> None:
        self.tasks.append(asyncio.get_running_loop().create_task(self._reregister(), name="reregister"))

    async def _reregister(self) -> None:
        assert self.zk is not None
        assert self.broker_info is not None
        assert self.node is not None
        deadline = time.monotonic() + self.config.zookeeper_session_timeout_ms / 1000
        log.info("Re-registering broker after ZooKeeper session expiry")
        try:
            epoch = await asyncio.to_thread(
                registration.register_with_retry,
                self.zk,
                self.broker_info,
                deadline,
                time.monotonic,
                time.sleep,
            )
        except Exception:
            log.exception("Re-registration of the broker failed")
            return
        self.node.replica_manager.broker_epoch = epoch
        if self.controller is not None:
            await asyncio.to_thread(self.controller.on_broker_registered, epoch)

    # -- run / shutdown ------------------------------------------------------------------------
    async def serve(self) -> None:
        await self.shutdown_requested.wait()
        if self.halt_reason is not None:
            raise NodeHalted(self.halt_reason)

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()

    def halt(self, reason: str) -> None:
        """Kafka's `Exit.halt(1)` (the caller logged why): no controlled shutdown, no disk writes."""
        self.halt_reason = reason
        self.shutdown_requested.set()

    async def shutdown(self) -> None:
        log.info(f"[KafkaServer id={self.config.broker_id}] shutting down")
        halted = self.halt_reason is not None
        if self.node is not None:  # KafkaServer: `isShuttingDown` is set before controlledShutdown()
            self.node.replica_manager.is_shutting_down = True
        if (
            not halted
            and self.registered
            and self.config.controlled_shutdown_enable
            and self.zk is not None
            and self.node
        ):
            try:
                await controlled_shutdown(self.config, self.zk, self.node.replica_manager.broker_epoch)
            except Exception as exc:  # KafkaServer.shutdown L608: CoreUtils.swallow(controlledShutdown())
                log.warning(str(exc), exc_info=True)
        for server in self.servers:
            await server.stop()
        if self.fetcher is not None:
            await self.fetcher.shutdown()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.controller is not None:
            await asyncio.to_thread(self.controller.shutdown)
        if self.zk_client is not None:
            client, self.zk_client = self.zk_client, None
            await asyncio.to_thread(_close_zookeeper, client)
        if self.node is not None:
            if not halted:
                self.node.replica_manager.log_manager.shutdown()
            self.node.journal.close()
        log.info(f"[KafkaServer id={self.config.broker_id}] shut down completed")


def _close_zookeeper(zk: KazooClient) -> None:
    zk.stop()
    zk.close()
