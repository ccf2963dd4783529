"""What the operating system says about a cluster's node processes (for tests that close clusters)."""

from __future__ import annotations

from pathlib import Path

from cluster.cluster import Cluster


def pids(cluster: Cluster) -> list[int]:
    """The pids of the cluster's node processes that were started."""
    return [n.proc.pid for n in cluster.nodes.values() if n.proc is not None and n.proc.pid is not None]


def alive(pid: int) -> bool:
    """``pid`` is a process that has not exited (a zombie counts as exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
