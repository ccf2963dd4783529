"""Errors raised by the observation probes (drivers ring: read-only observation of a cluster).

One exception root, :class:`ProbeError`, so that callers (conformance checks, chaos checkers)
can catch everything a probe may raise in one place. Each error carries what was observed —
the path and the raw bytes of a malformed znode, the file, byte offset and the records read
before a corrupt transaction-log entry — so a failing check can print the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probes.txnrecords import TxnRecord

__all__ = [
    "FourLetterWordError",
    "JuteDecodeError",
    "MalformedZnode",
    "ProbeError",
    "TxnLogCorrupt",
    "TxnLogError",
]


class ProbeError(Exception):
    """Root of every error raised by ``probes``."""


class MalformedZnode(ProbeError):
    """A znode's data is not what Kafka writes there (bad JSON, wrong shape, null data, ...).

    ``raw`` is the data exactly as read: ``None`` for a null-data znode, bytes otherwise.
    """

    def __init__(self, path: str, raw: bytes | None, reason: str) -> None:
        self.path = path
        self.raw = raw
        self.reason = reason
        super().__init__(f"malformed znode {path}: {reason}; data={raw!r}")


class JuteDecodeError(ProbeError):
    """A jute-encoded record could not be decoded (too short, bad length, unknown type)."""


class TxnLogError(ProbeError):
    """Problem reading ZooKeeper's transaction log (missing directory or file, bad header)."""


class TxnLogCorrupt(TxnLogError):
    """A transaction-log entry is truncated or corrupt.

    ``file`` and ``offset`` locate the first byte of the bad entry; ``records`` are the
    records successfully read before it (in this read), so a caller still gets a partial
    history.
    """

    def __init__(
        self,
        file: Path,
        offset: int,
        reason: str,
        records: Sequence[TxnRecord] = (),
    ) -> None:
        self.file = file
        self.offset = offset
        self.reason = reason
        self.records: tuple[TxnRecord, ...] = tuple(records)
        last = f", last good zxid 0x{self.records[-1].zxid:x}" if self.records else ""
        super().__init__(
            f"corrupt transaction log {file} at byte offset {offset}: {reason} "
            f"({len(self.records)} records read before it{last})"
        )


class FourLetterWordError(ProbeError):
    """A four-letter-word command failed or was refused (e.g. not in the whitelist)."""
