"""What a failing check saw: cluster evidence for reports and allure (conformance ring).

:func:`cluster_evidence` gathers, read-only: a summary (controller, epoch, registrations,
processes), every znode under the chroot with its data and version, the chroot's transaction-log
records, the controller requests the proxies recorded, each node's ZooKeeper request journal, and
each node's server.log and state-change.log tails. The plugin adds these as report sections and
allure attachments when a check fails; checks add their own focused observations to assertion
messages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import allure
import pytest
from kazoo.exceptions import NoNodeError

from cluster.cluster import Cluster

__all__ = ["EVIDENCE", "add_evidence", "attach", "cluster_evidence", "dump_tree", "fmt_records"]

EVIDENCE = pytest.StashKey[list[Callable[[], dict[str, str]]]]()


def add_evidence(item: pytest.Item, provider: Callable[[], dict[str, str]]) -> None:
    item.stash.setdefault(EVIDENCE, []).append(provider)


def dump_tree(cluster: Cluster, path: str = "/", limit: int = 400) -> str:
    lines: list[str] = []

    def walk(p: str) -> None:
        if len(lines) >= limit:
            return
        try:
            data, stat = cluster.zk.get(p)
            children = sorted(cluster.zk.get_children(p))
        except NoNodeError:
            return
        shown = "null" if data is None else data.decode(errors="replace")[:300]
        eph = " ephemeral" if stat.ephemeralOwner else ""
        lines.append(f"{p} v{stat.version} czxid=0x{stat.czxid:x}{eph} = {shown}")
        for c in children:
            walk(f"{p.rstrip('/')}/{c}")

    walk(path)
    return "\n".join(lines)


def fmt_records(records: Sequence[object], last: int = 200) -> str:
    return "\n".join(r.describe() for r in records[-last:])  # type: ignore[attr-defined]


def cluster_evidence(cluster: Cluster) -> dict[str, str]:
    out: dict[str, str] = {}
    with contextlib.suppress(Exception):
        out["cluster summary"] = cluster.summary()
    with contextlib.suppress(Exception):
        out["znodes"] = dump_tree(cluster)
    with contextlib.suppress(Exception):
        out["transaction log (chroot)"] = fmt_records(list(cluster.history()))
    if cluster.journal is not None:
        out["controller requests (proxy)"] = "\n".join(
            r.describe() for r in cluster.journal.requests()[-150:]
        )
    with contextlib.suppress(Exception):
        out.update(cluster.zk_evidence())
    for bid in cluster.broker_ids:
        out[f"node {bid} server.log"] = cluster.log_tail(bid, "server", 80)
        out[f"node {bid} state-change.log"] = cluster.log_tail(bid, "state_change", 80)
    return out


def attach(name: str, text: str) -> None:
    """Attach text to the running allure test (no-op without allure)."""
    with contextlib.suppress(Exception):
        allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)
