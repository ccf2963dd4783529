"""Start the next check's cluster while the current check runs (conformance ring).

Most checks take the ``cluster`` fixture: three nodes of the target with the default profile,
started and past start-up before the check's body. When the check a worker runs next takes that
fixture too, :class:`AheadStarter` builds and starts its cluster on a background thread as soon as
the current check's own set-up is done, so the start overlaps the current check's waits; the next
check then adopts it (``cluster-adopt`` span, ``how="pre-started"``) instead of starting one.

What a check sees does not change:

- the cluster lives in a fresh chroot of its own (``/t/ahead-<n>-<hex>``), made for it and deleted
  when it is closed, so it sees only its own znodes and transaction-log records, as with
  ``zk_chroot``; no other check's nodes ever touch it;
- it is started by the same :meth:`~cluster.cluster.Cluster.start` (registered and past start-up)
  and is then idle until adopted: no check's action reaches it before its own;
- a start that failed (a :class:`~cluster.startup.TargetNodeError`, any exception) is raised in the
  check that adopts it, with the cluster attached for evidence, exactly where the check's own
  start would have raised it;
- a cluster started ahead and not adopted (the next check was skipped or deselected, the session
  ended) is closed and its chroot deleted.

Only under the process launcher (containers are started one at a time by their launcher) and
unless ``--no-start-ahead`` is given.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from cluster.cluster import Cluster
from cluster.targets import Target
from harness import timeline
from harness.zookeeper.observer import delete_tree

__all__ = ["AHEAD", "AheadStarter", "Started", "begin_for_next", "cluster_on"]

log = logging.getLogger(__name__)

#: builds an unstarted default cluster in ``chroot`` under ``base_dir``
Build = Callable[[str, Path], Cluster]


def cluster_on(
    target: Target,
    zk_server: Any,
    chroot: str,
    base_dir: Path,
    *,
    profile: str = "2.5",
    n: int = 3,
    **kw: Any,
) -> Cluster:
    """An unstarted cluster of ``target`` in ``chroot`` on ``zk_server`` (a
    :class:`~harness.zookeeper.ZooKeeperServer`): nodes 1..n unless ``broker_ids`` is given."""
    return Cluster(
        target,
        zk_connect_string=zk_server.connect_string,
        chroot=chroot,
        txn_log_dir=Path(zk_server.txn_log_dir),
        base_dir=base_dir,
        profile=profile,
        broker_ids=kw.pop("broker_ids", None) or tuple(range(1, n + 1)),
        four_letter=zk_server.four_letter,
        **kw,
    )


#: the worker's starter, once the session fixture made it (absent when starting ahead is off)
AHEAD = pytest.StashKey["AheadStarter"]()


def begin_for_next(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """``item``'s set-up is done: start the default cluster of ``nextitem`` if it takes the
    ``cluster`` fixture and is not marked to be skipped."""
    ahead = item.config.stash.get(AHEAD, None)
    if ahead is None or nextitem is None or "cluster" not in getattr(nextitem, "fixturenames", ()):
        return
    if nextitem.get_closest_marker("skip") is not None:
        return
    ahead.begin()


@dataclass
class Started:
    """A cluster started ahead: the cluster (``None`` if building it failed), its chroot, and
    what its build or start raised."""

    cluster: Cluster | None
    chroot: str
    error: BaseException | None = None


class AheadStarter:
    """At most one default cluster started ahead, per pytest worker."""

    def __init__(self, build: Build, admin: KazooClient, base_dir: Path) -> None:
        self._build = build
        self._admin = admin
        self._base = base_dir
        self._count = itertools.count()
        self._thread: threading.Thread | None = None
        self._started: Started | None = None

    @property
    def pending(self) -> bool:
        return self._thread is not None

    def begin(self) -> None:
        """Start a default cluster on a background thread (nothing if one is already pending)."""
        if self._thread is not None:
            return
        n = next(self._count)
        chroot = f"/t/ahead-{n}-{uuid.uuid4().hex[:8]}"
        self._started = Started(None, chroot)
        self._thread = threading.Thread(
            target=self._run, args=(self._started, self._base / f"cluster-{n}"), name=f"start-ahead-{n}"
        )
        self._thread.start()

    def _run(self, started: Started, base_dir: Path) -> None:
        try:
            self._admin.ensure_path(started.chroot)
            started.cluster = self._build(started.chroot, base_dir)
            started.cluster.start()
        except BaseException as exc:  # raised in the adopting check, never lost
            started.error = exc

    def _join(self) -> Started | None:
        if self._thread is None:
            return None
        self._thread.join()
        started, self._thread, self._started = self._started, None, None
        return started

    def take(self) -> Started | None:
        """The pending cluster once its start has ended (``None`` if none is pending)."""
        if self._thread is None:
            return None
        with timeline.span("cluster-adopt", how="pre-started"):
            return self._join()

    def release(self, started: Started) -> None:
        """Close a cluster that was started ahead and delete its chroot; never raises."""
        if started.cluster is not None:
            started.cluster.close()
        with timeline.span("chroot-delete"), contextlib.suppress(KazooException):
            delete_tree(self._admin, started.chroot)

    def close(self) -> None:
        """End of the session: close a cluster no check adopted."""
        if self._thread is None:
            return
        with timeline.span("cluster-discard", used=False):
            started = self._join()
            assert started is not None
            log.info("closing the cluster started ahead in %s: no check adopted it", started.chroot)
            self.release(started)
