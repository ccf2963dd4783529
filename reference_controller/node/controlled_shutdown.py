"""Client side of controlled shutdown, as KafkaServer.controlledShutdown@2.5.1 (ring: drivers).

SHUTDOWN-*: up to `controlled.shutdown.max.retries` attempts; each reads the controller id from
`/controller` and its registration from `/brokers/ids/<id>`, sends ControlledShutdown (version
per `inter.broker.protocol.version`, v3 at 2.5) to the controller's endpoint on this broker's
`inter.broker.listener.name` (as Kafka 2.5 does), and succeeds when the error is NONE and no
partitions remain; otherwise it waits `controlled.shutdown.retry.backoff.ms` and retries. After
the last failure the node shuts down anyway ("Proceeding to do an unclean shutdown …").
"""

from __future__ import annotations

import asyncio
import logging
import time

from kio.index import load_request_schema

from kafkawire.framing import FrameError, build
from reference_controller import zkdata
from reference_controller.config import KafkaConfig
from reference_controller.controller.ports import DataResult
from reference_controller.errors import MalformedZnodeError
from reference_controller.node.wire import KafkaClient
from reference_controller.node.zk_port import CONNECTION_CODES, NodeZkError, NodeZkPort

log = logging.getLogger("kafka.server.KafkaServer")
_RECONNECT_POLL_S = 0.1


def _get_until_connected(zk: NodeZkPort, path: str) -> DataResult:
    """`KafkaZkClient.retryRequestUntilConnected` (L1691-1719): a read that lost its connection is
    sent again once the client has reconnected (`ZooKeeperClient.waitUntilConnected` waits with
    no bound, L251-253), so a controlled shutdown cut from ZooKeeper waits for the link instead of
    failing; it ends only with the client itself."""
    while True:
        try:
            return zk.get(path)
        except NodeZkError as exc:
            if exc.code not in CONNECTION_CODES or zk.is_closed():
                raise
        time.sleep(_RECONNECT_POLL_S)


def controller_address(zk: NodeZkPort, listener: str) -> tuple[int, str, int] | None:
    """The controller's id and its endpoint on `listener`, from `/controller` and its
    registration; None when either is missing or undecodable, or it has no such listener."""
    controller = _get_until_connected(zk, zkdata.CONTROLLER)
    if controller.stat is None:
        return None
    try:
        controller_id = zkdata.decode_controller(controller.data)
        registration = _get_until_connected(zk, zkdata.broker_path(controller_id))
        if registration.stat is None:
            return None
        info = zkdata.decode_broker(controller_id, registration.data)
    except MalformedZnodeError:
        return None
    ep = info.endpoint(listener)
    return (controller_id, ep.host, ep.port) if ep else None


async def _attempt(config: KafkaConfig, zk: NodeZkPort, broker_epoch: int) -> bool:
    address = await asyncio.to_thread(controller_address, zk, config.inter_broker_listener_name)
    if address is None:
        log.info("Controller or its registration is missing; will retry controlled shutdown")
        return False
    controller_id, host, port = address
    version = config.inter_broker_protocol_version.controlled_shutdown_version()
    schema = load_request_schema(7, version)
    client = KafkaClient(host, port, f"{config.broker_id}")
    try:
        response = await client.request(
            schema,
            build(schema, broker_id=config.broker_id, broker_epoch=broker_epoch),
            config.controller_socket_timeout_ms / 1000,
        )
    except (OSError, TimeoutError, asyncio.IncompleteReadError, FrameError, ValueError) as exc:
        log.warning(
            f"Error during controlled shutdown, possibly because leader movement took longer than the "
            f"configured controller.socket.timeout.ms and/or request.timeout.ms: {exc!r}"
        )
        return False
    finally:
        await client.close()
    error = int(response.error_code)
    remaining = [f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions]
    if error == 0 and not remaining:
        log.info(f"Controlled shutdown succeeded (controller {controller_id})")
        return True
    log.info(f"Remaining partitions to move: {','.join(remaining)}")
    log.info(f"Error from controller: {error}")
    return False


async def controlled_shutdown(config: KafkaConfig, zk: NodeZkPort, broker_epoch: int) -> bool:
    log.info("Starting controlled shutdown")
    remaining_retries = config.controlled_shutdown_max_retries
    while remaining_retries > 0:
        remaining_retries -= 1
        if await _attempt(config, zk, broker_epoch):
            return True
        await asyncio.sleep(config.controlled_shutdown_retry_backoff_ms / 1000)
        log.info("Retrying controlled shutdown after the previous attempt failed...")
    log.warning("Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed")
    return False
