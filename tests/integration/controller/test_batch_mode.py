"""Batching mode of `KazooZkPort` (`reference.controller.zk.batch.writes=true`, not Kafka) on a real
ZooKeeper, observed in its transaction log (ring: tests).

Requirement (issue item 15): batching keeps the order of the writes and their fencing, so a
conformance check accepts both modes. Every multi starts with `check /controller_epoch`; the writes,
flattened out of the multis, are exactly the ops in the order given; a stale epoch fails the batch
with ControllerMovedError and nothing lands; a group that fails on one of its ops (NODEEXISTS on
`partitions/<p>`, MIDCREATE-2) is replayed one op per multi, so every per-op result equals the
default mode's (checked against a default-mode port on a twin chroot); null data stays null.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from harness.zookeeper import ZooKeeperServer
from probes import ChrootView, TxnLogCursor, TxnOp, TxnRecord
from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.ports import (
    ControllerMovedError,
    CreateOp,
    DeleteOp,
    OpResult,
    SetDataOp,
    ZkCode,
    ZkOp,
)
from tests.integration.controller.helpers import EventSink

pytestmark = pytest.mark.integration
EPOCH = "/controller_epoch"
NODEEXISTS = -110
BADVERSION = -103


@dataclass
class Side:
    """One chroot with its own client, port and transaction-log view."""

    zk: KazooClient
    port: KazooZkPort
    chroot: str
    cursor: TxnLogCursor

    def records(self) -> list[TxnRecord]:
        """This chroot's records since the last call, written by this side's session."""
        session = self.zk.client_id[0]
        return [r for r in ChrootView(self.chroot).filter(self.cursor.read()) if r.session_id == session]


@pytest.fixture
def make_side(
    zk_server: ZooKeeperServer, zk_chroot: str, zk_client: KazooClient
) -> Iterator[Callable[..., Side]]:
    """`make(name, batch_writes, batch_size)`: a sub-chroot `<test chroot>/<name>` with its own
    client (so its writes are told apart by session) and `/controller_epoch` at version 1."""
    made: list[Side] = []

    def make(name: str, batch_writes: bool, batch_size: int = 100) -> Side:
        zk_client.ensure_path(f"/{name}")
        chroot = f"{zk_chroot}/{name}"
        zk = KazooClient(hosts=f"{zk_server.connect_string}{chroot}", timeout=10.0)
        zk.start(timeout=15.0)
        zk.create(EPOCH, b"0")
        zk.set(EPOCH, b"1")  # zkVersion 1
        sink = EventSink()
        port = KazooZkPort(
            zk, sink.put, batch_writes, clear_and_put=sink.clear_and_put, batch_size=batch_size
        )
        side = Side(zk, port, chroot, TxnLogCursor.at_end(zk_server.txn_log_dir))
        made.append(side)
        return side

    yield make
    for side in made:
        side.port.close()
        side.zk.stop()
        side.zk.close()


def is_epoch_check(op: TxnOp, version: int) -> bool:
    return (op.op, op.path, op.version) == ("check", EPOCH, version)


def written(records: Sequence[TxnRecord], version: int = 1) -> list[tuple[str, str | None, bytes | None]]:
    """The writes of successful multis, flattened in log order, each multi checked to be fenced."""
    out: list[tuple[str, str | None, bytes | None]] = []
    for r in records:
        assert r.op == "multi", r.describe()
        if r.failed:
            continue
        assert is_epoch_check(r.ops[0], version), r.describe()
        assert all(o.op != "check" for o in r.ops[1:]), r.describe()
        out += [(o.op.removesuffix("2"), o.path, o.data) for o in r.ops[1:]]
    return out


def expected_writes(ops: Sequence[ZkOp]) -> list[tuple[str, str | None, bytes | None]]:
    out: list[tuple[str, str | None, bytes | None]] = []
    for op in ops:
        match op:
            case CreateOp():
                out.append(("create", op.path, op.data))
            case SetDataOp():
                out.append(("setData", op.path, op.data))
            case DeleteOp():
                out.append(("delete", op.path, None))
            case _:
                raise AssertionError(op)
    return out


def summary(results: Sequence[OpResult]) -> list[tuple[ZkCode, str | None, int | None]]:
    return [(r.code, r.created_path, r.stat.version if r.stat else None) for r in results]


def tree(zk: KazooClient, path: str = "/") -> dict[str, tuple[bytes | None, int]]:
    out: dict[str, tuple[bytes | None, int]] = {}
    for child in sorted(zk.get_children(path)):
        sub = f"{path.rstrip('/')}/{child}"
        try:
            data, stat = zk.get(sub)
        except NoNodeError:
            continue
        out[sub] = (data, stat.version)
        out.update(tree(zk, sub))
    return out


def mixed_ops() -> list[ZkOp]:
    """Writes in an order that matters: creates under creates, setData and delete of earlier creates."""
    return [
        CreateOp("/brokers", None),
        CreateOp("/brokers/topics", None),
        CreateOp("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1]}}'),
        CreateOp("/brokers/topics/t/partitions", None),
        CreateOp("/brokers/topics/t/partitions/0", None),
        CreateOp("/brokers/topics/t/partitions/0/state", b'{"leader":1}'),
        SetDataOp("/brokers/topics/t/partitions/0/state", b'{"leader":2}', 0),
        SetDataOp("/brokers/topics/t/partitions/0/state", b'{"leader":3}', 1),
        CreateOp("/admin", b""),
        CreateOp("/admin/x", None),
        DeleteOp("/admin/x"),
    ]


# ---- order and fencing ------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_size", [1, 4, 100])
def test_writes_land_in_op_order_each_multi_behind_one_epoch_check(
    make_side: Callable[..., Side], batch_size: int
) -> None:
    side = make_side("b", True, batch_size)
    ops = mixed_ops()
    results = side.port.fenced(ops, epoch_zk_version=1)
    assert [r.code for r in results] == [ZkCode.OK] * len(ops)
    records = side.records()
    assert written(records) == expected_writes(ops)
    assert not any(r.failed for r in records)
    sizes = [len(r.ops) - 1 for r in records]  # one multi per group of batch_size ops
    whole, rest = divmod(len(ops), batch_size)
    assert sizes == [batch_size] * whole + ([rest] if rest else [])
    assert all(sum(o.op == "check" for o in r.ops) == 1 for r in records)


def test_a_stale_epoch_fails_the_whole_batch_and_nothing_lands(make_side: Callable[..., Side]) -> None:
    side = make_side("b", True, 4)
    side.zk.set(EPOCH, b"2")  # another controller moved the epoch to zkVersion 2
    with pytest.raises(ControllerMovedError, match="Expected zkVersion = 1"):
        side.port.fenced(mixed_ops(), epoch_zk_version=1)
    assert list(tree(side.zk)) == [EPOCH]
    records = [r for r in side.records() if r.op == "multi"]
    assert len(records) == 1, [r.describe() for r in records]  # no later group is sent
    assert records[0].failed
    assert records[0].error_codes[0] == BADVERSION  # the check failed, so every op rolled back


# ---- fallback per op ----------------------------------------------------------------------------
def midcreate_ops() -> list[ZkOp]:
    """MIDCREATE-2: partitions/1 exists already; Kafka tolerates NODEEXISTS per op."""
    base = "/brokers/topics/t/partitions"
    return [
        CreateOp(f"{base}/0", None),
        CreateOp(f"{base}/1", None),
        CreateOp(f"{base}/2", None),
        CreateOp(f"{base}/0/state", b'{"leader":1}'),
        CreateOp(f"{base}/1/state", b'{"leader":1}'),
        CreateOp(f"{base}/2/state", b'{"leader":1}'),
        SetDataOp(f"{base}/0/state", b'{"leader":2}', 0),
        SetDataOp(f"{base}/0/state", b'{"leader":3}', 0),  # BADVERSION: the previous op moved it
        DeleteOp("/missing"),  # NONODE
        CreateOp("/after", None),
    ]


@pytest.mark.parametrize("batch_size", [3, 4, 100])
def test_a_group_failing_on_an_op_falls_back_per_op_with_the_default_modes_results(
    make_side: Callable[..., Side], batch_size: int
) -> None:
    default, batched = make_side("default", False), make_side("batched", True, batch_size)
    ops = midcreate_ops()
    outcomes = []
    for side in (default, batched):
        side.zk.ensure_path("/brokers/topics/t/partitions/1")
        side.records()  # skip the set-up writes
        outcomes.append(summary(side.port.fenced(ops, epoch_zk_version=1)))
    assert outcomes[0] == outcomes[1]
    assert [code for code, _, _ in outcomes[1]] == [
        ZkCode.OK, ZkCode.NODEEXISTS, ZkCode.OK, ZkCode.OK, ZkCode.OK, ZkCode.OK,
        ZkCode.OK, ZkCode.BADVERSION, ZkCode.NONODE, ZkCode.OK,
    ]  # fmt: skip
    assert tree(default.zk) == tree(batched.zk)

    default_records, batched_records = default.records(), batched.records()
    assert written(batched_records) == written(default_records)  # same writes, same order
    assert all(len(r.ops) == 2 for r in default_records)
    # every failed batched multi is a group of several ops, replayed at once one op per multi
    for i, r in enumerate(batched_records):
        if not r.failed or len(r.ops) == 2:
            continue
        group = len(r.ops) - 1
        replay = batched_records[i + 1 : i + 1 + group]
        assert [len(x.ops) for x in replay] == [2] * group, [x.describe() for x in batched_records]
    failed_groups = [r for r in batched_records if r.failed and len(r.ops) > 2]
    assert failed_groups, [r.describe() for r in batched_records]
    assert NODEEXISTS in failed_groups[0].error_codes


def test_a_failing_group_does_not_stop_later_groups_from_batching(make_side: Callable[..., Side]) -> None:
    side = make_side("b", True, 3)
    side.zk.create("/p", b"")
    side.zk.create("/p/4", b"already")
    side.zk.create("/p/9", b"already")
    side.records()
    ops: list[ZkOp] = [CreateOp(f"/p/{i}", b"%d" % i) for i in range(10)]
    results = side.port.fenced(ops, epoch_zk_version=1)
    assert [r.code for r in results] == [ZkCode.NODEEXISTS if i in (4, 9) else ZkCode.OK for i in range(10)]
    records = side.records()
    shapes = [(len(r.ops) - 1, r.failed) for r in records]
    # group 0-2 batched; group 3-5 fails on /p/4 and is replayed per op; group 6-8 batched again;
    # the last group, /p/9 alone, is already one op per multi: it fails once, as in default mode
    assert shapes == [(3, False), (3, True), (1, False), (1, True), (1, False), (3, False), (1, True)]
    assert written(records) == [("create", f"/p/{i}", b"%d" % i) for i in range(10) if i not in (4, 9)]


def test_with_groups_of_one_the_log_is_the_default_modes(make_side: Callable[..., Side]) -> None:
    default, batched = make_side("default", False), make_side("batched", True, 1)
    shapes = []
    for side in (default, batched):
        side.zk.ensure_path("/brokers/topics/t/partitions/1")
        side.records()
        side.port.fenced(midcreate_ops(), epoch_zk_version=1)
        shapes.append([(len(r.ops), r.error_codes) for r in side.records()])
    assert shapes[0] == shapes[1]


# ---- null data --------------------------------------------------------------------------------------
def test_null_data_stays_null_in_batched_and_replayed_multis(make_side: Callable[..., Side]) -> None:
    side = make_side("b", True, 100)
    side.zk.create("/dup", b"x")
    side.records()
    side.port.fenced([CreateOp("/n1", None), CreateOp("/e1", b"")], epoch_zk_version=1)
    side.port.fenced(
        [CreateOp("/n2", None), CreateOp("/dup", None), CreateOp("/e2", b""), SetDataOp("/e1", None, 0)],
        epoch_zk_version=1,
    )
    for path in ("/n1", "/n2", "/e1"):
        assert side.zk.get(path)[0] is None, path
    assert side.zk.get("/e2")[0] == b""
    got = {(op, path): data for op, path, data in written(side.records())}
    assert got[("create", "/n1")] is None
    assert got[("create", "/e1")] == b""
    assert got[("create", "/n2")] is None  # the replayed op, one per multi
    assert got[("create", "/e2")] == b""
    assert got[("setData", "/e1")] is None
