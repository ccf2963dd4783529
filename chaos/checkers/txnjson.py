"""JSON lines form of transaction-log records (decisions ring, pure codec).

It keeps what the checkers read from a real ZooKeeper log (every ``TxnRecord`` field, data as
base64): the runner writes a run's records as ``txn-records.jsonl`` (:func:`records_jsonl`) so
that ``python -m chaos check RUN_DIR`` can judge the run again later
(:func:`chaos.run.judged.load_txn_records` reads them back, naming a bad line), and unit tests
replay checked-in captures of real controllers' writes without a server.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

from probes import Acl, TxnOp, TxnRecord


def op_to_json(op: TxnOp) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op.op}
    if op.path is not None:
        out["path"] = op.path
    if op.data is not None:
        out["data"] = base64.b64encode(op.data).decode()
    for key in ("ephemeral", "version", "parent_cversion", "ttl_ms", "error", "session_timeout_ms"):
        value = getattr(op, key)
        if value not in (None, False):
            out[key] = value
    if op.acl:
        out["acl"] = [[a.perms, a.scheme, a.id] for a in op.acl]
    if op.attempted is not None:
        out["attempted"] = op_to_json(op.attempted)
    if op.ops:
        out["ops"] = [op_to_json(o) for o in op.ops]
    if op.closed_paths is not None:
        out["closed_paths"] = list(op.closed_paths)
    return out


def op_from_json(obj: dict[str, Any]) -> TxnOp:
    return TxnOp(
        op=obj["op"],
        path=obj.get("path"),
        data=base64.b64decode(obj["data"]) if "data" in obj else None,
        ephemeral=obj.get("ephemeral", False),
        version=obj.get("version"),
        parent_cversion=obj.get("parent_cversion"),
        ttl_ms=obj.get("ttl_ms"),
        acl=tuple(Acl(p, s, i) for p, s, i in obj.get("acl", ())),
        error=obj.get("error"),
        attempted=op_from_json(obj["attempted"]) if "attempted" in obj else None,
        ops=tuple(op_from_json(o) for o in obj.get("ops", ())),
        session_timeout_ms=obj.get("session_timeout_ms"),
        closed_paths=tuple(obj["closed_paths"]) if "closed_paths" in obj else None,
    )


def record_to_json(r: TxnRecord) -> dict[str, Any]:
    return {
        "zxid": r.zxid,
        "session_id": r.session_id,
        "cxid": r.cxid,
        "time_ms": r.time_ms,
        "txn": op_to_json(r.txn),
    }


def record_from_json(obj: dict[str, Any]) -> TxnRecord:
    return TxnRecord(obj["zxid"], obj["session_id"], obj["cxid"], obj["time_ms"], op_from_json(obj["txn"]))


def records_jsonl(records: Iterable[TxnRecord]) -> str:
    """The records as JSON lines (one object per line, each line ending in a newline)."""
    return "".join(json.dumps(record_to_json(r)) + "\n" for r in records)
