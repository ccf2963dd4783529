"""ZooKeeper four-letter-word commands over loopback TCP (ring: drivers; the one 4lw client).

The server answers one command per connection and then closes it, so a command is: connect,
send four bytes, read to EOF. ``srvr`` answers "This ZooKeeper instance is not currently serving
requests" while a server is starting or looking for a leader; :func:`parse_mode` maps that to
``None``.
"""

from __future__ import annotations

import socket
import time

from probes.errors import FourLetterWordError

LOOPBACK = "127.0.0.1"

NOT_SERVING = "not currently serving requests"
NOT_WHITELISTED = "is not executed because it is not in the whitelist"


def four_letter(port: int, command: str, *, host: str = LOOPBACK, timeout_s: float = 2.0) -> str:
    """Run one four-letter-word ``command`` against ``host:port`` and return the reply text."""
    if len(command) != 4:
        raise FourLetterWordError(f"four-letter-word command must be 4 characters, got {command!r}")
    deadline = time.monotonic() + timeout_s
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(command.encode("ascii"))
            reply = _read_to_eof(sock, deadline)
    except OSError as exc:
        raise FourLetterWordError(
            f"4lw {command!r} to {host}:{port} failed: {exc!r} (is the server running and not paused?)"
        ) from exc
    if NOT_WHITELISTED in reply:
        raise FourLetterWordError(
            f"4lw {command!r} is disabled on {host}:{port}: set 4lw.commands.whitelist=* in zoo.cfg"
        )
    return reply


def _read_to_eof(sock: socket.socket, deadline: float) -> str:
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no end of reply before the deadline")
        sock.settimeout(remaining)
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks).decode("utf-8", errors="replace")
        chunks.append(chunk)


def parse_mode(srvr_reply: str) -> str | None:
    """The ``Mode:`` of a ``srvr`` reply (standalone, leader, follower, observer, read-only), or None."""
    if NOT_SERVING in srvr_reply:
        return None
    for line in srvr_reply.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def parse_version(srvr_reply: str) -> str | None:
    """The server version of a ``srvr`` reply, e.g. ``3.8.0``, or None."""
    for line in srvr_reply.splitlines():
        if line.startswith("Zookeeper version:"):
            return line.split(":", 1)[1].strip().split("-", 1)[0].split(",", 1)[0]
    return None
