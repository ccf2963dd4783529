"""LOGDIR-5: a failed log dir on a broker (ring: integration tests, plus log manager unit tests).

A node with two `log.dirs` hosts partitions in both; one dir is made to fail by removing it and
putting a regular file at its path (the node's periodic health check, ~1 s, finds it). Checked:
the exact `/log_dir_event_notification/log_dir_event_<seq>` znode, KAFKA_STORAGE_ERROR (56) for
the failed dir's partitions while the other dir keeps working, the halt when every dir failed,
and, with the controller component running on a 2-node cluster, that the controller probes the
broker, moves leaderships off the failed dir and deletes the notification.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

from kafkawire.states import TopicPartition
from reference_controller import zkdata
from reference_controller.node.log_dir_failure import KafkaStorageError, LogDirFailureChannel
from reference_controller.node.log_manager import LogManager
from tests.node.helpers import (
    NodeFactory,
    NodeProcess,
    PartitionSpec,
    leader_and_isr,
    stop_replica,
    update_metadata,
)
from tests.polling import wait_for

BROKER_ONLY = {"reference.controller.enable": "false"}
EVENT_JSON = b'{"version":1,"broker":1,"event":1}'
KAFKA_STORAGE_ERROR = 56


def _two_dirs(factory: NodeFactory, broker_id: int) -> tuple[Path, Path, dict[str, str]]:
    home = factory.root / f"node{broker_id}"
    d1, d2 = home / "d1", home / "d2"
    return d1, d2, {"log.dirs": f"{d1},{d2}"}


def _fail(d: Path) -> None:
    shutil.rmtree(d)
    d.write_text("not a log dir\n", encoding="utf-8")


def _events(zk: KazooClient) -> dict[str, bytes]:
    names = zk.get_children(zkdata.LOG_DIR_EVENT_NOTIFICATION)
    return {n: zk.get(zkdata.log_dir_event_path(n))[0] for n in names}


def _errors(response: Any) -> dict[tuple[str, int], int]:
    return {(str(e.topic_name), int(e.partition_index)): int(e.error_code) for e in response.partition_errors}


def _where(dirs: tuple[Path, Path], topic: str) -> dict[int, Path]:
    return {
        int(p.name.rsplit("-", 1)[1]): d for d in dirs for p in d.iterdir() if p.name.startswith(f"{topic}-")
    }


# ---- broker only: the test plays the controller ----------------------------------------------
@pytest.mark.integration
def test_failed_dir_notifies_and_answers_storage_error_while_the_other_dir_works(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    d1, d2, dirs = _two_dirs(node_factory, 1)
    node = node_factory.start(1, {**BROKER_ONLY, **dirs})
    address = node.endpoint(zk_client)
    specs = [PartitionSpec("ld", p, leader=1, leader_epoch=0, isr=(1,), replicas=(1,)) for p in range(4)]
    assert int(update_metadata(address, {1: address}, specs, controller_id=1).error_code) == 0
    assert set(_errors(leader_and_isr(address, specs)).values()) == {0}
    where = _where((d1, d2), "ld")
    assert sorted(where.values()).count(d1) == 2, where  # least-loaded placement: two per dir
    failed = sorted(p for p, d in where.items() if d == d1)
    kept = sorted(p for p, d in where.items() if d == d2)
    assert _events(zk_client) == {}

    _fail(d1)
    events: Any = wait_for(lambda: _events(zk_client), 15, "a log dir event notification")
    assert list(events.values()) == [EVENT_JSON]
    assert next(iter(events)).startswith(zkdata.LOG_DIR_EVENT_PREFIX)
    wait_for(lambda: "Stopped serving replicas in dir" in node.read("server.log"), 10, "handler done")
    server_log = node.read("server.log")
    assert f"Stopping serving replicas in dir {d1}" in server_log
    assert "ERROR" in server_log
    assert f"log dir {d1}" in server_log

    bump = [PartitionSpec("ld", p, leader=1, leader_epoch=1, isr=(1,), replicas=(1,)) for p in range(4)]
    errors = _errors(leader_and_isr(address, bump))
    assert errors == {("ld", p): KAFKA_STORAGE_ERROR if p in failed else 0 for p in range(4)}
    for p in kept:  # the healthy dir keeps serving: the leader epoch checkpoint was written
        assert (d2 / f"ld-{p}" / "leader-epoch-checkpoint").read_text(encoding="utf-8") == "0\n1\n1 0\n"
    # a new partition: not new ⇒ 56 while a dir is offline; new ⇒ created in the online dir
    more = [
        PartitionSpec("ld2", 0, leader=1, leader_epoch=0, isr=(1,), replicas=(1,), is_new=False),
        PartitionSpec("ld2", 1, leader=1, leader_epoch=0, isr=(1,), replicas=(1,), is_new=True),
    ]
    assert _errors(leader_and_isr(address, more)) == {("ld2", 0): KAFKA_STORAGE_ERROR, ("ld2", 1): 0}
    assert (d2 / "ld2-1").is_dir()
    assert not (d2 / "ld2-0").exists()
    deleted = _errors(stop_replica(address, [("ld", failed[0]), ("ld", kept[0])], delete=True))
    assert deleted == {("ld", failed[0]): KAFKA_STORAGE_ERROR, ("ld", kept[0]): 0}
    assert d1.is_file()  # nothing was (re)created at the failed dir's path
    assert len(_events(zk_client)) == 1  # one notification per failed dir

    node.signal(15)
    assert node.wait(30) == 0, node.stderr()
    assert (d2 / ".kafka_cleanshutdown").exists()
    assert "0\n2\n" in (d2 / "replication-offset-checkpoint").read_text(encoding="utf-8")


@pytest.mark.integration
def test_all_log_dirs_failed_halts_the_broker_without_notification(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    node = node_factory.start(1, BROKER_ONLY)
    node.endpoint(zk_client)
    _fail(node.data_dir)
    assert node.wait(30) == 1, node.stderr()
    assert "Shutdown broker because all log dirs in" in node.read("server.log")
    assert _events(zk_client) == {}
    wait_for(lambda: not zk_client.exists(zkdata.broker_path(1)), 10, "/brokers/ids/1 gone")


@pytest.mark.integration
def test_ibp_before_1_0_halts_on_the_first_failed_dir(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    d1, _, dirs = _two_dirs(node_factory, 1)
    node = node_factory.start(1, {**BROKER_ONLY, **dirs, "inter.broker.protocol.version": "0.11.0"})
    node.endpoint(zk_client)
    _fail(d1)
    assert node.wait(30) == 1, node.stderr()
    assert f"Halting broker because dir {d1} is offline" in node.read("server.log")
    assert _events(zk_client) == {}


# ---- with the controller component -------------------------------------------------------------
def _state(zk: KazooClient, topic: str, p: int) -> zkdata.LeaderAndIsr:
    path = zkdata.partition_state_path(topic, p)
    data, stat = zk.get(path)
    return zkdata.decode_partition_state(data, stat.version, path).leader_and_isr


def _has_dirs(dirs: tuple[Path, Path], topic: str, n: int) -> Callable[[], bool]:
    return lambda: len(_where(dirs, topic)) == n


def _led_by(zk: KazooClient, tp: tuple[str, int], leader: int) -> Callable[[], bool]:
    def check() -> bool:
        s = _state(zk, *tp)
        return s.leader == leader and s.isr == (leader,)

    return check


def _client_sees(admin: AdminClient, topic: str, partitions: list[int], leader: int) -> Any:
    md = admin.list_topics(timeout=10)
    return md if all(md.topics[topic].partitions[p].leader == leader for p in partitions) else None


def _replicas(zk: KazooClient, p: int) -> tuple[int, ...]:
    return zkdata.decode_topic("lf", zk.get(zkdata.topic_path("lf"))[0]).partitions[p].replicas


@pytest.mark.integration
def test_controller_moves_partitions_off_the_failed_dir(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    nodes: list[NodeProcess] = []
    layout: dict[int, tuple[Path, Path]] = {}
    for bid in (1, 2):
        d1, d2, dirs = _two_dirs(node_factory, bid)
        layout[bid] = (d1, d2)
        nodes.append(node_factory.start(bid, dirs))
    addresses = [n.endpoint(zk_client) for n in nodes]
    wait_for(lambda: zk_client.exists(zkdata.CONTROLLER), 20, "/controller")
    admin = AdminClient({"bootstrap.servers": ",".join(f"{h}:{p}" for h, p in addresses)})
    wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == 2, 20, "2 brokers")
    admin.create_topics([NewTopic("lf", num_partitions=4, replication_factor=2)])["lf"].result(timeout=30)
    for bid in (1, 2):
        wait_for(_has_dirs(layout[bid], "lf", 4), 15, f"4 partition dirs on broker {bid}")
    wait_for(lambda: all(len(_state(zk_client, "lf", p).isr) == 2 for p in range(4)), 15, "full ISRs")
    leaders = {p: _state(zk_client, "lf", p).leader for p in range(4)}
    # the victim: a broker dir holding a partition that broker leads
    victim, bad = next(
        (bid, d) for bid in (1, 2) for p, d in sorted(_where(layout[bid], "lf").items()) if leaders[p] == bid
    )
    where = _where(layout[victim], "lf")
    moved = sorted(p for p, d in where.items() if d == bad)
    stays = sorted(p for p, d in where.items() if d != bad and leaders[p] == victim)
    other = 3 - victim
    _fail(bad)
    for p in moved:
        wait_for(_led_by(zk_client, ("lf", p), other), 20, f"lf-{p} led by {other} with ISR [{other}]")
    for p in stays:
        assert _state(zk_client, "lf", p).leader == victim
    wait_for(lambda: "Stopped serving replicas in dir" in nodes[victim - 1].read("server.log"), 10, "handled")
    wait_for(lambda: _events(zk_client) == {}, 20, "notification deleted by the controller")
    probes = [
        e
        for e in nodes[victim - 1].journal()
        if e["api"] == "LeaderAndIsr" and any(x["error_code"] == KAFKA_STORAGE_ERROR for x in e["partitions"])
    ]
    assert probes, "the controller's LeaderAndIsr probe answered KAFKA_STORAGE_ERROR"
    assert {(x["topic"], x["partition"]) for x in probes[0]["partitions"] if x["error_code"] == 56} >= {
        ("lf", p) for p in moved
    }
    md = wait_for(lambda: _client_sees(admin, "lf", moved, other), 10, f"clients see leader {other}")
    assert all(list(md.topics["lf"].partitions[p].replicas) == list(_replicas(zk_client, p)) for p in moved)


# ---- journal -----------------------------------------------------------------------------------
def _endpoint(host: str, port: int) -> dict[str, Any]:
    return {"listener": "PLAINTEXT", "host": host, "port": port, "security_protocol": "PLAINTEXT"}


@pytest.mark.integration
def test_journal_records_live_brokers_and_live_leaders(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    node = node_factory.start(1, BROKER_ONLY)
    host, port = node.endpoint(zk_client)
    spec = PartitionSpec("j", 0, leader=1, leader_epoch=0, isr=(1,), replicas=(1, 2))
    update_metadata((host, port), {1: (host, port), 2: ("127.0.0.1", 1)}, [spec], controller_id=1)
    leader_and_isr((host, port), [spec], leaders=[(1, host, port)])
    wait_for(lambda: len(node.journal()) == 2, 10, "two journal lines")
    um, lai = node.journal()
    assert um["api"] == "UpdateMetadata"
    assert um["live_brokers"] == [
        {"id": 1, "endpoints": [_endpoint(host, port)], "rack": None},
        {"id": 2, "endpoints": [_endpoint("127.0.0.1", 1)], "rack": None},
    ]
    assert "live_leaders" not in um
    assert lai["api"] == "LeaderAndIsr"
    assert lai["live_leaders"] == [{"id": 1, "host": host, "port": port}]
    assert "live_brokers" not in lai


# ---- log manager units -------------------------------------------------------------------------
@pytest.mark.unit
def test_log_manager_io_errors_report_the_dir_once_and_offline_dirs_are_left_alone(tmp_path: Path) -> None:
    d1, d2 = tmp_path / "a", tmp_path / "b"
    channel = LogDirFailureChannel()
    lm = LogManager((d1, d2), 1, 0, channel)
    lm.startup("cid")
    _fail(d1)
    lm.checkpoint()  # the write to d1 fails: reported to the channel
    assert channel.offline == {d1}
    log = lm.get_or_create_log(
        TopicPartition("t", 0), is_new=True
    )  # d1 (not yet handled) fails again, d2 is used
    assert log.dir.parent == d2
    assert channel._queue.qsize() == 1  # each dir is queued once
    lm.checkpoint()  # skips the failed dir
    assert lm.handle_log_dir_failure(d1)
    assert lm.live_log_dirs == [d2]
    with pytest.raises(KafkaStorageError, match="are offline"):
        lm.get_or_create_log(TopicPartition("t", 1), is_new=False)
    assert lm.get_or_create_log(TopicPartition("t", 1), is_new=True).dir.parent == d2
    lm.shutdown()
    assert d1.is_file()
    assert (d2 / ".kafka_cleanshutdown").exists()
    assert not lm.handle_log_dir_failure(d2)  # the last dir: the broker must halt
