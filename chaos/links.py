"""Every link of a chaos cluster through its own named Toxiproxy proxy (ring: drivers).

:class:`ChaosCluster` is the conformance :class:`~cluster.cluster.Cluster` with a fault
proxy on each directed link (names from :func:`chaos.generator.link_names`, prefixed per run):

==============  ===========================================================================
proxy           chain (→ = forwards to)
==============  ===========================================================================
ZK_<x>[_<s>]    node x → **ZK_x** → x's ZooKeeper recording proxy → ZooKeeper server s
CTRL_<x>_<y>    controller x → **CTRL_x_y** → request-recording proxy (x→y) → y's ``CTRL_<x>``
FROM_<x>_<y>    follower x → **FROM_x_y** → leader y's ``FROM_<x>`` listener (x ≠ y)
CLIENT_<y>      AdminClient / Metadata → **CLIENT_y** → y's ``CLIENT`` listener
==============  ===========================================================================

The fault proxy sits in front of each recording proxy, so the request and ZooKeeper journals
record exactly what got through the fault (what the node received), and stay complete. Node y
binds each interposed listener on a fixed port from the run's :class:`PortPool` (the port plan's
``chaos-link`` role, :mod:`harness.ports`) and advertises the fault proxy's port
(:class:`~cluster.nodeconfig.Interpose`).

Nodes start through the launcher seam (:mod:`harness.launcher`): the ``process`` launcher runs
them with pid files, ``PR_SET_PDEATHSIG`` from a long-lived spawner thread, and the reaper's
owner records, so a killed runner leaves nothing the next run cannot reap. A second launcher
slots in by implementing :class:`~harness.launcher.Launcher` / :class:`~harness.launcher.Handle`.

Toxiproxy is driven only through the unmodified ``toxiproxy-python`` client; that client keeps
its API address in class attributes, so one process talks to one Toxiproxy server
(:func:`use_toxiproxy`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from toxiproxy import Toxiproxy
from toxiproxy.proxy import Proxy

from cluster.cluster import Cluster
from cluster.nodeconfig import CLIENT_LISTENER, Interpose, control_listener, inter_broker_listener
from cluster.targets import Target
from harness import ports as port_plan
from harness.launcher import Launcher
from probes.request_proxy import RecordingProxy

__all__ = ["ChaosCluster", "LinkFabric", "PortPool", "use_toxiproxy"]

Address = tuple[str, int]
LOOPBACK = port_plan.LOOPBACK


def use_toxiproxy(url: str) -> Toxiproxy:
    """Point the ``toxiproxy`` client (process-wide) at the server at ``url``."""
    parts = urlsplit(url)
    client = Toxiproxy()
    client.update_api_consumer(parts.hostname or LOOPBACK, parts.port or 8474)
    return client


class PortPool(port_plan.PortPool):
    """The fixed ports of one runner worker's clusters: its slot's slice of the port plan's
    ``chaos-link`` role (:mod:`harness.ports`: below the kernel's ephemeral range, claimed
    host-wide until released, so a concurrent campaign or conformance run never takes a port
    whose node or proxy is down between a fault and its heal)."""

    @classmethod
    def for_slot(cls, slot: int, slots: int) -> PortPool:
        return cls(port_plan.CHAOS_LINK, (slot, slots))


class LinkFabric:
    """The run's named Toxiproxy proxies: create, look up by link name, destroy.

    Each proxy listens on a port of the run's :class:`PortPool` (claimed host-wide, below the
    kernel's ephemeral range), never on a kernel-chosen one: a disabled proxy (a ``down`` fault)
    closes its listener, and a port-0 listener anywhere on the host (another campaign's proxy)
    could be handed that port meanwhile — the brokers, which advertise the proxy's port, would
    then talk to somebody else's node, and the proxy could not be enabled again.
    """

    def __init__(self, client: Toxiproxy, prefix: str, ports: PortPool) -> None:
        self.client, self.prefix, self.ports = client, prefix, ports
        self.proxies: dict[str, Proxy] = {}
        self._listen_ports: list[int] = []

    def create(self, link: str, upstream: Address) -> int:
        """A proxy named ``<prefix><link>`` to ``upstream``; returns its listen port."""
        (port,) = self.ports.take(1)
        try:
            proxy = self.client.create(
                upstream=f"{upstream[0]}:{upstream[1]}",
                name=f"{self.prefix}{link}",
                listen=f"{LOOPBACK}:{port}",
            )
        except BaseException:
            self.ports.release([port])
            raise
        self._listen_ports.append(port)
        self.proxies[link] = proxy
        return port

    def __getitem__(self, link: str) -> Proxy:
        return self.proxies[link]

    def names(self) -> list[str]:
        return list(self.proxies)

    def of_node(self, bid: int) -> list[str]:
        """Every link with node ``bid`` at either end."""
        return [n for n in self.proxies if bid in _ends(n)]

    def zk_of(self, bid: int) -> list[str]:
        return [n for n in self.proxies if n.startswith("ZK_") and _ends(n)[0] == bid]

    def crossing(self, minority: Iterable[int]) -> list[str]:
        """Inter-broker links with one end in ``minority`` and the other outside, plus the
        minority's ZooKeeper links (ZooKeeper stays with the majority)."""
        side = set(minority)
        out = []
        for name in self.proxies:
            ends = _ends(name)
            if (name.startswith(("CTRL_", "FROM_")) and (ends[0] in side) != (ends[1] in side)) or (
                name.startswith("ZK_") and ends[0] in side
            ):
                out.append(name)
        return out

    def destroy_all(self) -> None:
        for proxy in self.proxies.values():
            with contextlib.suppress(Exception):
                proxy.destroy()
        self.proxies.clear()
        self.ports.release(self._listen_ports)
        self._listen_ports = []


def _ends(link: str) -> tuple[int, ...]:
    """``CTRL_1_2`` → (1, 2); ``ZK_3_1`` → (3,) (the server index is not a broker); ``CLIENT_2`` → (2,)."""
    kind, *rest = link.split("_")
    ids = tuple(int(p) for p in rest)
    return ids[:1] if kind == "ZK" else ids


class ChaosCluster(Cluster):
    """A :class:`Cluster` whose every link goes through a named Toxiproxy proxy (module docstring)."""

    def __init__(
        self,
        target: Target,
        *,
        fabric: LinkFabric,
        ports: PortPool,
        launcher: Launcher,
        **kwargs: Any,
    ) -> None:
        self.fabric, self.port_pool = fabric, ports
        self._taken: list[int] = []
        self._zk_links: dict[int, int] = {}
        self._ids = tuple(sorted(kwargs.get("broker_ids", (1, 2, 3))))
        self._zk_servers = len(str(kwargs["zk_connect_string"]).split(","))
        try:
            super().__init__(target, zk_front=self._zk_front, launcher=launcher, **kwargs)
        except BaseException:
            for recorder in self.proxies.values():  # the journal's loop still runs: close them
                with contextlib.suppress(Exception):
                    recorder.close()
            self._release_links()
            raise

    # --- links ----------------------------------------------------------------------------------

    def _zk_front(self, bid: int, address: Address) -> Address:
        index = self._zk_links[bid] = self._zk_links.get(bid, 0) + 1
        name = f"ZK_{bid}" if self._zk_servers <= 1 else f"ZK_{bid}_{index}"
        return (LOOPBACK, self.fabric.create(name, address))

    def _interpose(self, dest: int) -> dict[str, Interpose]:
        out: dict[str, Interpose] = {}
        ports = self.port_pool.take(2 * len(self._ids))
        self._taken += ports
        free = iter(ports)
        for source in self._ids:
            bind = next(free)
            upstream = bind
            if self.journal is not None:
                recorder = RecordingProxy(self.journal, source=source, dest=dest)
                recorder.upstream = (LOOPBACK, bind)
                self.proxies[(source, dest)] = recorder
                upstream = recorder.port
            front = self.fabric.create(f"CTRL_{source}_{dest}", (LOOPBACK, upstream))
            out[control_listener(source)] = Interpose(bind_port=bind, advertised_port=front)
        for source in self._ids:
            bind = next(free)
            if source == dest:  # a broker never fetches from itself: CLIENT takes this port
                front = self.fabric.create(f"CLIENT_{dest}", (LOOPBACK, bind))
                out[CLIENT_LISTENER] = Interpose(bind_port=bind, advertised_port=front)
                continue
            front = self.fabric.create(f"FROM_{source}_{dest}", (LOOPBACK, bind))
            out[inter_broker_listener(source)] = Interpose(bind_port=bind, advertised_port=front)
        return out

    # --- processes ------------------------------------------------------------------------------

    def wait_registered(self, ids: Iterable[int], deadline_s: float | None = None) -> None:
        """As :meth:`Cluster.wait_registered`, but a node that exits fails the wait at once,
        naming its exit code and the end of its output (a run that cannot start is ``unknown``
        with that reason)."""
        wanted = list(ids)
        deadline_s = deadline_s if deadline_s is not None else self.target.start_timeout_s
        give_up = time.monotonic() + self.deadline(deadline_s)
        while True:
            for bid in wanted:
                node = self.nodes[bid]
                code = node.proc.poll() if node.proc is not None else None
                if node.proc is not None and code is not None:
                    tail = self.log_tail(bid, "stdout", lines=5).replace("\n", " | ")
                    raise RuntimeError(f"node {bid} exited with {code} before registering: {tail[-300:]}")
            if all(self.zk.exists(f"/brokers/ids/{bid}") for bid in wanted):
                return
            if time.monotonic() > give_up:
                raise RuntimeError(
                    f"brokers {wanted} not registered after {deadline_s:.0f}s: {self.summary()}"
                )
            time.sleep(0.05)

    def close(self) -> None:
        super().close()
        self._release_links()

    def _release_links(self) -> None:
        self.fabric.destroy_all()
        self.port_pool.release(self._taken)
        self._taken = []
