"""KazooZkPort against a real ZooKeeper: fencing, null data, pipelining order, watches, batching."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from harness.zookeeper import ZooKeeperServer
from probes.history import ChrootView
from probes.txnlog import read_txn_log
from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.events import (
    BrokerChange,
    ControllerChange,
    PartitionModifications,
    Reelect,
    Startup,
    TopicChange,
)
from reference_controller.controller.ports import (
    ChildHandler,
    ControllerMovedError,
    CreateOp,
    DeleteOp,
    NodeHandler,
    SetDataOp,
    ZkCode,
    ZkOp,
)
from tests.integration.controller.helpers import EventSink

pytestmark = pytest.mark.integration
EPOCH = "/controller_epoch"


def epoch_at_version(zk: KazooClient, version: int) -> None:
    zk.create(EPOCH, b"0")
    for i in range(version):
        zk.set(EPOCH, str(i + 1).encode())


# ---- fencing ----------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_writes", [False, True])
def test_fenced_write_with_a_stale_epoch_version_raises_controller_moved_and_lands_nothing(
    zk_client: KazooClient, port_factory: Callable[..., KazooZkPort], batch_writes: bool
) -> None:
    epoch_at_version(zk_client, 2)
    port = port_factory(batch_writes)
    ops: list[ZkOp] = [CreateOp("/a", b"1"), CreateOp("/b", None), CreateOp("/c", b"")]
    with pytest.raises(ControllerMovedError, match="Expected zkVersion = 1"):
        port.fenced(ops, epoch_zk_version=1)
    assert [zk_client.exists(p) for p in ("/a", "/b", "/c")] == [None, None, None]


def test_fenced_write_reports_per_op_codes_like_kafka(zk_client: KazooClient, port: KazooZkPort) -> None:
    epoch_at_version(zk_client, 1)
    zk_client.create("/exists", b"x")
    results = port.fenced(
        [CreateOp("/exists", b"y"), CreateOp("/new", b"n"), SetDataOp("/new", b"m", 5),
         SetDataOp("/new", b"m", 0), DeleteOp("/missing")],
        epoch_zk_version=1,
    )  # fmt: skip
    assert [r.code for r in results] == [
        ZkCode.NODEEXISTS,
        ZkCode.OK,
        ZkCode.BADVERSION,
        ZkCode.OK,
        ZkCode.NONODE,
    ]
    assert results[1].created_path == "/new"
    assert results[3].stat is not None
    assert results[3].stat.version == 1
    assert zk_client.get("/new")[0] == b"m"


# ---- null data --------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_writes", [False, True])
def test_create_with_none_stores_real_null_distinct_from_empty(
    zk_client: KazooClient, port_factory: Callable[..., KazooZkPort], batch_writes: bool
) -> None:
    epoch_at_version(zk_client, 0)
    port = port_factory(batch_writes)
    port.fenced([CreateOp("/null", None), CreateOp("/empty", b"")], epoch_zk_version=0)
    port.multi([CreateOp("/multi-null", None)])
    port.create(CreateOp("/plain-null", None))
    for path in ("/null", "/multi-null", "/plain-null"):
        data, stat = zk_client.get(path)  # kazoo returns None only for wire length -1
        assert (data, stat.dataLength) == (None, 0), path
    assert zk_client.get("/empty")[0] == b""
    results = port.get_data(["/null", "/empty", "/absent"])
    assert [(r.data, r.stat is None) for r in results] == [(None, False), (b"", False), (None, True)]


def test_null_data_is_null_in_the_transaction_log(
    zk_server: ZooKeeperServer, zk_client: KazooClient, port: KazooZkPort
) -> None:
    epoch_at_version(zk_client, 0)
    port.fenced([CreateOp("/tl-null", None), CreateOp("/tl-empty", b"")], epoch_zk_version=0)
    view = ChrootView(zk_client.chroot)
    creates = {
        op.path: op.data
        for record in view.filter(read_txn_log(zk_server.txn_log_dir))
        for op in record.txn.ops
        if op.op.startswith("create")
    }
    assert creates["/tl-null"] is None
    assert creates["/tl-empty"] == b""


# ---- pipelining keeps order -------------------------------------------------------------------
@pytest.mark.parametrize(("batch_writes", "batch_size"), [(False, 100), (True, 7)])
def test_pipelined_fenced_writes_land_in_op_order(
    zk_client: KazooClient, port_factory: Callable[..., KazooZkPort], batch_writes: bool, batch_size: int
) -> None:
    epoch_at_version(zk_client, 0)
    zk_client.create("/p", b"")
    zk_client.create("/p/13", b"already")
    port = port_factory(batch_writes, batch_size)
    ops: list[ZkOp] = [CreateOp(f"/p/{i}", None) for i in range(40)]
    results = port.fenced(ops, epoch_zk_version=0)
    assert [r.code for r in results] == [ZkCode.NODEEXISTS if i == 13 else ZkCode.OK for i in range(40)]
    czxids = [zk_client.exists(f"/p/{i}").czxid for i in range(40) if i != 13]
    assert czxids == sorted(czxids)


def test_batching_mode_matches_the_default_mode_results(
    zk_client: KazooClient, port_factory: Callable[..., KazooZkPort]
) -> None:
    epoch_at_version(zk_client, 0)
    default, batched = port_factory(False), port_factory(True, 4)
    outcomes = []
    for root, port in (("/d", default), ("/b", batched)):
        zk_client.create(root, b"")
        zk_client.create(f"{root}/x2", b"")
        ops: list[ZkOp] = [
            *(CreateOp(f"{root}/x{i}", b"%d" % i) for i in range(6)),
            SetDataOp(f"{root}/x1", b"new", 0), SetDataOp(f"{root}/x1", b"stale", 0), DeleteOp(f"{root}/x5"),
        ]  # fmt: skip
        outcomes.append([(r.code, r.stat.version if r.stat else None) for r in port.fenced(ops, 0)])
    assert outcomes[0] == outcomes[1]


# ---- watches ----------------------------------------------------------------------------------
def test_each_handler_kind_maps_its_watch_event(
    zk_client: KazooClient, port: KazooZkPort, events: EventSink
) -> None:
    port.register_node_handler(
        NodeHandler(
            "/controller", on_create=ControllerChange(), on_delete=Reelect(), on_data_change=Startup()
        )
    )
    port.register_child_handler(ChildHandler("/brokers", on_child_change=BrokerChange()))
    zk_client.create("/brokers", b"")
    assert port.exists("/controller") is None  # exists-watch on a missing node
    zk_client.create("/controller", b"1")
    assert events.next() == ControllerChange()
    port.get_data(["/controller"])
    zk_client.set("/controller", b"2")
    assert events.next() == Startup()
    port.exists("/controller")
    zk_client.delete("/controller")
    assert events.next() == Reelect()
    assert port.get_children("/brokers") == []
    zk_client.create("/brokers/1", b"")
    assert events.next() == BrokerChange()
    assert events.drain() == []  # one-shot: nothing re-armed, nothing more


def test_reads_without_a_handler_set_no_watch_and_repeated_reads_fire_once(
    zk_client: KazooClient, port: KazooZkPort, events: EventSink
) -> None:
    zk_client.create("/t", b"")
    port.get_data(["/t"])  # no handler: no watch
    zk_client.set("/t", b"1")
    assert events.drain() == []
    port.register_node_handler(NodeHandler("/t", on_data_change=PartitionModifications("t")))
    for _ in range(3):
        port.get_data(["/t"])
        port.exists("/t")
    zk_client.set("/t", b"2")
    assert events.drain() == [PartitionModifications("t")]


def test_a_handler_unregistered_before_the_watch_fires_enqueues_nothing(
    zk_client: KazooClient, port: KazooZkPort, events: EventSink
) -> None:
    zk_client.create("/topics", b"")
    port.register_child_handler(ChildHandler("/topics", on_child_change=TopicChange()))
    port.get_children("/topics")
    port.unregister_child_handler("/topics")
    zk_client.create("/topics/a", b"")
    assert events.drain() == []


def test_deletion_of_a_child_watched_path_fires_no_child_event(
    zk_client: KazooClient, port: KazooZkPort, events: EventSink
) -> None:
    """Kafka's ZooKeeperClient only calls the node handler on NodeDeleted."""
    zk_client.create("/gone", b"")
    port.register_child_handler(ChildHandler("/gone", on_child_change=TopicChange()))
    port.get_children("/gone")
    zk_client.delete("/gone")
    assert events.drain() == []


def test_deletion_with_data_and_child_watches_on_the_path_fires_one_delete_event(
    zk_client: KazooClient, port: KazooZkPort, events: EventSink
) -> None:
    zk_client.create("/both", b"")
    port.register_node_handler(NodeHandler("/both", on_delete=Reelect()))
    port.register_child_handler(ChildHandler("/both", on_child_change=TopicChange()))
    port.exists("/both")
    port.get_children("/both")
    zk_client.delete("/both")
    assert events.drain() == [Reelect()]
