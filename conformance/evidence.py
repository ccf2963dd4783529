"""What a failing check saw: cluster evidence for files, reports and allure (conformance ring).

:func:`cluster_evidence` gathers, read-only: a summary (controller, epoch, registrations,
processes), every znode under the chroot with its data and version, the chroot's transaction-log
records, the controller requests the proxies recorded, each node's ZooKeeper request journal, and
each node's server.log, state-change.log and process-output tails. When a check fails the plugin
writes it with the failure to ``<results dir>/evidence/<check>.txt`` (:func:`write_evidence_file`)
and attaches it to allure; the console gets one line (:func:`failure_line`). Checks add their own
focused observations to assertion messages.

:func:`target_error_of` tells a target error from a behaviour failure: the check ended with a
:class:`~cluster.startup.TargetNodeError` (a node could not start, exited before registering or
never registered), or a node of one of its clusters died while it ran without the check making it
exit.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import allure
import pytest
from kazoo.exceptions import NoNodeError

from cluster.cluster import Cluster
from cluster.startup import TargetNodeError

__all__ = [
    "CLUSTERS",
    "EVIDENCE",
    "add_evidence",
    "attach",
    "cluster_evidence",
    "dump_tree",
    "evidence_path",
    "failure_line",
    "fmt_records",
    "target_error_of",
    "write_evidence_file",
]

EVIDENCE = pytest.StashKey[list[Callable[[], dict[str, str]]]]()
#: the clusters a check made (to find nodes that died while it ran)
CLUSTERS = pytest.StashKey[list[Cluster]]()


def add_evidence(item: pytest.Item, provider: Callable[[], dict[str, str]]) -> None:
    item.stash.setdefault(EVIDENCE, []).append(provider)


def target_error_of(item: pytest.Item, exc: BaseException | None) -> str | None:
    """One line when the failure is a target error (module docstring), else ``None``."""
    if isinstance(exc, TargetNodeError):
        return exc.summary()
    died = [e for cluster in item.stash.get(CLUSTERS, []) for e in cluster.unexpected_exits()]
    if not died:
        return None
    more = f" (and {len(died) - 1} more node(s))" if len(died) > 1 else ""
    return died[0].summary() + more


def failure_line(report: pytest.TestReport) -> str:
    """The failure in one line: the exception's message (its first line), else the last line."""
    crash = getattr(report.longrepr, "reprcrash", None)
    lines = [ln.strip() for ln in str(getattr(crash, "message", "") or "").strip().splitlines() if ln.strip()]
    if not lines:
        return (report.longreprtext.strip().splitlines() or [""])[-1]
    # a wait that timed out says on its second line what it last saw: the most telling part
    last_seen = [ln for ln in lines[1:] if ln.startswith("last predicate result:")]
    return " | ".join([lines[0], *last_seen])[:400]


def evidence_path(results_dir: Path, nodeid: str) -> Path:
    """``<results>/evidence/<check>.txt`` for a pytest node id (a file name safe on any system)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.removeprefix("conformance/checks/")).strip("_")
    return results_dir / "evidence" / f"{name[:180]}.txt"


def write_evidence_file(  # noqa: PLR0917 - the parts of one report, each needed
    results_dir: Path,
    nodeid: str,
    ids: Sequence[str],
    report: pytest.TestReport,
    sections: Mapping[str, str],
    target_error: str | None,
) -> Path:
    """Everything a failing check has to say, in one file: the verdict line, the whole failure
    (assertion and traceback), then each evidence section."""
    path = evidence_path(results_dir, nodeid)
    path.parent.mkdir(parents=True, exist_ok=True)
    kind = (
        "TARGET ERROR" if target_error else ("FAILED" if report.when == "call" else f"ERROR in {report.when}")
    )
    rule = "=" * 100
    parts = [
        f"{kind}: {nodeid}",
        f"behaviour IDs: {', '.join(ids) or '(none)'}",
        f"why: {target_error or failure_line(report)}",
        "",
        rule,
        "the failure",
        rule,
        report.longreprtext,
    ]
    for name, text in sections.items():
        parts += ["", rule, name, rule, text]
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


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
    for bid, node in cluster.nodes.items():
        out[f"node {bid} server.log"] = cluster.log_tail(bid, "server", 80, "broker")
        out[f"node {bid} state-change.log"] = cluster.log_tail(bid, "state_change", 80, "broker")
        out[f"node {bid} output (stdout and stderr)"] = cluster.log_tail(bid, "stdout", 40, "broker")
        if node.split:
            for kind in ("server", "state_change", "stdout"):
                out[f"node {bid} controller process {kind}"] = cluster.log_tail(bid, kind, 60, "controller")
    return out


def attach(name: str, text: str) -> None:
    """Attach text to the running allure test (no-op without allure)."""
    with contextlib.suppress(Exception):
        allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)
