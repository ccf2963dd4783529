"""One server of a split topology: a broker-only process and its controller process (conformance ring).

In Kafka's ZooKeeper mode a server is a broker with the controller inside: a server failure
takes its controller with it, and the suite's scenarios are built on that. A split-topology
target (a ``[controller]`` section) runs the controller as a separate process beside each
broker-only process, with the same broker id; :class:`ServerPair` makes the two one
:class:`~harness.launcher.Handle`, so every fault of the harness acts on the server as a whole:

- SIGKILL, SIGSTOP, SIGCONT go to both processes at once;
- SIGTERM (a graceful stop) goes to the broker first; once it has exited (its controlled
  shutdown done), :meth:`wait` sends SIGTERM to the controller process — Kafka's order, where the
  broker shuts its controller component down last;
- the server is down when either process has ended (:meth:`poll` says which first, :meth:`part`).
"""

from __future__ import annotations

import signal
import time
from typing import Literal

from harness.launcher import Handle

__all__ = ["Part", "ServerPair"]

Part = Literal["broker", "controller"]


class ServerPair:
    """A broker process and its controller process as one :class:`~harness.launcher.Handle`."""

    def __init__(self, broker: Handle, controller: Handle) -> None:
        self.broker, self.controller = broker, controller
        self._terminating = False

    @property
    def description(self) -> str:
        return f"broker {self.broker.description}, controller {self.controller.description}"

    @property
    def pid(self) -> int | None:
        return self.broker.pid

    def part(self) -> tuple[Part, int] | None:
        """Which process has ended (the broker when both have) and its exit code."""
        code = self.broker.poll()
        if code is not None:
            return "broker", code
        code = self.controller.poll()
        return None if code is None else ("controller", code)

    def poll(self) -> int | None:
        ended = self.part()
        return None if ended is None else ended[1]

    def send_signal(self, sig: signal.Signals) -> None:
        if sig == signal.SIGTERM:  # the controller follows once the broker is gone (wait)
            self._terminating = True
            self.broker.send_signal(sig)
            return
        self.broker.send_signal(sig)
        self.controller.send_signal(sig)

    def wait(self, timeout_s: float) -> int:
        """The broker's exit code once both processes have ended."""
        give_up = time.monotonic() + timeout_s
        code = self.broker.wait(timeout_s)
        if self._terminating:
            self.controller.send_signal(signal.SIGTERM)
        self.controller.wait(max(give_up - time.monotonic(), 1.0))
        return code

    def remove(self) -> None:
        self.broker.remove()
        self.controller.remove()
