"""LOGDIR checks: broker-side partition directories (spec §5.4, §6.4)."""

from __future__ import annotations

import pytest

from cluster import admin
from cluster.admin import encode
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.scenarios import create_topic, journal, wait_state
from probes.logdirs import LogDirScan, PartitionDir, scan_log_dirs
from probes.request_proxy import ControllerRequest

pytestmark = pytest.mark.conformance


def _dirs(cluster: Cluster, bid: int) -> dict[tuple[str, int], PartitionDir]:
    out: dict[tuple[str, int], PartitionDir] = {}
    for scan in scan_log_dirs(list(cluster.nodes[bid].log_dirs)):
        out.update(scan.live())
    return out


@pytest.mark.behaviour("LOGDIR-1", "LOGDIR-2", "RSM-3")
def test_partition_dirs_on_exactly_the_replicas(cluster: Cluster) -> None:
    cluster.wait_controller()
    create_topic(cluster, "ld", {0: [1, 2]})
    for bid in (1, 2):

        def on(b: int = bid) -> PartitionDir | None:
            return _dirs(cluster, b).get(("ld", 0))

        d = wait_for(on, cluster.deadline(10), f"ld-0 on broker {bid}")
        assert d.has_segment_files, f"broker {bid} ld-0 files: {sorted(d.files)}"
    assert ("ld", 0) not in _dirs(cluster, 3), "non-replica broker 3 created ld-0"
    wait_for(
        lambda: _dirs(cluster, 1)[("ld", 0)].leader_epochs() == [(0, 0)],
        cluster.deadline(10),
        lambda: f"leader-epoch-checkpoint of the leader: {_dirs(cluster, 1)[('ld', 0)].leader_epochs()}",
    )


@pytest.mark.behaviour("LOGDIR-3")
def test_several_log_dirs_least_loaded(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(log_dirs_per_node=2)
    cluster.wait_controller()
    create_topic(cluster, "multi", {p: [1] for p in range(4)})

    def four_dirs() -> list[LogDirScan] | None:
        scans = scan_log_dirs(list(cluster.nodes[1].log_dirs))
        return scans if sum(len(x.live()) for x in scans) == 4 else None

    scans = wait_for(four_dirs, cluster.deadline(10), "4 partition dirs")
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
def test_failed_log_dir_moves_its_partitions_offline(cluster_factory: ClusterFactory) -> None:
    """A real log-dir failure on broker 2, announced the way a Kafka broker announces it.

    Broker 2 leads ``ev-0`` ([2, 1]) and follows ``ev-1`` ([1, 2]). Its only log dir is made
    unusable (renamed away, a plain file put in its place, so that no write below it can
    succeed), then ``/log_dir_event_notification/log_dir_event_<seq>`` = ``{"version":1,
    "broker":2,"event":1}`` is created — what ``LogDirFailureChannel`` → ``ReplicaManager``
    writes (spec §6.4). Kafka's controller deletes the notification, sends broker 2 a
    LeaderAndIsr for all its replicas (isNew=false) as a probe; the broker answers
    KAFKA_STORAGE_ERROR (56) for replicas on the failed dir; the controller moves those replicas
    OfflineReplica: ``ev-0`` gets leader 1 (it was led by 2), ``ev-1`` drops 2 from its ISR.

    A target whose broker does not notice the failed directory by itself answers the probe
    without error: then only the controller side (the probe) can pass and the check fails at the
    ZooKeeper outcome — which is what the behaviour is about.
    """
    cluster = cluster_factory(start=False)
    cluster.start([3])
    assert cluster.wait_controller() == 3
    cluster.start([1, 2])
    create_topic(cluster, "ev", {0: [2, 1], 1: [1, 2]})
    wait_state(cluster, "ev", 0, lambda s: s["isr"] == [2, 1], "ISR [2,1]")
    wait_state(cluster, "ev", 1, lambda s: s["isr"] == [1, 2], "ISR [1,2]")
    before = {p: (cluster.partition_state("ev", p) or {})["leader_epoch"] for p in (0, 1)}
    (log_dir,) = cluster.nodes[2].log_dirs
    log_dir.rename(log_dir.with_name(log_dir.name + ".failed"))
    log_dir.write_text("this log dir has failed\n", encoding="utf-8")
    mark = journal(cluster).mark()
    note = cluster.zk.create(
        "/log_dir_event_notification/log_dir_event_",
        encode({"version": 1, "broker": 2, "event": 1}),
        sequence=True,
    )
    wait_for(lambda: not cluster.zk.exists(note), cluster.deadline(10), f"{note} deleted by the controller")

    def probe() -> list[ControllerRequest]:
        return [
            r
            for r in journal(cluster).requests(api="LeaderAndIsr", dest=2, since=mark)
            if {(p.topic, p.partition) for p in r.partitions} >= {("ev", 0), ("ev", 1)}
        ]

    (first, *_) = wait_for(probe, cluster.deadline(10), lambda: journal(cluster).dump(mark))
    assert all(p.is_new is False for p in first.partitions), f"probe must be isNew=false: {first.describe()}"
    st0 = wait_state(cluster, "ev", 0, lambda s: s["leader"] == 1, "leader 1 after 2's log dir failed")
    assert (st0["isr"], st0["leader_epoch"]) == ([1], before[0] + 1), st0
    st1 = wait_state(cluster, "ev", 1, lambda s: 2 not in s["isr"], "2 leaves the ISR of ev-1")
    assert (st1["leader"], st1["isr"], st1["leader_epoch"]) == (1, [1], before[1] + 1), st1
