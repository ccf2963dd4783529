"""`ControllerChannelManager`: one send thread and one TCP connection per broker (ring: drivers).

Kafka's ControllerChannelManager + RequestSendThread (ControllerChannelManager.scala@2.5.1):

- `add_broker(info)` opens a channel to the broker's endpoint for this node's controller listener
  (`control.plane.listener.name`, else `inter.broker.listener.name`) with a FIFO queue and a thread
  named `Controller-<id>-to-broker-<bid>-send-thread`; `send(request)` appends to that queue, so the
  order per broker is the order of the core's `SendRequest` effects. A request for a broker without
  a channel is dropped with `"Not sending request … to broker <id>, since it is offline."`.
- The send thread takes one request at a time: connect (within `controller.socket.timeout.ms`),
  send, wait for the response (within `request.timeout.ms`); on any failure it logs, closes the
  connection, backs off 100 ms and retries the *same* request until it succeeds or the broker is
  removed (`remove_broker` stops the thread; the request is given up silently, as in Kafka).
- Responses become events (`wire.response_event`): LeaderAndIsrResponseReceived,
  UpdateMetadataResponseReceived, and TopicDeletionStopReplicaResponseReceived for
  StopReplica(delete_partitions=true); the state-change log gets Kafka's
  `"Received response … for request … with correlation id … sent to broker …"` TRACE line.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from reference_controller.config import KafkaConfig
from reference_controller.controller.driver import wire
from reference_controller.controller.effects import (
    BrokerRequest,
    LeaderAndIsrRequest,
    UpdateMetadataRequest,
)
from reference_controller.controller.events import ControllerEvent
from reference_controller.logutil import STATE_CHANGE_LOGGER, trace
from reference_controller.zkdata import BrokerInfo

log = logging.getLogger("kafka.controller.ControllerChannelManager")
send_log = logging.getLogger("kafka.controller.RequestSendThread")
state_change_log = logging.getLogger(STATE_CHANGE_LOGGER)

BACKOFF_S = 0.1


def request_version(config: KafkaConfig, request: BrokerRequest) -> int:
    ibp = config.inter_broker_protocol_version
    if isinstance(request, LeaderAndIsrRequest):
        return ibp.leader_and_isr_version()
    if isinstance(request, UpdateMetadataRequest):
        return ibp.update_metadata_version()
    return ibp.stop_replica_version()


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


class _Stopped(Exception):
    """The broker was removed while its send thread was retrying."""


class RequestSendThread:
    """One broker's queue, connection and thread."""

    def __init__(self, manager: ControllerChannelManager, broker_id: int, endpoint: Endpoint) -> None:
        self._m = manager
        self.broker_id = broker_id
        self.endpoint = endpoint
        self.queue: queue.SimpleQueue[BrokerRequest | None] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._correlation_id = 0
        name = f"Controller-{manager.controller_id}-to-broker-{broker_id}-send-thread"
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def shutdown(self) -> None:
        self._stop.set()
        self.queue.put(None)
        self._close()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join()
        self._close()

    # ---- thread ----------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            request = self.queue.get()
            if request is None or self._stop.is_set():
                break
            try:
                self._send_until_done(request)
            except _Stopped:
                break
            except Exception:  # never kill the thread (Kafka's doWork catch-all)
                send_log.exception(
                    "[RequestSendThread controllerId=%d] Controller %d fails to send a request to broker %d",
                    self._m.controller_id, self._m.controller_id, self.broker_id,
                )  # fmt: skip
                self._close()
        self._close()

    def _send_until_done(self, request: BrokerRequest) -> None:
        api_key = wire.api_key_of(request)
        version = request_version(self._m.config, request)
        try:
            payload = wire.to_kio(request, version)
        except wire.UnsupportedVersionError:
            send_log.exception("Controller %d fails to send a request to broker %d",
                               self._m.controller_id, self.broker_id)  # fmt: skip
            return
        while True:
            if self._stop.is_set():
                raise _Stopped
            try:
                response = self._round_trip(api_key, version, payload)
                break
            except OSError as exc:
                send_log.warning(
                    "[RequestSendThread controllerId=%d] Controller %d epoch %d fails to send request %s "
                    "to broker %s:%d (id: %d). Reconnecting to broker. (%s)",
                    self._m.controller_id, self._m.controller_id, request.controller_epoch,
                    type(request).__name__, self.endpoint.host, self.endpoint.port, self.broker_id, exc,
                )  # fmt: skip
                self._close()
                if self._stop.wait(BACKOFF_S):
                    raise _Stopped from None
        trace(state_change_log, f"[Controller id={self._m.controller_id} epoch={request.controller_epoch}] "
              f"Received response {response.body} for request {type(request).__name__} with correlation id "
              f"{response.correlation_id} sent to broker {self.endpoint.host}:{self.endpoint.port} "
              f"(id: {self.broker_id})")  # fmt: skip
        event = wire.response_event(request, response.body)
        if event is not None:
            self._m.enqueue(event)

    def _round_trip(self, api_key: int, version: int, payload: object) -> wire.DecodedResponse:
        sock = self._connect()
        self._correlation_id += 1
        frame = wire.encode_frame(payload, self._correlation_id, str(self._m.controller_id))
        sock.settimeout(self._m.config.request_timeout_ms / 1000)
        sock.sendall(frame)
        (size,) = struct.unpack(">i", self._read_exactly(sock, 4))
        body = self._read_exactly(sock, size)
        response = wire.decode_response(api_key, version, body)
        if response.correlation_id != self._correlation_id:
            raise OSError(f"correlation id {response.correlation_id} != expected {self._correlation_id}")
        return response

    def _connect(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        timeout_s = self._m.config.controller_socket_timeout_ms / 1000
        try:
            sock = socket.create_connection((self.endpoint.host, self.endpoint.port), timeout=timeout_s)
        except OSError as exc:
            send_log.warning(
                "[RequestSendThread controllerId=%d] Controller %d's connection to broker %s:%d (id: %d) "
                "was unsuccessful (%s)",
                self._m.controller_id, self._m.controller_id, self.endpoint.host, self.endpoint.port,
                self.broker_id, exc,
            )  # fmt: skip
            raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        send_log.info(
            "[RequestSendThread controllerId=%d] Controller %d connected to %s:%d (id: %d rack: null) "
            "for sending state change requests",
            self._m.controller_id, self._m.controller_id, self.endpoint.host, self.endpoint.port,
            self.broker_id,
        )  # fmt: skip
        self._sock = sock
        return sock

    def _read_exactly(self, sock: socket.socket, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.extend(chunk)
        return bytes(chunks)

    def _close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


class ControllerChannelManager:
    """Channels to brokers, keyed by broker id. Thread-safe."""

    def __init__(self, config: KafkaConfig, enqueue: Callable[[ControllerEvent], None]) -> None:
        self.config = config
        self.controller_id = config.broker_id
        self.enqueue = enqueue
        self._lock = threading.Lock()
        self._brokers: dict[int, RequestSendThread] = {}

    def add_broker(self, broker: BrokerInfo) -> None:
        listener = self.config.controller_listener_name
        endpoint = broker.endpoint(listener)
        if endpoint is None:
            log.error("Broker %d has no endpoint for listener %s: %s", broker.broker_id, listener, broker)
            return
        with self._lock:
            if broker.broker_id in self._brokers:
                return
            log.debug("Controller %d trying to connect to broker %d", self.controller_id, broker.broker_id)
            thread = RequestSendThread(self, broker.broker_id, Endpoint(endpoint.host, endpoint.port))
            self._brokers[broker.broker_id] = thread
            thread.start()

    def remove_broker(self, broker_id: int) -> None:
        with self._lock:
            thread = self._brokers.pop(broker_id, None)
        if thread is not None:
            thread.shutdown()

    def send(self, request: BrokerRequest) -> None:
        with self._lock:
            thread = self._brokers.get(request.broker_id)
            if thread is not None:
                thread.queue.put(request)
                return
        log.warning("Not sending request %s to broker %d, since it is offline.", request, request.broker_id)

    def broker_ids(self) -> list[int]:
        with self._lock:
            return sorted(self._brokers)

    def shutdown(self) -> None:
        """Remove every broker (Kafka's `shutdown()`); joins every send thread."""
        with self._lock:
            threads = list(self._brokers.values())
            self._brokers.clear()
        for thread in threads:
            thread.shutdown()
