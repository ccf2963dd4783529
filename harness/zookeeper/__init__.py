"""A real-ZooKeeper harness: standalone servers and ensembles (ring: drivers / test tooling).

Servers come from ``$ZOOKEEPER_HOME`` or Debian's ``zookeeper`` package, start through the
launcher seam (:mod:`harness.launcher`: local JVMs, or containers), bind only 127.0.0.1 on ports
of the port plan (:mod:`harness.ports`), and never outlive their owner: see
:mod:`harness.process` (clean-up on exit, signals and owner death) and :mod:`harness.reaper`
(pid files and the reaper of orphaned runs).

Environment knobs: ``ZOOKEEPER_HOME``; ``KZK_DEBIAN_JAVA_DIR`` (default ``/usr/share/java``);
``KZK_RUNTIME_DIR`` (pid files); ``KZK_JVM_DIE_WITH_OWNER=0`` (no pdeathsig); ``KZK_JVM_CDS=0`` (no
class-data-sharing archive); ``KZK_CACHE_DIR`` (where that archive lives).
"""

from harness.process import cleanup_owned, install_cleanup_hooks
from harness.reaper import Reaped, reap_orphans, runtime_dir
from harness.zookeeper.config import QuorumMember
from harness.zookeeper.ensemble import ZooKeeperEnsemble
from harness.zookeeper.errors import (
    FourLetterWordError,
    JavaNotFound,
    PortInUse,
    QuorumError,
    ZooKeeperHarnessError,
    ZooKeeperNotFound,
    ZooKeeperStartError,
)
from harness.zookeeper.jars import ZooKeeperInstall, find_java, find_zookeeper
from harness.zookeeper.server import ZooKeeperServer, add_start_listener
from probes.fourlw import four_letter, parse_mode

__all__ = [
    "FourLetterWordError",
    "JavaNotFound",
    "PortInUse",
    "QuorumError",
    "QuorumMember",
    "Reaped",
    "ZooKeeperEnsemble",
    "ZooKeeperHarnessError",
    "ZooKeeperInstall",
    "ZooKeeperNotFound",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "add_start_listener",
    "cleanup_owned",
    "find_java",
    "find_zookeeper",
    "four_letter",
    "install_cleanup_hooks",
    "parse_mode",
    "reap_orphans",
    "runtime_dir",
]
