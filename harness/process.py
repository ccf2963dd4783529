"""Starting, signalling and always cleaning up the harness's processes (ring: drivers / test tooling).

The process launcher (:mod:`harness.process_launcher`) starts every local server this way: the
ZooKeeper JVMs, the nodes and the kit's Toxiproxy server. The guarantees are written for JVMs,
the common case; they hold for every process started here.

Guarantees against leaked JVMs, from the most to the least common case:

1. **Normal exit**: an ``atexit`` hook stops every JVM this process still owns (SIGTERM, then
   SIGKILL after a grace period) and deletes its run root.
2. **SIGTERM / SIGHUP** of the owner: a handler does the same clean-up, then chains to the previous
   handler or re-raises the default action (so the exit status still says "killed by SIGTERM").
   **SIGINT** is left to Python: the default handler raises ``KeyboardInterrupt``, pytest unwinds
   (fixture finalizers stop the servers) and ``atexit`` covers the rest. A handler is added for
   SIGINT only when its disposition is ``SIG_DFL`` (no ``KeyboardInterrupt`` would run).
3. **SIGKILL** of the owner: each JVM runs with ``PR_SET_PDEATHSIG=SIGKILL`` (via ``setpriv
   --pdeathsig KILL``, or ``prctl`` in ``preexec_fn`` where setpriv is missing; the setting survives
   ``execve`` of a non-setuid binary such as java), so the kernel kills it when its parent dies.
   Linux sends that signal when the *thread* that forked the child exits, not the process: a JVM
   forked from a short-lived thread (a thread pool, a kazoo callback) would die with that thread.
   So every JVM is forked from one daemon "spawner" thread that lives as long as the process
   (daemon threads are not joined at exit, so the ``atexit`` hook still stops JVMs gracefully
   first). ``die_with_owner=False`` (or ``KZK_JVM_DIE_WITH_OWNER=0``) turns this off; the tests
   use that to exercise the reaper. The signal is not sent if the owner dies between ``fork`` and
   ``prctl``: case 4 covers that.
4. **Anything else** (the owner died in the instant between fork and pid file, pdeathsig disabled,
   a foreign kill of the whole session): :func:`harness.reaper.reap_orphans`, run at
   every pytest session start and by ``python -m harness reap``.

JVMs run in their own session and process group (``start_new_session=True``): Ctrl-C in a terminal
does not reach them directly, and signals go to the group so nothing the JVM forks survives it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from queue import SimpleQueue
from types import FrameType
from typing import Any, Protocol, TypeVar

from harness import reaper

T = TypeVar("T")
_PR_SET_PDEATHSIG = 1
_LOCK = threading.RLock()
_LIVE: dict[int, ManagedJvm] = {}
_SESSION: OwnerSession | None = None
_SPAWNER: tuple[int, _Spawner] | None = None
_ATEXIT_PID = 0
_SIGNALS_PID = 0
#: How long an exiting owner waits for a SIGKILLed JVM to be reaped before it leaves it to the reaper.
_KILL_WAIT_S = 15.0


def die_with_owner_default() -> bool:
    """Whether JVMs die with their owner unless told otherwise (``KZK_JVM_DIE_WITH_OWNER``)."""
    return os.environ.get("KZK_JVM_DIE_WITH_OWNER", "1") != "0"


# --- the owner and its run root -----------------------------------------------------------------


@dataclass(frozen=True)
class OwnerSession:
    """This process as an owner of JVMs: its identity, its run root and its owner record."""

    pid: int
    start_time: int
    run_root: Path
    record_path: Path


def _create_owner_session(pid: int) -> OwnerSession:
    start = reaper.proc_start_time(pid) or 0
    run_root = Path(tempfile.mkdtemp(prefix=f"{reaper.RUN_ROOT_PREFIX}{pid}-", dir=reaper.runs_parent()))
    record = {"kind": "owner", "owner_pid": pid, "owner_start": start, "run_root": str(run_root)}
    record |= {"argv": sys.argv, "created": time.time()}
    reaper.write_record(run_root / "owner.json", record)
    record_path = reaper.runtime_dir() / f"owner-{pid}-{start}.json"
    reaper.write_record(record_path, record)
    return OwnerSession(pid, start, run_root, record_path)


def owner_session() -> OwnerSession:
    """The owner session of the current process (created on first use, and anew after a fork)."""
    global _SESSION
    with _LOCK:
        if _SESSION is None or _SESSION.pid != os.getpid():
            _SESSION = _create_owner_session(os.getpid())
        return _SESSION


def new_run_dir(name: str) -> Path:
    """A fresh, empty run dir inside this process's run root."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "zk"
    return Path(tempfile.mkdtemp(prefix=f"{safe}-", dir=owner_session().run_root))


# --- the spawner thread -------------------------------------------------------------------------


class _Spawner:
    """One daemon thread that forks every JVM, so pdeathsig fires only when the process dies."""

    def __init__(self) -> None:
        self._queue: SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = SimpleQueue()
        threading.Thread(target=self._loop, name="kzk-jvm-spawner", daemon=True).start()

    def _loop(self) -> None:
        while True:
            work, future = self._queue.get()
            try:
                future.set_result(work())
            except BaseException as exc:  # handed to the caller's thread
                future.set_exception(exc)

    def run(self, work: Callable[[], T]) -> T:
        future: Future[T] = Future()
        self._queue.put((work, future))
        return future.result()


def _spawner() -> _Spawner:
    global _SPAWNER
    with _LOCK:
        if _SPAWNER is None or _SPAWNER[0] != os.getpid():
            _SPAWNER = (os.getpid(), _Spawner())
        return _SPAWNER[1]


@functools.cache
def _setpriv_with_pdeathsig() -> str | None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    probe = subprocess.run([setpriv, "--help"], capture_output=True, text=True, check=False)
    return setpriv if "--pdeathsig" in probe.stdout else None


def _prctl_pdeathsig() -> None:  # runs in the forked child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# --- a managed JVM ------------------------------------------------------------------------------


class PopenLike(Protocol):
    """What :class:`ManagedJvm` uses of its process: a :class:`subprocess.Popen`, or a
    :class:`harness.warm.WarmPopen` (forked by a warm server, which reports its exit)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class ManagedJvm:
    """A started JVM: its Popen, pid file and signals to its process group."""

    def __init__(
        self,
        popen: PopenLike,
        start_time: int,
        record: Path,
        name: str,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        self.popen = popen
        self.start_time = start_time
        self.record_path = record
        self.name = name
        self.owner_pid = os.getpid()
        #: Called once, when the exit is first seen (a JVM's class-data archive is promoted then).
        self.on_exit = on_exit
        self.paused = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exit_code(self) -> int | None:
        """The exit code, or None while the JVM runs (a paused JVM runs)."""
        code = self.popen.poll()
        if code is not None:
            self._release()
        return code

    def signal_group(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the JVM's process group (nothing if it has exited and been reaped)."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)

    def pause(self, timeout_s: float = 5.0) -> None:
        """SIGSTOP the group and wait until every JVM thread has stopped (delivery is asynchronous)."""
        self.signal_group(signal.SIGSTOP)
        self.paused = True
        deadline = time.monotonic() + timeout_s
        while self.popen.poll() is None and not _all_threads_stopped(self.pid):
            if time.monotonic() > deadline:
                break
            time.sleep(0.005)

    def resume(self) -> None:
        self.signal_group(signal.SIGCONT)
        self.paused = False

    def begin_terminate(self) -> None:
        """SIGTERM the group (SIGCONT first, so a paused JVM can act on it)."""
        self.signal_group(signal.SIGTERM)
        self.signal_group(signal.SIGCONT)
        self.paused = False

    def terminate(self, grace_s: float = 10.0) -> int:
        """Graceful stop: SIGTERM, wait ``grace_s``, then SIGKILL. Returns the exit code."""
        self.begin_terminate()
        try:
            code = self.popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            return self.kill()
        self._release()
        return code

    def kill(self) -> int:
        """SIGKILL the group and wait for the JVM. Returns the exit code."""
        self.signal_group(signal.SIGKILL)
        code = self.popen.wait()
        self._release()
        return code

    def _release(self) -> None:
        with _LOCK:
            _LIVE.pop(self.pid, None)
        self.record_path.unlink(missing_ok=True)
        on_exit, self.on_exit = self.on_exit, None
        if on_exit is not None:
            on_exit()


def _all_threads_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is in state T (stopped); False once it is gone."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in tasks]
    except (OSError, IndexError):
        return False
    return bool(states) and all(state in ("T", "t") for state in states)


def spawn_jvm(
    argv: Sequence[str],
    *,
    name: str,
    run_dir: Path,
    log_path: Path,
    die_with_owner: bool,
    env: Mapping[str, str] | None = None,
    on_exit: Callable[[], None] | None = None,
    warm_module: str | None = None,
) -> ManagedJvm:
    """Start ``argv`` in a new session with output to ``log_path``, and write its pid file.

    Not only JVMs: the process launcher starts nodes this way too, so the reaper finds them.
    ``env`` replaces the environment (default: inherited); ``on_exit`` runs once its exit is seen.
    ``warm_module``: ``argv`` is ``python -m warm_module ...`` and may be forked by a warm server
    (:mod:`harness.warm`) instead of started as a new interpreter (only with ``die_with_owner``)."""
    session = owner_session()
    install_cleanup_hooks()
    command = list(argv)
    popen: PopenLike | None = None
    if warm_module is not None and die_with_owner and command[1:3] == ["-m", warm_module]:
        from harness.warm import warm_popen  # noqa: PLC0415 - harness.warm imports this module

        popen = warm_popen(
            command[0],
            warm_module,
            command[3:],
            cwd=run_dir,
            env=dict(os.environ if env is None else env),
            log_path=log_path,
        )
    if popen is None:
        popen = _spawn_cold(command, run_dir, log_path, die_with_owner, env)
    start = reaper.proc_start_time(popen.pid) or 0
    record = reaper.runtime_dir() / f"jvm-{popen.pid}-{start}.json"
    reaper.write_record(
        record,
        {
            "kind": "jvm",
            "pid": popen.pid,
            "start_time": start,
            "owner_pid": session.pid,
            "owner_start": session.start_time,
            "run_dir": str(run_dir),
            "run_root": str(session.run_root),
            "name": name,
            "argv": command,
            "created": time.time(),
        },
    )
    jvm = ManagedJvm(popen, start, record, name, on_exit)
    with _LOCK:
        _LIVE[popen.pid] = jvm
    return jvm


def _spawn_cold(
    command: list[str], run_dir: Path, log_path: Path, die_with_owner: bool, env: Mapping[str, str] | None
) -> subprocess.Popen[bytes]:
    preexec: Callable[[], None] | None = None
    if die_with_owner:
        setpriv = _setpriv_with_pdeathsig()
        if setpriv is not None:
            command = [setpriv, "--pdeathsig", "KILL", "--", *command]
        else:
            preexec = _prctl_pdeathsig
    with open(log_path, "ab") as log:
        return _spawner().run(
            lambda: subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=run_dir,
                env=None if env is None else dict(env),
                start_new_session=True,
                preexec_fn=preexec,  # noqa: PLW1509 -- only where setpriv is missing
            )
        )


def live_jvms() -> list[ManagedJvm]:
    """JVMs this process started and has not yet seen exit."""
    with _LOCK:
        return list(_LIVE.values())


# --- clean-up on exit and on signals ------------------------------------------------------------


def cleanup_owned(grace_s: float = 3.0) -> None:
    """Stop every JVM this process owns, then delete its run root and owner record."""
    global _SESSION
    jvms = [jvm for jvm in live_jvms() if jvm.owner_pid == os.getpid()]
    for jvm in jvms:
        jvm.begin_terminate()
    deadline = time.monotonic() + grace_s
    for jvm in jvms:
        try:
            jvm.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            jvm.exit_code()
        except subprocess.TimeoutExpired:
            jvm.signal_group(signal.SIGKILL)
    for jvm in jvms:
        # A SIGKILLed process that is stuck in the kernel (uninterruptible I/O) is not waited for
        # without end: the owner exits, and its pid file stays behind for the reaper.
        try:
            jvm.popen.wait(timeout=_KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            continue
        jvm.exit_code()
    with _LOCK:
        session, _SESSION = _SESSION, None
    if session is not None and session.pid == os.getpid():
        shutil.rmtree(session.run_root, ignore_errors=True)
        session.record_path.unlink(missing_ok=True)


def install_cleanup_hooks() -> None:
    """Register the ``atexit`` hook and (from the main thread) the signal handlers, once per process."""
    global _ATEXIT_PID, _SIGNALS_PID
    pid = os.getpid()
    if pid != _ATEXIT_PID:
        _ATEXIT_PID = pid
        atexit.register(cleanup_owned)
    if pid == _SIGNALS_PID or threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread; pdeathsig covers the rest
    _SIGNALS_PID = pid
    for sig in (signal.SIGTERM, signal.SIGHUP):
        _chain_handler(sig)
    if signal.getsignal(signal.SIGINT) is signal.SIG_DFL:
        _chain_handler(signal.SIGINT)


def _chain_handler(sig: signal.Signals) -> None:
    previous = signal.getsignal(sig)

    def handler(signum: int, frame: FrameType | None) -> None:
        cleanup_owned(grace_s=2.0)
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    signal.signal(sig, handler)
