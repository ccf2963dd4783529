"""Exceptions of the ZooKeeper harness (ring: drivers / test tooling).

One root, :class:`ZooKeeperHarnessError`, so callers can catch everything the harness raises.
Every message names what is wrong and what to do about it.
"""

from __future__ import annotations

from probes.errors import FourLetterWordError as _ProbeFourLetterWordError

DEBIAN_INSTALL_HINT = "apt-get install -y zookeeper"
JAVA_INSTALL_HINT = "apt-get install -y openjdk-17-jre-headless"


class ZooKeeperHarnessError(Exception):
    """Root of every error raised by ``harness.zookeeper``."""


class ZooKeeperNotFound(ZooKeeperHarnessError):
    """No ZooKeeper jars were found (neither ``ZOOKEEPER_HOME`` nor Debian's package)."""


class JavaNotFound(ZooKeeperHarnessError):
    """No ``java`` executable was found."""


class ZooKeeperStartError(ZooKeeperHarnessError):
    """A ZooKeeper JVM exited or did not become ready during start-up."""


class PortInUse(ZooKeeperStartError):
    """The server's client port is taken and the harness may not pick another one."""

    def __init__(self, message: str, port: int) -> None:
        super().__init__(message)
        self.port = port


#: A four-letter-word command (``ruok``, ``srvr``, ...) could not be run: raised by the one 4lw
#: client, :mod:`probes.fourlw`.
FourLetterWordError = _ProbeFourLetterWordError


class QuorumError(ZooKeeperHarnessError):
    """An ensemble did not reach the expected quorum state in time."""
