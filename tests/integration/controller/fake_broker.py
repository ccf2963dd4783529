"""A tiny Kafka-protocol broker for channel tests: records requests, answers with chosen errors."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from kafkawire import framing
from reference_controller.controller.driver import wire


@dataclass(frozen=True)
class Received:
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    payload: Any


class FakeBroker:
    def __init__(self, port: int = 0, error_code: int = 0, partition_error_code: int = 0) -> None:
        self.port = port
        self.error_code = error_code
        self.partition_error_code = partition_error_code
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []

    def start(self) -> FakeBroker:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen()
        self.port = server.getsockname()[1]
        self._server = server
        self._spawn(self._accept, server)
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self._conns.clear()
        for thread in self._threads:
            thread.join(5)
        self._threads.clear()

    def requests(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def _spawn(self, target: Any, arg: Any) -> None:
        thread = threading.Thread(target=target, args=(arg,), daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            self._conns.append(conn)
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", self._read(conn, 4))
                header, payload = framing.decode_request(self._read(conn, size))
                api_key, version = int(header.request_api_key), int(header.request_api_version)
                with self._lock:
                    self.received.append(
                        Received(api_key, version, int(header.correlation_id), header.client_id, payload)
                    )
                response = self._response(api_key, version, payload)
                conn.sendall(framing.encode_response(type(response), int(header.correlation_id), response))
        except (OSError, struct.error):
            return

    @staticmethod
    def _read(conn: socket.socket, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf.extend(chunk)
        return bytes(buf)

    def _partitions(self, api_key: int, version: int, payload: Any) -> list[tuple[str, int]]:
        if api_key == wire.LEADER_AND_ISR:
            if version <= 1:
                return [(s.topic_name, s.partition_index) for s in payload.ungrouped_partition_states]
            return [
                (t.topic_name, s.partition_index) for t in payload.topic_states for s in t.partition_states
            ]
        if version == 0:
            return [(p.topic_name, p.partition_index) for p in payload.ungrouped_partitions]
        return [(t.name, p) for t in payload.topics for p in t.partition_indexes]

    def _response(self, api_key: int, version: int, payload: Any) -> Any:
        m = wire.schema(api_key, version, "response")
        error = ErrorCode(self.error_code)
        if api_key == wire.UPDATE_METADATA:
            return m.UpdateMetadataResponse(error_code=error)
        partition_error = ErrorCode(self.partition_error_code)
        if api_key == wire.LEADER_AND_ISR:
            errors = tuple(
                m.LeaderAndIsrPartitionError(topic_name=t, partition_index=p, error_code=partition_error)
                for t, p in self._partitions(api_key, version, payload)
            )
            return m.LeaderAndIsrResponse(error_code=error, partition_errors=errors)
        errors = tuple(
            m.StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=partition_error)
            for t, p in self._partitions(api_key, version, payload)
        )
        return m.StopReplicaResponse(error_code=error, partition_errors=errors)
