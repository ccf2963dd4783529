"""The launcher registry: where servers run, by name (ring: drivers).

``process`` (the default: local processes, :mod:`harness.process_launcher`) or ``docker``
(containers, :mod:`harness.containers.launcher`); chosen with ``--launcher`` or ``KZK_LAUNCHER``.
The seam itself — :class:`LaunchSpec`, :class:`Handle`, :class:`Launcher` — is
:mod:`harness.launching`, which imports no implementation; the implementations import the seam
and this registry imports them, so there is no import circle. The docker implementation is
imported only when asked for: testcontainers is an optional extra.

:func:`reap_leftovers` removes what dead runs of every launcher left (processes, run dirs, pid
files, containers); a live owner's servers are never touched.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

from harness import reaper
from harness.launching import Handle, Launcher, LauncherError, LaunchSpec, Role
from harness.process_launcher import ProcessLauncher

__all__ = [
    "LAUNCHERS",
    "Handle",
    "LaunchSpec",
    "Launcher",
    "LauncherError",
    "Role",
    "chosen_launcher_name",
    "launcher_from_env",
    "launcher_named",
    "reap_leftovers",
]

ENV = "KZK_LAUNCHER"


def _docker() -> Launcher:
    from harness.containers.launcher import DockerLauncher  # noqa: PLC0415 - testcontainers is optional

    return DockerLauncher()


_FACTORIES: dict[str, Callable[[], Launcher]] = {"process": ProcessLauncher, "docker": _docker}
LAUNCHERS = tuple(_FACTORIES)


def chosen_launcher_name(option: str | None = None, default: str = "process") -> str:
    """``option`` (a ``--launcher`` value), else ``KZK_LAUNCHER``, else ``default``; an unknown
    name is a :class:`LauncherError` that lists the valid ones."""
    return _known(option or os.environ.get(ENV) or default)


def _known(name: str) -> str:
    if name not in _FACTORIES:
        raise LauncherError(f"unknown launcher {name!r}; valid launchers: {', '.join(LAUNCHERS)}")
    return name


def launcher_named(name: str) -> Launcher:
    """The launcher called ``name``; an unknown name lists the valid ones."""
    return _FACTORIES[_known(name)]()


def launcher_from_env(default: str = "process") -> Launcher:
    """The launcher named by ``KZK_LAUNCHER`` (default ``process``)."""
    return launcher_named(chosen_launcher_name(None, default))


def reap_leftovers() -> list[str]:
    """Remove what dead runs left — processes with their run dirs and pid files, and containers
    when Docker is installed — and describe each thing removed."""
    removed = [str(item) for item in reaper.reap_orphans()]
    if os.environ.get(ENV) == "docker" or shutil.which("docker") is not None:
        from harness.containers.launcher import reap_orphan_containers  # noqa: PLC0415 - optional

        removed += [f"container {name}" for name in reap_orphan_containers()]
    return removed
