"""The node's Kafka client and kio accessors on top of `kafkawire` (ring: drivers).

Frames, headers and the version-tolerant `build` live in `kafkawire.framing`. `KafkaClient` is
the small asyncio client the node uses towards other brokers (replica fetcher, controlled
shutdown) and the tests use as a hand-rolled controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import sys
from typing import Any

from kio.index import load_response_schema

from kafkawire.framing import FrameError, decode, encode_request, read_frame


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
