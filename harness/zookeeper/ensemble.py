"""A ZooKeeper ensemble of local JVMs (``QuorumPeerMain``) on loopback ports (ring: drivers).

Member ``i`` (0-based) has ``myid = i + 1``, its own run dir, a client port, and a peer and an
election port listed in every member's ``server.<myid>=127.0.0.1:<peer>:<election>`` line. Every
port is one of the port plan's ``zookeeper`` ports (:mod:`harness.ports`), below the kernel's
ephemeral range and claimed host-wide until :meth:`ZooKeeperEnsemble.close` (each member claims
its client port, the ensemble the 2 x size quorum ports): a killed member restarts on the same
ports, which nobody else is handed meanwhile. If a member still cannot bind one (a process
outside this kit took it), every member is stopped, all ports are claimed anew and the ensemble
starts again.

Faults: ``stop_member`` (SIGTERM), ``kill_member`` (SIGKILL), ``pause_member``/``resume_member``
(SIGSTOP/SIGCONT), ``stop_leader``/``kill_leader``; ``start_member`` restarts a member on its data
dir and ports and waits until it has joined (``leader`` or ``follower``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

from harness import ports
from harness.launcher import Launcher, launcher_from_env
from harness.zookeeper.config import QuorumMember
from harness.zookeeper.errors import PortInUse, QuorumError, ZooKeeperStartError
from harness.zookeeper.jars import ZooKeeperInstall, find_zookeeper
from harness.zookeeper.server import ZooKeeperServer, log_shows_bind_failure

SERVING_MODES = ("leader", "follower")


class ZooKeeperEnsemble:
    """``size`` ZooKeeper servers forming one quorum on 127.0.0.1."""

    def __init__(
        self,
        size: int = 3,
        *,
        name: str = "ensemble",
        tick_time_ms: int = 2000,
        init_limit: int = 5,
        sync_limit: int = 2,
        min_session_timeout_ms: int | None = None,
        max_session_timeout_ms: int | None = None,
        snap_count: int | None = None,
        pre_alloc_size_kb: int | None = None,
        extra_cfg: Mapping[str, str | int] | None = None,
        heap_mb: int = 256,
        die_with_owner: bool | None = None,
        install: ZooKeeperInstall | None = None,
        launcher: Launcher | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"an ensemble needs at least one member, got size={size}")
        self.name = name
        self.init_limit = init_limit
        self.sync_limit = sync_limit
        install = install or find_zookeeper()
        launcher = launcher or launcher_from_env()
        self._claims = ports.claim(ports.ZOOKEEPER, 2 * size)
        self.members: list[ZooKeeperServer] = []
        try:
            for i in range(size):
                self.members.append(
                    ZooKeeperServer(
                        name=f"{name}-{i + 1}",
                        tick_time_ms=tick_time_ms,
                        min_session_timeout_ms=min_session_timeout_ms,
                        max_session_timeout_ms=max_session_timeout_ms,
                        snap_count=snap_count,
                        pre_alloc_size_kb=pre_alloc_size_kb,
                        extra_cfg=extra_cfg,
                        heap_mb=heap_mb,
                        die_with_owner=die_with_owner,
                        install=install,
                        quorum=self._quorum(i),
                        launcher=launcher,
                    )
                )
        except BaseException:  # a bad setting: no claim or run dir outlives the refusal
            self.close()
            raise

    def _quorum(self, i: int) -> QuorumMember:
        """Member ``i``'s membership: every member's (myid, peer port, election port) from the
        ensemble's claims."""
        quorum_ports = self._claims.ports
        peers = tuple(
            (n + 1, quorum_ports[2 * n], quorum_ports[2 * n + 1]) for n in range(len(quorum_ports) // 2)
        )
        return QuorumMember(i + 1, peers, self.init_limit, self.sync_limit)

    def _move_to_fresh_ports(self) -> None:
        """Claim new quorum ports, then give the old ones up; every member claims a new client port."""
        old, self._claims = self._claims, ports.claim(ports.ZOOKEEPER, 2 * len(self.members))
        old.close()
        for i, member in enumerate(self.members):
            member.move_to_new_ports(self._quorum(i))

    # --- addresses and state --------------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def connect_string(self) -> str:
        """All members' client addresses, as ZooKeeper clients expect them."""
        return ",".join(m.connect_string for m in self.members)

    def member(self, i: int) -> ZooKeeperServer:
        return self.members[i]

    def modes(self) -> list[str | None]:
        """Each member's ``srvr`` mode (None for down, paused or electing members)."""
        return [m.mode() if m.is_running() and not m.is_paused else None for m in self.members]

    def leader(self, timeout_s: float = 30.0) -> int:
        """Index of the current leader, waiting up to ``timeout_s`` for the quorum to elect one."""
        deadline = time.monotonic() + timeout_s
        while True:
            modes = self.modes()
            if modes.count("leader") == 1:
                return modes.index("leader")
            if time.monotonic() > deadline:
                raise QuorumError(
                    f"{self.name}: no single leader after {timeout_s:.0f} s; {self._describe()}"
                )
            time.sleep(0.05)

    def followers(self) -> list[int]:
        return [i for i, mode in enumerate(self.modes()) if mode == "follower"]

    def _describe(self) -> str:
        parts = []
        for member, mode in zip(self.members, self.modes(), strict=True):
            state = "paused" if member.is_paused else "running" if member.is_running() else "down"
            parts.append(f"{member.name} {member.connect_string} {state} mode={mode}")
        return "; ".join(parts)

    # --- life cycle -----------------------------------------------------------------------------

    def start(self, timeout_s: float = 60.0) -> Self:
        """Start every member and wait for a quorum with one leader; re-pick ports on bind failure."""
        for attempt in range(1, 4):
            try:
                for member in self.members:
                    member.launch()
                self.wait_for_quorum(timeout_s)
            except (ZooKeeperStartError, QuorumError) as exc:
                if attempt == 3 or not (isinstance(exc, PortInUse) or self._any_bind_failure()):
                    raise
                for member in self.members:
                    member.kill()
                self._move_to_fresh_ports()
            else:
                return self
        raise AssertionError("unreachable")  # pragma: no cover

    def _any_bind_failure(self) -> bool:
        return any(log_shows_bind_failure(m.log_tail(20000)) for m in self.members)

    def wait_for_quorum(self, timeout_s: float = 60.0, members: Sequence[int] | None = None) -> None:
        """Wait until the running, unpaused members (or ``members``) serve with exactly one leader."""
        deadline = time.monotonic() + timeout_s
        while True:
            watched = list(members) if members is not None else self._active()
            for i in watched:
                self.members[i].raise_if_exited()
            modes = [self.members[i].mode() for i in watched]
            if watched and all(m in SERVING_MODES for m in modes) and modes.count("leader") == 1:
                return
            if time.monotonic() > deadline:
                raise QuorumError(f"{self.name}: no quorum after {timeout_s:.0f} s; {self._describe()}")
            time.sleep(0.05)

    def _active(self) -> list[int]:
        return [i for i, m in enumerate(self.members) if m.is_running() and not m.is_paused]

    def stop(self) -> None:
        """Stop every member gracefully, all at once (data dirs are kept)."""
        for member in self.members:
            member.begin_stop()
        for member in self.members:
            member.stop()

    def close(self) -> None:
        """Stop every member, delete their run dirs and give the ports up."""
        self.stop()
        for member in self.members:
            member.close()
        self._claims.close()

    # --- faults ---------------------------------------------------------------------------------

    def stop_member(self, i: int) -> None:
        self.members[i].stop()

    def kill_member(self, i: int) -> None:
        self.members[i].kill()

    def pause_member(self, i: int) -> None:
        self.members[i].pause()

    def resume_member(self, i: int) -> None:
        self.members[i].resume()

    def start_member(self, i: int, timeout_s: float = 60.0) -> None:
        """Start a stopped member on its data dir and ports; wait until it leads or follows."""
        member = self.members[i]
        member.launch()
        member.wait_ready(timeout_s, SERVING_MODES)

    def stop_leader(self, timeout_s: float = 30.0) -> int:
        """Stop the current leader gracefully; return its index."""
        i = self.leader(timeout_s)
        self.stop_member(i)
        return i

    def kill_leader(self, timeout_s: float = 30.0) -> int:
        """SIGKILL the current leader; return its index."""
        i = self.leader(timeout_s)
        self.kill_member(i)
        return i

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ZooKeeperEnsemble({self.name!r}, {self._describe()})"
