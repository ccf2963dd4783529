"""Pure parts of the lean write path: multi encoding against kazoo's own serialisation, response
decoding of hand-written jute bytes, `poll_select` against kazoo's `selector_select`, and the
coalescing socket on a real socket pair."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.handlers.utils import selector_select
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData, Transaction
from kazoo.security import OPEN_ACL_UNSAFE

from reference_controller.controller.driver.kazoo_handler import (
    FLUSH_AT,
    CoalescingSocket,
    LeanThreadingHandler,
    poll_select,
)
from reference_controller.controller.driver.multiwrite import decode_multi, encode_multi, encode_op, stat_of
from reference_controller.controller.ports import CheckOp, CreateOp, DeleteOp, SetDataOp, Stat, ZkOp

pytestmark = pytest.mark.unit

_paths = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30).map(lambda s: "/" + s)
_data = st.one_of(st.none(), st.binary(max_size=64))
_versions = st.integers(min_value=-1, max_value=2**31 - 1)
_ops = st.one_of(
    st.builds(CreateOp, _paths, _data, st.booleans(), st.booleans()),
    st.builds(SetDataOp, _paths, _data, _versions),
    st.builds(DeleteOp, _paths, _versions),
    st.builds(CheckOp, _paths, _versions),
)


def _kazoo_record(op: ZkOp) -> object:
    match op:
        case CreateOp():
            return Create(
                op.path, op.data, OPEN_ACL_UNSAFE, (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
            )
        case SetDataOp():
            return SetData(op.path, op.data, op.version)
        case DeleteOp():
            return Delete(op.path, op.version)
        case CheckOp():
            return CheckVersion(op.path, op.version)


@given(st.lists(_ops, min_size=1, max_size=6))
def test_a_multi_is_encoded_byte_for_byte_as_kazoos_transaction(ops: list[ZkOp]) -> None:
    assert encode_multi([encode_op(op, op.path) for op in ops]) == bytes(
        Transaction([_kazoo_record(op) for op in ops]).serialize()
    )


def test_a_check_and_set_data_multi_is_exactly_these_bytes() -> None:
    body = encode_multi([encode_op(CheckOp("/e", 3), "/e"), encode_op(SetDataOp("/s", None, -1), "/r/s")])
    assert body == (
        b"\x00\x00\x00\x0d\x00\xff\xff\xff\xff"  # MultiHeader(check=13, done=false, err=-1)
        b"\x00\x00\x00\x02/e\x00\x00\x00\x03"  # path, version 3
        b"\x00\x00\x00\x05\x00\xff\xff\xff\xff"  # MultiHeader(setData=5, …)
        b"\x00\x00\x00\x04/r/s\xff\xff\xff\xff\xff\xff\xff\xff"  # chrooted path, null data, version -1
        b"\xff\xff\xff\xff\x01\xff\xff\xff\xff"  # MultiHeader(-1, done=true, -1)
    )


def _header(op_type: int, done: bool = False, err: int = -1) -> bytes:
    return struct.pack("!iBi", op_type, done, err)


def test_a_multi_response_decodes_to_one_plain_value_per_op() -> None:
    stat = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    response = (
        b"junk"  # what precedes the offset (the reply header) is not read
        + _header(13)
        + _header(1)
        + struct.pack("!i", 6)
        + b"/a/b/c"
        + _header(5)
        + struct.pack("!qqqqiiiqiiq", *stat)
        + _header(2)
        + _header(-1, err=-101)
        + struct.pack("!i", -101)
        + _header(-1, True, -1)
    )
    assert decode_multi(response, 4) == [None, "/a/b/c", stat, None, -101]
    assert stat_of(stat) == Stat(
        version=5, cversion=6, czxid=1, mzxid=2, ephemeral_owner=8, num_children=10, data_length=9
    )


def test_an_unknown_op_type_in_a_response_is_an_error() -> None:
    with pytest.raises(ValueError, match="unexpected op type 15"):
        decode_multi(_header(15) + b"\x00" * 80, 0)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_poll_select_answers_as_kazoos_selector_select(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    cases: list[tuple[list[socket.socket], list[socket.socket], list[socket.socket], float]] = [
        ([a], [], [], 0),
        ([], [a], [], 0),
        ([a, b], [b], [], 0.01),
    ]
    for rlist, wlist, xlist, timeout in cases:
        assert poll_select(rlist, wlist, xlist, timeout) == selector_select(rlist, wlist, xlist, timeout)
    b.send(b"x")
    assert poll_select([a, b], [], [], 0) == selector_select([a, b], [], [], 0) == ([a], [], [])
    b.close()  # hang-up: reported readable, as kazoo's epoll mapping does
    assert poll_select([a], [a], [], 0) == selector_select([a], [a], [], 0)
    with pytest.raises(ValueError, match="non-negative"):
        poll_select([a], [], [], -1)
    with pytest.raises(TypeError):
        poll_select([object()], [], [], 0)


def test_the_coalescing_socket_holds_sends_until_kazoo_would_wait(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, peer = pair
    a.setblocking(False)
    wake_r, wake_w = socket.socketpair()
    sock = CoalescingSocket(a, 5.0)
    handler = LeanThreadingHandler()
    try:
        assert handler.select([], [sock], [], 1.0)[1] == [sock]  # room to write: no system call needed
        assert sock.send(b"req-1") == 5
        wake_w.send(b"\0")  # kazoo has another request queued: its main loop keeps coalescing
        assert handler.select([sock, wake_r], [], [], 1.0)[0] == [wake_r]
        assert sock.buffered == 5
        wake_r.recv(1)
        sock.send(b"req-2")
        assert handler.select([sock, wake_r], [], [], 0.05) == ([], [], [])  # nothing queued: flushed
        assert sock.buffered == 0
        assert peer.recv(100) == b"req-1req-2"
        sock.send(b"x" * FLUSH_AT)  # a full buffer is written at once
        assert sock.buffered == 0
        assert len(peer.recv(2 * FLUSH_AT)) > 0
        peer.send(b"\x00\x00\x00\x02ok\x00\x00\x00\x01!")  # two replies in one segment
        assert handler.select([sock], [], [], 1.0)[0] == [sock]
        assert sock.recv(4) == b"\x00\x00\x00\x02"
        assert sock.pending() == 7  # kazoo reads the rest without select
        assert handler.select([sock, wake_r], [], [], 1.0)[0] == [sock]
        assert sock.recv(2) + sock.recv(4) + sock.recv(1) == b"ok\x00\x00\x00\x01!"
        assert sock.pending() == 0
    finally:
        sock.close()
        wake_r.close()
        wake_w.close()
