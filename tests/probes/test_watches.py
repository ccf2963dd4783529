"""Watch inspection: ``wchc``/``wchp`` parse per session and per path, and on a real ZooKeeper
3.8 list a session's data and exists watches but never its child watches."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import WatchedEvent

from harness.zookeeper import ZooKeeperServer
from probes import FourLetterWordError, parse_wchc, parse_wchp, read_watches, strip_chroot
from probes.watches import four_letter_word, session_id_from_hex

WCHC = "0x100000456970001\n\t/t/a/w\n\t/t/a/missing\n0xffff000000000001\n\t/other\n\n"
WCHP = "/t/a/w\n\t0x100000456970001\n\t0xffff000000000001\n/other\n\t0xffff000000000001\n\n"
NEGATIVE = -0xFFFFFFFFFFFF  # 0xffff000000000001 as a signed 64-bit session id


@pytest.mark.unit
def test_wchc_parses_into_paths_per_session_with_signed_session_ids() -> None:
    assert session_id_from_hex("0xffff000000000001") == NEGATIVE
    assert parse_wchc(WCHC) == {0x100000456970001: {"/t/a/w", "/t/a/missing"}, NEGATIVE: {"/other"}}
    assert parse_wchc("\n") == {}


@pytest.mark.unit
def test_wchp_parses_into_sessions_per_path() -> None:
    assert parse_wchp(WCHP) == {"/t/a/w": {0x100000456970001, NEGATIVE}, "/other": {NEGATIVE}}
    assert parse_wchp("") == {}


@pytest.mark.unit
def test_chroot_stripping_keeps_only_that_chroot() -> None:
    by_session = parse_wchc(WCHC)
    assert strip_chroot(by_session, "/t/a") == {0x100000456970001: {"/w", "/missing"}}
    assert strip_chroot(by_session, "/t/a/w/") == {0x100000456970001: {"/"}}
    assert strip_chroot(by_session, "") == by_session


@pytest.mark.unit
@pytest.mark.parametrize(
    "reply",
    [
        "wchc is not executed because it is not in the whitelist.\n",
        "This ZooKeeper instance is not currently serving requests\n",
        "\t/orphan\n",
        "not-a-session\n\t/x\n",
    ],
)
def test_refusals_and_garbage_are_typed_errors(reply: str) -> None:
    with pytest.raises(FourLetterWordError):
        parse_wchc(reply)


@pytest.mark.unit
def test_four_letter_word_to_a_closed_port_is_a_typed_error() -> None:
    with pytest.raises(FourLetterWordError, match="failed"):
        four_letter_word("127.0.0.1", 1, "wchc", timeout_s=1.0)


@pytest.mark.integration
def test_data_and_exists_watches_are_listed_but_child_watches_never(
    zk_server: ZooKeeperServer, zk_chroot: str, zk_client: KazooClient
) -> None:
    zk_client.create("/w", b"")
    zk_client.create("/kids/k", b"", makepath=True)
    fired = threading.Event()

    def watcher(event: WatchedEvent) -> None:
        fired.set()

    zk_client.get("/w", watch=watcher)
    zk_client.exists("/missing", watch=watcher)
    zk_client.get_children("/kids", watch=watcher)
    session = zk_client.client_id[0]

    watches = read_watches(zk_server.four_letter)
    assert watches.of_session(session, chroot=zk_chroot) == {"/w", "/missing"}
    assert session in watches.watchers_of(f"{zk_chroot}/w")
    assert not watches.watchers_of(f"{zk_chroot}/kids"), "child watches are never listed"

    zk_client.create("/kids/k2", b"")  # fires the child watch: no change in the listing
    zk_client.set("/w", b"x")  # fires the data watch: it is gone
    assert fired.wait(5.0)
    assert read_watches(zk_server.four_letter).of_session(session, chroot=zk_chroot) == {"/missing"}


@pytest.mark.integration
def test_watches_of_two_sessions_are_told_apart(
    zk_server: ZooKeeperServer, zk_chroot: str, zk_connect: str, zk_client: KazooClient
) -> None:
    other = KazooClient(hosts=zk_connect, timeout=10.0)
    other.start(timeout=15.0)
    try:
        zk_client.create("/shared", b"")
        zk_client.exists("/shared", watch=lambda e: None)
        other.get("/shared", watch=lambda e: None)
        other.exists("/only-other", watch=lambda e: None)
        watches = read_watches(zk_server.four_letter)
        me, them = zk_client.client_id[0], other.client_id[0]
        assert watches.of_session(me, chroot=zk_chroot) == {"/shared"}
        assert watches.of_session(them, chroot=zk_chroot) == {"/shared", "/only-other"}
        assert watches.watchers_of(f"{zk_chroot}/shared") == {me, them}
    finally:
        other.stop()
        other.close()
