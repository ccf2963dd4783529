"""End a ZooKeeper session now, from outside the client that owns it.

A node killed with SIGKILL leaves its session, and with it every ephemeral znode it made
(``/brokers/ids/<id>``, ``/controller``), until ZooKeeper's session timeout runs out. When what a
check examines is the controller's reaction to the loss and not the timeout itself, waiting out
the timeout is only dead time. ZooKeeper lets any client attach to a session it knows the id and
password of; attaching and then sending ``closeSession`` ends it at once. The server's log records
a ``closeSession`` transaction just as it does for an expiry, the ephemerals go in that one
transaction, and the watches fire the same way; a node that was only paused finds its session
gone when it resumes, as after an expiry.

The id of a node's session is public (the ``ephemeralOwner`` of its znodes). The password is what
the server handed out in its ConnectResponse. Apache ZooKeeper derives it from the id
(``ZooKeeperServer.generatePasswd``: 16 bytes of ``java.util.Random`` seeded with the id XOR the
constant ``superSecret``), so :func:`server_password` can compute it; a server that derives it
otherwise refuses the attach, :func:`close_session` then answers ``False`` and the session ends
when its timeout runs out, as it would have anyway.
"""

from __future__ import annotations

import contextlib
import logging

from kazoo.client import KazooClient

__all__ = ["close_session", "end_session", "server_password"]

#: ``ZooKeeperServer.superSecret`` (Apache ZooKeeper 3.4 to 3.9).
_SUPER_SECRET = 0xB3415C00
#: ``java.util.Random``'s linear congruential generator.
_MULTIPLIER, _ADDEND, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1
_PASSWORD_LEN = 16

#: kazoo warns "Session has expired" when the session is gone already, which is an answer here
_QUIET = logging.getLogger("kzk.zookeeper.close_session")
_QUIET.setLevel(logging.ERROR)


def server_password(session_id: int) -> bytes:
    """The password Apache ZooKeeper gave session ``session_id`` (signed or unsigned 64-bit)."""
    seed = (session_id ^ _SUPER_SECRET ^ _MULTIPLIER) & _MASK  # new Random(id ^ superSecret)
    out = bytearray()
    while len(out) < _PASSWORD_LEN:  # Random.nextBytes: an int per 4 bytes, low byte first
        seed = (seed * _MULTIPLIER + _ADDEND) & _MASK
        value = seed >> 16  # next(32)
        for _ in range(min(4, _PASSWORD_LEN - len(out))):
            out.append(value & 0xFF)
            value >>= 8
    return bytes(out)


def close_session(zk_connect: str, session: tuple[int, bytes], timeout_s: float = 10.0) -> bool:
    """End ``session`` (id, password) now: attach to it, then close it. True if it was still alive
    and is now closed; False if it had ended already, the password was refused or ZooKeeper could
    not be reached (the session then ends by its own timeout)."""
    client = KazooClient(hosts=zk_connect, client_id=session, timeout=timeout_s, logger=_QUIET)
    try:
        client.start(timeout=timeout_s)
    except Exception:  # expired already, or unreachable: nothing to close
        with contextlib.suppress(Exception):
            client.close()
        return False
    attached = client.client_id is not None and client.client_id[0] == session[0]
    try:
        client.stop()  # closeSession: of that session, or of a fresh one kazoo opened instead
    finally:
        client.close()
    return attached


def end_session(zk_connect: str, session_id: int, timeout_s: float = 10.0) -> bool:
    """:func:`close_session` with the password Apache ZooKeeper derives from the id."""
    return close_session(zk_connect, (session_id, server_password(session_id)), timeout_s)
