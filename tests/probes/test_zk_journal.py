"""The ZooKeeper recording proxy on a real ZooKeeper 3.8 (integration): it journals a kazoo session
and a Java client's, and is transparent — pings, reconnects to the same session, session expiry,
SetWatches, four-letter words and frames it cannot decode all pass as they would without it."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.protocol.states import WatchedEvent

from harness.zookeeper import ZooKeeperServer
from probes.zk_journal import (
    ZkClosed,
    ZkConnect,
    ZkConnected,
    ZkJournal,
    ZkRaw,
    ZkRecordingProxy,
)

T = TypeVar("T")
JAVA_DIR = Path("/usr/share/java")


def wait(predicate: Callable[[], T | None], deadline_s: float, what: str | Callable[[], str]) -> T:
    give_up = time.monotonic() + deadline_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > give_up:
            raise AssertionError(
                f"timed out after {deadline_s}s waiting for {what() if callable(what) else what}"
            )
        time.sleep(0.05)


@pytest.fixture
def journal(zk_chroot: str, tmp_path: Path) -> Iterator[ZkJournal]:
    j = ZkJournal("test", chroot=zk_chroot, jsonl_path=tmp_path / "zk-journal.jsonl")
    yield j
    j.close()


@pytest.fixture
def proxy(zk_server: ZooKeeperServer, journal: ZkJournal) -> Iterator[ZkRecordingProxy]:
    p = ZkRecordingProxy(journal, (zk_server.host, zk_server.port))
    yield p
    p.close()


def _client(proxy: ZkRecordingProxy, chroot: str, timeout_s: float = 10.0) -> KazooClient:
    client = KazooClient(hosts=f"127.0.0.1:{proxy.port}{chroot}", timeout=timeout_s)
    client.start(timeout=15.0)
    return client


@pytest.mark.integration
def test_a_kazoo_session_is_journalled_with_relative_paths_watches_replies_and_events(
    proxy: ZkRecordingProxy, journal: ZkJournal, zk_chroot: str, tmp_path: Path
) -> None:
    client = _client(proxy, zk_chroot)
    try:
        session = client.client_id[0]
        fired = threading.Event()

        def on_child(event: WatchedEvent) -> None:
            fired.set()

        client.create("/kids", b"")
        assert client.get_children("/kids", watch=on_child) == []
        client.create("/kids/k", b"x", ephemeral=True)
        assert fired.wait(10), "the child watch set through the proxy never fired"
        tx = client.transaction()
        tx.check("/kids", 0)
        tx.create("/kids/m", b"m")
        assert tx.commit()[1] == "/kids/m"
    finally:
        client.stop()
        client.close()
    assert journal.sessions() == [session]
    (watched,) = journal.requests(session=session, op="getChildren", watch=True)
    assert watched.path == "/kids"
    reply = journal.reply_to(watched)
    assert reply is not None
    assert reply.err == 0
    (event,) = journal.events(session=session, type="NodeChildrenChanged")
    assert event.path == "/kids"
    assert event.seq > watched.seq
    (multi,) = journal.requests(op="multi")
    assert [(o.op, o.path, o.version) for o in multi.sub_ops] == [
        ("check", "/kids", 0),
        ("create", "/kids/m", None),
    ]
    multi_reply = journal.reply_to(multi)
    assert multi_reply is not None
    assert multi_reply.ok
    assert [r.path for r in multi_reply.results] == [None, "/kids/m"]
    assert journal.requests(op="closeSession"), journal.dump()
    wait(lambda: any(isinstance(r, ZkClosed) for r in journal.records()), 5, "the connection's end")
    lines = (tmp_path / "zk-journal.jsonl").read_text().splitlines()
    assert len(lines) == len(journal.records())
    assert '"path": "/kids"' in "".join(lines)


@pytest.mark.integration
def test_a_reconnect_after_a_dropped_connection_resumes_the_same_session(
    proxy: ZkRecordingProxy, journal: ZkJournal, zk_chroot: str
) -> None:
    client = _client(proxy, zk_chroot)
    states: list[KazooState] = []
    client.add_listener(states.append)
    try:
        session = client.client_id[0]
        client.create("/eph", b"", ephemeral=True)
        assert proxy.drop_connections() == 2
        wait(
            lambda: KazooState.SUSPENDED in states and client.connected,
            15,
            lambda: f"reconnect; states {states}",
        )
        assert client.client_id[0] == session
        assert client.exists("/eph") is not None, "the session's ephemeral went: the session was not resumed"
        connects = [r for r in journal.records() if isinstance(r, ZkConnect)]
        assert [c.request.session_id for c in connects] == [0, session]
        resumed = [r for r in journal.records() if isinstance(r, ZkConnected)][-1]
        assert (resumed.session, resumed.expired) == (session, False)
        assert KazooState.LOST not in states
    finally:
        client.stop()
        client.close()


@pytest.mark.integration
def test_pings_pass_through_and_are_answered(
    proxy: ZkRecordingProxy, journal: ZkJournal, zk_chroot: str
) -> None:
    client = _client(proxy, zk_chroot, timeout_s=4.0)  # kazoo pings an idle link every ~timeout/3
    try:

        def answered_ping() -> bool:
            return any(journal.reply_to(p) is not None for p in journal.requests(op="ping"))

        wait(answered_ping, 15, lambda: f"an answered ping:\n{journal.records()[-5:]}")
        ping = journal.requests(op="ping")[0]
        assert (ping.xid, ping.session) == (-2, client.client_id[0])
        assert all(r.opcode != 11 for r in journal.requests()), "pings are left out unless asked for"
        assert client.connected
    finally:
        client.stop()
        client.close()


@pytest.mark.integration
def test_session_expiry_behind_the_proxy_reaches_the_client_unchanged(
    zk_server: ZooKeeperServer,
    proxy: ZkRecordingProxy,
    journal: ZkJournal,
    zk_chroot: str,
    zk_client: KazooClient,
) -> None:
    client = _client(proxy, zk_chroot, timeout_s=4.0)
    states: list[KazooState] = []
    client.add_listener(states.append)
    try:
        old = client.client_id[0]
        client.create("/eph", b"", ephemeral=True)
        with socket.socket() as dead:  # a port nothing listens on: the link is cut
            dead.bind(("127.0.0.1", 0))
            proxy.upstream = dead.getsockname()
        proxy.drop_connections()
        wait(lambda: zk_client.exists("/eph") is None, 30, "the server to expire the cut-off session")
        proxy.upstream = (zk_server.host, zk_server.port)
        wait(
            lambda: KazooState.LOST in states and client.connected,
            30,
            lambda: f"LOST then a new session; {states}",
        )
        assert client.client_id[0] != old
        told = [r for r in journal.records() if isinstance(r, ZkConnected) and r.expired]
        assert told, f"no ConnectResponse saying expired:\n{journal.dump()}"
        assert any(isinstance(r, ZkClosed) and r.by == "upstream-unreachable" for r in journal.records())
        assert journal.sessions() == [old, client.client_id[0]]
    finally:
        client.stop()
        client.close()


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _exchange(port: int, frames: list[bytes]) -> list[bytes]:
    """Send frames one by one on a new connection; each answer (or b"" once closed)."""
    answers: list[bytes] = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        for frame in frames:
            sock.sendall(frame)
            try:
                head = sock.recv(4)
                size = struct.unpack(">i", head)[0] if len(head) == 4 else -1
                body = b""
                while size >= 0 and len(body) < size:
                    chunk = sock.recv(size - len(body))
                    if not chunk:
                        break
                    body += chunk
            except TimeoutError:
                body = b"(timeout)"
            except OSError:
                body = b""
            answers.append(body)
    return answers


@pytest.mark.integration
def test_undecodable_frames_are_journalled_raw_and_forwarded_as_if_no_proxy(
    zk_server: ZooKeeperServer, proxy: ZkRecordingProxy, journal: ZkJournal
) -> None:
    connect = _frame(struct.pack(">iqiqi", 0, 0, 4000, 0, 16) + b"\0" * 16 + b"\0")
    exists = _frame(struct.pack(">ii", 1, 3) + struct.pack(">i", 1) + b"/" + b"\0")
    truncated = _frame(struct.pack(">ii", 2, 4) + struct.pack(">i", 50) + b"/short")  # getData, path cut
    unknown = _frame(struct.pack(">ii", 3, 9999) + b"\0" * 4)
    frames = [connect, exists, truncated, exists, unknown, exists]
    direct = _exchange(zk_server.port, frames)
    proxied = _exchange(proxy.port, frames)
    # the same answers as without the proxy (session id, password and zxid differ: compare the rest)
    assert [len(a) for a in proxied] == [len(a) for a in direct], (direct, proxied)
    assert [(a[:4], a[12:16]) for a in proxied[1:]] == [(a[:4], a[12:16]) for a in direct[1:]]
    assert proxied[-1] == b"", "ZooKeeper closes the connection after an unknown request type"
    raws = [r for r in journal.requests() if r.op is None]
    assert [(r.opcode, r.xid, r.length) for r in raws] == [
        (4, 2, len(truncated) - 4),
        (9999, 3, len(unknown) - 4),
    ]
    assert raws[0].raw == truncated[4:]
    assert "need 50 bytes" in (raws[0].decode_error or "")
    errors = [getattr(journal.reply_to(r), "err", None) for r in raws]
    assert errors == [-5, -6], "MARSHALLINGERROR, UNIMPLEMENTED"
    # the last exists may or may not reach the proxy before ZooKeeper's close does: not asserted
    before_close = [r.name for r in journal.requests() if r.op is not None and r.seq < raws[1].seq]
    assert before_close == ["exists", "exists"]


@pytest.mark.integration
def test_a_four_letter_word_passes_through_and_is_recorded_as_not_the_client_protocol(
    zk_server: ZooKeeperServer, proxy: ZkRecordingProxy, journal: ZkJournal
) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"ruok")
        reply = sock.recv(64)
    assert reply == b"imok"
    wait(lambda: len(_raws(journal)) == 2, 5, journal.dump)
    assert [(r.side, r.raw) for r in _raws(journal)] == [("client", b"ruok"), ("server", b"imok")]
    assert "frame length" in _raws(journal)[0].error


def _raws(journal: ZkJournal) -> list[ZkRaw]:
    return [r for r in journal.records() if isinstance(r, ZkRaw)]


def _java_client_command(server: str) -> list[str] | None:
    java = shutil.which("java")
    jar, nop = JAVA_DIR / "zookeeper.jar", JAVA_DIR / "slf4j-nop.jar"
    if java is None or not jar.is_file():
        return None
    classpath = f"{jar}:{nop}" if nop.is_file() else str(jar)
    return [java, "-Xms16m", "-cp", classpath, "org.apache.zookeeper.ZooKeeperMain", "-server", server]


@pytest.mark.integration
def test_a_java_client_restores_its_watches_through_the_proxy_with_set_watches(
    proxy: ZkRecordingProxy, journal: ZkJournal, zk_chroot: str, zk_client: KazooClient
) -> None:
    """Kafka's client (Java) re-sends its watches after a reconnect: they must survive the proxy."""
    command = _java_client_command(f"127.0.0.1:{proxy.port}{zk_chroot}")
    if command is None:
        pytest.skip("needs java and Debian's zookeeper.jar")
    zk_client.create("/kids", b"")
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdin is not None
    stdout = proc.stdout
    assert stdout is not None
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(iter(stdout.readline, "")), daemon=True).start()
    try:
        proc.stdin.write("ls -w /kids\n")
        proc.stdin.flush()
        wait(
            lambda: journal.requests(op=("getChildren", "getChildren2"), watch=True),
            30,
            "the Java client's ls -w",
        )
        # the client registers its watch when the answer arrives, before it prints the (empty)
        # listing: only then has it a watch to restore (a drop before that leaves it none)
        wait(lambda: any("[]" in line for line in output), 30, lambda: "the listing in " + "".join(output))
        proxy.drop_connections()
        restored = wait(lambda: journal.requests(op=("setWatches", "setWatches2")), 30, journal.dump)
        zk_client.create("/kids/k1", b"")
        wait(lambda: journal.events(type="NodeChildrenChanged", path="/kids"), 15, journal.dump)
    finally:
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    op = restored[0].op
    assert op is not None
    assert ("child", ("/kids",)) in op.watch_lists
    sessions = {c.session for c in journal.connections()}
    assert len(sessions) == 1, f"the reconnect did not resume the session: {journal.dump()}"
