"""The docker launcher: ZooKeeper and nodes as containers through testcontainers (ring: drivers).

Each server is a ``DockerContainer`` on the host network (every connection stays on loopback),
running as the calling uid:gid (files it creates in bind mounts stay removable by the test
user), with every host directory it uses bind-mounted at the same path, so the transaction-log,
log-dir, state-change-log and journal probes read them exactly as with local processes.

Ryuk (testcontainers' reaper container) cannot be pulled here, so it is disabled and the kit
cleans up itself, with the rule the process reaper follows: every container carries the labels
``kzk.kit=1``, ``kzk.owner.pid`` and ``kzk.owner.start`` (its owner's pid and start time);
:meth:`Handle.remove` removes it at the end of a run, an ``atexit``/signal hook removes the
owner's containers when the owner exits, and :func:`reap_orphan_containers` (run by the next
run's reaper) removes containers whose owner is gone — never those of a live owner.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")

import docker.errors
from testcontainers.core.container import DockerContainer

from harness import reaper
from harness.containers import images
from harness.launching import Handle, LauncherError, LaunchSpec

__all__ = [
    "ENTRYPOINT",
    "DockerHandle",
    "DockerLauncher",
    "container_name",
    "reap_orphan_containers",
    "run_options",
]

LABEL_KIT = "kzk.kit"
LABEL_OWNER_PID = "kzk.owner.pid"
LABEL_OWNER_START = "kzk.owner.start"
LABEL_NAME = "kzk.name"
IMAGE_ENV = {"zookeeper": "KZK_ZOOKEEPER_IMAGE", "node": "KZK_NODE_IMAGE"}

_LOCK = threading.Lock()
_LIVE: dict[str, DockerHandle] = {}
_IMAGES: dict[str, str] = {}
_HOOKED = False


def _docker(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], check=False, capture_output=True, text=True, timeout=timeout_s)


class DockerHandle:
    """A container started by :class:`DockerLauncher`."""

    def __init__(
        self, container: DockerContainer, name: str, on_exit: Callable[[], None] | None = None
    ) -> None:
        self.container = container
        self.name = name
        self.on_exit = on_exit
        self.paused = False
        self._exit: int | None = None
        self._removed = False

    @property
    def description(self) -> str:
        return f"container {self.name}"

    @property
    def pid(self) -> int | None:
        """The host pid of the container's main process (``State.Pid``), None once it exited."""
        state = self._state()
        pid = int(state.get("Pid", 0)) if state else 0
        return pid or None

    def _state(self) -> dict[str, Any] | None:
        """The container's ``State``; None once it is gone. A daemon that answers slowly or with
        an error is asked again: only "no such container" means gone."""
        wrapped = self.container.get_wrapped_container()
        if wrapped is None:
            return None
        for attempt in range(5):
            try:
                wrapped.reload()
                break
            except docker.errors.NotFound:
                return None
            except Exception:
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
        state: dict[str, Any] = wrapped.attrs.get("State", {})
        return state

    def poll(self) -> int | None:
        """The exit code once the main process exited (the container is then removed: its output
        is in the bind-mounted log file), else None."""
        if self._exit is not None:
            return self._exit
        state = self._state()
        if state is None:
            self._exit = -1
        elif state.get("Status") in ("exited", "dead"):
            self._exit = int(state.get("ExitCode", -1))
        if self._exit is not None:
            self.remove()
        return self._exit

    def wait(self, timeout_s: float) -> int:
        give_up = time.monotonic() + timeout_s
        while (code := self.poll()) is None:
            if time.monotonic() >= give_up:
                raise TimeoutError(f"container {self.name} still running after {timeout_s:.1f}s")
            time.sleep(0.02)
        return code

    def send_signal(self, sig: signal.Signals) -> None:
        if self.poll() is not None:
            return
        if sig == signal.SIGSTOP:
            _docker("pause", self.name)
            self.paused = True
        elif sig == signal.SIGCONT:
            if self.paused:
                _docker("unpause", self.name)
            self.paused = False
        else:
            if self.paused and sig != signal.SIGKILL:
                _docker("unpause", self.name)
                self.paused = False
            _docker("kill", "--signal", sig.name, self.name)

    def remove(self) -> None:
        if self._removed:
            return
        self._removed = True
        _docker("rm", "--force", "--volumes", self.name)
        with _LOCK:
            _LIVE.pop(self.name, None)
        on_exit, self.on_exit = self.on_exit, None
        if on_exit is not None:
            on_exit()


def _owner_labels() -> dict[str, str]:
    pid = os.getpid()
    return {
        LABEL_KIT: "1",
        LABEL_OWNER_PID: str(pid),
        LABEL_OWNER_START: str(reaper.proc_start_time(pid) or 0),
    }


def _remove_all_live() -> None:
    with _LOCK:
        live = list(_LIVE.values())
    for handle in live:
        with contextlib.suppress(Exception):
            handle.remove()


def _install_hooks() -> None:
    global _HOOKED
    if _HOOKED:
        return
    _HOOKED = True
    atexit.register(_remove_all_live)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(sig)
        if threading.current_thread() is not threading.main_thread():
            continue

        def handler(signum: int, frame: object, _previous: object = previous) -> None:
            _remove_all_live()
            if callable(_previous):
                _previous(signum, frame)
            else:
                raise SystemExit(128 + signum)

        signal.signal(sig, handler)


class DockerLauncher:
    name = "docker"
    in_containers = True

    def unavailable_reason(self) -> str | None:
        return images.docker_available()

    def image_for(self, role: str) -> str:
        """The image of ``role``: the user's (``KZK_<ROLE>_IMAGE``) or the kit's, built if missing."""
        if role not in IMAGE_ENV:
            raise LauncherError(f"the kit has no image for a {role} server; it runs as a local process")
        named = os.environ.get(IMAGE_ENV[role])
        key = f"{role}={named or ''}"  # a changed KZK_<ROLE>_IMAGE is looked up again
        with _LOCK:
            cached = _IMAGES.get(key)
        if cached:
            return cached
        if named:
            tag = images.require_image(named)
        elif role == "zookeeper":
            tag = images.ensure_zookeeper_image().tag
        else:
            tag = images.ensure_node_image().tag
        with _LOCK:
            _IMAGES[key] = tag
        return tag

    def image_of(self, spec: LaunchSpec) -> str:
        """``KZK_<ROLE>_IMAGE``, else the spec's own image (a target's ``[container] image``),
        else the kit's image of the role (built when missing)."""
        if spec.image and not os.environ.get(IMAGE_ENV.get(spec.role, "")):
            with _LOCK:
                cached = _IMAGES.get(spec.image)
            if cached is None:
                cached = images.require_image(spec.image)
                with _LOCK:
                    _IMAGES[spec.image] = cached
            return cached
        return self.image_for(spec.role)

    def spawn(self, spec: LaunchSpec) -> Handle:
        reason = self.unavailable_reason()
        if reason is not None:
            raise LauncherError(f"the docker launcher cannot run here: {reason}")
        _install_hooks()
        name = container_name(spec.name)
        image = self.image_of(spec)
        options = run_options(spec, name=name, labels=_owner_labels(), user=f"{os.getuid()}:{os.getgid()}")
        container = DockerContainer(image).with_name(name).with_command(options.pop("command"))
        for key, value in options.pop("environment").items():
            container.with_env(key, value)
        for mount in options.pop("mounts"):
            container.with_volume_mapping(mount, mount, "rw")
        container.with_kwargs(**options)
        handle = DockerHandle(container, name, spec.on_exit)
        with _LOCK:
            _LIVE[name] = handle
        try:
            container.start()
        except Exception as exc:
            handle.remove()
            raise LauncherError(f"could not start container {name} from {image}: {exc}") from exc
        return handle


#: The container's entrypoint: output to the spec's log file (bind-mounted), then ``exec`` the
#: command so it is the container's main process (signals from ``docker kill`` reach it). Replaces
#: any entrypoint of the image (a vendor's Kafka image runs its own start script otherwise).
ENTRYPOINT = ("/bin/sh", "-c", 'exec "$@" >>"$KZK_LOG_PATH" 2>&1', "sh")


def container_name(name: str) -> str:
    """``kzk-<name>-<owner pid>-<random>``: unique per run, says whose it is."""
    return f"kzk-{name}-{os.getpid()}-{secrets.token_hex(3)}".replace("_", "-")


def run_options(spec: LaunchSpec, *, name: str, labels: dict[str, str], user: str) -> dict[str, Any]:
    """What ``docker run`` gets for ``spec`` (pure: unit-tested without a daemon).

    Keys: ``command``, ``environment`` and ``mounts`` (same-path bind mounts, read-write), and the
    ``docker run`` keyword arguments ``entrypoint``, ``network_mode``, ``user``, ``labels``,
    ``working_dir``, ``stop_signal``.
    """
    argv = list(spec.container_argv if spec.container_argv is not None else spec.argv)
    env = dict(spec.container_env if spec.container_env is not None else spec.env)
    env["KZK_LOG_PATH"] = str(spec.log_path)
    mounts = sorted(
        {str(m) for m in spec.mounts}
        | {str(spec.log_path.parent)}
        | ({str(spec.cwd)} if spec.container_cwd is None else set())
    )
    return {
        "command": argv,
        "environment": env,
        "mounts": [m for m in mounts if not m.startswith("/opt/kit")],
        "entrypoint": list(ENTRYPOINT),
        "network_mode": "host",
        "user": user,
        "labels": {**labels, LABEL_NAME: spec.name, "kzk.container": name},
        "working_dir": str(spec.container_cwd or spec.cwd),
        "stop_signal": "SIGTERM",
    }


def reap_orphan_containers() -> list[str]:
    """Remove the kit's containers whose owner process is gone; returns their names.

    Containers of a live owner (this process, a parallel run, an xdist worker) are never touched.
    Without a reachable daemon there is nothing to reap.
    """
    if images.docker_available() is not None:
        return []
    listing = _docker(
        "ps",
        "--all",
        "--filter",
        f"label={LABEL_KIT}=1",
        "--format",
        f'{{{{.Names}}}} {{{{.Label "{LABEL_OWNER_PID}"}}}} {{{{.Label "{LABEL_OWNER_START}"}}}}',
    )
    removed = []
    for line in listing.stdout.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            continue
        name, pid, start = parts[0], int(parts[1]), int(parts[2])
        if reaper.is_same_process(pid, start):
            continue
        if _docker("rm", "--force", "--volumes", name).returncode == 0:
            removed.append(name)
    return removed
