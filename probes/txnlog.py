"""Reader of ZooKeeper 3.8's binary transaction log files (drivers ring: read-only observation).

The log is ZooKeeper's lossless record of every write it committed, so it is the exact write
history a controller produced (a ``DataWatch`` may skip versions; the log never does). Format
(``FileTxnLog`` / ``Util``@release-3.8.0), all big-endian::

    file   := FileHeader entry* zero-padding
    FileHeader := magic "ZKLG" (int) | version (int, 2) | dbid (long)
    entry  := checksum (long: Adler32 of payload) | length (int) | payload | 0x42 ('B')
    payload := TxnHeader | record | TxnDigest?      (decoded by ``jute.decode_payload``)

Files are ``version-2/log.<hex zxid of their first txn>``, read in zxid order. ZooKeeper
preallocates each file with zeros (64 MiB by default), so a zero checksum and zero length is the
normal end of the file.

How an entry that does not verify is classified (:func:`scan_log_file`):

==================================================  ==================  ==============
what is at the offset                               file still written  file final
==================================================  ==================  ==============
checksum 0, length 0, zeros to the end of the file  end (for now)       end
checksum 0, length 0, then non-zero bytes           end (for now)       corrupt (hole)
partial entry, only zeros after its written prefix  pending (retry)     truncated tail
length < 0 or > ``max_entry_bytes``                 corrupt             corrupt
complete entry, bad checksum or last byte ≠ 0x42    corrupt             corrupt
==================================================  ==================  ==============

"Final" means no more appends will come: a newer log file exists (ZooKeeper flushes a file before
rolling to the next), or the caller says the server is stopped. A truncated tail in a final file
is what a crash mid-write leaves (ZooKeeper itself skips it on recovery as "Last transaction was
partial"); by default it raises :class:`TxnLogCorrupt`, with ``torn_tail="skip"`` it ends the file.

Visibility: ``SyncRequestProcessor`` commits a group of txns (``FileTxnLog.commit``: flush to
the OS, then fsync unless ``forceSync=no``) before ``FinalRequestProcessor`` applies them and
replies, so a write acknowledged to a client is already complete in the file — measured: 100 of
100 acknowledged setData were in the file on the first read, with ``forceSync=no`` (the
harness's default; fsync only matters for power loss, not for a reader on the same host).
Entries may also appear *before* the reply: the 8 KiB ``BufferedOutputStream`` can spill part
of a group to the file, which is why an entry may be seen half-written (``pending``).
"""

from __future__ import annotations

import errno
import os
import re
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from probes.errors import JuteDecodeError, TxnLogCorrupt, TxnLogError
from probes.jute import decode_payload
from probes.txnrecords import TxnRecord

__all__ = [
    "FILE_HEADER_SIZE",
    "MAX_ENTRY_BYTES",
    "FileHeader",
    "LogFile",
    "ScanResult",
    "TornTail",
    "list_log_files",
    "read_txn_log",
    "scan_log_file",
]

TornTail = Literal["error", "skip"]

TXNLOG_MAGIC = b"ZKLG"
_FILE_HEADER = struct.Struct(">4siq")
FILE_HEADER_SIZE = _FILE_HEADER.size  # 16
_ENTRY_HEAD = struct.Struct(">qi")  # checksum, length
END_OF_RECORD = 0x42
MAX_ENTRY_BYTES = 64 << 20  # jute.maxbuffer defaults to ~1 MiB; larger means a garbage length
_CHUNK = 1 << 20
_SEEK_DATA: int | None = getattr(os, "SEEK_DATA", None)
_LOG_NAME = re.compile(r"^log\.([0-9a-fA-F]+)$")


@dataclass(frozen=True, slots=True)
class FileHeader:
    magic: bytes
    version: int
    dbid: int


@dataclass(frozen=True, slots=True, order=True)
class LogFile:
    """One ``log.<hex zxid>`` file; orders by the zxid of its first transaction."""

    first_zxid: int
    path: Path


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What one pass over a log file found.

    ``end_offset`` is where the next read must start; ``pending`` is True when the pass stopped
    at an entry that is still being written; ``torn_tail_offset`` is set when a final file's
    truncated last entry was skipped (``torn_tail="skip"``).
    """

    file: Path
    header: FileHeader | None
    records: tuple[TxnRecord, ...]
    end_offset: int
    pending: bool
    torn_tail_offset: int | None = None


def list_log_files(txn_log_dir: Path | str) -> list[LogFile]:
    """The ``log.*`` files of a ``version-2`` directory, ordered by the zxid in their name."""
    directory = Path(txn_log_dir)
    if not directory.is_dir():
        raise TxnLogError(f"transaction log directory {directory} does not exist")
    found = [(_LOG_NAME.match(p.name), p) for p in directory.iterdir()]
    return sorted(LogFile(int(m.group(1), 16), p) for m, p in found if m)


class _Window:
    """Forward reader of a file from an offset, keeping only the bytes not yet consumed."""

    def __init__(self, f: BinaryIO, offset: int) -> None:
        self._f = f
        self.base = offset
        self.buf = bytearray()
        self._eof = False
        f.seek(offset)

    def fill(self, upto: int) -> bool:
        """Make ``[base, upto)`` available; False if the file ends before ``upto``."""
        while self.base + len(self.buf) < upto and not self._eof:
            chunk = self._f.read(max(_CHUNK, upto - self.base - len(self.buf)))
            self._eof = not chunk
            self.buf += chunk
        return self.base + len(self.buf) >= upto

    def consume(self, upto: int) -> None:
        if upto - self.base > _CHUNK:
            del self.buf[: upto - self.base]
            self.base = upto

    def zeros_from(self, offset: int) -> bool:
        """True if every byte from ``offset`` to the current end of the file is zero."""
        tail = self.buf[max(offset - self.base, 0) :]
        if tail.count(0) != len(tail):
            return False
        self._eof = True
        pos = max(offset, self.base + len(self.buf))
        while True:
            try:  # ZooKeeper preallocates by writing the last byte: the zeros are a hole
                pos = os.lseek(self._f.fileno(), pos, _SEEK_DATA) if _SEEK_DATA is not None else pos
            except OSError as e:
                if e.errno == errno.ENXIO:  # no data after pos
                    return True
            self._f.seek(pos)
            chunk = self._f.read(_CHUNK)
            if not chunk:
                return True
            if chunk.count(0) != len(chunk):
                return False
            pos += len(chunk)


@dataclass(frozen=True, slots=True)
class _Entry:
    payload: bytes
    next_offset: int


@dataclass(frozen=True, slots=True)
class _Stop:
    kind: Literal["end", "incomplete", "corrupt"]
    reason: str = ""


def _next_entry(w: _Window, pos: int, final: bool, max_len: int) -> _Entry | _Stop:
    """Classify the bytes at ``pos`` (see the module docstring's table)."""
    if not w.fill(pos + _ENTRY_HEAD.size):
        if w.zeros_from(pos):
            return _Stop("end")
        return _Stop("incomplete", "entry header cut short by the end of the file")
    crc, length = _ENTRY_HEAD.unpack_from(w.buf, pos - w.base)
    if length == 0:
        if crc != 0:
            if w.zeros_from(pos + _ENTRY_HEAD.size):
                return _Stop("incomplete", "checksum written, length not yet")
            return _Stop("corrupt", f"zero length with non-zero checksum {crc:#x}")
        if final and not w.zeros_from(pos):
            return _Stop("corrupt", "zero end-of-log marker followed by non-zero bytes")
        return _Stop("end")
    if length < 0 or length > max_len:
        return _Stop("corrupt", f"impossible entry length {length}")
    end = pos + _ENTRY_HEAD.size + length
    if not w.fill(end + 1):
        return _Stop("incomplete", f"entry of {length} bytes runs past the end of the file")
    start = pos + _ENTRY_HEAD.size - w.base
    payload = bytes(memoryview(w.buf)[start : start + length])
    eor = w.buf[end - w.base]
    good_crc = zlib.adler32(payload) == crc
    if good_crc and eor == END_OF_RECORD:
        return _Entry(payload, end + 1)
    if eor == 0 and w.zeros_from(end + 1):
        return _Stop("incomplete", f"entry of {length} bytes only partly written")
    if not good_crc:
        return _Stop("corrupt", f"checksum mismatch (stored {crc:#x})")
    return _Stop("corrupt", f"end-of-record byte is {eor:#04x}, not 0x42")


def _read_header(f: BinaryIO, path: Path, final: bool) -> FileHeader | None:
    raw = f.read(FILE_HEADER_SIZE)
    if len(raw) < FILE_HEADER_SIZE:
        if final:
            raise TxnLogCorrupt(path, 0, f"file header cut short ({len(raw)} bytes)")
        return None  # ZooKeeper is creating the file right now
    magic, version, dbid = _FILE_HEADER.unpack(raw)
    if magic != TXNLOG_MAGIC:
        raise TxnLogCorrupt(path, 0, f"bad magic {magic!r}, expected {TXNLOG_MAGIC!r}")
    return FileHeader(magic, version, dbid)


def scan_log_file(
    path: Path | str,
    offset: int | None = None,
    *,
    final: bool = False,
    torn_tail: TornTail = "error",
    max_entry_bytes: int = MAX_ENTRY_BYTES,
) -> ScanResult:
    """Read the complete entries of one log file from ``offset`` (default: after the header).

    Raises :class:`TxnLogCorrupt` (with the records read before the bad entry) on corruption,
    and on a truncated tail of a ``final`` file unless ``torn_tail="skip"``.
    """
    path = Path(path)
    records: list[TxnRecord] = []
    try:
        with path.open("rb") as f:
            header = _read_header(f, path, final)
            pos = FILE_HEADER_SIZE if offset is None else offset
            if header is None:
                return ScanResult(path, None, (), pos, pending=True)
            w = _Window(f, pos)
            while isinstance(step := _next_entry(w, pos, final, max_entry_bytes), _Entry):
                records.append(_decode(step.payload, path, pos, records))
                pos = step.next_offset
                w.consume(pos)
    except FileNotFoundError as e:
        raise TxnLogError(f"transaction log file {path} disappeared (purged?)") from e
    if step.kind == "corrupt":
        raise TxnLogCorrupt(path, pos, step.reason, records)
    if step.kind == "incomplete" and final:
        if torn_tail == "error":
            raise TxnLogCorrupt(path, pos, f"truncated last entry: {step.reason}", records)
        return ScanResult(path, header, tuple(records), pos, False, torn_tail_offset=pos)
    return ScanResult(path, header, tuple(records), pos, pending=step.kind == "incomplete")


def _decode(payload: bytes, path: Path, pos: int, records: list[TxnRecord]) -> TxnRecord:
    try:
        return decode_payload(payload)
    except JuteDecodeError as e:
        raise TxnLogCorrupt(path, pos, f"undecodable record ({e})", records) from e


def read_txn_log(
    source: Path | str | Iterable[Path | str],
    *,
    complete: bool = False,
    torn_tail: TornTail = "error",
) -> list[TxnRecord]:
    """Every record of a ``version-2`` directory (or of the given log files), in file order.

    ``complete=True`` treats the newest file as final too (the server is stopped), so a
    truncated last entry is reported instead of being left for a later read.
    """
    if isinstance(source, (str, Path)):
        files = [f.path for f in list_log_files(source)]
    else:
        files = [f.path for f in sorted(LogFile(_zxid_of(Path(p)), Path(p)) for p in source)]
    records: list[TxnRecord] = []
    for i, file in enumerate(files):
        final = complete or i < len(files) - 1
        try:
            records += scan_log_file(file, final=final, torn_tail=torn_tail).records
        except TxnLogCorrupt as e:
            raise TxnLogCorrupt(e.file, e.offset, e.reason, records + list(e.records)) from e
    return records


def _zxid_of(path: Path) -> int:
    m = _LOG_NAME.match(path.name)
    if not m:
        raise TxnLogError(f"{path} is not named log.<hex zxid>")
    return int(m.group(1), 16)
