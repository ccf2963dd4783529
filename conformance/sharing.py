"""One cluster lent to checks that leave it as they found it (conformance ring).

Most checks change their cluster — they create topics, stop nodes, move the controller — and get
a fresh one. A few only look: at how the controller was elected, at the watches the brokers hold,
at what a broker does with a frame it cannot parse. Such a check declares it with
``@pytest.mark.leaves_cluster_as_found``; its ``cluster`` fixture may then be a cluster an earlier
declared check on the same worker used, instead of three new node starts.

The declaration is never taken on trust. A cluster is lent only once it has settled (the
controller elected and every registered broker has answered an UpdateMetadata listing them all:
:func:`~conformance.scenarios.wait_cluster_known`), and its :class:`Fingerprint` is taken then:

- every znode under its chroot with its data and the zxids and versions of its stat (any create,
  delete or set under the chroot changes one of them, also a set to the same data);
- each node's process (the same process, running, not paused);
- how many controller requests the recording proxies saw (the controller sent nothing more);
- the names in each node's log dirs (no partition created or deleted on disk).

After the check it is taken again. The cluster goes back to the pool only when the check passed,
no node died and the two fingerprints are equal; otherwise it is closed and its chroot deleted,
exactly as a check's own cluster is — so a failing check, or one that broke its declaration,
leaves nothing another check can see. When it is lent again the fingerprint is taken a third
time, so a change while it sat idle is caught too. A refusal is logged with what changed and
recorded as a ``cluster-share-refused`` span (``python -m bench.suite`` counts them); it is not a
verdict on the target: the check's own assertions are.

What a declared check sees differs from a fresh cluster in one way only, and the same way every
time: it is settled before the check's body runs. Every check still sees only its cluster's own
chroot, and the transaction-log records and controller requests of that cluster are exactly
those of its start (nothing was added since, by construction).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from cluster.cluster import Cluster
from conformance.ahead import AheadStarter, Build, Started
from harness import timeline
from harness.zookeeper.observer import delete_tree

__all__ = [
    "MARKER",
    "SHARED",
    "Fingerprint",
    "Lent",
    "SharedClusters",
    "declares_sharing",
    "differences",
    "fingerprint",
    "shared_cluster_coming",
]

log = logging.getLogger(__name__)

MARKER = "leaves_cluster_as_found"
#: the worker's pool, once the session fixture made it
SHARED = pytest.StashKey["SharedClusters"]()

#: (data, czxid, mzxid, pzxid, version, cversion, ephemeralOwner) of one znode
ZnodeState = tuple[bytes | None, int, int, int, int, int, int]


def declares_sharing(item: pytest.Item | None) -> bool:
    """``item`` declares that it leaves its default cluster as it found it."""
    return item is not None and item.get_closest_marker(MARKER) is not None


def shared_cluster_coming(config: pytest.Config, nextitem: pytest.Item | None) -> bool:
    """``nextitem`` will borrow a cluster that is idle or lent now (none need start ahead for it)."""
    pool = config.stash.get(SHARED, None)
    return pool is not None and declares_sharing(nextitem) and pool.will_have_one


@dataclass(frozen=True)
class Fingerprint:
    """What "as found" means for one cluster (module docstring)."""

    znodes: Mapping[str, ZnodeState]
    processes: Mapping[int, tuple[int, bool, bool]]  # id of the process handle, running, paused
    requests: int | None
    log_dirs: Mapping[int, tuple[str, ...]]


def fingerprint(cluster: Cluster) -> Fingerprint:
    """The cluster's fingerprint now (reads only; raises what ZooKeeper raises)."""
    znodes: dict[str, ZnodeState] = {}
    stack = ["/"]
    while stack:
        path = stack.pop()
        try:
            data, stat = cluster.zk.get(path)
            children = cluster.zk.get_children(path)
        except NoNodeError:
            znodes[path] = (b"<vanished while read>", -1, -1, -1, -1, -1, -1)
            continue
        znodes[path] = (
            data,
            stat.czxid,
            stat.mzxid,
            stat.pzxid,
            stat.version,
            stat.cversion,
            stat.ephemeralOwner,
        )
        stack.extend(f"{path.rstrip('/')}/{child}" for child in children)
    processes = {
        bid: (id(node.proc) if node.proc is not None else 0, node.running, node.paused)
        for bid, node in cluster.nodes.items()
    }
    log_dirs = {
        bid: tuple(sorted(f"{d.name}/{entry}" for d in node.log_dirs for entry in _listdir(d)))
        for bid, node in cluster.nodes.items()
    }
    requests = cluster.journal.mark() if cluster.journal is not None else None
    return Fingerprint(znodes, processes, requests, log_dirs)


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return ["<unreadable>"]


def differences(before: Fingerprint, after: Fingerprint, limit: int = 12) -> list[str]:
    """What changed from ``before`` to ``after``, one line each (empty: as found)."""
    out: list[str] = []
    for path in sorted(before.znodes.keys() - after.znodes.keys()):
        out.append(f"znode {path} deleted")
    for path in sorted(after.znodes.keys() - before.znodes.keys()):
        out.append(f"znode {path} created")
    for path in sorted(before.znodes.keys() & after.znodes.keys()):
        old, new = before.znodes[path], after.znodes[path]
        if old != new:
            what = "data" if old[0] != new[0] else "stat"
            zxids = f"mzxid {old[2]:#x} -> {new[2]:#x}, pzxid {old[3]:#x} -> {new[3]:#x}"
            out.append(f"znode {path} changed ({what}: {zxids})")
    for bid in sorted(before.processes.keys() | after.processes.keys()):
        old_p, new_p = before.processes.get(bid), after.processes.get(bid)
        if old_p != new_p:
            out.append(f"node {bid} process: {_process(old_p)} -> {_process(new_p)}")
    if before.requests != after.requests:
        out.append(f"controller requests recorded: {before.requests} -> {after.requests}")
    for bid in sorted(before.log_dirs.keys() | after.log_dirs.keys()):
        old_d, new_d = set(before.log_dirs.get(bid, ())), set(after.log_dirs.get(bid, ()))
        if old_d != new_d:
            added, gone = sorted(new_d - old_d), sorted(old_d - new_d)
            out.append(f"node {bid} log dirs: added {added}, removed {gone}")
    if len(out) > limit:
        out = [*out[:limit], f"... and {len(out) - limit} more"]
    return out


def _process(state: tuple[int, bool, bool] | None) -> str:
    if state is None:
        return "absent"
    handle, running, paused = state
    if not handle:
        return "not started"
    return f"process {handle:#x} " + ("paused" if paused else "running" if running else "ended")


@dataclass
class Lent:
    """A cluster lent to a check: where it came from, its fingerprint when lent (``None``: it
    never settled, so it is not shared), and the checks that used it before."""

    started: Started
    baseline: Fingerprint | None
    used_by: list[str] = field(default_factory=list)

    def evidence(self) -> dict[str, str]:
        before = ", ".join(self.used_by[:-1]) or "none (started for this check)"
        return {"cluster sharing": f"chroot {self.started.chroot}; lent before to: {before}"}


class SharedClusters:
    """At most one idle default cluster per pytest worker, lent to checks that declare they
    leave it as they found it (module docstring)."""

    def __init__(
        self,
        build: Build,
        admin: KazooClient,
        base_dir: Path,
        *,
        settle: Callable[[Cluster], object],
    ) -> None:
        self._build, self._admin, self._base = build, admin, base_dir
        self._settle = settle
        self._count = itertools.count()
        self._idle: Lent | None = None
        self._out: Lent | None = None

    @property
    def will_have_one(self) -> bool:
        """A cluster is idle, or lent and possibly coming back (the next check need not start one
        ahead)."""
        return self._idle is not None or self._out is not None

    def lend(self, check: str, ahead: AheadStarter | None) -> Lent:
        """A settled default cluster for ``check``: the idle one when it is still as it was left,
        else one started ahead, else a new one in a chroot of the pool's own."""
        lent = self._take_idle()
        if lent is None:
            started = ahead.take() if ahead is not None else None
            if started is None:
                started = self._start_own()
            lent = Lent(started, self._baseline(started.cluster) if started.error is None else None)
        lent.used_by.append(check)
        self._out = lent
        return lent

    def _take_idle(self) -> Lent | None:
        lent, self._idle = self._idle, None
        if lent is None:
            return None
        assert lent.started.cluster is not None
        assert lent.baseline is not None
        with timeline.span("cluster-adopt", how="shared") as attrs:
            changed = self._changes(lent.started.cluster, lent.baseline)
            attrs["as_found"] = not changed
        if changed:
            self._refuse(lent, "changed while idle", changed)
            return None
        return lent

    def _start_own(self) -> Started:
        n = next(self._count)
        started = Started(None, f"/t/shared-{n}-{uuid.uuid4().hex[:8]}")
        try:
            self._admin.ensure_path(started.chroot)
            started.cluster = self._build(started.chroot, self._base / f"cluster-{n}")
            started.cluster.start()
        except BaseException as exc:  # raised in the check, as its own start would have been
            started.error = exc
        return started

    def _baseline(self, cluster: Cluster | None) -> Fingerprint | None:
        """The fingerprint once the cluster settled; ``None`` (not shared) when it does not
        settle — the check then runs on it as on any fresh cluster and sees why itself."""
        if cluster is None:
            return None
        try:
            self._settle(cluster)
            return fingerprint(cluster)
        except Exception as exc:
            log.info("cluster in %s did not settle, not shared: %s", cluster.chroot, exc)
            return None

    @staticmethod
    def _changes(cluster: Cluster, baseline: Fingerprint) -> list[str]:
        if cluster.unexpected_exits():
            return ["a node died"]
        try:
            return differences(baseline, fingerprint(cluster))
        except Exception as exc:  # whatever stops the reading, the cluster is not known as found
            return [f"could not read the cluster: {exc!r}"]

    def give_back(self, lent: Lent, *, passed: bool) -> None:
        """The check that borrowed ``lent`` is over: keep the cluster when it passed and the
        cluster is as it was lent, else close it; never raises."""
        self._out = None
        if lent.started.cluster is None or lent.started.error is not None or lent.baseline is None:
            self._release(lent)  # it never started, or never settled: never shared
            return
        if not passed:
            self._refuse(lent, "the check did not pass", [])
            return
        changed = self._changes(lent.started.cluster, lent.baseline)
        if changed:
            self._refuse(lent, f"changed by {lent.used_by[-1]}", changed)
            return
        if self._idle is not None:  # cannot happen with one check at a time; never keep two
            self._release(lent)
            return
        self._idle = lent

    def _refuse(self, lent: Lent, why: str, changed: list[str]) -> None:
        with timeline.span("cluster-share-refused", why=why, changed=changed[:5]):
            if changed:
                log.warning(
                    "cluster in %s not shared any more: %s:\n  %s",
                    lent.started.chroot,
                    why,
                    "\n  ".join(changed),
                )
            self._release(lent)

    def _release(self, lent: Lent) -> None:
        if lent.started.cluster is not None:
            lent.started.cluster.close()
        with timeline.span("chroot-delete"), contextlib.suppress(KazooException):
            delete_tree(self._admin, lent.started.chroot)

    def close(self) -> None:
        """End of the session: close the idle cluster (and one still lent, which cannot be)."""
        for lent in (self._idle, self._out):
            if lent is not None:
                self._release(lent)
        self._idle = self._out = None
