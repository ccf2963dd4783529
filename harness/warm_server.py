"""A warm interpreter: forks ``python -m MODULE`` programs from an imported MODULE (ring: drivers).

    python -m harness.warm_server MODULE SOCKET

Started by :mod:`harness.warm` (never by hand). It imports ``MODULE.__main__`` once (and calls
its ``warm_up()`` when it defines one: the imports a start needs), listens on the Unix socket
SOCKET for its one owner, and for each request forks a child that becomes the program the owner
asked for — what ``python -m MODULE ARGS`` would run, in the request's working directory, with
the request's environment and its output appended to the request's file — without paying for
the interpreter's start and the imports again.

The child is its own session leader (signals to its process group reach it as they would a
``Popen(start_new_session=True)`` child), gets ``PR_SET_PDEATHSIG=SIGKILL`` (it dies with this
server, which dies with its owner the same way) and runs ``MODULE``'s ``__main__`` as the
program (``runpy.run_module``, ``__name__ == "__main__"``). Its exit code is what the
interpreter's would be: ``SystemExit``'s code, 1 for an uncaught exception, after the ``atexit``
handlers ran and the output was flushed; killed by a signal, ``-signal``.

Protocol: JSON lines. The owner sends ``{"argv": [...], "cwd": ..., "env": {...}, "log": ...}``
and gets ``{"pid": N}`` (sent once the child is its own session leader with default signal
dispositions, so a signal sent on receipt reaches the program) or ``{"error": "..."}`` back, in
order; the server adds
``{"exit": N, "code": C}`` whenever a child has exited. The server is single-threaded (a fork
from a process with other threads could inherit a lock one of them held): the exits are noticed
through a self-pipe written by the SIGCHLD handler. It exits when its owner hangs up or on
SIGTERM (after giving its children a moment to finish the shutdown their owner started).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import io
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

_PR_SET_PDEATHSIG = 1
#: How long a terminated server waits for its children to exit before leaving (they are SIGKILLed then).
_TERM_GRACE_S = 3.0
#: How long the server waits for a forked child to become its own session (it takes milliseconds).
_READY_TIMEOUT_S = 10.0


def _prepare(module: str) -> None:
    name = f"{module}.__main__"
    main = importlib.import_module(name)
    warm_up = getattr(main, "warm_up", None)
    if callable(warm_up):
        warm_up()
    # a program run with -m is only ever ``__main__``: forget the copy imported under its name
    del sys.modules[name]


def _exit_code(value: object) -> int:
    """The interpreter's exit status for ``sys.exit(value)``."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _become(module: str, request: dict[str, Any], server_pid: int, closing: list[int], ready: int) -> int:
    """In the forked child: set up the process as a fresh ``python -m`` start and run the program.
    ``ready`` is closed once the child is its own session with the default signal dispositions:
    only then does the server hand its pid to the owner (see :func:`_await_ready`)."""
    os.setsid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != server_pid:  # the server died between fork and prctl
        return 137
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    os.close(ready)
    for fd in closing:
        with contextlib.suppress(OSError):
            os.close(fd)
    out = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), line_buffering=True, write_through=unbuffered
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), line_buffering=True, write_through=True, errors="backslashreplace"
    )
    sys.argv = [module, *request["argv"]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    return _finish(code)


def _finish(code: int) -> int:
    """What the interpreter does on its way out: join the program's threads, run atexit, flush."""
    shutdown = getattr(threading, "_shutdown", None)
    if callable(shutdown):
        with contextlib.suppress(BaseException):
            shutdown()
    import atexit  # noqa: PLC0415

    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    return code


def _await_ready(ready: int) -> None:
    """Wait until the child closed its end of the ready pipe (or died). Before that, a signal
    to its process group would find no group (``killpg``: ESRCH, lost) and a SIGTERM would reach
    the server's handler it inherited (lost too); a cold ``Popen(start_new_session=True)`` has
    the same guarantee, as it returns only once the child has run ``setsid`` and ``exec``."""
    try:
        select.select([ready], [], [], _READY_TIMEOUT_S)  # EINTR is retried (PEP 475)
    finally:
        os.close(ready)


def serve(module: str, socket_path: str) -> int:
    try:
        _prepare(module)
    except BaseException:
        traceback.print_exc()
        print(f"warm server: cannot import {module}; its nodes start cold", file=sys.stderr)
        return 3
    if threading.active_count() != 1:
        print(f"warm server: importing {module} started threads; refusing to fork from it", file=sys.stderr)
        return 3
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(1)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    terminated: list[float] = []
    signal.signal(signal.SIGTERM, lambda *_: terminated.append(time.monotonic()))
    import gc  # noqa: PLC0415

    gc.freeze()  # what is imported now is shared with every child, copy-on-write
    owner, _ = listener.accept()
    children: set[int] = set()
    buffer = b""
    server_pid = os.getpid()

    def send(message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            owner.sendall(json.dumps(message).encode() + b"\n")

    def reap() -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            children.discard(pid)
            send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})

    hung_up = False
    while not hung_up and not terminated:
        try:
            ready, _, _ = select.select([owner.fileno(), wake_r], [], [], 1.0)
        except InterruptedError:
            ready = []
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        reap()
        if owner.fileno() not in ready:
            continue
        chunk = owner.recv(65536)
        if not chunk:
            hung_up = True
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                request = json.loads(line)
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                ready_r, ready_w = os.pipe()
                try:
                    pid = os.fork()
                except OSError:
                    os.close(ready_r)
                    os.close(ready_w)
                    raise
            except (ValueError, OSError) as exc:
                send({"error": f"{type(exc).__name__}: {exc}"})
                continue
            if pid == 0:
                code = 1
                try:
                    closing = [owner.fileno(), listener.fileno(), wake_r, wake_w, ready_r]
                    code = _become(module, request, server_pid, closing, ready_w)
                except BaseException:
                    with contextlib.suppress(BaseException):
                        traceback.print_exc()
                        sys.stderr.flush()
                finally:
                    os._exit(code)
            children.add(pid)
            os.close(ready_w)
            _await_ready(ready_r)
            send({"pid": pid})
    if terminated:  # the owner is stopping everything: let its children's shutdown finish first
        give_up = terminated[0] + _TERM_GRACE_S
        while children and time.monotonic() < give_up:
            reap()
            time.sleep(0.02)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m harness.warm_server MODULE SOCKET (started by harness.warm)", file=sys.stderr)
        return 2
    return serve(argv[0], argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
