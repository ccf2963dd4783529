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
sits on every controller→broker link: node Y binds ``CTRL_<x>`` on a fixed loopback port (an
``interposed`` port of :mod:`harness.ports`, claimed host-wide until :meth:`Cluster.close`) and
advertises the proxy's port, so every controller request Y receives is journalled (per
destination, in arrival order) whichever implementation sent it. With ``record_shutdowns`` as well,
a proxy that journals only ControlledShutdown sits on every broker→broker inter-broker link
(``FROM_<x>`` of Y, x = Y included: a controller shutting down asks itself): a broker's requests to
leave the cluster and the controller's answers join the same journal; replica fetches pass
unrecorded.

With ``record_zookeeper`` (the default) each node's ``zookeeper.connect`` names its own
:class:`~probes.zk_journal.ZkRecordingProxy` (one per ZooKeeper host, chroot kept): every
request the node sends to ZooKeeper and every watch event it receives is journalled per node
(:meth:`Cluster.zk_journal`; also ``node-<id>/zk-journal.jsonl``). The proxy only relays bytes, so
it works for any target. Chaining seams for fault injection: ``zk_front(node id, proxy address)``
returns the address the node should connect to instead (a fault proxy in front that forwards to the
recording proxy), and :attr:`ZkRecordingProxy.upstream` may be pointed at a fault proxy behind it.
Both kinds of recording proxy are taps (:class:`~probes.tap.Tap`) on the cluster's one
:class:`~probes.tap.ProxyLoop`.

In a split topology (a target with a ``[controller]`` section) each node is a broker-only
process plus a controller process with the same broker id (``controller.properties``, logs in
``controller-logs/``), both on the node's ZooKeeper link, handled as one server by
:class:`~cluster.server_pair.ServerPair`: the checks' faults act on both. A node that cannot
start, exits before it registers or never registers is a :class:`~cluster.startup.TargetNodeError`
(a target error, with its output's tail), not a timeout.

Observation helpers are read-only: ZooKeeper data (``zk``), the transaction log of this chroot
(``history``), state-change logs, log dirs. Admin writes live in :mod:`cluster.admin`.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.exceptions import NoNodeError

from cluster.boot import first_line_time, log_size
from cluster.nodeconfig import (
    CLIENT_LISTENER,
    Interpose,
    NodeSpec,
    control_listener,
    inter_broker_listener,
    render_properties,
    split_zookeeper_connect,
    zookeeper_connect,
)
from cluster.nodeconfig import server_properties as build_properties
from cluster.server_pair import ServerPair
from cluster.startup import TargetNodeError, command_problem, output_tail
from cluster.target_schema import CONTROLLER_LOG_DIR
from cluster.targets import Role, Target, TargetError, profile_properties
from harness import ports, timeline
from harness.launcher import Handle, Launcher, LaunchSpec, launcher_from_env
from harness.wait import ConditionTimeout, wait_for
from harness.zookeeper.observer import observer_client
from harness.zookeeper.sessions import end_session as end_zk_session
from probes.history import ChrootView, TxnLogCursor
from probes.request_proxy import RecordingProxy, RequestJournal
from probes.state_change_log import LogEntry, read_state_change_log
from probes.tap import ProxyLoop
from probes.txnrecords import TxnRecord
from probes.zk_journal import ZkJournal, ZkRecordingProxy, ZkReply, ZkRequest

__all__ = [
    "Cluster",
    "ClusterFactory",
    "ConditionTimeout",
    "Node",
    "TargetNodeError",
    "done_contending",
    "wait_for",
]

#: what a broker→broker inter-broker link journals with ``record_shutdowns``: ControlledShutdown
SHUTDOWN_APIS = frozenset({7})

Address = tuple[str, int]


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
    split: bool = False  # a broker-only process plus a controller process (split topology)
    exit_expected: bool = False  # the check makes it exit on purpose (e.g. every log dir failed)
    #: When the current process was spawned and where its server log then ended (start timing).
    spawned_at: float = 0.0
    log_offset: int = 0
    start_timed: bool = True
    #: Where the node's ZooKeeper journal ended when its current process was spawned.
    journal_mark: int = 0

    @property
    def config_path(self) -> Path:
        return self.node_dir / "server.properties"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def controller_config_path(self) -> Path:
        return self.node_dir / "controller.properties"

    def output_of(self, role: Role = "broker") -> Path:
        """stdout and stderr of the node's (or its controller process's) process."""
        return self.node_dir / ("stdout.log" if role == "broker" else "controller-stdout.log")

    @property
    def output_path(self) -> Path:
        return self.output_of("broker")

    def ended_part(self) -> Role:
        """Which of a split node's processes ended first (a combined node: its one process)."""
        part = self.proc.part() if isinstance(self.proc, ServerPair) else None
        return part[0] if part is not None else "broker"

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
        record_shutdowns: bool = False,
    ) -> None:
        self.record_shutdowns = record_shutdowns and record_requests
        with timeline.span("cluster-make", nodes=len(tuple(broker_ids))):
            self._init(
                target,
                zk_connect_string=zk_connect_string,
                chroot=chroot,
                txn_log_dir=txn_log_dir,
                base_dir=base_dir,
                profile=profile,
                broker_ids=broker_ids,
                overrides=overrides,
                node_overrides=node_overrides,
                log_dirs_per_node=log_dirs_per_node,
                record_requests=record_requests,
                record_zookeeper=record_zookeeper,
                zk_front=zk_front,
                four_letter=four_letter,
                launcher=launcher,
            )

    def _init(
        self,
        target: Target,
        *,
        zk_connect_string: str,
        chroot: str,
        txn_log_dir: Path,
        base_dir: Path,
        profile: str,
        broker_ids: Iterable[int],
        overrides: Mapping[str, str],
        node_overrides: Mapping[int, Mapping[str, str]],
        log_dirs_per_node: int,
        record_requests: bool,
        record_zookeeper: bool,
        zk_front: Callable[[int, Address], Address] | None,
        four_letter: Callable[[str], str] | None,
        launcher: Launcher | None,
    ) -> None:
        if launcher is not None or getattr(self, "launcher", None) is None:  # a subclass may set it first
            self.launcher: Launcher = launcher or launcher_from_env()
        self.target, self.chroot, self.profile = target, chroot, profile
        self.zk_connect_string = zk_connect_string
        self.broker_ids = tuple(sorted(broker_ids))
        self.base_dir = base_dir
        self._four_letter = four_letter
        self.history_cursor = TxnLogCursor.at_end(txn_log_dir)
        self.view = ChrootView(chroot)
        self._records: list[TxnRecord] = []
        self._sessions: set[int] = set()
        self.zk = observer_client(f"{zk_connect_string}{chroot}", timeout_s=10.0)
        self.zk.start(timeout=15.0)
        recording = record_requests or record_zookeeper
        self.proxy_loop = ProxyLoop("recording-proxies") if recording else None
        self.journal: RequestJournal | None = RequestJournal(self.proxy_loop) if record_requests else None
        self.proxies: dict[tuple[int, int], RecordingProxy] = {}
        self.shutdown_proxies: dict[tuple[int, int], RecordingProxy] = {}  # on FROM_<x> (record_shutdowns)
        self.record_zookeeper = record_zookeeper
        self.listener_ports = ports.PortPool(ports.INTERPOSED)
        self.zk_front = zk_front
        self.zk_journals: dict[int, ZkJournal] = {}
        self.zk_proxies: dict[int, list[ZkRecordingProxy]] = {}
        self.nodes: dict[int, Node] = {}
        try:
            for bid in self.broker_ids:
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
        out = self._recorded(dest, control_listener, self.proxies, None)
        if self.record_shutdowns:
            out |= self._recorded(dest, inter_broker_listener, self.shutdown_proxies, SHUTDOWN_APIS)
        return out

    def _recorded(
        self,
        dest: int,
        listener: Callable[[int], str],
        into: dict[tuple[int, int], RecordingProxy],
        apis: frozenset[int] | None,
    ) -> dict[str, Interpose]:
        """A recording proxy on ``listener(source)`` of node ``dest`` for every source broker."""
        assert self.journal is not None
        out: dict[str, Interpose] = {}
        bind_ports = self.listener_ports.take(len(self.broker_ids))
        for source, bind_port in zip(self.broker_ids, bind_ports, strict=True):
            proxy = RecordingProxy(self.journal, source=source, dest=dest, apis=apis)
            proxy.upstream = ("127.0.0.1", bind_port)
            into[(source, dest)] = proxy
            out[listener(source)] = Interpose(bind_port=bind_port, advertised_port=proxy.port)
        return out

    def _zookeeper_link(self, bid: int, node_dir: Path, zk: str) -> str:
        """The node's ``zookeeper.connect``: its recording proxies (and any front), chroot kept."""
        if not self.record_zookeeper:
            return f"{zk}{self.chroot}"
        hosts, _ = split_zookeeper_connect(zk)
        journal = ZkJournal(f"node-{bid}", chroot=self.chroot, jsonl_path=node_dir / "zk-journal.jsonl")
        proxies = [ZkRecordingProxy(journal, host, loop=self.proxy_loop) for host in hosts]
        self.zk_journals[bid], self.zk_proxies[bid] = journal, proxies
        front = self.zk_front or (lambda _bid, address: address)
        return zookeeper_connect([front(bid, p.address) for p in proxies], self.chroot)

    def _make_node(
        self, bid: int, zk: str, overrides: Mapping[str, str], mine: Mapping[str, str], n_dirs: int
    ) -> Node:
        node_dir = self.base_dir / f"node-{bid}"
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        log_dirs = tuple(node_dir / f"data-{i}" for i in range(n_dirs))
        spec = NodeSpec(
            bid,
            self.broker_ids,
            self._zookeeper_link(bid, node_dir, zk),
            tuple(map(str, log_dirs)),
            self._interpose(bid),
        )
        profile, changes = profile_properties(self.profile), {**overrides, **mine}
        extra = self.target.extra_properties
        props = build_properties(spec, profile=profile, target_extra=extra, overrides=changes)
        node = Node(bid, node_dir, log_dirs, props, split=self.target.controller is not None)
        header = f"conformance node {bid} of target {self.target.name}"
        node.config_path.write_text(render_properties(props, header=header), encoding="utf-8")
        if self.target.controller is not None:  # the same keys but the broker's target extras
            extra = self.target.controller.extra_properties
            mine_c = build_properties(spec, profile=profile, target_extra=extra, overrides=changes)
            text = render_properties(mine_c, header=f"controller process of {header}")
            node.controller_config_path.write_text(text, encoding="utf-8")
            (node_dir / CONTROLLER_LOG_DIR).mkdir(exist_ok=True)
        return node

    def deadline(self, seconds: float) -> float:
        return self.target.deadline(seconds)

    # --- process control ------------------------------------------------------------------------

    def start(self, ids: Iterable[int] | None = None, *, wait: bool = True) -> None:
        """Start nodes (all by default) and wait until each has registered and is past start-up
        (has contended for ``/controller``: :meth:`wait_contending`); a node that cannot start is
        a :class:`TargetNodeError`."""
        wanted = list(ids) if ids is not None else list(self.broker_ids)
        with timeline.span("cluster-start", nodes=wanted):
            self._start(wanted, wait)

    def _start(self, wanted: list[int], wait: bool) -> None:
        for bid in wanted:
            self._spawn(self.nodes[bid])
        split = [b for b in wanted if self.nodes[b].split]
        if wait or split:
            # a split node's controller process starts once its broker has registered, as a Kafka
            # server registers its broker before it starts its controller component
            self.wait_registered(wanted)
        for bid in split:
            self._spawn_controller(self.nodes[bid])
        if wait:
            # every node, not just a split one: a Kafka server's start-up ends with its controller
            # component reading /controller, and a check that compares what a node wrote must not
            # see that read or its election attempt land inside the compared window
            self.wait_contending(wanted)

    def _spawn_one(self, node: Node, role: Role) -> Handle:
        spec = self.launch_spec(node, role)
        problem = (
            command_problem(spec.argv, spec.cwd, spec.env.get("PATH"))
            if not self.launcher.in_containers
            else None
        )
        if problem is None:
            try:
                return self.launcher.spawn(spec)
            except OSError as exc:
                problem = f"could not be started: {exc}"
        raise TargetNodeError(node.broker_id, problem, role=role, output_path=node.output_of(role))

    def _spawn(self, node: Node) -> None:
        if node.running:
            raise RuntimeError(f"node {node.broker_id} is already running")
        node.log_offset = log_size(self.target.log_path("server", node.node_dir))
        node.spawned_at, node.start_timed = time.time(), False
        journal = self.zk_journals.get(node.broker_id)
        node.journal_mark = journal.mark() if journal is not None else 0
        with timeline.span("node-spawn", node=node.broker_id):
            node.proc = self._spawn_one(node, "broker")
        node.paused, node.exit_expected = False, False

    def _spawn_controller(self, node: Node) -> None:
        """Pair the running broker of a split node with its controller process."""
        broker = node.proc
        assert broker is not None
        assert not isinstance(broker, ServerPair)
        try:
            node.proc = ServerPair(broker, self._spawn_one(node, "controller"))
        except BaseException:
            broker.remove()
            node.proc = None
            raise

    def launch_spec(self, node: Node, role: Role = "broker") -> LaunchSpec:
        """How ``node`` (or its controller process) starts: the target's command (and its
        ``[container]`` recipe in a container)."""
        in_container = self.launcher.in_containers
        if in_container and node.split:
            raise TargetError(
                f"target {self.target.name} is a split topology ([controller]): its controller processes"
                " run with the process launcher only; use --launcher process"
            )
        inside = self.target.render_container(node.config_path, node.node_dir) if in_container else None
        config = node.config_path if role == "broker" else node.controller_config_path
        return LaunchSpec(
            role="node",
            name=f"{'node' if role == 'broker' else 'controller'}-{node.broker_id}",
            argv=self.target.render_command(config, node.node_dir, role),
            cwd=self.target.render_cwd(node.node_dir, role),
            log_path=node.output_of(role),
            env={**os.environ, **self.target.render_env(node.node_dir, role)},
            mounts=[node.node_dir],
            container_argv=inside.argv if inside else None,
            container_cwd=inside.cwd if inside else None,
            container_env=inside.env if inside else None,
            image=inside.image if inside else None,
            warm_module=self.target.warm_module if role == "broker" else None,
        )

    def _exited(self, bid: int, before: str) -> TargetNodeError | None:
        node = self.nodes[bid]
        if node.running:
            return None
        code = node.proc.poll() if node.proc is not None else None
        what = f"exited with code {code} {before}" if code is not None else f"is not running {before}"
        return self._node_error(node, what, code)

    def _node_error(self, node: Node, what: str, code: int | None) -> TargetNodeError:
        part = node.ended_part()
        path = node.output_of(part)
        return TargetNodeError(
            node.broker_id, what, role=part, exit_code=code, output=output_tail(path), output_path=path
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
            never = f"is running but never {what} within {seconds:.0f} s (start_timeout_s × deadline_scale)"
            raise self._node_error(self.nodes[late], never, None) from None
        if isinstance(result, TargetNodeError):
            raise result

    def wait_registered(self, ids: Iterable[int], deadline_s: float | None = None) -> None:
        """Wait until every broker in ``ids`` has registered ``/brokers/ids/<id>``; a node that
        exits first or never registers is a :class:`TargetNodeError` with its output's tail."""
        ids = list(ids)
        self._wait_started(
            ids,
            lambda bid: bool(self.zk.exists(f"/brokers/ids/{bid}")),
            "registered /brokers/ids/<id>",
            deadline_s,
        )
        self._time_starts(ids)

    def _time_starts(self, ids: Iterable[int]) -> None:
        """One ``node-start`` span per node started since the last call: spawn → registration
        (the znode's ``ctime``), with the first line of its server log in between (:mod:`cluster.boot`)."""
        if not timeline.enabled():
            return
        for bid in ids:
            node = self.nodes[bid]
            stat = self.zk.exists(f"/brokers/ids/{bid}") if not node.start_timed else None
            if stat is None:
                continue
            node.start_timed = True
            first = first_line_time(self.target.log_path("server", node.node_dir), node.log_offset)
            timeline.record("node-start", node.spawned_at, stat.ctime / 1000, node=bid, first_log=first)

    def wait_contending(self, ids: Iterable[int], deadline_s: float | None = None) -> None:
        """Wait until the current process of every id's node is done contending for
        ``/controller`` (seen in its ZooKeeper journal since it was spawned): a write touching it
        (its election attempt) was answered, whatever the answer, or a read of it was answered
        with the znode there (another node is controller, so no attempt follows). A read answered
        NoNode is not enough: the attempt comes next. Without journals: until some controller is
        elected. The node is then past start-up (a split node's controller process is up)."""
        ids = list(ids)
        if ids:
            self._wait_started(ids, self._contends, "contended for /controller", deadline_s)

    def _contends(self, cid: int) -> bool:
        journal = self.zk_journals.get(cid)
        if journal is None:
            return self.zk.exists("/controller") is not None
        return done_contending(journal, self.nodes[cid].journal_mark)

    def expect_exit(self, bid: int) -> None:
        """The check is about to make node ``bid`` exit (e.g. all its log dirs fail): its exit is
        then not a target error."""
        self.nodes[bid].exit_expected = True

    def unexpected_exits(self) -> list[TargetNodeError]:
        """Nodes whose process ended without the harness stopping it (a crash), with their output."""
        return [
            self._node_error(node, f"exited with code {code} while the check ran", code)
            for node in self.nodes.values()
            if (code := node.died()) is not None
        ]

    def _where(self, node: Node) -> str:
        return node.proc.description if node.proc is not None else "not started"

    def _signal(self, bid: int, sig: signal.Signals) -> None:
        proc = self.nodes[bid].proc
        # a server pair passes signals to whichever of its processes still runs
        if proc is not None and (proc.poll() is None or isinstance(proc, ServerPair)):
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
        with timeline.span("node-stop", node=bid):
            self.begin_stop(bid)
            return self.await_stop(bid, timeout_s)

    def begin_stop(self, bid: int) -> None:
        """SIGTERM now (a paused node is resumed first, so that it can act on it); the node shuts
        down on its own while the caller goes on. :meth:`await_stop` collects it."""
        if self.nodes[bid].paused:
            self.resume(bid)
        self._signal(bid, signal.SIGTERM)

    def await_stop(self, bid: int, timeout_s: float | None = None) -> int:
        """Wait for a node signalled by :meth:`begin_stop` to exit (``TimeoutError`` when it is
        still running after ``timeout_s``, default the target's stop timeout); its exit code."""
        return self._reap(self.nodes[bid], timeout_s or self.target.stop_timeout_s)

    def kill(self, bid: int, *, end_session: bool = False) -> int:
        """SIGKILL the node's process group (``docker kill``). Its ZooKeeper session expires one
        session timeout later; with ``end_session`` it is ended at once (:meth:`end_session`), for
        checks about what follows the node's loss rather than about the timeout."""
        node = self.nodes[bid]
        self._signal(bid, signal.SIGKILL)
        code = self._reap(node, 10.0)
        if end_session:
            self.end_session(bid)
        return code

    def end_session(self, bid: int) -> bool:
        """End node ``bid``'s ZooKeeper session now, as its expiry would: the session owning
        ``/brokers/ids/<bid>`` and the one owning ``/controller`` when the node holds it (its
        controller process's, in a split topology). Meant for a node that is dead or paused; a
        running node finds its session expired. True if a session was ended; False if none was
        alive or ZooKeeper refused (it then expires by its timeout, as it would have anyway)."""
        sessions = set()
        registered = self.zk.exists(f"/brokers/ids/{bid}")
        if registered is not None and registered.ephemeralOwner:
            sessions.add(int(registered.ephemeralOwner))
        try:
            data, stat = self.zk.get("/controller")
            if int(json.loads(data)["brokerid"]) == bid and stat.ephemeralOwner:
                sessions.add(int(stat.ephemeralOwner))
        except (NoNodeError, ValueError, KeyError, TypeError):
            pass
        with timeline.span("session-end", node=bid):
            ended = [end_zk_session(self.zk_connect_string, s) for s in sorted(sessions)]
        return any(ended)

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
        with timeline.span("cluster-close"):
            self._close()

    def _close(self) -> None:
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
        for proxy in self.shutdown_proxies.values():
            with contextlib.suppress(Exception):
                proxy.close()
        self.proxies.clear()  # close() may be called again (a check, then the fixture)
        self.shutdown_proxies.clear()
        if self.journal is not None:
            self.journal.close()
        for zk_proxy in (p for ps in self.zk_proxies.values() for p in ps):
            zk_proxy.close()
        self.zk_proxies.clear()
        if self.proxy_loop is not None:
            self.proxy_loop.close()
        for zk_journal in self.zk_journals.values():
            zk_journal.close()
        self.listener_ports.close()  # every node is down: its fixed listener ports are free
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
                f"no ZooKeeper journal for node {bid} (record_zookeeper={self.record_zookeeper})"
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

    def broker_session(self, bid: int) -> int:
        """The ZooKeeper session that owns ``/brokers/ids/<bid>`` (``LookupError`` when unregistered)."""
        stat = self.zk.exists(f"/brokers/ids/{bid}")
        if stat is None:
            raise LookupError(f"broker {bid} is not registered: {self.summary()}")
        return int(stat.ephemeralOwner)

    def controller_session(self, bid: int) -> int:
        """The ZooKeeper session of node ``bid``'s controller: its broker session, or in a split
        topology its controller process's — the latest session in the node's ZooKeeper journal,
        other than the broker's, that read or wrote ``/controller``."""
        node = self.nodes[bid]
        if not node.split:
            return self.broker_session(bid)
        stat = self.zk.exists(f"/brokers/ids/{bid}")
        broker = int(stat.ephemeralOwner) if stat is not None else None
        sessions = [
            r.session
            for r in self.zk_journal(bid).requests()
            if r.session not in (broker, 0) and _touches_controller(r)
        ]
        if not sessions:
            raise LookupError(f"node {bid}'s controller process has not touched /controller yet")
        return int(sessions[-1])

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
        """The node's state-change log; a split node's is its controller process's and its
        broker's merged by time (Kafka writes both into one file)."""
        node = self.nodes[bid]
        roles: list[Role] = ["broker", "controller"] if node.split else ["broker"]
        paths = [self.target.log_path("state_change", node.node_dir, role) for role in roles]
        logs = [read_state_change_log(p) for p in paths if p is not None]
        return logs[0] if len(logs) == 1 else list(heapq.merge(*logs, key=lambda e: e.time))

    def log_tail(self, bid: int, kind: str = "server", lines: int = 60, role: Role | None = None) -> str:
        """The end of a node's log ``kind`` (``server``, ``state_change``, ``stdout``); a split
        node's controller process's followed by its broker's unless ``role`` picks one."""
        node = self.nodes[bid]
        if role is None:
            if not node.split:
                return self.log_tail(bid, kind, lines, "broker")
            parts = (self.log_tail(bid, kind, lines, r) for r in ("controller", "broker"))
            return "\n".join(parts)
        path = None if kind == "stdout" else self.target.log_path(kind, node.node_dir, role)
        if path is None or not path.is_file():
            path = node.output_of(role)
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


#: requests that only read: answered NoNode for ``/controller``, they leave the election attempt to come
_READS = frozenset({"exists", "getData", "multiRead"})


def done_contending(journal: ZkJournal, since: int = 0) -> bool:
    """Whether the node whose ZooKeeper traffic ``journal`` records (from record ``since``) is done
    contending for ``/controller``: a write touching it was answered, whatever the answer, or a
    read of it was answered with the znode there. A read answered NoNode is not enough: the
    node's attempt to create it comes next."""
    for request in journal.requests(since=since):
        if not _touches_controller(request):
            continue
        reply = journal.reply_to(request)
        if reply is not None and (request.name not in _READS or _found_controller(request, reply)):
            return True
    return False


def _found_controller(request: ZkRequest, reply: ZkReply) -> bool:
    """A read of ``/controller`` answered with the znode there (for a ``multiRead``, its own
    sub-result)."""
    if reply.err != 0:
        return False
    if request.name != "multiRead":
        return True
    results = reply.results
    return any(
        getattr(op, "path", None) == "/controller" and i < len(results) and results[i].err == 0
        for i, op in enumerate(request.sub_ops)
    )


def _touches_controller(request: ZkRequest) -> bool:
    return request.path == "/controller" or any(
        getattr(op, "path", None) == "/controller" for op in request.sub_ops
    )


#: What the ``cluster_factory`` fixture of ``conformance/conftest.py`` gives a check.
ClusterFactory = Callable[..., Cluster]
