"""Transaction-log reader on hand-built log files: record decoding, end of file, corruption.

The tiny encoder below follows ``FileTxnLog``/``Util.marshallTxnEntry`` and ``zookeeper.jute``
(release-3.8.0) independently of the reader, so the reader is checked against the format, not
against itself.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from probes import (
    ChrootView,
    SessionNodeMap,
    TxnLogCorrupt,
    TxnLogCursor,
    TxnLogTimeout,
    TxnOp,
    TxnRecord,
    decode_payload,
    list_log_files,
    read_txn_log,
    scan_log_file,
)
from probes.txnlog import FILE_HEADER_SIZE

pytestmark = pytest.mark.unit

S1, S2 = 0x1000001AB0000, -0x7FFF000000000001  # a negative one: server ids >= 128 give those
CREATE, DELETE, SET_DATA, CHECK, MULTI, CREATE2 = 1, 2, 5, 13, 14, 15
CREATE_CONTAINER, CREATE_TTL, ERROR, CREATE_SESSION, CLOSE_SESSION = 19, 21, -1, -10, -11


# --- an independent encoder ------------------------------------------------------------------
def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def buf(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def ustr(s: str) -> bytes:
    return buf(s.encode())


OPEN_ACL = i32(1) + i32(31) + ustr("world") + ustr("anyone")


def create_txn(path: str, data: bytes | None, ephemeral: bool = False, cversion: int = 1) -> bytes:
    return ustr(path) + buf(data) + OPEN_ACL + bytes([ephemeral]) + i32(cversion)


def set_data_txn(path: str, data: bytes | None, version: int) -> bytes:
    return ustr(path) + buf(data) + i32(version)


def multi_txn(subs: Sequence[tuple[int, bytes]]) -> bytes:
    return i32(len(subs)) + b"".join(i32(t) + buf(b) for t, b in subs)


def close_session_txn(paths: Sequence[str]) -> bytes:
    return i32(len(paths)) + b"".join(ustr(p) for p in paths)


def payload(zxid: int, type_: int, record: bytes, session: int = S1, digest: bool = True) -> bytes:
    header = i64(session) + i32(zxid * 10) + i64(zxid) + i64(1_700_000_000_000 + zxid) + i32(type_)
    return header + record + (i32(2) + i64(0xABCDEF) if digest else b"")


def entry(body: bytes, *, crc: int | None = None, eor: int = 0x42) -> bytes:
    checksum = zlib.adler32(body) if crc is None else crc
    return i64(checksum) + i32(len(body)) + body + bytes([eor])


def log_file(entries: Sequence[bytes], *, zero_tail: int = 4096) -> bytes:
    return b"ZKLG" + i32(2) + i64(0) + b"".join(entries) + bytes(zero_tail)


def simple_log(n: int, first_zxid: int = 1) -> list[bytes]:
    zxids = range(first_zxid, first_zxid + n)
    return [entry(payload(z, CREATE, create_txn(f"/n{z}", b"v%d" % z))) for z in zxids]


def write(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def paths_of(records: Sequence[TxnRecord]) -> list[str | None]:
    return [r.path for r in records]


# --- record decoding -------------------------------------------------------------------------
def test_create_records_carry_path_data_null_data_and_the_ephemeral_flag() -> None:
    r = decode_payload(payload(7, CREATE, create_txn("/a", None, ephemeral=True, cversion=4)))
    assert (r.zxid, r.session_id, r.cxid, r.time_ms) == (7, S1, 70, 1_700_000_000_007)
    assert (r.op, r.path, r.data, r.ephemeral, r.txn.parent_cversion) == ("create", "/a", None, True, 4)
    assert r.digest is not None
    assert r.digest.version == 2
    empty = decode_payload(payload(8, CREATE2, create_txn("/b", b"", cversion=5), digest=False))
    assert (empty.op, empty.data, empty.ephemeral, empty.digest) == ("create2", b"", False, None)


def test_create_txn_v0_without_parent_cversion_reads_as_cversion_minus_one() -> None:
    v0 = ustr("/old") + buf(b"x") + OPEN_ACL + b"\x00"
    assert decode_payload(payload(1, CREATE, v0)).txn.parent_cversion == -1
    assert decode_payload(payload(1, CREATE, v0, digest=False)).txn.parent_cversion == -1


def test_container_and_ttl_creates() -> None:
    container = ustr("/c") + buf(b"") + OPEN_ACL + i32(3)
    ttl = ustr("/t") + buf(b"d") + OPEN_ACL + i32(3) + i64(5000)
    assert decode_payload(payload(1, CREATE_CONTAINER, container)).op == "createContainer"
    r = decode_payload(payload(2, CREATE_TTL, ttl))
    assert (r.op, r.path, r.data, r.txn.ttl_ms) == ("createTTL", "/t", b"d", 5000)


def test_set_data_carries_the_resulting_version_and_check_the_checked_version() -> None:
    assert decode_payload(payload(3, SET_DATA, set_data_txn("/a", b"2", 2))).version == 2
    check = decode_payload(payload(4, MULTI, multi_txn([(CHECK, ustr("/a") + i32(3))])))
    assert check.ops == (TxnOp("check", "/a", version=2),)  # CheckVersionTxn logs version + 1


def test_session_records() -> None:
    created = decode_payload(payload(1, CREATE_SESSION, i32(6000), session=S2))
    assert (created.op, created.session_id, created.txn.session_timeout_ms) == ("createSession", S2, 6000)
    closed = decode_payload(payload(9, CLOSE_SESSION, close_session_txn(["/e1", "/e2"])))
    assert closed.closed_paths == ("/e1", "/e2")
    assert decode_payload(payload(9, CLOSE_SESSION, close_session_txn([]))).closed_paths == ()
    # zookeeper.closeSessionTxn.enabled=false: no record, with or without a digest
    assert decode_payload(payload(9, CLOSE_SESSION, b"")).closed_paths is None
    assert decode_payload(payload(9, CLOSE_SESSION, b"", digest=False)).closed_paths is None


def test_standalone_failure_is_an_error_record_with_only_its_code() -> None:
    r = decode_payload(payload(5, ERROR, i32(-110), digest=False))
    assert (r.op, r.path, r.failed, r.error_codes) == ("error", None, True, (-110,))
    assert "NODEEXISTS" in r.describe()


def test_successful_multi_keeps_its_sub_ops_in_order() -> None:
    subs = [
        (CREATE, create_txn("/m", None)),
        (SET_DATA, set_data_txn("/m", b"x", 1)),
        (CHECK, ustr("/m") + i32(2)),
        (DELETE, ustr("/m")),
    ]
    r = decode_payload(payload(6, MULTI, multi_txn(subs)))
    assert [(o.op, o.path, o.data, o.version) for o in r.ops] == [
        ("create", "/m", None, None),
        ("setData", "/m", b"x", 1),
        ("check", "/m", None, 1),
        ("delete", "/m", None, None),
    ]
    assert not r.failed
    assert r.error_codes == (0, 0, 0, 0)


def test_failed_multi_reports_per_op_codes_and_keeps_the_prepared_ops_apart() -> None:
    subs = [(CREATE, create_txn("/m", b"a")), (ERROR, i32(-103)), (ERROR, i32(-2))]
    r = decode_payload(payload(6, MULTI, multi_txn(subs)))
    assert r.failed
    assert r.error_codes == (0, -103, -2)
    assert {o.op for o in r.ops} == {"error"}
    prepared = r.ops[0].attempted
    assert prepared is not None
    assert (prepared.op, prepared.path, prepared.data, prepared.parent_cversion) == ("create", "/m", b"a", 1)


# --- file framing ----------------------------------------------------------------------------
def test_zero_filled_tail_is_the_normal_end_of_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, "log.1", log_file(simple_log(3)))
    result = scan_log_file(path, final=True)
    assert paths_of(result.records) == ["/n1", "/n2", "/n3"]
    assert not result.pending
    empty = write(tmp_path, "log.9", log_file([]))
    assert scan_log_file(empty, final=True).records == ()


def test_bad_checksum_in_the_middle_is_corruption_with_offset_and_records_before(tmp_path: Path) -> None:
    entries = simple_log(3)
    entries[1] = entry(payload(2, CREATE, create_txn("/n2", b"v2")), crc=12345)
    path = write(tmp_path, "log.1", log_file(entries))
    with pytest.raises(TxnLogCorrupt, match="checksum mismatch") as e:
        scan_log_file(path)
    assert (e.value.file, e.value.offset) == (path, FILE_HEADER_SIZE + len(entries[0]))
    assert paths_of(e.value.records) == ["/n1"]


def test_a_fully_written_last_entry_with_a_bad_checksum_is_corruption_not_pending(tmp_path: Path) -> None:
    entries = [*simple_log(1), entry(payload(2, DELETE, ustr("/n1")), crc=7)]
    with pytest.raises(TxnLogCorrupt, match="checksum"):
        scan_log_file(write(tmp_path, "log.1", log_file(entries)))


def test_entry_truncated_in_the_middle_of_a_file_is_corruption(tmp_path: Path) -> None:
    entries = simple_log(3)
    entries[1] = entries[1][:-9]  # cut short, the next entry follows at once
    path = write(tmp_path, "log.1", log_file(entries))
    with pytest.raises(TxnLogCorrupt) as e:
        scan_log_file(path)
    assert e.value.offset == FILE_HEADER_SIZE + len(entries[0])
    assert len(e.value.records) == 1


def test_missing_end_of_record_byte_is_corruption(tmp_path: Path) -> None:
    entries = [*simple_log(1), entry(payload(2, DELETE, ustr("/n1")), eor=0x41), *simple_log(1, 3)]
    with pytest.raises(TxnLogCorrupt, match="0x42"):
        scan_log_file(write(tmp_path, "log.1", log_file(entries)))


@pytest.mark.parametrize("length", [-5, 1 << 30])
def test_impossible_length_is_corruption(tmp_path: Path, length: int) -> None:
    bad = i64(99) + i32(length) + b"\x01" * 64
    with pytest.raises(TxnLogCorrupt, match="impossible entry length"):
        scan_log_file(write(tmp_path, "log.1", log_file([*simple_log(2), bad])))


def test_undecodable_record_with_a_good_checksum_is_reported(tmp_path: Path) -> None:
    bad = entry(payload(2, 99, b"???"))
    with pytest.raises(TxnLogCorrupt, match="undecodable record"):
        scan_log_file(write(tmp_path, "log.1", log_file([*simple_log(1), bad])))


def test_bad_magic(tmp_path: Path) -> None:
    with pytest.raises(TxnLogCorrupt, match="bad magic"):
        scan_log_file(write(tmp_path, "log.1", b"ZKSN" + bytes(100)), final=True)


def test_partly_written_last_entry_is_pending_until_completed(tmp_path: Path) -> None:
    done, last = simple_log(2), simple_log(1, 3)[0]
    for cut in (6, 10, 12, len(last) - 20, len(last) - 1):  # checksum, length, payload, EOR
        path = write(tmp_path, "log.1", log_file([*done, last[:cut]]))
        result = scan_log_file(path)
        assert (paths_of(result.records), result.pending) == (["/n1", "/n2"], True), cut
        assert result.end_offset == FILE_HEADER_SIZE + len(done[0]) + len(done[1])


def test_truncated_tail_of_a_final_file_raises_or_is_skipped_on_request(tmp_path: Path) -> None:
    entries = [*simple_log(2), simple_log(1, 3)[0][:30]]
    path = write(tmp_path, "log.1", log_file(entries))
    with pytest.raises(TxnLogCorrupt, match="truncated last entry") as e:
        scan_log_file(path, final=True)
    assert len(e.value.records) == 2
    skipped = scan_log_file(path, final=True, torn_tail="skip")
    assert (len(skipped.records), skipped.torn_tail_offset) == (2, skipped.end_offset)


def test_data_after_the_zero_end_marker_is_a_hole_in_a_final_file(tmp_path: Path) -> None:
    content = log_file(simple_log(1), zero_tail=64) + simple_log(1, 2)[0] + bytes(64)
    path = write(tmp_path, "log.1", content)
    assert len(scan_log_file(path).records) == 1  # still being written: just "the end, for now"
    with pytest.raises(TxnLogCorrupt, match="zero end-of-log marker"):
        scan_log_file(path, final=True)


def test_files_are_ordered_by_the_hex_zxid_in_their_name(tmp_path: Path) -> None:
    write(tmp_path, "log.10", log_file(simple_log(2, 0x10)))
    write(tmp_path, "log.2", log_file(simple_log(8, 0x2)))
    write(tmp_path, "log.a", log_file(simple_log(6, 0xA)))
    write(tmp_path, "snapshot.0", b"not a log")
    assert [f.first_zxid for f in list_log_files(tmp_path)] == [0x2, 0xA, 0x10]
    assert [r.zxid for r in read_txn_log(tmp_path)] == list(range(2, 0x12))


def test_corruption_in_a_later_file_carries_the_records_of_earlier_files(tmp_path: Path) -> None:
    write(tmp_path, "log.1", log_file(simple_log(3)))
    write(tmp_path, "log.4", log_file([entry(b"x" * 40, crc=1), *simple_log(1, 5)]))
    with pytest.raises(TxnLogCorrupt) as e:
        read_txn_log(tmp_path)
    assert (e.value.file.name, e.value.offset, len(e.value.records)) == ("log.4", FILE_HEADER_SIZE, 3)


# --- cursor ----------------------------------------------------------------------------------
def overwrite(path: Path, offset: int, data: bytes) -> None:
    """Write into the preallocated zeros, as ZooKeeper does."""
    with path.open("r+b") as f:
        f.seek(offset)
        f.write(data)


def test_cursor_reads_only_what_was_appended_and_waits_for_a_partial_entry(tmp_path: Path) -> None:
    first = simple_log(2)
    path = write(tmp_path, "log.1", log_file(first, zero_tail=8192))
    cursor = TxnLogCursor.at_end(tmp_path)
    assert cursor.read() == []
    end = FILE_HEADER_SIZE + sum(map(len, first))
    more = simple_log(2, 3)
    overwrite(path, end, more[0] + more[1][:25])  # the second one is still being written
    assert [r.zxid for r in cursor.read()] == [3]
    overwrite(path, end + len(more[0]), more[1])
    assert [r.zxid for r in cursor.read()] == [4]
    assert cursor.position.last_zxid == 4


def test_cursor_follows_rollover_into_the_next_file(tmp_path: Path) -> None:
    path = write(tmp_path, "log.1", log_file(simple_log(2)))
    cursor = TxnLogCursor.at_start(tmp_path)
    assert [r.zxid for r in cursor.read()] == [1, 2]
    overwrite(path, FILE_HEADER_SIZE + sum(map(len, simple_log(2))), simple_log(1, 3)[0])
    write(tmp_path, "log.4", log_file(simple_log(2, 4)))
    assert [r.zxid for r in cursor.read()] == [3, 4, 5]
    write(tmp_path, "log.6", log_file(simple_log(1, 6)))
    assert [r.zxid for r in cursor.read()] == [6]
    assert cursor.position.file == tmp_path / "log.6"


def test_cursor_on_an_empty_directory_reads_nothing_until_a_log_appears(tmp_path: Path) -> None:
    cursor = TxnLogCursor.at_end(tmp_path)
    assert cursor.read() == []
    write(tmp_path, "log.1", log_file(simple_log(1)))
    assert [r.zxid for r in cursor.read()] == [1]


def test_read_until_gives_up_at_the_deadline_with_what_it_read(tmp_path: Path) -> None:
    write(tmp_path, "log.1", log_file(simple_log(2)))
    cursor = TxnLogCursor.at_start(tmp_path)
    with pytest.raises(TxnLogTimeout) as e:
        cursor.read_until(lambda r: r.zxid == 99, deadline_s=0.05)
    assert [r.zxid for r in e.value.records] == [1, 2]
    assert isinstance(e.value, TimeoutError)
    assert cursor.read_through(2) == []


# --- chroot view and session map on records --------------------------------------------------
def rec(zxid: int, op: TxnOp, session: int = S1) -> TxnRecord:
    return TxnRecord(zxid, session, 0, 0, op)


def test_chroot_view_keeps_one_chroot_and_strips_its_prefix() -> None:
    records = [
        rec(1, TxnOp("createSession", session_timeout_ms=6000)),
        rec(2, TxnOp("create", "/t1", b"")),
        rec(3, TxnOp("create", "/t2/a", b"")),
        rec(4, TxnOp("multi", ops=(TxnOp("create", "/t1/x", None), TxnOp("delete", "/t1/x")))),
        rec(5, TxnOp("error", error=-110)),
        rec(6, TxnOp("error", error=-101), session=S2),
        rec(7, TxnOp("closeSession", closed_paths=("/t1/e", "/t2/e"))),
        rec(8, TxnOp("create", "/t10/b", b"")),
        rec(9, TxnOp("closeSession", closed_paths=("/t2/x",))),
    ]
    view = ChrootView("/t1/").filter(records)
    assert [r.zxid for r in view] == [1, 2, 4, 5, 7, 9]
    assert [r.path for r in view] == [None, "/", None, None, None, None]
    assert [o.path for o in view[2].ops] == ["/x", "/x"]
    assert (view[4].closed_paths, view[5].closed_paths) == (("/e",), ())
    assert [r.zxid for r in ChrootView("/t1", frozenset({S2})).filter(records)] == [1, 2, 4, 5, 6, 7, 9]
    assert [r.zxid for r in ChrootView("/t2").filter(records)] == [1, 3, 5, 7, 9]


def test_session_map_links_sessions_to_brokers_under_any_chroot() -> None:
    registration = TxnOp(
        "multi",
        ops=(
            TxnOp("create", "/c/brokers/ids/1", None, ephemeral=True),
            TxnOp("setData", "/c/brokers/ids/1", b"{}"),
        ),
    )
    m = SessionNodeMap.from_records(
        [
            rec(1, TxnOp("createSession", session_timeout_ms=6000)),
            rec(2, registration),
            rec(3, TxnOp("create", "/c/controller", b'{"version":1,"brokerid":1}', ephemeral=True)),
            rec(4, TxnOp("create", "/brokers/ids/2", b"{}", ephemeral=True), session=S2),
        ]
    )
    assert (m.broker_of(S1), m.broker_of(S2)) == (1, 2)
    assert m.sessions_of(1, chroot="/c") == (S1,)
    assert m.sessions_of(1, chroot="/other") == ()
    assert [r.role for r in m.session(S1).roles] == ["broker", "controller"]
    assert m.ephemeral_owner("/c/controller") == S1
    m.update(
        [
            rec(5, TxnOp("delete", "/c/controller")),
            rec(6, TxnOp("closeSession", closed_paths=("/c/brokers/ids/1",))),
        ]
    )
    assert m.ephemeral_owner("/c/controller") is None
    info = m.session(S1)
    assert (info.closed_zxid, info.live_ephemerals, info.broker_id) == (6, frozenset(), 1)


def test_probes_import_neither_pytest_nor_the_reference_controller() -> None:
    """The wall: chaos checkers and other tools import the probes without pytest."""
    code = (
        "import importlib, pkgutil, sys, probes as p\n"
        "for m in pkgutil.iter_modules(p.__path__): importlib.import_module(f'probes.{m.name}')\n"
        "walled = ('pytest', '_pytest', 'reference_controller')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in walled)\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


#: A failed multi[check /controller_epoch, create] as a 3-node ensemble member logged it (chaos run
#: zk-ensemble seed 20261134): the check's sub-op is typed error (-1) but still carries its
#: CheckVersionTxn bytes (DataTree.processTxn rewrote the type in place before the log was written);
#: the create's sub-op is a real ErrorTxn(NODEEXISTS = -110). Then the TxnDigest.
ENSEMBLE_REWRITTEN_MULTI = bytes.fromhex(
    "0300009048dd000500000050000000010000014a000001a20a79c2070000000e00000002ffffffff000000320000002a"
    "2f6368616f732f3831376138366232653535662d30303031312f636f6e74726f6c6c65725f65706f636800000003"
    "ffffffff00000004ffffff92000000020000001e2784b013"
)


@pytest.mark.unit
def test_a_multi_rewritten_in_place_before_logging_decodes_with_datatree_error_codes() -> None:
    record = decode_payload(ENSEMBLE_REWRITTEN_MULTI)
    assert record.zxid == 0x10000014A
    assert record.session_id == 0x300009048DD0005
    assert record.txn.op == "multi"
    assert [(o.op, o.error) for o in record.txn.ops] == [("error", 0), ("error", -110)]
    assert record.digest is not None
