"""Client-protocol decoding on real bytes (unit): every frame below was captured through the
recording proxy from a real ZooKeeper 3.8.0 session — a kazoo 2.11 client chrooted to ``/cap``
(the first block) and the Java 3.8 ``ZooKeeperMain`` client chrooted to ``/j`` (the second,
with its reconnect) — and the expected values are what those clients were told to send."""

from __future__ import annotations

import pytest

from cluster.nodeconfig import split_zookeeper_connect, zookeeper_connect
from probes import JuteDecodeError
from probes.jute import (
    ClientOp,
    OpResult,
    decode_connect_request,
    decode_connect_response,
    decode_event,
    decode_reply,
    decode_request,
    request_header,
)
from probes.txnrecords import Acl
from probes.zk_journal import describe_client_op

WORLD = (Acl(31, "world", "anyone"),)

# kazoo: KazooClient(hosts=".../cap", timeout=4.0) — new session
KAZOO_CONNECT = "00000000000000000000000000000fa00000000000000000000000100000000000000000000000000000000000"
KAZOO_CONNECTED = "0000000000000fa0010000232b0d00000000001069dcb7954260b0faef136dd45b7f50aa00"
CREATE_EPHEMERAL = (  # create("/a", b"hello", ephemeral=True)
    "0000000400000001000000062f6361702f610000000568656c6c6f000000010000001f00000005776f726c64"
    "00000006616e796f6e6500000001"
)
CREATE_REPLY = "00000004000000000000000300000000000000062f6361702f61"
EXISTS_WATCH = "0000000500000003000000062f6361702f6101"  # exists("/a", watch=w)
GET_DATA_WATCH = "0000000600000004000000062f6361702f6101"  # get("/a", watch=w)
GET_CHILDREN_WATCH = "0000000800000008000000092f6361702f6b69647301"  # get_children("/kids", watch=w)
GET_CHILDREN2 = "000000090000000c000000092f6361702f6b69647300"  # get_children("/kids", include_data=True)
CREATE_SEQUENTIAL = (  # create("/kids/k", b"x", sequence=True)
    "0000000a000000010000000b2f6361702f6b6964732f6b0000000178000000010000001f00000005776f726c64"
    "00000006616e796f6e6500000002"
)
SEQUENTIAL_REPLY = "0000000a000000000000000500000000000000152f6361702f6b6964732f6b30303030303030303030"
CHILD_EVENT = "ffffffffffffffffffffffff000000000000000400000003000000092f6361702f6b696473"
MULTI = (  # check("/kids", 0); create("/kids/m", b"m"); set_data("/kids", b"y", 0); delete("/kids/m")
    "0000000b0000000e0000000d00ffffffff000000092f6361702f6b696473000000000000000100ffffffff0000000b"
    "2f6361702f6b6964732f6d000000016d000000010000001f00000005776f726c6400000006616e796f6e6500000000"
    "0000000500ffffffff000000092f6361702f6b6964730000000179000000000000000200ffffffff0000000b2f6361"
    "702f6b6964732f6dffffffffffffffff01ffffffff"
)
MULTI_REPLY = (
    "0000000b0000000000000006000000000000000d00000000000000000100000000000000000b2f6361702f6b696473"
    "2f6d00000005000000000000000000000000040000000000000006000001a20a0c2aab000001a20a0c2aeb00000001"
    "0000000200000000000000000000000000000001000000020000000000000006000000020000000000ffffffff01ff"
    "ffffff"
)
FAILED_MULTI_REPLY = (  # check("/kids", 5); create("/kids/z", b"z")
    "0000000c000000000000000700000000ffffffff00ffffff99ffffff99ffffffff00fffffffefffffffeffffffff01ffffffff"
)
SET_DATA = "0000000d00000005000000062f6361702f61000000017700000000"  # set("/a", b"w", version=0)
EXISTS_ROOT = "0000000100000003000000042f63617000"
NONODE_REPLY = "000000010000000000000001ffffff9b"
SYNC = "0000000e00000009000000062f6361702f61"
CLOSE = "0000000ffffffff5"

# Java ZooKeeperMain: reconnect of session 0x1000022d6950001 after a connection loss
JAVA_RECONNECT = "0000000000000000000000050000753001000022d695000100000010343231313a6eb6e75c2610e4472ee2b300"
JAVA_CONNECTED = "000000000000271001000022d695000100000010343231313a6eb6e75c2610e4472ee2b300"
JAVA_AUTH = "fffffffc0000006400000000000000066469676573740000000b757365723a736563726574"
JAVA_SET_WATCHES = (  # after `ls -w /kids`, `get -w /a`, `stat -w /missing`
    "0000000400000065000000000000000500000001000000042f6a2f61000000010000000a2f6a2f6d697373696e67"
    "00000001000000072f6a2f6b696473"
)
JAVA_PING = "fffffffe0000000b"
JAVA_PING_REPLY = "fffffffe000000000000000600000000"


def _req(hexed: str) -> tuple[int, ClientOp]:
    return decode_request(bytes.fromhex(hexed))


@pytest.mark.unit
def test_connect_request_and_response_of_a_new_kazoo_session() -> None:
    req = decode_connect_request(bytes.fromhex(KAZOO_CONNECT))
    assert (req.protocol_version, req.last_zxid_seen, req.timeout_ms, req.session_id) == (0, 0, 4000, 0)
    assert (req.passwd_len, req.read_only) == (16, False)
    resp = decode_connect_response(bytes.fromhex(KAZOO_CONNECTED))
    assert (resp.timeout_ms, resp.session_id, resp.passwd_len, resp.read_only) == (
        4000,
        0x010000232B0D0000,
        16,
        False,
    )


@pytest.mark.unit
def test_java_reconnect_asks_for_its_session_and_last_zxid() -> None:
    req = decode_connect_request(bytes.fromhex(JAVA_RECONNECT))
    assert (req.last_zxid_seen, req.timeout_ms, req.session_id, req.passwd_len) == (
        5,
        30000,
        0x01000022D6950001,
        16,
    )
    resp = decode_connect_response(bytes.fromhex(JAVA_CONNECTED))
    assert (resp.timeout_ms, resp.session_id) == (10000, 0x01000022D6950001)


@pytest.mark.unit
def test_create_requests_keep_mode_data_acl_and_the_created_path() -> None:
    assert _req(CREATE_EPHEMERAL) == (4, ClientOp(1, "/cap/a", data=b"hello", acl=WORLD, flags=1))
    xid, seq = _req(CREATE_SEQUENTIAL)
    assert (xid, seq.op, seq.path, seq.data, seq.create_mode) == (
        10,
        "create",
        "/cap/kids/k",
        b"x",
        "PERSISTENT_SEQUENTIAL",
    )
    assert decode_reply(bytes.fromhex(CREATE_REPLY), 1).path == "/cap/a"
    reply = decode_reply(bytes.fromhex(SEQUENTIAL_REPLY), 1)
    assert (reply.xid, reply.zxid, reply.err, reply.path) == (10, 5, 0, "/cap/kids/k0000000000")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("frame", "xid", "op", "path", "watch"),
    [
        (EXISTS_WATCH, 5, "exists", "/cap/a", True),
        (GET_DATA_WATCH, 6, "getData", "/cap/a", True),
        (GET_CHILDREN_WATCH, 8, "getChildren", "/cap/kids", True),
        (GET_CHILDREN2, 9, "getChildren2", "/cap/kids", False),
        (EXISTS_ROOT, 1, "exists", "/cap", False),
    ],
)
def test_reads_carry_their_watch_flag(frame: str, xid: int, op: str, path: str, watch: bool) -> None:
    got_xid, got = _req(frame)
    assert (got_xid, got.op, got.path, got.watch) == (xid, op, path, watch)


@pytest.mark.unit
def test_multi_sub_ops_keep_order_paths_and_expected_versions() -> None:
    xid, multi = _req(MULTI)
    assert (xid, multi.op) == (11, "multi")
    assert [(o.op, o.path, o.version) for o in multi.ops] == [
        ("check", "/cap/kids", 0),
        ("create", "/cap/kids/m", None),
        ("setData", "/cap/kids", 0),
        ("delete", "/cap/kids/m", -1),
    ]
    assert (multi.ops[1].data, multi.ops[1].create_mode, multi.ops[2].data) == (b"m", "PERSISTENT", b"y")
    assert describe_client_op(multi).startswith("multi[check /cap/kids v=0; create /cap/kids/m PERSISTENT")


@pytest.mark.unit
def test_multi_replies_give_one_result_per_op_and_a_failed_multi_is_err_0_with_op_errors() -> None:
    ok = decode_reply(bytes.fromhex(MULTI_REPLY), 14)
    assert (ok.xid, ok.zxid, ok.err) == (11, 6, 0)
    assert ok.results == (OpResult(13, 0), OpResult(1, 0, "/cap/kids/m"), OpResult(5, 0), OpResult(2, 0))
    failed = decode_reply(bytes.fromhex(FAILED_MULTI_REPLY), 14)
    assert (failed.err, failed.results) == (
        0,
        (OpResult(-1, -103), OpResult(-1, -2)),
    )  # BADVERSION, RUNTIMEINCONSISTENCY


@pytest.mark.unit
def test_error_reply_has_no_body_and_unknown_requests_decode_only_the_header() -> None:
    nonode = decode_reply(bytes.fromhex(NONODE_REPLY), 3)
    assert (nonode.xid, nonode.zxid, nonode.err) == (1, 1, -101)
    assert decode_reply(bytes.fromhex(MULTI_REPLY), None).results == ()


@pytest.mark.unit
def test_watch_event_gives_type_state_and_path() -> None:
    header, event = decode_event(bytes.fromhex(CHILD_EVENT))
    assert (header.xid, header.zxid, header.err) == (-1, -1, 0)
    assert (event.type_name, event.state_name, event.path) == (
        "NodeChildrenChanged",
        "SyncConnected",
        "/cap/kids",
    )


@pytest.mark.unit
def test_set_data_sync_and_close_session() -> None:
    assert _req(SET_DATA) == (13, ClientOp(5, "/cap/a", data=b"w", version=0))
    assert _req(SYNC) == (14, ClientOp(9, "/cap/a"))
    assert _req(CLOSE) == (15, ClientOp(-11))


@pytest.mark.unit
def test_java_set_watches_lists_every_watch_to_restore() -> None:
    xid, op = _req(JAVA_SET_WATCHES)
    assert (xid, op.op, op.relative_zxid) == (4, "setWatches", 5)
    assert op.watch_lists == (("data", ("/j/a",)), ("exist", ("/j/missing",)), ("child", ("/j/kids",)))


@pytest.mark.unit
def test_auth_keeps_the_scheme_never_the_credential_and_pings_are_xid_minus_2() -> None:
    xid, auth = _req(JAVA_AUTH)
    assert (xid, auth.op, auth.scheme) == (-4, "auth", "digest")
    assert b"secret" not in repr(auth).encode()
    assert _req(JAVA_PING) == (-2, ClientOp(11))
    assert decode_reply(bytes.fromhex(JAVA_PING_REPLY), 11).xid == -2


@pytest.mark.unit
@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (GET_DATA_WATCH[:-6], "need"),  # path cut short
        ("00000001" + "0000270f" + "00", "unknown request type 9999"),
        (MULTI[: len(MULTI) // 2], "need"),
    ],
)
def test_undecodable_frames_raise_a_typed_error_but_keep_their_header(frame: str, message: str) -> None:
    with pytest.raises(JuteDecodeError, match=message):
        decode_request(bytes.fromhex(frame))
    xid, opcode = request_header(bytes.fromhex(frame))
    assert xid in (1, 6, 11)
    assert opcode in (4, 9999, 14)


@pytest.mark.unit
def test_zookeeper_connect_strings_split_and_join_with_the_chroot_kept() -> None:
    assert split_zookeeper_connect("127.0.0.1:2181,localhost:2182/t/x") == (
        [("127.0.0.1", 2181), ("localhost", 2182)],
        "/t/x",
    )
    assert split_zookeeper_connect("h:1") == ([("h", 1)], "")
    assert zookeeper_connect([("127.0.0.1", 5), ("127.0.0.1", 6)], "/c") == "127.0.0.1:5,127.0.0.1:6/c"
    with pytest.raises(ValueError, match="not host:port"):
        split_zookeeper_connect("nohost/c")
