"""A fence that cannot fail is no fence: what a real ZooKeeper logs for a multi's check, and the
fence checker on it (real ZooKeeper 3.8, its real transaction log).

ZooKeeper logs a multi's ``check`` sub-op with its path and the version the znode *had* when the
multi applied — also when the check asked for any version (-1). So the transaction log cannot tell
an exact check from a -1 check while the version is still the writer's; it shows the difference
when a -1 check lets a write through under a newer election's version. ``controller_writes_fenced``
judges exactly that: the check must name the version the writer's own election wrote.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from chaos.checkers.safety import controller_writes_fenced, no_write_after_epoch_superseded
from harness.zookeeper import ZooKeeperServer
from harness.zookeeper.observer import observer_client
from probes import ChrootView, TxnRecord
from probes.history import TxnLogCursor

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


@pytest.fixture
def second_client(zk_connect: str) -> Iterator[KazooClient]:
    client = observer_client(zk_connect, timeout_s=10.0)
    client.start(timeout=15.0)
    yield client
    client.stop()
    client.close()


def _elect(client: KazooClient, epoch: int, version: int) -> None:
    """An election as the timeline sees one: ``/controller_epoch`` set to ``epoch`` (at ``version``)."""
    t = client.transaction()
    t.set_data("/controller_epoch", str(epoch).encode(), version)
    results = t.commit()
    assert not any(isinstance(r, Exception) for r in results), results


def _fenced(client: KazooClient, checked: int, path: str) -> None:
    t = client.transaction()
    t.check("/controller_epoch", checked)
    t.create(path, b"")
    results = t.commit()
    assert not any(isinstance(r, Exception) for r in results), results


def _log(chroot: str, cursor: TxnLogCursor, client: KazooClient, last: str) -> list[TxnRecord]:
    stat = client.exists(last)
    assert stat is not None
    return ChrootView(chroot).filter(cursor.read_through(stat.czxid))


def test_a_multi_logs_its_check_with_the_path_and_the_version_the_znode_had(
    zk_server: ZooKeeperServer, zk_chroot: str, zk_client: KazooClient
) -> None:
    cursor = TxnLogCursor.at_end(zk_server.txn_log_dir)
    zk_client.create("/controller_epoch", b"0")
    zk_client.ensure_path("/brokers/topics/t")
    _elect(zk_client, 1, 0)  # → version 1
    _fenced(zk_client, 1, "/brokers/topics/t/exact")
    _fenced(zk_client, -1, "/brokers/topics/t/any")
    records = _log(zk_chroot, cursor, zk_client, "/brokers/topics/t/any")
    checks = [(op.path, op.version) for r in records if r.op == "multi" for op in r.ops if op.op == "check"]
    assert checks == [("/controller_epoch", 1), ("/controller_epoch", 1)]  # -1 is logged as 1
    election = next(r for r in records if r.op == "multi" and r.ops[0].op == "setData")
    assert (election.ops[0].path, election.ops[0].version) == ("/controller_epoch", 1)


def test_a_deposed_controllers_any_version_check_is_caught(
    zk_server: ZooKeeperServer, zk_chroot: str, zk_client: KazooClient, second_client: KazooClient
) -> None:
    """Controller A (epoch 1, version 1) keeps writing with a -1 check after B's election wrote
    version 2: ZooKeeper lets it through and logs ``check version=2``."""
    cursor = TxnLogCursor.at_end(zk_server.txn_log_dir)
    zk_client.create("/controller_epoch", b"0")
    zk_client.ensure_path("/brokers/topics/t")
    _elect(zk_client, 1, 0)
    _fenced(zk_client, 1, "/brokers/topics/t/partitions")  # A, under its own epoch: fenced
    _elect(second_client, 2, 1)  # B takes over: version 2
    _fenced(second_client, 2, "/brokers/topics/t/partitions/0")  # B, under its own epoch
    _fenced(zk_client, -1, "/brokers/topics/t/partitions/1")  # A again: a fence that cannot fail
    records = _log(zk_chroot, cursor, zk_client, "/brokers/topics/t/partitions/1")
    stale = records[-1]
    assert stale.session_id == zk_client.client_id[0]
    check = stale.ops[0]
    assert (check.op, check.path, check.version) == ("check", "/controller_epoch", 2)

    v = controller_writes_fenced([], records, None)
    assert v.validity == "invalid", v.message
    assert [e["zxid"] for e in v.evidence] == [f"0x{stale.zxid:x}"]
    assert "checked /controller_epoch version 2, but its controller's election wrote version 1" in v.message
    # the check names the version current when it applied: comparing with that proves nothing
    assert no_write_after_epoch_superseded([], records, None).validity == "valid"
    # the same log without A's last write is fenced throughout
    assert controller_writes_fenced([], records[:-1], None).validity == "valid"
