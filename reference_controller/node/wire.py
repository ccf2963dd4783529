"""Kafka wire helpers on top of kio 0.5.0: frames, headers, version-tolerant builders (ring: drivers).

kio generates one set of dataclasses per message version; `build` fills a class from keyword
arguments and silently drops the fields that version does not have, so handlers can be written
once for all versions. `KafkaClient` is the small asyncio client the node uses towards other
brokers (replica fetcher, controlled shutdown) and the tests use as a hand-rolled controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import io
import struct
import sys
from typing import Any, TypeVar

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from reference_controller.node import kio_compat  # noqa: F401 - tolerant tagged-field decoding

T = TypeVar("T")

MAX_REQUEST_BYTES = 104857600  # socket.request.max.bytes default
_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """A frame could not be read: bad size prefix or truncated body."""


def build(cls: type[T], **values: Any) -> T:
    """Instantiate a kio dataclass, dropping fields that this version does not define."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        fld = fields.get(name)
        if fld is None:
            continue
        kwargs[name] = _coerce(fld.metadata.get("kafka_type"), value)
    return cls(**kwargs)


def _coerce(kafka_type: object, value: Any) -> Any:
    if kafka_type == "error_code" and not isinstance(value, ErrorCode):
        return ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    return value


def nested(schema: type[Any], name: str) -> type[Any]:
    """A nested entity class (e.g. `MetadataResponseBroker`) of the module defining `schema`."""
    cls: type[Any] = getattr(sys.modules[schema.__module__], name)
    return cls


def has_field(obj: Any, name: str) -> bool:
    return any(f.name == name for f in dataclasses.fields(obj))


def ms(value: Any) -> int:
    """A kio duration field (timedelta) or plain integer as milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def encode(schema: type[Any], obj: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(schema)(out, obj)
    return out.getvalue()


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def encode_response(schema: type[Any], correlation_id: int, body: Any) -> bytes:
    header_cls = schema.__header_schema__
    header = build(header_cls, correlation_id=correlation_id)
    return frame(encode(header_cls, header) + encode(schema, body))


def encode_request(schema: type[Any], correlation_id: int, client_id: str | None, body: Any) -> bytes:
    header_cls = schema.__header_schema__
    header = build(
        header_cls,
        request_api_key=schema.__api_key__,
        request_api_version=schema.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    return frame(encode(header_cls, header) + encode(schema, body))


def decode(schema: type[Any], payload: bytes, offset: int = 0) -> tuple[Any, int]:
    obj, size = entity_reader(schema)(payload, offset)
    return obj, size


async def read_frame(reader: asyncio.StreamReader, max_bytes: int = MAX_REQUEST_BYTES) -> bytes | None:
    """One size-prefixed frame; None on a clean end of stream, FrameError on a bad prefix."""
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise FrameError(f"truncated size prefix ({len(exc.partial)} bytes)") from None
    (size,) = _SIZE.unpack(prefix)
    if size < 0 or size > max_bytes:
        raise FrameError(f"invalid frame size {size} (socket.request.max.bytes={max_bytes})")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        raise FrameError(f"truncated frame: {len(exc.partial)} of {size} bytes") from None


class KafkaClient:
    """One connection to a broker, one request in flight at a time (like Kafka's NetworkClient)."""

    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0

    async def connect(self, timeout_s: float) -> None:
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port), timeout_s
        )

    async def request(self, schema: type[Any], body: Any, timeout_s: float) -> Any:
        """Send one request and return the decoded response; raises OSError/TimeoutError/FrameError."""
        if self._writer is None or self._reader is None:
            await self.connect(timeout_s)
        assert self._writer is not None
        assert self._reader is not None
        self._correlation_id += 1
        correlation_id = self._correlation_id
        self._writer.write(encode_request(schema, correlation_id, self.client_id, body))
        await self._writer.drain()
        payload = await asyncio.wait_for(read_frame(self._reader), timeout_s)
        if payload is None:
            raise ConnectionResetError(f"connection to {self.host}:{self.port} closed")
        response_schema = load_response_schema(schema.__api_key__, schema.__version__)
        header, used = decode(response_schema.__header_schema__, payload)
        if header.correlation_id != correlation_id:
            raise FrameError(f"correlation id {header.correlation_id} != {correlation_id}")
        response, _ = decode(response_schema, payload, used)
        return response

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
