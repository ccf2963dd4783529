"""The host's port plan: which loopback ports each part of the kit listens on (ring: drivers).

Every fixed port the kit hands out comes from here: a *role* names a range, a caller asks for
``claim(role, count)`` and gets :class:`Claim` objects that are released on ``close()``.

==================  ===========  ==============================================================
role                ports        why this range
==================  ===========  ==============================================================
``toxiproxy-api``   8474-8573    a real ``toxiproxy-server``'s HTTP API (it must be told its
                                 port); 8474 is Toxiproxy's own default
``chaos-link``      10000-19999  chaos clusters: every Toxiproxy proxy's listen port and the
                                 nodes' fixed listeners behind them (:mod:`chaos.links`)
``interposed``      20000-31999  conformance clusters: the node side of an interposed
                                 controller link (:class:`cluster.cluster.Cluster`)
``zookeeper``       32000-32767  client, quorum and election ports of standalone servers and
                                 ensemble members (:mod:`harness.zookeeper`)
(kernel-chosen)     32768+       recording proxies (:mod:`probes.tap`), the kit's own Toxiproxy
                                 API, nodes' listeners that nobody interposes: bound with port 0
                                 for their whole life, so they need neither range nor claim
==================  ===========  ==============================================================

Why fixed ranges at all: each of these ports is chosen *before* something binds it (a node
started seconds later, a ZooKeeper JVM, a proxy re-enabled after a ``down`` fault) and is bound
again after a fault (a killed node or member restarts on its ports, because its peers hold the
address). In between nothing listens on it. A port of the kernel's ephemeral range (Linux:
``net.ipv4.ip_local_port_range``, 32768-60999 by default) can be handed meanwhile to any port-0
listener or outgoing connection on the host; so every range above lies below it. The ranges are
disjoint, so a conformance run, a chaos campaign and the ZooKeepers of both never compete.

Claims: a range only keeps the kernel out. Two processes of the kit (two xdist workers, a CI job
next to a developer's campaign, another checkout) are kept apart by a host-wide claim per port: an
abstract-namespace unix socket named ``kzk-static-port-<port>`` (the name every version of the kit
has used, so older checkouts honour these claims and the other way round). Binding the name fails
while any live process holds it, the claiming process included; the kernel drops the name when
the socket closes or its process dies, even on SIGKILL; nothing is left on disk. A port is handed
out only if it is claimed *and* a listener could bind it right now (a process outside the kit may
be using it).

Slices and cooldown: a process picks from its own slice of a range (:func:`worker_slot`: the
xdist worker of a test run; chaos runner workers pass their slot), so parallel workers of one run
rarely try the same port; and a port this process released is not handed out again by it until
``role.cooldown`` other releases of the role have happened (a listener of the last user may still
be closing).
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import socket
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Self

__all__ = [
    "CHAOS_LINK",
    "FIXED_ROLES",
    "INTERPOSED",
    "LOOPBACK",
    "TOXIPROXY_API",
    "ZOOKEEPER",
    "Claim",
    "Claims",
    "NoFreePorts",
    "PortPool",
    "Role",
    "Slot",
    "bindable",
    "claim",
    "claim_port",
    "ephemeral_range",
    "worker_slot",
]

LOOPBACK = "127.0.0.1"
CLAIM_NAME = "kzk-static-port-{port}"
#: (index, count): this process's share of a range — slice ``index`` of ``count`` equal slices.
Slot = tuple[int, int]


@dataclass(frozen=True)
class Role:
    """A use of fixed ports: its range and how many releases a released port waits out."""

    name: str
    ports: range
    cooldown: int = 0


TOXIPROXY_API = Role("toxiproxy-api", range(8474, 8574))
CHAOS_LINK = Role("chaos-link", range(10000, 20000), cooldown=400)
INTERPOSED = Role("interposed", range(20000, 32000), cooldown=1000)
ZOOKEEPER = Role("zookeeper", range(32000, 32768), cooldown=64)
FIXED_ROLES = (TOXIPROXY_API, CHAOS_LINK, INTERPOSED, ZOOKEEPER)


class NoFreePorts(RuntimeError):
    """Fewer ports than asked are free in a role's slice (claimed by live processes, bound, or
    cooling down); nothing stays claimed."""


# --- one claim ----------------------------------------------------------------------------------

_LOCK = threading.Lock()
_RECENT: dict[Role, collections.deque[int]] = {}


class Claim:
    """A host-wide claim on one port; :meth:`close` gives it up (idempotent)."""

    def __init__(self, port: int, sock: socket.socket, role: Role | None) -> None:
        self.port, self.role, self._sock = port, role, sock

    @property
    def held(self) -> bool:
        return self._sock.fileno() >= 0

    def close(self) -> None:
        with _LOCK:
            if not self.held:
                return
            self._sock.close()
            if self.role is not None and self.role.cooldown:
                _recent(self.role).append(self.port)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Claim({self.port}, {'held' if self.held else 'released'})"


def _recent(role: Role) -> collections.deque[int]:
    return _RECENT.setdefault(role, collections.deque(maxlen=role.cooldown))


def claim_port(port: int, role: Role | None = None) -> Claim | None:
    """The claim on ``port``, or None when a live process (this one included) holds it.
    No bind probe: for a port the caller chose itself (``ZooKeeperServer(port=...)``)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind("\0" + CLAIM_NAME.format(port=port))
    except OSError:
        sock.close()
        return None
    return Claim(port, sock, role)


def bindable(port: int) -> bool:
    """Whether a listener could bind ``127.0.0.1:port`` right now, with ``SO_REUSEADDR`` as the
    JVM, asyncio and Toxiproxy bind (a port whose last connections linger in TIME_WAIT is free)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


# --- many claims --------------------------------------------------------------------------------


class Claims:
    """Claims taken together (:func:`claim`); closing them gives every port up."""

    def __init__(self, claims: Iterable[Claim]) -> None:
        self.items = tuple(claims)

    @property
    def ports(self) -> list[int]:
        return [c.port for c in self.items]

    def __iter__(self) -> Iterator[Claim]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Claim:
        return self.items[index]

    def close(self) -> None:
        for c in self.items:
            c.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def worker_slot() -> Slot:
    """This process's slot: its xdist worker (``gw<i>`` of ``PYTEST_XDIST_WORKER_COUNT``), else the
    whole range. Two workers of one run then never even try the same port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1"), 1)
    index = int(worker[2:]) % count if worker.startswith("gw") and worker[2:].isdigit() else 0
    return index, count


def slice_of(ports: range, slot: Slot) -> range:
    """Slice ``slot[0]`` of ``slot[1]`` equal slices of ``ports``."""
    index, count = slot[0] % max(slot[1], 1), max(slot[1], 1)
    size = len(ports) // count
    start = ports.start + index * size
    return range(start, start + size)


def claim(role: Role, count: int = 1, *, slot: Slot | None = None) -> Claims:
    """``count`` ports of ``role`` from this process's slice, each claimed host-wide and bindable
    now, in random order; :class:`NoFreePorts` (holding nothing) when fewer are free."""
    ports = slice_of(role.ports, worker_slot() if slot is None else slot)
    cooling = _cooling(role, cap=len(ports) // 2)  # a small slice keeps half its ports usable
    out: list[Claim] = []
    for port in random.sample(ports, len(ports)):  # every port once: a nearly full slice still finds its last
        if len(out) == count:
            break
        if port in cooling:
            continue
        taken = claim_port(port, role)
        if taken is not None and not bindable(port):
            taken.close()
            taken = None
        if taken is not None:
            out.append(taken)
    if len(out) < count:
        Claims(out).close()
        raise NoFreePorts(
            f"no {count} free ports left in {role.name} ports {ports.start}-{ports.stop - 1} "
            "(claimed by live processes, bound, or released here moments ago)"
        )
    return Claims(out)


def _cooling(role: Role, cap: int) -> set[int]:
    """The ports of ``role`` this process released last (at most ``cap``)."""
    with _LOCK:
        recent = list(_recent(role))
    return set(recent[len(recent) - min(cap, len(recent)) :])


class PortPool:
    """Claims of one role handed out and given back by port number, for the life of a run or a
    cluster (a node's listeners, a proxy's listen port). :meth:`close` gives up all of them."""

    def __init__(self, role: Role, slot: Slot | None = None) -> None:
        self.role, self.slot = role, slot
        self._claims: dict[int, Claim] = {}
        self._lock = threading.Lock()

    @property
    def ports(self) -> range:
        """The slice this pool takes its ports from."""
        return slice_of(self.role.ports, worker_slot() if self.slot is None else self.slot)

    def take(self, count: int) -> list[int]:
        claims = claim(self.role, count, slot=self.slot)
        with self._lock:
            self._claims.update((c.port, c) for c in claims)
        return claims.ports

    def release(self, ports: Iterable[int]) -> None:
        for port in ports:
            with self._lock:
                held = self._claims.pop(port, None)
            if held is not None:
                held.close()

    def held(self) -> list[int]:
        with self._lock:
            return sorted(self._claims)

    def close(self) -> None:
        self.release(self.held())


def ephemeral_range() -> range:
    """This host's ephemeral port range (``net.ipv4.ip_local_port_range``; Linux's default if
    it cannot be read)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
            return range(low, high + 1)
    return range(32768, 61000)
