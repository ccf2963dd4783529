"""Warm starts: Python servers forked from an interpreter that has already imported them (ring: drivers).

A target whose node is a Python module (``command = ["{python}", "-m", MODULE, ...]``) and that
says ``warm_start = true`` — the reference — can have its nodes started without a new
interpreter: :func:`warm_popen` asks this owner's warm server (:mod:`harness.warm_server`, one
per interpreter, module, working directory and ``PYTHONPATH``) to fork the program. What a node
started so runs is the same program with the same argv, working directory, environment and
output file; it is its own session leader, dies with its owner (the server dies with the owner,
the node with the server: ``PR_SET_PDEATHSIG`` both times) and has a pid file like any process
of :mod:`harness.process`, so signals, pausing, exit codes and the reaper work unchanged. What
it saves is the interpreter's start and the imports (about 0.3 s of CPU per node start here,
several times that on a loaded machine, where the suite starts over 400 nodes).

``KZK_WARM_START=0`` turns it off (every node starts as a new interpreter); so does a warm
server that cannot start (it cannot import the module, say a mutant broke it): its nodes then
start cold, so the node's own error is what the run reports.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness import process

__all__ = ["ENV", "WarmPopen", "WarmServer", "warm_enabled", "warm_popen"]

ENV = "KZK_WARM_START"
#: How long a warm server may take to import its module and listen.
_READY_S = 60.0

_LOCK = threading.Lock()
_SERVERS: dict[tuple[int, str, str, str, str], WarmServer | str] = {}


def warm_enabled() -> bool:
    """Whether warm starts are allowed (``KZK_WARM_START`` unset or not ``0``)."""
    return os.environ.get(ENV, "1") != "0"


class WarmServerError(Exception):
    """The warm server could not be started or has gone."""


class WarmPopen:
    """The part of :class:`subprocess.Popen` that :class:`harness.process.ManagedJvm` uses, for
    a program a :class:`WarmServer` forked (its exit is reported by the server, its parent)."""

    def __init__(self, server: WarmServer, pid: int, args: Sequence[str]) -> None:
        self._server = server
        self.pid = pid
        self.args = list(args)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_of(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self._server.wait_exit(self.pid, timeout)
            if code is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self.returncode = code
        return self.returncode


class WarmServer:
    """One warm interpreter with ``module`` imported, forking programs on request."""

    def __init__(self, python: str, module: str, cwd: Path, env: Mapping[str, str]) -> None:
        self.module = module
        run_dir = process.new_run_dir(f"warm-{module}")
        self.socket_path = run_dir / "warm.sock"
        self.log_path = run_dir / "warm-server.log"
        self.managed = process.spawn_jvm(
            [python, "-m", "harness.warm_server", module, str(self.socket_path)],
            name=f"warm-{module}",
            run_dir=cwd,
            log_path=self.log_path,
            die_with_owner=True,
            env=dict(env),
        )
        self._cond = threading.Condition()
        self._exits: dict[int, int] = {}
        self._replies: list[dict[str, object]] = []
        self._gone = False
        self._send_lock = threading.Lock()
        self._sock = self._connect()
        threading.Thread(target=self._read, name=f"kzk-warm-{module}", daemon=True).start()

    def _connect(self) -> socket.socket:
        give_up = time.monotonic() + _READY_S
        while True:
            code = self.managed.exit_code()
            if code is not None:
                raise WarmServerError(
                    f"warm server for {self.module} exited with code {code}: {self._tail()}"
                )
            if self.socket_path.exists():
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(str(self.socket_path))
                    return sock
                except OSError:
                    sock.close()
            if time.monotonic() > give_up:
                self.managed.kill()
                raise WarmServerError(f"warm server for {self.module} not listening after {_READY_S:.0f} s")
            time.sleep(0.01)

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-3:])
        return ""

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self._sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                with self._cond:
                    if "exit" in message:
                        self._exits[int(message["exit"])] = int(message["code"])
                    else:
                        self._replies.append(message)
                    self._cond.notify_all()
        with self._cond:
            self._gone = True
            self._cond.notify_all()

    def spawn(self, args: Sequence[str], cwd: Path, env: Mapping[str, str], log_path: Path) -> WarmPopen:
        """Fork ``python -m module *args``; :class:`WarmServerError` if the server has gone."""
        with open(log_path, "ab"):  # there once this returns, as a Popen's output file is
            pass
        request = {"argv": list(args), "cwd": str(cwd), "env": dict(env), "log": str(log_path)}
        with self._send_lock:
            try:
                self._sock.sendall(json.dumps(request).encode() + b"\n")
            except OSError as exc:
                raise WarmServerError(f"warm server for {self.module} has gone: {exc}") from exc
            with self._cond:
                while not self._replies and not self._gone:
                    self._cond.wait()
                if not self._replies:
                    raise WarmServerError(f"warm server for {self.module} has gone: {self._tail()}")
                reply = self._replies.pop(0)
        if "pid" not in reply:
            raise WarmServerError(f"warm server for {self.module} could not fork: {reply.get('error')}")
        return WarmPopen(self, int(str(reply["pid"])), ["-m", self.module, *args])

    def exit_of(self, pid: int) -> int | None:
        with self._cond:
            return self._exit_locked(pid)

    def wait_exit(self, pid: int, timeout: float | None) -> int | None:
        give_up = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while (code := self._exit_locked(pid)) is None:
                left = None if give_up is None else give_up - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(0.2 if left is None else min(left, 0.2))
            return code

    def _exit_locked(self, pid: int) -> int | None:
        if pid in self._exits:
            return self._exits[pid]
        if self._gone and not _alive(pid):
            # the server died: its children were SIGKILLed with it (PR_SET_PDEATHSIG)
            self._exits[pid] = -9
            return -9
        return None

    def alive(self) -> bool:
        return not self._gone and self.managed.exit_code() is None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: it is only waiting for its new parent to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def warm_popen(
    python: str, module: str, args: Sequence[str], *, cwd: Path, env: Mapping[str, str], log_path: Path
) -> WarmPopen | None:
    """``python -m module *args`` forked by this owner's warm server for it; None when warm starts
    are off or the server cannot run (the caller starts the program cold)."""
    if not warm_enabled():
        return None
    key = (os.getpid(), python, module, str(cwd), env.get("PYTHONPATH", ""))
    with _LOCK:
        server = _SERVERS.get(key)
        if server is None or (isinstance(server, WarmServer) and not server.alive()):
            try:
                server = WarmServer(python, module, cwd, env)
            except (WarmServerError, OSError) as exc:
                server = f"{exc}"
                # said once per owner and module: the run is correct, only slower
                print(
                    f"warm starts off for {module}: {exc}; its nodes start as new interpreters",
                    file=sys.stderr,
                )
            _SERVERS[key] = server
    if isinstance(server, str):
        return None
    try:
        return server.spawn(args, cwd, env, log_path)
    except WarmServerError:
        return None
