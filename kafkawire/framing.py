"""Kafka frames and headers with kio 0.5.0: the one framing layer (ring: wire).

A Kafka message on the wire is an int32 size followed by a header and a body; the header's version
follows the body's (request header v1, or v2 for flexible versions; response header v0 or v1).
kio generates one dataclass per message version; `build` fills one from keyword arguments and
silently drops the fields that version does not have, so callers are written once for every
version. Importing this module installs `kafkawire.compat` (kio's tagged-field fix), so every
process that decodes through it decodes the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import io
import struct
from typing import Any, TypeVar

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from kafkawire import compat

T = TypeVar("T")

MAX_REQUEST_BYTES = 104857600  # socket.request.max.bytes default
SIZE = struct.Struct(">i")
_API_KEY_AND_VERSION = struct.Struct(">hh")

compat.install()  # idempotent; explicit so that the import above is not an unused one


class FrameError(Exception):
    """A frame could not be read: bad size prefix or truncated body."""


_MISSING = object()


@functools.cache
def _kafka_types(cls: type[Any]) -> dict[str, object]:
    """Each field of a kio dataclass with its ``kafka_type`` (classes are immutable: computed once)."""
    return {f.name: f.metadata.get("kafka_type") for f in dataclasses.fields(cls)}


def build(cls: type[T], **values: Any) -> T:
    """Instantiate a kio dataclass, dropping fields that this version does not define."""
    types = _kafka_types(cls)  # type: ignore[arg-type]  # kio's dataclass types are hashable
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        kafka_type = types.get(name, _MISSING)
        if kafka_type is _MISSING:
            continue
        kwargs[name] = _coerce(kafka_type, value)
    return cls(**kwargs)


def _coerce(kafka_type: object, value: Any) -> Any:
    if kafka_type == "error_code" and not isinstance(value, ErrorCode):
        return ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    return value


def encode(schema: type[Any], obj: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(schema)(out, obj)
    return out.getvalue()


def frame(payload: bytes) -> bytes:
    """`payload` with its int32 size prefix."""
    return SIZE.pack(len(payload)) + payload


def encode_request(schema: type[Any], correlation_id: int, client_id: str | None, body: Any) -> bytes:
    """A size-prefixed request frame: the header version `schema` declares, then `body`."""
    header_cls = schema.__header_schema__
    header = build(
        header_cls,
        request_api_key=schema.__api_key__,
        request_api_version=schema.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    return frame(encode(header_cls, header) + encode(schema, body))


def encode_response(schema: type[Any], correlation_id: int, body: Any) -> bytes:
    """A size-prefixed response frame: the header version `schema` declares, then `body`."""
    header_cls = schema.__header_schema__
    header = build(header_cls, correlation_id=correlation_id)
    return frame(encode(header_cls, header) + encode(schema, body))


def decode(schema: type[Any], payload: bytes, offset: int = 0) -> tuple[Any, int]:
    """(entity, bytes used) of one `schema` entity at `offset`."""
    obj, size = entity_reader(schema)(payload, offset)
    return obj, size


def decode_request(body: bytes) -> tuple[Any, Any]:
    """(header, request) of one request frame body (without its size prefix)."""
    api_key, version = _API_KEY_AND_VERSION.unpack_from(body)
    schema = load_request_schema(api_key, version)
    header, used = decode(schema.__header_schema__, body)
    request, _ = decode(schema, body, used)
    return header, request


def decode_response(body: bytes, api_key: int, version: int) -> tuple[Any, Any]:
    """(header, response) of one response frame body for a request of `api_key` / `version`."""
    schema = load_response_schema(api_key, version)
    header, used = decode(schema.__header_schema__, body)
    response, _ = decode(schema, body, used)
    return header, response


async def read_frame(reader: asyncio.StreamReader, max_bytes: int = MAX_REQUEST_BYTES) -> bytes | None:
    """One size-prefixed frame; None on a clean end of stream, FrameError on a bad prefix."""
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise FrameError(f"truncated size prefix ({len(exc.partial)} bytes)") from None
    (size,) = SIZE.unpack(prefix)
    if size < 0 or size > max_bytes:
        raise FrameError(f"invalid frame size {size} (socket.request.max.bytes={max_bytes})")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        raise FrameError(f"truncated frame: {len(exc.partial)} of {size} bytes") from None
