"""A small HTTP/1.1 server on asyncio streams for the API (ring: drivers).

Enough of Go's ``net/http`` for Toxiproxy clients: keep-alive, ``Content-Length`` and chunked
request bodies, ``Expect: 100-continue``, a 15 s read timeout and a 60 s idle timeout (upstream's
``ReadTimeout`` / ``IdleTimeout``), a ``Date`` header, and ``400 Bad Request`` + close for a
malformed request, as Go answers it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import unquote

READ_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 60.0
MAX_HEADER_BYTES = 1 << 20
MAX_BODY_BYTES = 64 << 20


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # percent-decoded, without the query
    headers: Mapping[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]


class BadRequest(Exception):
    """The request cannot be parsed: answer 400 and close, like Go."""


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler) -> None:
    """Serve requests on one connection until the client closes, asks to, or times out."""
    try:
        while True:
            try:
                first = await asyncio.wait_for(reader.readline(), IDLE_TIMEOUT_S)
                if not first:
                    return
                request, keep_alive = await asyncio.wait_for(
                    _read_request(first, reader, writer), READ_TIMEOUT_S
                )
            except (BadRequest, ValueError, asyncio.LimitOverrunError):
                body = b"400 Bad Request"
                writer.write(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
                    b"Connection: close\r\n\r\n" + body
                )
                await writer.drain()
                return
            response = await handler(request)
            writer.write(_render(response, keep_alive, request.method))
            await writer.drain()
            if not keep_alive:
                return
    except (TimeoutError, OSError, asyncio.IncompleteReadError):
        return
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()


async def _read_request(
    first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[Request, bool]:
    parts = first.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(first)
    method, target, version = parts
    headers = await _read_headers(reader)
    if version == "HTTP/1.1" and "host" not in headers:
        raise BadRequest("missing Host")
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    body = await _read_body(reader, headers)
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    path = unquote(target.split("?", 1)[0])
    return Request(method, path, headers, body), keep_alive


async def _read_headers(reader: asyncio.StreamReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    size = 0
    while True:
        line = await reader.readline()
        size += len(line)
        if not line or size > MAX_HEADER_BYTES:
            raise BadRequest("headers")
        if line in (b"\r\n", b"\n"):
            return headers
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name.strip() or name != name.strip():
            raise BadRequest(line)
        key = name.lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader)
    length_text = headers.get("content-length", "0") or "0"
    if not length_text.isdigit() or int(length_text) > MAX_BODY_BYTES:
        raise BadRequest("content-length")
    return await reader.readexactly(int(length_text))


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = (await reader.readline()).split(b";", 1)[0].strip()
        size = int(size_line, 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readline()
        if len(body) > MAX_BODY_BYTES:
            raise BadRequest("body")


def _render(response: Response, keep_alive: bool, method: str) -> bytes:
    reason = HTTPStatus(response.status).phrase
    lines = [f"HTTP/1.1 {response.status} {reason}"]
    headers = dict(response.headers)
    headers["Date"] = formatdate(usegmt=True)
    body = response.body
    if response.status not in (204, 304) and not 100 <= response.status < 200:
        headers["Content-Length"] = str(len(body))
    else:
        body = b""
    if not keep_alive:
        headers["Connection"] = "close"
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if method == "HEAD":
        body = b""
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
