"""The Kafka-protocol socket server of the node (ring: drivers, asyncio).

One `asyncio` server per listener. Frames are int32 size-prefixed; the request header version
follows the request's API version (kio's `__header_schema__`), the response header the response's.
Requests on one connection are handled one at a time, in order (Kafka mutes a channel while a
request is in flight). Protocol violations follow Kafka 2.5's SocketServer/KafkaApis:
- size prefix < 0 or > `socket.request.max.bytes` (104857600), truncated or undecodable request:
  the connection is closed and the reason logged; the node keeps serving;
- unknown API key: connection closed and logged;
- known API, unsupported version: ApiVersions answers error 35 (UNSUPPORTED_VERSION) with a v0
  body listing the supported ranges; any other API closes the connection (and logs);
- null where the schema has a non-nullable field (e.g. a compact array of length 0, which kio
  decodes as None): a parse error, as Kafka's SchemaException "non-nullable field": the
  connection is closed and the field named in the log (`null_field`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import struct
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema, load_response_schema

from kafkawire.framing import MAX_REQUEST_BYTES, FrameError, build, decode, encode_response, read_frame
from reference_controller.node.wire import nested

log = logging.getLogger("kafka.network.Processor")
API_VERSIONS_KEY = 18
UNSUPPORTED_VERSION = 35


@dataclass(frozen=True)
class RequestContext:
    listener: str
    peer: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


Handler = Callable[[RequestContext, Any], Awaitable[Any]]


class CloseConnection(Exception):
    """Raised by a handler to close the connection without a response (after logging)."""


class KafkaProtocolServer:
    def __init__(
        self,
        listener: str,
        host: str,
        port: int,
        *,
        supported: dict[int, tuple[int, int]],
        handler: Handler,
        max_request_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        self.listener, self.host, self.port = listener, host, port
        self.supported = supported
        self.handler = handler
        self.max_request_bytes = max_request_bytes
        self.server: asyncio.Server | None = None
        self.bound_port = port
        self._connections: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        self.bound_port = int(self.server.sockets[0].getsockname()[1])
        log.info(f"Awaiting socket connections on {self.host}:{self.bound_port} ({self.listener}).")

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peername = writer.get_extra_info("peername")
        peer = f"{peername[0]}:{peername[1]}" if peername else "?"
        try:
            while True:
                payload = await read_frame(reader, self.max_request_bytes)
                if payload is None:
                    return
                response = await self._handle(peer, payload)
                writer.write(response)
                await writer.drain()
        except FrameError as exc:
            log.warning(f"Closing socket connection to /{peer} ({self.listener}) due to invalid frame: {exc}")
        except CloseConnection as exc:
            log.warning(f"Closing socket connection to /{peer} ({self.listener}): {exc}")
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception(f"Unexpected error from /{peer} ({self.listener}); closing connection")
        finally:
            self._connections.discard(task)
            writer.close()

    async def _handle(self, peer: str, payload: bytes) -> bytes:
        if len(payload) < 8:
            raise CloseConnection(f"invalid request: frame of {len(payload)} bytes has no request header")
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", payload)
        if api_key not in self.supported:
            raise CloseConnection(f"invalid request: unknown API key {api_key} (version {api_version})")
        low, high = self.supported[api_key]
        if not low <= api_version <= high:
            if api_key == API_VERSIONS_KEY:
                return self._unsupported_api_versions(correlation_id)
            raise CloseConnection(
                f"invalid request: unsupported version {api_version} of API key {api_key} (supported "
                f"{low}-{high})"
            )
        schema = load_request_schema(api_key, api_version)
        try:
            header, used = decode(schema.__header_schema__, payload)
            request, _ = decode(schema, payload, used)
        except Exception as exc:
            raise CloseConnection(
                f"invalid request: cannot parse API {api_key} v{api_version}: {exc!r}; "
                f"first bytes {payload[:96].hex()}"
            ) from exc
        if (field := null_field(request)) is not None:
            raise CloseConnection(
                f"invalid request: cannot parse API {api_key} v{api_version}: null value for "
                f"non-nullable field {field}; first bytes {payload[:96].hex()}"
            )
        ctx = RequestContext(
            self.listener, peer, api_key, api_version, correlation_id, getattr(header, "client_id", None)
        )
        body = await self.handler(ctx, request)
        return encode_response(load_response_schema(api_key, api_version), correlation_id, body)

    def _unsupported_api_versions(self, correlation_id: int) -> bytes:
        schema = load_response_schema(API_VERSIONS_KEY, 0)
        api = nested(schema, "ApiVersion")
        body = build(
            schema,
            error_code=UNSUPPORTED_VERSION,
            api_keys=tuple(
                build(api, api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(self.supported.items())
            ),
        )
        return encode_response(schema, correlation_id, body)


# ---- non-nullable fields ---------------------------------------------------------------------------
_FIELD_KINDS: dict[type[Any], tuple[tuple[str, bool, bool], ...]] = {}


def _field_kinds(cls: type[Any]) -> tuple[tuple[str, bool, bool], ...]:
    """(name, nullable, holds entities) for each field of a kio entity class (cached)."""
    if (known := _FIELD_KINDS.get(cls)) is not None:
        return known
    hints = typing.get_type_hints(cls)
    kinds = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint)
        nullable = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
        inner = [a for a in args if a is not type(None)]
        if nullable and len(inner) == 1:
            hint = inner[0]
        entities = dataclasses.is_dataclass(hint) or any(
            dataclasses.is_dataclass(a) for a in typing.get_args(hint) if isinstance(a, type)
        )
        kinds.append((f.name, nullable, entities))
    _FIELD_KINDS[cls] = tuple(kinds)
    return _FIELD_KINDS[cls]


def null_field(entity: Any, prefix: str = "") -> str | None:
    """The dotted name of the first non-nullable field holding None in a decoded request, or None."""
    for name, nullable, entities in _field_kinds(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                return prefix + name
            continue
        if entities:
            for i, item in enumerate(value if isinstance(value, tuple) else (value,)):
                if (found := null_field(item, f"{prefix}{name}[{i}].")) is not None:
                    return found
    return None
