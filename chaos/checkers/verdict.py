"""Verdicts of the chaos checkers and the evidence they carry (decisions ring, pure).

A checker answers ``valid``, ``invalid`` (with the records, ops or znodes that break its
property) or ``unknown`` (the data it needs is missing). Verdicts compose like Jepsen's
(``checker.clj`` ``valid-priorities``): invalid beats unknown beats valid. ``excused`` names,
per Kafka 2.5.1 quirk (:mod:`chaos.checkers.quirks`), the items the quirk explained and the
verdict therefore does not count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from probes.txnrecords import TxnRecord

if TYPE_CHECKING:
    from chaos.history import Op

__all__ = [
    "MAX_EVIDENCE",
    "Validity",
    "Verdict",
    "aggregate",
    "excused_counts",
    "excused_items",
    "op_evidence",
    "record_evidence",
]

Validity = Literal["valid", "invalid", "unknown"]
_PRIORITY: dict[Validity, int] = {"valid": 0, "unknown": 1, "invalid": 2}
#: Evidence kept per verdict; the message says how many items there were in all.
MAX_EVIDENCE = 20


@dataclass(frozen=True)
class Verdict:
    """One checker's answer. ``evidence`` items are JSON objects (``kind`` says which sort)."""

    checker: str
    validity: Validity
    message: str
    evidence: tuple[Mapping[str, Any], ...] = field(default=())
    excused: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def is_valid(self) -> bool:
        return self.validity == "valid"

    @property
    def is_invalid(self) -> bool:
        return self.validity == "invalid"

    def to_json(self) -> dict[str, Any]:
        return {
            "checker": self.checker,
            "validity": self.validity,
            "message": self.message,
            "evidence": [dict(e) for e in self.evidence],
            "excused": {quirk: list(items) for quirk, items in self.excused.items()},
        }

    @property
    def excused_counts(self) -> dict[str, int]:
        """Quirk name → how many items it excused in this verdict."""
        return {quirk: len(items) for quirk, items in self.excused.items()}

    @classmethod
    def valid(cls, checker: str, message: str, excused: Mapping[str, tuple[str, ...]] = {}) -> Verdict:
        return cls(checker, "valid", message, (), dict(excused))

    @classmethod
    def unknown(cls, checker: str, message: str, excused: Mapping[str, tuple[str, ...]] = {}) -> Verdict:
        return cls(checker, "unknown", message, (), dict(excused))

    @classmethod
    def invalid(
        cls,
        checker: str,
        problems: Sequence[str],
        evidence: Iterable[Mapping[str, Any]],
        excused: Mapping[str, tuple[str, ...]] = {},
    ) -> Verdict:
        """``problems``: one line per violation; the message joins the first few."""
        items = tuple(evidence)
        shown = "; ".join(problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        dropped = (
            f" [evidence truncated to {MAX_EVIDENCE} of {len(items)}]" if len(items) > MAX_EVIDENCE else ""
        )
        message = f"{len(problems)} violation(s): {shown}{more}{dropped}"
        return cls(checker, "invalid", message, items[:MAX_EVIDENCE], dict(excused))


def aggregate(verdicts: Iterable[Verdict]) -> Validity:
    """invalid if any is invalid, else unknown if any is unknown, else valid (also for none)."""
    return max((v.validity for v in verdicts), key=_PRIORITY.__getitem__, default="valid")


def excused_items(verdicts: Iterable[Verdict]) -> dict[str, list[str]]:
    """Quirk name → every item it excused across ``verdicts`` (each once, sorted)."""
    out: dict[str, set[str]] = {}
    for v in verdicts:
        for quirk, items in v.excused.items():
            out.setdefault(quirk, set()).update(items)
    return {quirk: sorted(items) for quirk, items in sorted(out.items())}


def excused_counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """Quirk name → how many distinct items it excused across ``verdicts`` (for run records)."""
    return {quirk: len(items) for quirk, items in excused_items(verdicts).items()}


def record_evidence(record: TxnRecord, note: str = "") -> dict[str, Any]:
    """A transaction-log record as evidence (zxid and session in hex, as ZooKeeper prints them)."""
    out: dict[str, Any] = {
        "kind": "txn",
        "zxid": f"0x{record.zxid:x}",
        "session": f"0x{record.session_id & 0xFFFF_FFFF_FFFF_FFFF:x}",
        "record": record.describe(),
    }
    if note:
        out["note"] = note
    return out


def op_evidence(op: Op, note: str = "") -> dict[str, Any]:
    """A history op as evidence (its JSON line)."""
    out: dict[str, Any] = {"kind": "op", **op.to_json()}
    if note:
        out["note"] = note
    return out
