"""A kazoo handler whose connection thread makes a few system calls per request, not ~25 (ring: drivers).

kazoo's connection thread (``kazoo/protocol/connection.py``) handles one request or response per
turn of its loop and asks its handler's ``select`` before every socket operation: in the main
loop, before each ``send`` of a request, and before each of the two ``recv`` of a response (length,
then body). kazoo's ``SequentialThreadingHandler.select`` builds, registers and closes an ``epoll``
selector per call. Profiled on 5,000 pipelined ``multi[check, setData]`` (issue 13), those calls
were ~57 % of the connection thread, and each request left the client as its own TCP segment, so
ZooKeeper's NIO selector thread woke once per request.

:class:`LeanThreadingHandler` changes only the two handler hooks kazoo's connection uses for that,
``select`` and ``create_connection``; the bytes exchanged with ZooKeeper, their order, the session
and every timeout stay kazoo's:

- :func:`poll_select` answers like kazoo's ``selector_select`` (same event mapping and errors) with
  one ``poll`` object and one system call.
- :class:`CoalescingSocket` wraps the plain TCP socket of a connection. ``send`` appends to an
  output buffer (flushed at ``FLUSH_AT`` bytes); ``recv`` reads up to ``RECV_SIZE`` bytes at a
  time and serves kazoo's small reads from them; ``pending()`` (the attribute kazoo already checks
  for SSL sockets) tells kazoo when a read needs no ``select``. The handler's ``select`` flushes
  the output before anything could wait for an answer: when the caller would block, and in
  kazoo's main loop as soon as no further request is queued (its wake-up socket is not readable).
  So a burst of queued requests leaves in a few large writes and nothing stays buffered while
  kazoo waits. SSL connections are not wrapped.
"""

from __future__ import annotations

import math
import select
import socket
import time
from collections.abc import Iterable, Sequence
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

__all__ = [
    "FLUSH_AT",
    "RECV_SIZE",
    "CoalescingSocket",
    "LeanThreadingHandler",
    "PollingThreadingHandler",
    "poll_select",
]

#: Output bytes that force a write even while kazoo still has requests queued (~100 multis).
FLUSH_AT = 16 * 1024
#: Bytes asked of the kernel per ``recv`` (kazoo asks for 4 bytes, then for one response).
RECV_SIZE = 256 * 1024

_POLL_READ = select.POLLIN
_POLL_WRITE = select.POLLOUT


def poll_select(
    rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any], timeout: float | None = None
) -> tuple[list[Any], list[Any], list[Any]]:
    """kazoo's ``selector_select`` with the same answers and errors, on one ``poll`` object (no
    descriptor limit, registration in user space). Same mapping of events as
    ``selectors.PollSelector`` + ``selector_select``: any event but pure POLLOUT reports the
    descriptor's objects as readable, else pure POLLOUT as writable; ``xlist`` is never reported."""
    if timeout is not None:
        if not isinstance(timeout, (int, float)):
            raise TypeError("timeout must be a number")
        if timeout < 0:
            raise ValueError("timeout must be non-negative")
    if not wlist:  # kazoo's usual call: a read-only poll answers any event as readable
        return _readable(rlist, timeout), [], []
    masks: dict[int, int] = {}
    objects: dict[int, list[Any]] = {}
    for mask, fileobjs in ((_POLL_READ, rlist), (_POLL_WRITE, wlist)):
        for fileobj in fileobjs:
            fd = fileobj_to_fd(fileobj)
            masks[fd] = masks.get(fd, 0) | mask
            objects.setdefault(fd, []).append(fileobj)
    ready = _poll(masks.items(), timeout)
    readable: list[Any] = []
    writable: list[Any] = []
    for fd, event in ready:
        if event & ~_POLL_WRITE:
            readable.extend(objects[fd])
        elif event & ~_POLL_READ:
            writable.extend(objects[fd])
    return readable, writable, []


def _readable(rlist: Sequence[Any], timeout: float | None) -> list[Any]:
    """The objects of ``rlist`` with any poll event (POLLIN registered: never pure POLLOUT)."""
    fds = [fileobj_to_fd(fileobj) for fileobj in rlist]
    ready = _poll(((fd, _POLL_READ) for fd in fds), timeout)
    if not ready:
        return []
    ready_fds = {fd for fd, _event in ready}
    return [fileobj for fileobj, fd in zip(rlist, fds, strict=True) if fd in ready_fds]


def _poll(masks: Iterable[tuple[int, int]], timeout: float | None) -> list[tuple[int, int]]:
    """One ``poll`` over ``(fd, event mask)`` pairs, with ``selectors.PollSelector``'s error for a
    bad descriptor and its timeout in milliseconds, rounded up."""
    poller = select.poll()
    for fd, mask in masks:
        try:
            poller.register(fd, mask)
        except (ValueError, OSError) as exc:
            raise ValueError("Invalid event mask or fd") from exc
    if timeout is None:
        return poller.poll()
    return poller.poll(math.ceil(timeout * 1e3) if timeout > 0 else 0)


class CoalescingSocket:
    """A connected non-SSL socket for kazoo's connection thread: buffered sends (see the module
    docstring for when they are flushed) and read-ahead receives. Anything else is the socket's."""

    def __init__(self, sock: socket.socket, flush_timeout_s: float | None) -> None:
        self._sock = sock
        self._flush_timeout_s = flush_timeout_s
        self._out = bytearray()
        self._in = b""
        self._in_pos = 0

    # -- what kazoo's connection calls ------------------------------------------------------------
    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, data: Any) -> int:
        """Take every byte (kazoo then goes on to its next request); write at ``FLUSH_AT``."""
        self._out += data
        if len(self._out) >= FLUSH_AT:
            self.flush()
        return len(data)

    def recv(self, size: int) -> bytes:
        if self._in_pos < len(self._in):
            chunk = self._in[self._in_pos : self._in_pos + size]
            self._in_pos += len(chunk)
            return chunk
        data = self._sock.recv(max(size, RECV_SIZE))
        if len(data) <= size:
            return data
        self._in, self._in_pos = data, size
        return data[:size]

    def pending(self) -> int:
        """Bytes already received and not yet read (kazoo reads without ``select`` when > 0)."""
        return len(self._in) - self._in_pos

    def sendall(self, data: Any) -> None:
        self.flush()
        self._sock.sendall(data)

    def close(self) -> None:
        self._out.clear()
        self._in, self._in_pos = b"", 0
        self._sock.close()

    def __getattr__(self, name: str) -> Any:  # setblocking, getpeername, …
        return getattr(self._sock, name)

    # -- flushing ---------------------------------------------------------------------------------
    @property
    def buffered(self) -> int:
        return len(self._out)

    def flush(self) -> None:
        """Write the whole output buffer (the socket is non-blocking: wait for room with ``poll``,
        at most the connection's timeout per wait; then ``socket.timeout``, which kazoo handles as
        a dropped connection)."""
        view = memoryview(self._out)
        sent = 0
        try:
            while sent < len(view):
                try:
                    sent += self._sock.send(view[sent:])
                except BlockingIOError:
                    self._wait_writable()
        finally:
            view.release()
            del self._out[:sent]

    def _wait_writable(self) -> None:
        deadline = None if self._flush_timeout_s is None else time.monotonic() + self._flush_timeout_s
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if poll_select([], [self._sock], [], left)[1]:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("socket time-out during write")


def _coalescing(objects: Iterable[Any]) -> list[CoalescingSocket]:
    return [o for o in objects if type(o) is CoalescingSocket]


class LeanThreadingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's ``SequentialThreadingHandler`` with :func:`poll_select` and :class:`CoalescingSocket`
    (threads, queues and timeouts unchanged). Use ``KazooClient(..., handler=LeanThreadingHandler())``."""

    name = "lean_threading_handler"

    def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        sock = super().create_connection(*args, **kwargs)
        if kwargs.get("use_ssl") or not isinstance(sock, socket.socket):
            return sock
        return CoalescingSocket(sock, kwargs.get("timeout"))

    def select(
        self, rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any], timeout: float | None = None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        if not rlist and len(wlist) == 1 and type(wlist[0]) is CoalescingSocket:
            return [], [wlist[0]], []  # kazoo's `_write`: a send only buffers
        main_loop = not wlist and len(rlist) == 2 and type(rlist[0]) is CoalescingSocket
        if main_loop and type(rlist[1]) is not CoalescingSocket:
            return self._main_loop(rlist[0], rlist[1], timeout)
        sockets = _coalescing((*rlist, *wlist))
        if not sockets:
            return poll_select(rlist, wlist, xlist, timeout)
        others_r = [o for o in rlist if type(o) is not CoalescingSocket]
        others_w = [o for o in wlist if type(o) is not CoalescingSocket]
        buffered_r = [s for s in _coalescing(rlist) if s.pending()]
        if buffered_r or _coalescing(wlist):
            # answered from the buffers: data to read, room to write (a send only buffers)
            r, w, _x = poll_select(others_r, others_w, (), 0) if others_r or others_w else ([], [], [])
            if others_r and not r:
                self._flush(sockets)  # kazoo's main loop and no request queued behind this one
            return [*buffered_r, *r], [*_coalescing(wlist), *w], []
        r, w, x = poll_select(rlist, wlist, xlist, 0)
        queued = any(type(o) is not CoalescingSocket for o in r)
        if queued and all(s.buffered < FLUSH_AT for s in sockets):
            return r, w, x  # more requests queued: keep coalescing
        self._flush(sockets)
        if r or w:
            return r, w, x
        return poll_select(rlist, wlist, xlist, timeout)

    @staticmethod
    def _main_loop(
        sock: CoalescingSocket, wake: Any, timeout: float | None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        """kazoo's main loop, ``select([socket, wake-up socket], [], [], timeout)``: the general
        rules below for this one shape, with at most one ``poll`` before an answer."""
        if sock.pending():
            if _readable((wake,), 0):
                return [sock, wake], [], []
            if sock.buffered:
                sock.flush()  # no request queued behind the ones buffered
            return [sock], [], []
        ready = _readable((sock, wake), 0)
        if wake in ready and sock.buffered < FLUSH_AT:
            return ready, [], []  # more requests queued: keep coalescing
        if sock.buffered:
            sock.flush()
        if ready:
            return ready, [], []
        return poll_select((sock, wake), (), (), timeout)

    @staticmethod
    def _flush(sockets: Iterable[CoalescingSocket]) -> None:
        for sock in sockets:
            if sock.buffered:
                sock.flush()


class PollingThreadingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """Only :func:`poll_select` instead of kazoo's per-call epoll selector (no coalescing): the
    benchmark's middle step between kazoo's handler and :class:`LeanThreadingHandler`."""

    name = "polling_threading_handler"

    def select(self, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any], list[Any]]:
        return poll_select(*args, **kwargs)
