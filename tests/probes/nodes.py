"""Set-up shared by the probe tests that need real nodes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cluster.cluster import Cluster
from cluster.targets import load_target
from harness.zookeeper import ZooKeeperServer


@contextmanager
def reference_cluster(
    zk_server: ZooKeeperServer, chroot: str, base_dir: Path, broker_ids: tuple[int, ...], **options: Any
) -> Iterator[Cluster]:
    """A cluster of reference nodes on ``zk_server`` under ``chroot`` (closed on the way out)."""
    cluster = Cluster(
        load_target("reference"),
        zk_connect_string=zk_server.connect_string,
        chroot=chroot,
        txn_log_dir=Path(zk_server.txn_log_dir),
        base_dir=base_dir,
        broker_ids=broker_ids,
        four_letter=zk_server.four_letter,
        **options,
    )
    try:
        yield cluster
    finally:
        cluster.close()
