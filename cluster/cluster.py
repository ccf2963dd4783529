"""A cluster of N target nodes on a real ZooKeeper, driven only from outside (conformance ring).

Each node is one process (or container) started from the target's command with a generated
``server.properties`` (:mod:`cluster.nodeconfig`): broker id, ``zookeeper.connect`` with the
test's chroot, a listener per directed link on loopback, log dirs under the node's directory, the
target's profile and per-test overrides. Nodes start through the launcher seam
(:mod:`harness.launcher`; ``launcher=`` or ``KZK_LAUNCHER``): with ``process`` they run in their
own process group (signals go to the group), die with the test process (``PR_SET_PDEATHSIG``) and
have pid files for the reaper; with ``docker`` each is a container from the target's
``[container]`` recipe on the host network, its node dir bind-mounted at the same path, and
stop/kill/pause/resume become ``docker kill -s TERM``/``docker kill``/``docker pause``/``unpause``.
:meth:`Cluster.close` kills every node even when the test failed.

With ``record_requests`` (the default) a :class:`~probes.request_proxy.RecordingProxy`
sits on every controller→broker link: node Y binds ``CTRL_<x>`` on a fixed loopback port and
advertises the proxy's port, so every controller request Y receives is journalled (per
destination, in arrival order) whichever implementation sent it.

With ``record_zookeeper`` (the default) each node's ``zookeeper.connect`` names its own
:class:`~probes.zk_journal.ZkRecordingProxy` (one per ZooKeeper host, chroot kept): every
request the node sends to ZooKeeper and every watch event it receives is journalled per node
(:meth:`Cluster.zk_journal`; also ``node-<id>/zk-journal.jsonl``). The proxy only relays bytes, so
it works for any target. Chaining seams for fault injection: ``zk_front(node id, proxy address)``
returns the address the node should connect to instead (a fault proxy in front that forwards to the
recording proxy), and :attr:`ZkRecordingProxy.upstream` may be pointed at a fault proxy behind it.

A split-topology target (a ``[controller]`` section) adds controller processes (ids 101, 102, …)
beside the broker-only nodes: they are in :attr:`Cluster.nodes` (start/stop/kill/pause by id as
any node), not in :attr:`Cluster.broker_ids`; they are the only senders of controller requests,
so the recording proxies sit on each controller→broker link. A node that cannot start, exits
before it registers or never registers is a :class:`~cluster.startup.TargetNodeError` (a target
error, with its output's tail), not a timeout.

Observation helpers are read-only: ZooKeeper data (``zk``), the transaction log of this chroot
(``history``), state-change logs, log dirs. Admin writes live in :mod:`cluster.admin`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.exceptions import NoNodeError

from cluster.nodeconfig import (
    CLIENT_LISTENER,
    Interpose,
    NodeSpec,
    control_listener,
    render_properties,
    split_zookeeper_connect,
    zookeeper_connect,
)
from cluster.nodeconfig import server_properties as build_properties
from cluster.startup import TargetNodeError, command_problem, output_tail
from cluster.targets import Role, Target, TargetError, profile_properties
from harness.launcher import Handle, Launcher, LaunchSpec, launcher_from_env
from harness.port_claims import claim_port
from harness.wait import ConditionTimeout, wait_for
from harness.zookeeper.observer import observer_client
from probes.history import ChrootView, TxnLogCursor
from probes.request_proxy import RecordingProxy, RequestJournal
from probes.state_change_log import LogEntry, read_state_change_log
from probes.txnrecords import TxnRecord
from probes.zk_journal import ProxyLoop, ZkJournal, ZkRecordingProxy

__all__ = ["Cluster", "ClusterFactory", "ConditionTimeout", "Node", "TargetNodeError", "wait_for"]

Address = tuple[str, int]


#: Fixed listener ports (the node side of an interposed link) come from below the kernel's
#: ephemeral range (32768+ on Linux): a port picked there could be taken by any outgoing
#: connection or port-0 listener before the node binds it, or before it restarts.
_STATIC_PORTS = range(20000, 32000)
_handed_out: set[int] = set()
#: One abstract-namespace unix socket per handed-out port, held for the life of this process: a
#: concurrent run on the same host (another suite, a chaos campaign, CI next to a developer) that
#: picks the same port sees the name taken and skips it. The kernel frees the names when the
#: process ends, even on SIGKILL, and nothing is left on disk.
_reservations: list[socket.socket] = []


def _reserve_across_processes(port: int) -> bool:
    claim = claim_port(port)
    if claim is None:
        return False
    _reservations.append(claim)
    return True


def _worker_static_ports() -> range:
    """This xdist worker's own slice of ``_STATIC_PORTS``.

    ``_handed_out`` is per process: two workers picking from the whole range could hand out the
    same port to two clusters, and the node started second then fails to bind it ("address already
    in use"). Each worker picks from its own slice instead.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1"), 1)
    index = int(worker[2:]) % count if worker.startswith("gw") and worker[2:].isdigit() else 0
    size = len(_STATIC_PORTS) // count
    start = _STATIC_PORTS.start + index * size
    return range(start, start + size)


def pick_static_ports(count: int) -> list[int]:
    """``count`` currently bindable loopback ports outside the ephemeral range, never reused,
    never handed out by another xdist worker of the same run, nor by any other live process on
    this host that picks its ports here (concurrent suite runs)."""
    ports = _worker_static_ports()
    out: list[int] = []
    while len(out) < count:
        port = random.choice(ports)
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        if not _reserve_across_processes(port):
            continue  # another live process on this host holds it
        out.append(port)
    return out


@dataclass
class Node:
    """One node: its files, its properties and its process or container (``None`` when not running)."""

    broker_id: int
    node_dir: Path
    log_dirs: tuple[Path, ...]
    properties: dict[str, str]
    proc: Handle | None = None
    paused: bool = False
    exit_codes: list[int] = field(default_factory=list)
    role: Role = "broker"
    exit_expected: bool = False  # the check makes it exit on purpose (e.g. every log dir failed)

    @property
    def config_path(self) -> Path:
        return self.node_dir / "server.properties"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def output_path(self) -> Path:
        """stdout and stderr of the node's process (the launcher writes both here)."""
        return self.node_dir / "stdout.log"

    def died(self) -> int | None:
        """The exit code when the process ended without the harness stopping it, else ``None``."""
        code = self.proc.poll() if self.proc is not None else None
        return None if code is None or self.exit_expected else code


class Cluster:
    """N nodes of ``target`` in ``chroot`` on the ZooKeeper at ``zk_connect_string``."""

    def __init__(
        self,
        target: Target,
        *,
        zk_connect_string: str,
        chroot: str,
        txn_log_dir: Path,
        base_dir: Path,
        profile: str = "2.5",
        broker_ids: Iterable[int] = (1, 2, 3),
        overrides: Mapping[str, str] = {},
        node_overrides: Mapping[int, Mapping[str, str]] = {},
        log_dirs_per_node: int = 1,
        record_requests: bool = True,
        record_zookeeper: bool = True,
        zk_front: Callable[[int, Address], Address] | None = None,
        four_letter: Callable[[str], str] | None = None,
        launcher: Launcher | None = None,
    ) -> None:
        if launcher is not None or getattr(self, "launcher", None) is None:  # a subclass may set it first
            self.launcher: Launcher = launcher or launcher_from_env()
        self.target, self.chroot, self.profile = target, chroot, profile
        self.broker_ids = tuple(sorted(broker_ids))
        self.base_dir = base_dir
        self._four_letter = four_letter
        self.history_cursor = TxnLogCursor.at_end(txn_log_dir)
        self.view = ChrootView(chroot)
        self._records: list[TxnRecord] = []
        self._sessions: set[int] = set()
        self.zk = observer_client(f"{zk_connect_string}{chroot}", timeout_s=10.0)
        self.zk.start(timeout=15.0)
        self.journal: RequestJournal | None = RequestJournal() if record_requests else None
        self.proxies: dict[tuple[int, int], RecordingProxy] = {}
        self.zk_loop = ProxyLoop("zk-journal") if record_zookeeper else None
        self.zk_front = zk_front
        self.zk_journals: dict[int, ZkJournal] = {}
        self.zk_proxies: dict[int, list[ZkRecordingProxy]] = {}
        self.nodes: dict[int, Node] = {}
        #: split topology: the controller processes (not brokers); they alone send controller requests
        self.controller_ids = target.controller_ids()
        self.control_sources = self.controller_ids or self.broker_ids
        if set(self.controller_ids) & set(self.broker_ids):
            self.close()
            raise ValueError(f"broker ids {self.broker_ids} overlap the controller ids {self.controller_ids}")
        try:
            for bid in self.broker_ids + self.controller_ids:
                self.nodes[bid] = self._make_node(
                    bid, zk_connect_string, overrides, node_overrides.get(bid, {}), log_dirs_per_node
                )
        except BaseException:  # a bad override: no proxy, loop or client outlives the refusal
            self.close()
            raise

    # --- set-up ---------------------------------------------------------------------------------

    def _interpose(self, dest: int) -> dict[str, Interpose]:
        if self.journal is None:
            return {}
        out: dict[str, Interpose] = {}
        bind_ports = pick_static_ports(len(self.control_sources))
        for source, bind_port in zip(self.control_sources, bind_ports, strict=True):
            proxy = RecordingProxy(self.journal, source=source, dest=dest)
            proxy.upstream = ("127.0.0.1", bind_port)
            self.proxies[(source, dest)] = proxy
            out[control_listener(source)] = Interpose(bind_port=bind_port, advertised_port=proxy.port)
        return out

    def _zookeeper_link(self, bid: int, node_dir: Path, zk: str) -> str:
        """The node's ``zookeeper.connect``: its recording proxies (and any front), chroot kept."""
        if self.zk_loop is None:
            return f"{zk}{self.chroot}"
        hosts, _ = split_zookeeper_connect(zk)
        journal = ZkJournal(f"node-{bid}", chroot=self.chroot, jsonl_path=node_dir / "zk-journal.jsonl")
        proxies = [ZkRecordingProxy(journal, host, loop=self.zk_loop) for host in hosts]
        self.zk_journals[bid], self.zk_proxies[bid] = journal, proxies
        front = self.zk_front or (lambda _bid, address: address)
        return zookeeper_connect([front(bid, p.address) for p in proxies], self.chroot)

    def _make_node(
        self, bid: int, zk: str, overrides: Mapping[str, str], mine: Mapping[str, str], n_dirs: int
    ) -> Node:
        role: Role = "controller" if bid in self.controller_ids else "broker"
        node_dir = self.base_dir / f"{'controller' if role == 'controller' else 'node'}-{bid}"
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        log_dirs = tuple(node_dir / f"data-{i}" for i in range(n_dirs))
        spec = NodeSpec(
            bid,
            self.broker_ids,
            self._zookeeper_link(bid, node_dir, zk),
            tuple(map(str, log_dirs)),
            self._interpose(bid) if role == "broker" else {},
            controller_ids=self.controller_ids,
        )
        recipe = self.target.controller
        props = build_properties(
            spec,
            profile=profile_properties(self.profile),
            target_extra=recipe.extra_properties
            if role == "controller" and recipe
            else self.target.extra_properties,
            overrides={**overrides, **mine},
        )
        node = Node(bid, node_dir, log_dirs, props, role=role)
        node.config_path.write_text(
            render_properties(props, header=f"conformance {role} {bid} of target {self.target.name}"),
            encoding="utf-8",
        )
        return node

    def deadline(self, seconds: float) -> float:
        return self.target.deadline(seconds)

    # --- process control ------------------------------------------------------------------------

    def start(self, ids: Iterable[int] | None = None, *, wait: bool = True) -> None:
        """Start nodes (all by default: brokers, then a split topology's controller processes)
        and wait until each broker has registered and each controller process contends for
        ``/controller``; a node that cannot start is a :class:`TargetNodeError`."""
        wanted = list(ids) if ids is not None else [*self.broker_ids, *self.controller_ids]
        # a split topology's controller processes come up with the first brokers a check starts
        # (checks written for Kafka's topology start brokers only); afterwards only when named
        wanted += [c for c in self.controller_ids if c not in wanted and self._never_started(c)]
        for bid in wanted:
            self._spawn(self.nodes[bid])
        if wait:
            brokers = [b for b in wanted if self.nodes[b].role == "broker"]
            if brokers:
                self.wait_registered(brokers)
            self.wait_contending([c for c in wanted if self.nodes[c].role == "controller"])

    def _never_started(self, bid: int) -> bool:
        node = self.nodes[bid]
        return node.proc is None and not node.exit_codes

    def _spawn(self, node: Node) -> None:
        if node.running:
            raise RuntimeError(f"node {node.broker_id} is already running")
        spec = self.launch_spec(node)
        problem = (
            command_problem(spec.argv, spec.cwd, spec.env.get("PATH"))
            if self.launcher.name == "process"
            else None
        )
        if problem is None:
            try:
                node.proc = self.launcher.spawn(spec)
            except OSError as exc:
                problem = f"could not be started: {exc}"
        if problem is not None:
            raise TargetNodeError(node.broker_id, problem, role=node.role, output_path=node.output_path)
        node.paused, node.exit_expected = False, False

    def launch_spec(self, node: Node) -> LaunchSpec:
        """How ``node`` starts: the target's command (and its ``[container]`` recipe in a container)."""
        in_container = self.launcher.name != "process"
        if in_container and node.role == "controller":
            raise TargetError(
                f"target {self.target.name} is a split topology ([controller]): its controller processes"
                " run with the process launcher only; use --launcher process"
            )
        inside = self.target.render_container(node.config_path, node.node_dir) if in_container else None
        return LaunchSpec(
            role="node",
            name=f"{node.role if node.role == 'controller' else 'node'}-{node.broker_id}",
            argv=self.target.render_command(node.config_path, node.node_dir, node.role),
            cwd=self.target.render_cwd(node.node_dir, node.role),
            log_path=node.output_path,
            env={**os.environ, **self.target.render_env(node.node_dir, node.role)},
            mounts=[node.node_dir],
            container_argv=inside.argv if inside else None,
            container_cwd=inside.cwd if inside else None,
            container_env=inside.env if inside else None,
            image=inside.image if inside else None,
        )

    def _exited(self, bid: int, before: str) -> TargetNodeError | None:
        node = self.nodes[bid]
        if node.running:
            return None
        code = node.proc.poll() if node.proc is not None else None
        what = f"exited with code {code} {before}" if code is not None else f"is not running {before}"
        return TargetNodeError(
            bid,
            what,
            role=node.role,
            exit_code=code,
            output=output_tail(node.output_path),
            output_path=node.output_path,
        )

    def _wait_started(
        self, ids: list[int], ready: Callable[[int], bool], what: str, deadline_s: float | None
    ) -> None:
        seconds = self.deadline(deadline_s if deadline_s is not None else self.target.start_timeout_s)

        def started() -> TargetNodeError | bool:  # an exit is returned, not raised: wait_for retries on raise
            for bid in ids:
                error = self._exited(bid, f"before it {what}")
                if error is not None:
                    return error
            return all(ready(bid) for bid in ids)

        try:
            result = wait_for(started, seconds, what)
        except ConditionTimeout:
            late = next((b for b in ids if not ready(b)), ids[0])
            node = self.nodes[late]
            raise TargetNodeError(
                late,
                f"is running but never {what} within {seconds:.0f} s (start_timeout_s × deadline_scale)",
                role=node.role,
                output=output_tail(node.output_path),
                output_path=node.output_path,
            ) from None
        if isinstance(result, TargetNodeError):
            raise result

    def wait_registered(self, ids: Iterable[int], deadline_s: float | None = None) -> None:
        """Wait until every broker in ``ids`` has registered ``/brokers/ids/<id>``; a node that
        exits first or never registers is a :class:`TargetNodeError` with its output's tail."""
        self._wait_started(
            list(ids),
            lambda bid: bool(self.zk.exists(f"/brokers/ids/{bid}")),
            "registered /brokers/ids/<id>",
            deadline_s,
        )

    def wait_contending(self, ids: Iterable[int], deadline_s: float | None = None) -> None:
        """Wait until every controller process in ``ids`` has read or written ``/controller``
        (seen in its ZooKeeper journal; without journals, until some controller is elected)."""
        self._wait_started(list(ids), self._contends, "contended for /controller", deadline_s)

    def _contends(self, cid: int) -> bool:
        journal = self.zk_journals.get(cid)
        if journal is None:
            return self.zk.exists("/controller") is not None
        return any(
            r.path == "/controller" or any(getattr(op, "path", None) == "/controller" for op in r.sub_ops)
            for r in journal.requests()
        )

    def expect_exit(self, bid: int) -> None:
        """The check is about to make node ``bid`` exit (e.g. all its log dirs fail): its exit is
        then not a target error."""
        self.nodes[bid].exit_expected = True

    def unexpected_exits(self) -> list[TargetNodeError]:
        """Nodes whose process ended without the harness stopping it (a crash), with their output."""
        return [
            TargetNodeError(
                bid,
                f"exited with code {code} while the check ran",
                role=node.role,
                exit_code=code,
                output=output_tail(node.output_path),
                output_path=node.output_path,
            )
            for bid, node in self.nodes.items()
            if (code := node.died()) is not None
        ]

    def _where(self, node: Node) -> str:
        return node.proc.description if node.proc is not None else "not started"

    def _signal(self, bid: int, sig: signal.Signals) -> None:
        proc = self.nodes[bid].proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)

    def _reap(self, node: Node, timeout_s: float) -> int:
        assert node.proc is not None
        code = node.proc.wait(timeout_s)
        node.exit_codes.append(code)
        with contextlib.suppress(Exception):
            node.proc.remove()  # a container is removed; its files stay in the node dir
        node.proc, node.paused = None, False
        return code

    def stop(self, bid: int, timeout_s: float | None = None) -> int:
        """SIGTERM (controlled shutdown for Kafka-like targets), wait for exit; returns the code."""
        node = self.nodes[bid]
        if node.paused:
            self.resume(bid)
        self._signal(bid, signal.SIGTERM)
        return self._reap(node, timeout_s or self.target.stop_timeout_s)

    def kill(self, bid: int) -> int:
        """SIGKILL the node's process group (``docker kill``); its ZooKeeper session expires later."""
        node = self.nodes[bid]
        self._signal(bid, signal.SIGKILL)
        return self._reap(node, 10.0)

    def pause(self, bid: int) -> None:
        self._signal(bid, signal.SIGSTOP)
        self.nodes[bid].paused = True

    def resume(self, bid: int) -> None:
        self._signal(bid, signal.SIGCONT)
        self.nodes[bid].paused = False

    def restart(self, bid: int, *, wait: bool = True) -> None:
        if self.nodes[bid].running:
            self.stop(bid)
        self.start([bid], wait=wait)

    def wait_unregistered(self, bid: int, deadline_s: float = 20.0) -> None:
        wait_for(
            lambda: not self.zk.exists(f"/brokers/ids/{bid}"),
            self.deadline(deadline_s),
            f"/brokers/ids/{bid} to disappear",
        )

    def close(self) -> None:
        """Kill every node, stop proxies and clients; never raises."""
        for bid, node in self.nodes.items():
            if node.proc is not None:
                self._signal(bid, signal.SIGCONT)
                self._signal(bid, signal.SIGKILL)
                with contextlib.suppress(Exception):
                    self._reap(node, 10.0)
                if node.proc is not None:  # not reaped in time: never leave it running
                    with contextlib.suppress(Exception):
                        node.proc.remove()
        for proxy in self.proxies.values():
            with contextlib.suppress(Exception):
                proxy.close()
        self.proxies.clear()  # close() may be called again (a check, then the fixture)
        if self.journal is not None:
            self.journal.close()
        for zk_proxy in (p for ps in self.zk_proxies.values() for p in ps):
            zk_proxy.close()
        self.zk_proxies.clear()
        if self.zk_loop is not None:
            self.zk_loop.close()
        for zk_journal in self.zk_journals.values():
            zk_journal.close()
        with contextlib.suppress(Exception):
            self.zk.stop()
            self.zk.close()

    # --- observation ----------------------------------------------------------------------------

    def four_letter(self, command: str) -> str:
        """A ZooKeeper four-letter word (``wchc``, ``wchp``, …) on the cluster's server."""
        if self._four_letter is None:
            raise RuntimeError("this cluster was made without a four-letter-word channel")
        return self._four_letter(command)

    def zk_journal(self, bid: int) -> ZkJournal:
        """What node ``bid`` sent to ZooKeeper and the watch events it got (raises ``LookupError``
        when the cluster was made with ``record_zookeeper=False``)."""
        if bid not in self.zk_journals:
            raise LookupError(
                f"no ZooKeeper journal for node {bid} (record_zookeeper={self.zk_loop is not None})"
            )
        return self.zk_journals[bid]

    def zk_evidence(self, last: int = 150) -> dict[str, str]:
        """The tail of every node's ZooKeeper journal (pings left out), for failure reports."""
        return {
            f"node {bid} ZooKeeper requests (journal)": journal.dump(last=last)
            for bid, journal in self.zk_journals.items()
        }

    def get_json(self, path: str) -> Any:
        """Parsed JSON of a znode, ``None`` if absent (raises on undecodable data)."""
        try:
            data, _ = self.zk.get(path)
        except NoNodeError:
            return None
        return None if data is None or data == b"" else json.loads(data)

    def controller_id(self) -> int | None:
        ctrl = self.get_json("/controller")
        return None if ctrl is None else int(ctrl["brokerid"])

    def controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, dataVersion) of ``/controller_epoch``."""
        try:
            data, stat = self.zk.get("/controller_epoch")
        except NoNodeError:
            return None
        return int(data.decode()), stat.version

    def wait_controller(self, deadline_s: float = 20.0, *, not_in: Iterable[int] = ()) -> int:
        excluded = set(not_in)

        def elected() -> list[int] | None:  # a list: broker id 0 is a controller, not "not yet"
            cid = self.controller_id()
            return [cid] if cid is not None and cid not in excluded else None

        return wait_for(
            elected, self.deadline(deadline_s), lambda: f"a controller not in {excluded}; {self.summary()}"
        )[0]

    def partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        return self.get_json(f"/brokers/topics/{topic}/partitions/{partition}/state")  # type: ignore[no-any-return]

    def partition_state_stat(self, topic: str, partition: int) -> tuple[dict[str, Any], int] | None:
        try:
            data, stat = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        except NoNodeError:
            return None
        return json.loads(data), stat.version

    def broker_epoch(self, bid: int) -> int | None:
        stat = self.zk.exists(f"/brokers/ids/{bid}")
        return None if stat is None else int(stat.czxid)

    def endpoint(self, bid: int, listener: str = CLIENT_LISTENER) -> tuple[str, int]:
        reg = self.get_json(f"/brokers/ids/{bid}")
        if reg is None:
            raise RuntimeError(f"broker {bid} is not registered")
        for ep in reg["endpoints"]:
            name, rest = ep.split("://", 1)
            if name == listener:
                host, port = rest.rsplit(":", 1)
                return host, int(port)
        raise RuntimeError(f"broker {bid} registers no {listener} endpoint: {reg['endpoints']}")

    def bind_port(self, dest: int, listener: str) -> int:
        """The port node ``dest`` binds for ``listener`` when it is fixed (interposed links)."""
        for entry in self.nodes[dest].properties["listeners"].split(","):
            name, rest = entry.split("://", 1)
            if name == listener:
                return int(rest.rsplit(":", 1)[1])
        raise KeyError(listener)

    def bootstrap(self) -> str:
        return ",".join(
            "{}:{}".format(*self.endpoint(b)) for b in self.broker_ids if self.zk.exists(f"/brokers/ids/{b}")
        )

    def history(self) -> list[TxnRecord]:
        """Every transaction of this chroot since the cluster was made (chroot stripped)."""
        batch = self.history_cursor.read()
        # failed multis name no path: keep them when their session ever wrote in the chroot
        self._sessions |= {r.session_id for r in batch if any(self.view.contains(p) for p in r.paths())}
        self._records += ChrootView(self.chroot, frozenset(self._sessions)).filter(batch)
        return list(self._records)

    def state_changes(self, bid: int) -> list[LogEntry]:
        node = self.nodes[bid]
        path = self.target.log_path("state_change", node.node_dir, node.role)
        return [] if path is None else read_state_change_log(path)

    def log_tail(self, bid: int, kind: str = "server", lines: int = 60) -> str:
        node = self.nodes[bid]
        path = None if kind == "stdout" else self.target.log_path(kind, node.node_dir, node.role)
        if path is None or not path.is_file():
            path = node.output_path
            if not path.is_file():
                return "(no log)"
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def summary(self) -> str:
        live = {b: bool(self.zk.exists(f"/brokers/ids/{b}")) for b in self.broker_ids}
        procs = {
            b: ("paused" if n.paused else "up" if n.running else f"down{n.exit_codes[-1:]}")
            for b, n in self.nodes.items()
        }
        ctrl = f"controller={self.controller_id()} epoch={self.controller_epoch()}"
        return f"{ctrl} registered={live} processes={procs}"


#: What the ``cluster_factory`` fixture of ``conformance/conftest.py`` gives a check.
ClusterFactory = Callable[..., Cluster]
