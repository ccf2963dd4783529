"""The launcher seam: how a server is started — a local process or a container (ring: drivers).

The launcher is the one seam between the kit and *where* a server runs. Everything above it
(ZooKeeper servers and ensembles, the conformance cluster's nodes, the chaos nemeses, the
kit's Toxiproxy server) starts servers through
:class:`Launcher` and acts on them through :class:`Handle`, so the same checks, probes and faults
work unchanged on both implementations:

==============  ====================================  =========================================
operation       ``process`` (default)                 ``docker``
==============  ====================================  =========================================
start           ``Popen`` in a new session, dies      ``docker run`` (testcontainers) on the host
                with its owner (PDEATHSIG)            network, as the calling uid:gid
stop (SIGTERM)  SIGTERM to the process group          ``docker kill -s TERM`` (= ``docker stop``
                                                      without its SIGKILL) — a controlled shutdown
kill            SIGKILL to the process group          ``docker kill`` (SIGKILL)
pause/resume    SIGSTOP/SIGCONT to the group          ``docker pause``/``unpause`` (cgroup freezer)
files           the host paths                        the same paths, bind-mounted at the same
                                                      place, so probes read them unchanged
==============  ====================================  =========================================

This module is the seam only: it imports no implementation. The implementations
(:mod:`harness.process_launcher`, :mod:`harness.containers.launcher`) import it, and the registry
(:mod:`harness.launcher`: ``--launcher process|docker``, ``KZK_LAUNCHER``) imports them.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

__all__ = ["Handle", "LaunchSpec", "Launcher", "LauncherError", "Role"]

Role = Literal["zookeeper", "node", "toxiproxy"]


class LauncherError(Exception):
    """A launcher cannot be used (unknown name, no Docker daemon, missing image)."""


@dataclass(frozen=True)
class LaunchSpec:
    """What to start: the command as the host would run it, and what it needs.

    ``argv``/``cwd``/``env`` are the host's view; a container launcher may substitute the parts
    that only exist on the host (``container_argv``: e.g. ``python3`` for the venv's interpreter).
    ``mounts`` are host directories the server reads or writes; containers see them at the same
    paths. ``log_path`` receives stdout and stderr. ``container_env`` replaces ``env`` in a
    container (the host's environment — PATH, the venv — means nothing there); ``image`` names the
    image instead of the role's default (``KZK_<ROLE>_IMAGE`` still wins). ``die_with_owner``:
    a local process gets ``PR_SET_PDEATHSIG`` (off only to test the reaper). ``on_exit`` is called
    once the server's exit has been seen (a JVM's class-data archive is promoted then).
    ``warm_module``: ``argv`` is ``python -m warm_module ...`` and the process launcher may fork it
    from a warm interpreter (:mod:`harness.warm`); other launchers ignore it.
    """

    role: Role
    name: str
    argv: Sequence[str]
    cwd: Path
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: Sequence[Path] = ()
    container_argv: Sequence[str] | None = None
    container_cwd: Path | None = None
    container_env: Mapping[str, str] | None = None
    image: str | None = None
    die_with_owner: bool = True
    on_exit: Callable[[], None] | None = None
    warm_module: str | None = None


class Handle(Protocol):
    """A started server, whatever runs it."""

    @property
    def description(self) -> str:
        """``pid 1234`` or ``container kzk-…``: for messages and evidence."""
        ...

    @property
    def pid(self) -> int | None:
        """The host pid of the server's main process while it runs (a container's too)."""
        ...

    def poll(self) -> int | None:
        """The exit code, or None while it runs (a paused server runs)."""
        ...

    def wait(self, timeout_s: float) -> int:
        """Wait for the exit code; ``TimeoutError`` after ``timeout_s``."""
        ...

    def send_signal(self, sig: signal.Signals) -> None:
        """SIGTERM / SIGKILL / SIGSTOP / SIGCONT with process semantics (no-op once exited)."""
        ...

    def remove(self) -> None:
        """Kill if still running and release everything the launcher holds (idempotent)."""
        ...


class Launcher(Protocol):
    """Where servers run. ``in_containers``: the server runs from ``container_argv`` in an image,
    so callers must fill the spec's container fields (a target without a container recipe cannot)."""

    name: str
    in_containers: bool

    def spawn(self, spec: LaunchSpec) -> Handle: ...

    def unavailable_reason(self) -> str | None:
        """None when this launcher can start servers here, else why not and how to fix it."""
        ...
