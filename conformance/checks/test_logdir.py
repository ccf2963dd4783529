"""LOGDIR checks: broker-side partition directories (spec §5.4, §6.4)."""

from __future__ import annotations

import pytest

from conformance import admin
from conformance.admin import encode
from conformance.cluster import Cluster, wait_for
from conformance.conftest import ClusterFactory
from conformance.scenarios import create_topic, journal
from fixtures.probes.logdirs import scan_log_dirs

pytestmark = pytest.mark.conformance


def _dirs(cluster: Cluster, bid: int) -> dict[tuple[str, int], object]:
    out: dict[tuple[str, int], object] = {}
    for scan in scan_log_dirs(list(cluster.nodes[bid].log_dirs)):
        out.update(scan.live())
    return out


@pytest.mark.behaviour("LOGDIR-1", "LOGDIR-2", "RSM-3")
def test_partition_dirs_on_exactly_the_replicas(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "ld", {0: [1, 2]})
    for bid in (1, 2):
        d = wait_for(
            lambda b=bid: _dirs(cluster, b).get(("ld", 0)), cluster.deadline(10), f"ld-0 on broker {bid}"
        )
        assert d.has_segment_files, f"broker {bid} ld-0 files: {sorted(d.files)}"  # type: ignore[attr-defined]
    assert ("ld", 0) not in _dirs(cluster, 3), "non-replica broker 3 created ld-0"
    leader = _dirs(cluster, 1)[("ld", 0)]
    wait_for(
        lambda: leader.leader_epochs() == [(0, 0)],
        cluster.deadline(10),  # type: ignore[attr-defined]
        lambda: f"leader-epoch-checkpoint of the leader: {leader.leader_epochs()}",
    )  # type: ignore[attr-defined]


@pytest.mark.behaviour("LOGDIR-3")
def test_several_log_dirs_least_loaded(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(log_dirs_per_node=2)
    cluster.wait_controller()
    create_topic(cluster, "multi", {p: [1] for p in range(4)})
    scans = wait_for(
        lambda: (
            (s := scan_log_dirs(list(cluster.nodes[1].log_dirs))) and sum(len(x.live()) for x in s) == 4 and s
        ),
        cluster.deadline(10),
        "4 partition dirs",
    )
    assert sorted(len(s.live()) for s in scans) == [2, 2], (
        f"not least-loaded: {[sorted(s.live()) for s in scans]}"
    )
    for s in scans:
        assert {
            "meta.properties",
            "recovery-point-offset-checkpoint",
            "log-start-offset-checkpoint",
            "replication-offset-checkpoint",
        } <= s.files, f"{s.root}: {sorted(s.files)}"


@pytest.mark.behaviour("LOGDIR-4", "DELETE-2")
def test_deleted_partition_dir_renamed_then_removed(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "del", {0: [1, 2]})
    wait_for(lambda: ("del", 0) in _dirs(cluster, 2), cluster.deadline(10), "del-0 on broker 2")
    admin.delete_topic_zk(cluster, "del")
    seen: set[str] = set()

    def gone() -> bool:
        for s in scan_log_dirs(list(cluster.nodes[2].log_dirs)):
            seen.update(p.path.name for p in s.deleted())
        return all(("del", 0) not in _dirs(cluster, b) for b in (1, 2)) and not any(
            s.deleted() for b in (1, 2) for s in scan_log_dirs(list(cluster.nodes[b].log_dirs))
        )

    wait_for(gone, cluster.deadline(20), lambda: f"del-0 dirs removed; saw {seen}", poll_s=0.02)
    assert any(n.startswith("del-0.") and n.endswith("-delete") for n in seen), (
        f"no -delete rename seen: {seen}"
    )
    for path in ("/brokers/topics/del", "/config/topics/del", "/admin/delete_topics/del"):
        assert not cluster.zk.exists(path), f"{path} left behind"


@pytest.mark.behaviour("LOGDIR-5")
def test_log_dir_event_probes_the_broker(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "ev", {0: [2, 1]})
    mark = journal(cluster).mark()
    note = cluster.zk.create(
        "/log_dir_event_notification/log_dir_event_",
        encode({"version": 1, "broker": 2, "event": 1}),
        sequence=True,
    )
    wait_for(lambda: not cluster.zk.exists(note), cluster.deadline(10), f"{note} deleted")
    wait_for(
        lambda: [
            r
            for r in journal(cluster).requests(api="LeaderAndIsr", dest=2, since=mark)
            if any(p.topic == "ev" for p in r.partitions)
        ],
        cluster.deadline(10),
        lambda: journal(cluster).dump(mark),
    )
