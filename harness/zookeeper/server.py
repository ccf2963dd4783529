"""A real ZooKeeper server as a local JVM: standalone or one member of an ensemble (ring: drivers).

``ZooKeeperServer`` writes ``zoo.cfg`` into a fresh run dir, starts
``org.apache.zookeeper.server.ZooKeeperServerMain`` (or ``quorum.QuorumPeerMain`` for ensemble
members) on a loopback port, and waits until ``ruok`` answers ``imok`` and ``srvr`` reports a mode.
Run dir layout::

    <run dir>/zoo.cfg
    <run dir>/zookeeper.log        JVM stdout + stderr, where the slf4j binding logs
    <run dir>/data/                dataDir (and myid for ensemble members)
    <run dir>/data/version-2/      transaction logs (log.<zxid>) and snapshots

The JVM starts through the launcher seam (:mod:`harness.launcher`): a local process by default,
a container with ``launcher=`` or ``KZK_LAUNCHER=docker`` — the same command, with the host's
class-data-sharing archive only for a local JVM.

Port policy: without an explicit ``port`` one of the port plan's ``zookeeper`` ports is claimed
host-wide (:mod:`harness.ports`) and held until :meth:`ZooKeeperServer.close`, so a stopped or
killed server restarts on it and nobody else is handed it meanwhile. If the JVM then fails to
bind it (a process outside the kit took it), or an explicit ``port`` is in use or claimed by
another live process, another port is claimed (``port_fallback=True``, the default) or
:class:`PortInUse` is raised. Once started, the port is fixed: ``restart()`` and ``start()`` after
``stop()`` reuse it, and raise :class:`PortInUse` if it was taken meanwhile, because clients hold
the old connect string. Ensemble members take their client port the same way; the ensemble claims
the quorum and election ports (:mod:`harness.zookeeper.ensemble`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from harness import ports, process
from harness.launcher import Handle, Launcher, LaunchSpec, launcher_from_env
from harness.ports import LOOPBACK
from harness.reaper import RUN_ROOT_MARKER
from harness.zookeeper.config import QuorumMember, validate_cfg, validate_settings
from harness.zookeeper.errors import FourLetterWordError, PortInUse, ZooKeeperStartError
from harness.zookeeper.jars import ZooKeeperInstall, cds_flags, find_zookeeper, promote_cds_archive
from probes import fourlw

log = logging.getLogger(__name__)

STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEFAULT_LOG_TAIL_BYTES = 16384
_START_LISTENERS: list[Callable[[ZooKeeperServer], None]] = []
_BIND_FAILURE_MARKERS = ("java.net.BindException", "Address already in use")


def log_shows_bind_failure(log_text: str) -> bool:
    """Whether a ZooKeeper log says a listener could not bind its port."""
    return any(marker in log_text for marker in _BIND_FAILURE_MARKERS)


def add_start_listener(listener: Callable[[ZooKeeperServer], None]) -> Callable[[], None]:
    """Call ``listener(server)`` whenever any server starts; returns a function that removes it."""
    _START_LISTENERS.append(listener)
    return lambda: _START_LISTENERS.remove(listener)


class ZooKeeperServer:
    """One ZooKeeper JVM bound to 127.0.0.1 with its own data dir and log file."""

    def __init__(
        self,
        *,
        name: str = "zk",
        port: int | None = None,
        port_fallback: bool = True,
        tick_time_ms: int = 2000,
        min_session_timeout_ms: int | None = None,
        max_session_timeout_ms: int | None = None,
        snap_count: int | None = None,
        pre_alloc_size_kb: int | None = None,
        force_sync: bool = False,
        max_client_cnxns: int = 0,
        extra_cfg: Mapping[str, str | int] | None = None,
        heap_mb: int = 256,
        jvm_flags: Sequence[str] = (),
        die_with_owner: bool | None = None,
        install: ZooKeeperInstall | None = None,
        quorum: QuorumMember | None = None,
        launcher: Launcher | None = None,
    ) -> None:
        validate_settings(
            tick_time_ms, min_session_timeout_ms, max_session_timeout_ms, snap_count, pre_alloc_size_kb
        )
        validate_cfg(heap_mb, extra_cfg or {})
        self.install = install or find_zookeeper()
        self.name = name
        self.requested_port = port
        #: The host-wide claim on the client port (None: an explicit port another process holds).
        self._claim: ports.Claim | None = None
        self._port = 0
        if port:
            self._claim, self._port = ports.claim_port(port), port
        else:
            self._claim_new_port()
        self._port_may_change = port_fallback
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.snap_count = snap_count
        self.pre_alloc_size_kb = pre_alloc_size_kb
        self.force_sync = force_sync
        self.max_client_cnxns = max_client_cnxns
        self.extra_cfg = {k: str(v) for k, v in (extra_cfg or {}).items()}
        self.heap_mb = heap_mb
        self.jvm_flags = tuple(jvm_flags)
        self.die_with_owner = process.die_with_owner_default() if die_with_owner is None else die_with_owner
        self.quorum = quorum
        self.run_dir = process.new_run_dir(name)
        self.data_dir.mkdir()
        #: Where the JVM runs: a local process (default) or a container (``KZK_LAUNCHER=docker``).
        self.launcher = launcher or launcher_from_env()
        self._jvm: Handle | None = None
        self._paused = False
        self._closed_log_tail: str | None = None
        self.last_start_s: float | None = None
        self._launched_at = 0.0
        self._served_once = False

    # --- where things are -----------------------------------------------------------------------

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def port(self) -> int:
        return self._port

    @property
    def connect_string(self) -> str:
        return f"{LOOPBACK}:{self._port}"

    @property
    def data_dir(self) -> Path:
        return self.run_dir / "data"

    @property
    def txn_log_dir(self) -> Path:
        """Where ZooKeeper writes ``log.<zxid>`` transaction logs (and snapshots)."""
        return self.data_dir / "version-2"

    @property
    def log_file(self) -> Path:
        return self.run_dir / "zookeeper.log"

    @property
    def cfg_path(self) -> Path:
        return self.run_dir / "zoo.cfg"

    @property
    def pid(self) -> int | None:
        """The JVM's host pid (a container's main process is a host process too)."""
        return self._jvm.pid if self._jvm is not None and self.is_running() else None

    @property
    def main_class(self) -> str:
        return QUORUM_MAIN if self.quorum is not None else STANDALONE_MAIN

    def cfg(self) -> dict[str, str]:
        """The zoo.cfg entries this server is started with."""
        cfg = {
            "tickTime": str(self.tick_time_ms),
            "dataDir": str(self.data_dir),
            "clientPort": str(self._port),
            "clientPortAddress": LOOPBACK,
            "maxClientCnxns": str(self.max_client_cnxns),
            "4lw.commands.whitelist": "*",
            "admin.enableServer": "false",
            "forceSync": "yes" if self.force_sync else "no",
        }
        optional = {
            "minSessionTimeout": self.min_session_timeout_ms,
            "maxSessionTimeout": self.max_session_timeout_ms,
            "snapCount": self.snap_count,
            "preAllocSize": self.pre_alloc_size_kb,
        }
        cfg |= {key: str(value) for key, value in optional.items() if value is not None}
        if self.quorum is not None:
            cfg |= self.quorum.cfg()
        return cfg | self.extra_cfg

    # --- life cycle -----------------------------------------------------------------------------

    def start(self, timeout_s: float = 30.0) -> Self:
        """Start the JVM and wait until it serves; claim another port if the current one is taken."""
        if self.is_running():
            return self
        for listener in list(_START_LISTENERS):
            listener(self)
        attempts = 3 if self._port_may_change else 1
        for attempt in range(1, attempts + 1):
            try:
                self.launch()
                self.wait_ready(timeout_s)
            except PortInUse:
                if attempt == attempts:
                    raise
                old = self._port
                self._claim_new_port()
                log.warning("%s: port %d is in use, retrying on %d", self.name, old, self._port)
            else:
                return self
        raise AssertionError("unreachable")  # pragma: no cover

    def _claim_new_port(self) -> None:
        """Claim a fresh ``zookeeper`` port, then give the old one up (so it is not handed back)."""
        old, self._claim = self._claim, ports.claim(ports.ZOOKEEPER)[0]
        self._port = self._claim.port
        if old is not None:
            old.close()

    def move_to_new_ports(self, quorum: QuorumMember | None = None) -> None:
        """Claim a new client port (and take ``quorum``'s ports) before the first successful
        start: ensembles move every member after a bind failure."""
        if self.is_running() or self._served_once:
            raise ZooKeeperStartError(f"{self.name}: ports can change only before the first successful start")
        self._claim_new_port()
        if quorum is not None:
            self.quorum = quorum

    def launch(self) -> None:
        """Start the JVM without waiting for it (ensembles wait for all members together)."""
        if self.is_running():
            return
        if self._claim is None:
            self._port_in_use(f"port {self._port} is claimed by another live process of the kit")
        if not ports.bindable(self._port):
            self._port_in_use(f"port {self._port} is already in use on {LOOPBACK}")
        self.cfg_path.write_text("".join(f"{k}={v}\n" for k, v in self.cfg().items()))
        if self.quorum is not None:
            (self.data_dir / "myid").write_text(f"{self.quorum.my_id}\n")
        self._launched_at = time.monotonic()
        self._paused = False
        spec = self.launch_spec()
        argv = spec.container_argv if self.launcher.in_containers and spec.container_argv else spec.argv
        self._mark_log(
            f"starting {self.name} on {self.connect_string} ({self.launcher.name}): {' '.join(argv)}"
        )
        self._jvm = self.launcher.spawn(spec)

    def launch_spec(self) -> LaunchSpec:
        """The JVM command for the host (with the class-data-sharing archive) and for a container
        (``java`` from the image's PATH, the jars at their Debian paths or the host's
        ``ZOOKEEPER_HOME`` mounted, no host archive)."""
        root = process.owner_session().run_root
        flags = [f"{RUN_ROOT_MARKER}{root}", f"-Dkzk.name={self.name}", *self.jvm_flags]
        cds, pending = cds_flags(self.install, self.main_class)
        command = self.install.jvm_command
        argv = command(
            self.main_class,
            self.cfg_path,
            run_dir=self.run_dir,
            heap_mb=self.heap_mb,
            extra_flags=[*cds, *flags],
        )
        inside = command(
            self.main_class, self.cfg_path, run_dir=self.run_dir, heap_mb=self.heap_mb, extra_flags=flags
        )
        inside[0] = "java"
        jar_dirs = sorted(
            {p.parent for p in self.install.classpath if not str(p).startswith("/usr/share/java")}
        )
        return LaunchSpec(
            role="zookeeper",
            name=self.name,
            argv=argv,
            cwd=self.run_dir,
            log_path=self.log_file,
            mounts=[self.run_dir, *jar_dirs],
            container_argv=inside,
            die_with_owner=self.die_with_owner,
            on_exit=None if pending is None else lambda: promote_cds_archive(pending),
        )

    def wait_ready(self, timeout_s: float = 30.0, modes: Sequence[str] | None = None) -> str:
        """Wait until ``ruok`` is ``imok`` and ``srvr`` shows one of ``modes``; return the mode.

        ``modes`` defaults to ``standalone`` (``leader``/``follower`` for ensemble members).
        Raises :class:`PortInUse` if the JVM exited because it could not bind its port.
        """
        modes = modes or (("leader", "follower") if self.quorum else ("standalone",))
        deadline = time.monotonic() + timeout_s
        while True:
            self.raise_if_exited()
            mode = self._ready_mode()
            if mode is not None and mode in modes:
                self._port_may_change = False
                self._served_once = True
                self.last_start_s = time.monotonic() - self._launched_at
                return mode
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper {self.name} on {self.connect_string} not ready (mode {mode!r}, want one of "
                    f"{list(modes)}) after {timeout_s:.0f} s; log {self.log_file}:\n{self.log_tail(4000)}"
                )
            time.sleep(0.025)

    def _ready_mode(self) -> str | None:
        try:
            if self.four_letter("ruok", timeout_s=1.0) != "imok":
                return None
        except FourLetterWordError:
            return None
        return self.mode()

    def raise_if_exited(self) -> None:
        """Raise :class:`ZooKeeperStartError` (:class:`PortInUse` for bind failures) if the JVM exited."""
        code = self._jvm.poll() if self._jvm is not None else None
        if code is None:
            return
        tail = self.log_tail(4000)
        if log_shows_bind_failure(tail):
            self._port_in_use(f"ZooKeeper {self.name} could not bind a port (exit code {code})")
        raise ZooKeeperStartError(
            f"ZooKeeper {self.name} exited with code {code} during start-up; log {self.log_file}:\n{tail}"
        )

    def _port_in_use(self, what: str) -> None:
        if self._served_once:
            fix = "the server already served on this port and clients hold its address: free the port"
        elif self._port_may_change:
            fix = "picking another port"
        else:
            fix = "free it, pass another port, or pass port_fallback=True to let the harness pick one"
        raise PortInUse(f"ZooKeeper {self.name}: {what}; {fix}", self._port)

    def _terminate(self, jvm: Handle, grace_s: float) -> int:
        """SIGTERM (SIGCONT first, so a paused JVM can act on it), SIGKILL after ``grace_s``."""
        jvm.send_signal(signal.SIGTERM)
        jvm.send_signal(signal.SIGCONT)
        self._paused = False
        try:
            code = jvm.wait(grace_s)
        except TimeoutError:
            jvm.send_signal(signal.SIGKILL)
            code = jvm.wait(30.0)
        jvm.remove()
        return code

    def stop(self, grace_s: float = 10.0) -> int | None:
        """Graceful stop (SIGTERM, SIGKILL after ``grace_s``); keeps the data dir; returns the exit code."""
        if self._jvm is None or not self.is_running():
            return None
        code = self._terminate(self._jvm, grace_s)
        self._mark_log(f"stopped {self.name} (exit code {code})")
        return code

    def begin_stop(self) -> None:
        """Send SIGTERM without waiting (to stop several servers at once; then call :meth:`stop`)."""
        if self._jvm is not None and self.is_running():
            self._jvm.send_signal(signal.SIGTERM)
            self._jvm.send_signal(signal.SIGCONT)
            self._paused = False

    def kill(self) -> int | None:
        """SIGKILL the JVM (no shutdown at all). Returns the exit code."""
        if self._jvm is None or not self.is_running():
            return None
        self._jvm.send_signal(signal.SIGKILL)
        code = self._jvm.wait(30.0)
        self._jvm.remove()
        self._paused = False
        self._mark_log(f"killed {self.name} with SIGKILL")
        return code

    def pause(self) -> None:
        """SIGSTOP the JVM: it keeps its sockets but answers nothing until :meth:`resume`."""
        if self._jvm is not None and self.is_running():
            self._jvm.send_signal(signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        """SIGCONT a paused JVM."""
        if self._jvm is not None and self.is_running():
            self._jvm.send_signal(signal.SIGCONT)
            self._paused = False

    def restart(self, timeout_s: float = 30.0) -> Self:
        """Stop gracefully and start again on the same data dir and port."""
        self.stop()
        return self.start(timeout_s)

    def close(self) -> None:
        """Stop the server and delete its run dir (the log tail is kept in memory for reports)."""
        self.stop(grace_s=5.0)
        if self._closed_log_tail is None:
            self._closed_log_tail = self.log_tail(64 * 1024)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if self._claim is not None:
            self._claim.close()

    def is_running(self) -> bool:
        """Whether the JVM process exists (a paused JVM is running)."""
        return self._jvm is not None and self._jvm.poll() is None

    @property
    def is_paused(self) -> bool:
        return self._jvm is not None and self._paused and self.is_running()

    # --- observing ------------------------------------------------------------------------------

    def four_letter(self, command: str, timeout_s: float = 2.0) -> str:
        """Run a four-letter-word command (``ruok``, ``srvr``, ``cons``, ``wchc``, ...)."""
        return fourlw.four_letter(self._port, command, timeout_s=timeout_s)

    def mode(self, timeout_s: float = 1.0) -> str | None:
        """``standalone``/``leader``/``follower``, or None when not serving (down, paused, electing)."""
        try:
            return fourlw.parse_mode(self.four_letter("srvr", timeout_s=timeout_s))
        except FourLetterWordError:
            return None

    def log_tail(self, n_bytes: int = DEFAULT_LOG_TAIL_BYTES) -> str:
        """The last ``n_bytes`` of the server log, starting at a line boundary."""
        try:
            with self.log_file.open("rb") as f:
                size = f.seek(0, 2)
                f.seek(max(0, size - n_bytes))
                data = f.read()
        except FileNotFoundError:
            return (self._closed_log_tail or "")[-n_bytes:]
        text = data.decode("utf-8", errors="replace")
        if len(data) == n_bytes and "\n" in text:
            text = text.split("\n", 1)[1]
        return text

    def _mark_log(self, message: str) -> None:
        with contextlib.suppress(OSError), self.log_file.open("a") as f:
            f.write(f"--- kzk-kit {time.strftime('%Y-%m-%d %H:%M:%S')}: {message}\n")

    # --- context manager ------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "paused" if self.is_paused else "running" if self.is_running() else "stopped"
        return f"ZooKeeperServer({self.name!r}, {self.connect_string}, {state}, run_dir={self.run_dir})"
