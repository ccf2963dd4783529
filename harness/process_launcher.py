"""The default launcher: servers as local processes (ring: drivers).

Each server runs in its own session (signals go to its process group), dies with its owner
(``setpriv --pdeathsig`` / ``PR_SET_PDEATHSIG``) and has a pid file with its start time, so the
reaper of :mod:`harness.reaper` removes what a killed run left — for nodes and the Toxiproxy
server as for ZooKeeper JVMs.
"""

from __future__ import annotations

import signal
import subprocess

from harness import process
from harness.launching import Handle, LaunchSpec

__all__ = ["ProcessHandle", "ProcessLauncher"]


class ProcessHandle:
    """A local process started by :class:`ProcessLauncher`."""

    def __init__(self, managed: process.ManagedJvm) -> None:
        self.managed = managed

    @property
    def pid(self) -> int:
        return self.managed.pid

    @property
    def description(self) -> str:
        return f"pid {self.managed.pid}"

    def poll(self) -> int | None:
        return self.managed.exit_code()

    def wait(self, timeout_s: float) -> int:
        try:
            code = self.managed.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(
                f"{self.managed.name} (pid {self.pid}) still running after {timeout_s:.1f}s"
            ) from exc
        self.managed.exit_code()  # releases the pid file
        return code

    def send_signal(self, sig: signal.Signals) -> None:
        if sig == signal.SIGSTOP:
            self.managed.pause()
        elif sig == signal.SIGCONT:
            self.managed.resume()
        else:
            self.managed.signal_group(sig)

    def remove(self) -> None:
        if self.managed.exit_code() is None:
            self.managed.signal_group(signal.SIGCONT)
            self.managed.kill()


class ProcessLauncher:
    name = "process"
    in_containers = False

    def unavailable_reason(self) -> str | None:
        return None

    def spawn(self, spec: LaunchSpec) -> Handle:
        managed = process.spawn_jvm(
            list(spec.argv),
            name=spec.name,
            run_dir=spec.cwd,
            log_path=spec.log_path,
            die_with_owner=spec.die_with_owner,
            env=dict(spec.env) if spec.env else None,
            on_exit=spec.on_exit,
            warm_module=spec.warm_module,
        )
        return ProcessHandle(managed)
