"""The 3-member ensemble harness against real ZooKeeper: quorum, member loss, leader loss."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient, KazooState

from harness.zookeeper import ZooKeeperEnsemble
from tests.harness.helpers import wait_until

pytestmark = pytest.mark.integration


def _client(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=15.0)
    return client


def _member_serving_session(ensemble: ZooKeeperEnsemble, session_id: int) -> int:
    """Index of the member whose ``cons`` lists the session (where the client is connected)."""
    for i, member in enumerate(ensemble.members):
        if member.is_running() and f"sid=0x{session_id:x}" in member.four_letter("cons"):
            return i
    raise AssertionError(f"no member lists session 0x{session_id:x}")


def test_an_ensemble_elects_exactly_one_leader_and_serves_clients(zk_ensemble: ZooKeeperEnsemble) -> None:
    modes = zk_ensemble.modes()
    assert sorted(m or "" for m in modes) == ["follower", "follower", "leader"]
    assert zk_ensemble.leader() == modes.index("leader")
    assert zk_ensemble.connect_string == ",".join(m.connect_string for m in zk_ensemble.members)
    assert [m.quorum.my_id for m in zk_ensemble.members if m.quorum] == [1, 2, 3]
    writer, reader = (
        _client(zk_ensemble.members[0].connect_string),
        _client(zk_ensemble.members[2].connect_string),
    )
    try:
        writer.create("/replicated", b"v")
        reader.sync("/replicated")
        assert reader.get("/replicated")[0] == b"v"
    finally:
        for client in (writer, reader):
            client.stop()
            client.close()


def test_the_ensemble_survives_losing_the_member_a_client_uses_and_the_client_reconnects(
    zk_ensemble: ZooKeeperEnsemble,
) -> None:
    states: list[KazooState] = []
    client = _client(zk_ensemble.connect_string)
    client.add_listener(states.append)
    try:
        client.create("/before", b"1")
        session_id = client.client_id[0]
        lost = _member_serving_session(zk_ensemble, session_id)
        zk_ensemble.kill_member(lost)
        wait_until(lambda: KazooState.SUSPENDED in states, 15.0, "the client to notice the loss")
        wait_until(lambda: client.state == KazooState.CONNECTED, 30.0, "the client to reconnect")
        client.create("/after", b"2")
        assert client.client_id[0] == session_id, "the session moved to another member intact"
        assert _member_serving_session(zk_ensemble, session_id) != lost
        zk_ensemble.wait_for_quorum(30.0)
        assert set(client.get_children("/")) == {"before", "after", "zookeeper"}
    finally:
        client.stop()
        client.close()


def test_stopping_the_leader_elects_a_new_one_and_the_old_leader_rejoins_as_follower(
    zk_ensemble: ZooKeeperEnsemble,
) -> None:
    old = zk_ensemble.stop_leader()
    new = zk_ensemble.leader(timeout_s=30.0)
    assert new != old
    client = _client(zk_ensemble.connect_string)
    try:
        client.create("/written-under-new-leader", b"x")
    finally:
        client.stop()
        client.close()
    zk_ensemble.start_member(old)
    assert zk_ensemble.modes()[old] == "follower"
    assert zk_ensemble.leader() == new


def test_a_paused_follower_drops_out_and_rejoins_on_resume(zk_ensemble: ZooKeeperEnsemble) -> None:
    follower = zk_ensemble.followers()[0]
    zk_ensemble.pause_member(follower)
    assert zk_ensemble.modes()[follower] is None
    zk_ensemble.wait_for_quorum(10.0)  # the other two still form a quorum
    client = _client(zk_ensemble.members[zk_ensemble.leader()].connect_string)
    try:
        client.create("/while-paused", b"x")
    finally:
        client.stop()
        client.close()
    zk_ensemble.resume_member(follower)
    zk_ensemble.wait_for_quorum(30.0, members=[0, 1, 2])
