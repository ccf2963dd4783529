"""Raw evidence → one trace segment, normalising only what Kafka 2.5.1 leaves open (conformance ring, pure).

Every rule applied here is listed in :data:`RULES` (name, what is normalised, why Kafka leaves it
open, the Kafka 2.5.1 source that makes it so); ``conformance/README.md`` prints the same table.
Nothing else is dropped: a field that is not named by a rule is compared as observed.

A segment is a JSON object::

    {"step": i, "op": ..., "action": {...}, "barrier": "ok" | {"timeout": [...]},
     "answers": [...],                               # client and probe answers, in step order
     "zk": {"writes": {path: [write, ...]},          # per-path write history
            "isr_notified": {actor: [tp, ...]},      # union of ISR-change notifications
            "failed": {actor: {code: n}}, "closed": {actor: [[ephemerals], ...]}},
     "requests": {dest: {"partitions": {tp: [entry, ...]}, "brokers": [[...], ...]}},
     "tree": {path: [data, version, ephemeral owner]}, "metadata": {broker: answer}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from conformance.diff.rules import RULES, Rule
from probes.request_proxy import ControllerRequest, PartitionEntry
from probes.txnrecords import TxnOp, TxnRecord, error_name

__all__ = [
    "NORMALISER_VERSION",
    "RULES",
    "Actors",
    "Rule",
    "broker_epoch_labels",
    "mask_data",
    "requests_view",
    "shutdowns_view",
    "zk_view",
]

NORMALISER_VERSION = 1

STATE_PATH = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
ISR_CHANGE = re.compile(r"^/isr_change_notification/isr_change_\d+$")
BROKER_PATH = re.compile(r"^/brokers/ids/(\d+)$")
TOPIC_PATH = re.compile(r"^/brokers/topics/[^/]+$")
_ENDPOINT_PORT = re.compile(r":\d+$")
MASK = "<masked>"


Actors = Mapping[int, str]  # session id → actor ("node-2", "harness")


def _json(data: bytes | None) -> Any:
    if data is None or data == b"":
        return None
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        try:
            return {"text": data.decode("utf-8")}
        except UnicodeDecodeError:
            return {"hex": data.hex()}


def mask_data(path: str, data: bytes | None) -> Any:
    """A znode's data as compared: parsed JSON with the open fields masked and the ISR sorted."""
    value = _json(data)
    if not isinstance(value, dict):
        return value
    if path == "/controller":
        return {**value, "timestamp": MASK}
    if path == "/cluster/id":
        return {**value, "id": MASK}
    if BROKER_PATH.match(path):
        out = {**value, "timestamp": MASK, "port": MASK}
        if isinstance(value.get("endpoints"), list):
            out["endpoints"] = [_ENDPOINT_PORT.sub(":*", str(e)) for e in value["endpoints"]]
        return out
    if STATE_PATH.match(path) and isinstance(value.get("isr"), list):
        return {**value, "isr": sorted(value["isr"])}
    return value


def broker_epoch_labels(records: Iterable[TxnRecord]) -> dict[int, str]:
    """czxid → ``<id>#<n>``: the n-th registration of broker <id> in these records."""
    labels: dict[int, str] = {}
    seen: dict[str, int] = {}
    for r in records:
        for op in (r.txn, *r.ops):
            m = BROKER_PATH.match(op.path or "")
            if m and op.op.startswith("create") and not r.failed:
                seen[m.group(1)] = seen.get(m.group(1), 0) + 1
                labels[r.zxid] = f"{m.group(1)}#{seen[m.group(1)]}"
    return labels


# --- ZooKeeper writes ----------------------------------------------------------------------------


def _form(record: TxnRecord) -> str:
    if record.op != "multi":
        return "plain"
    checks = [o for o in record.ops if o.op == "check"]
    writes = [o for o in record.ops if o.op != "check"]
    if checks and checks[0].path == "/controller_epoch" and record.ops[0].op == "check":
        extra = f" +{len(writes) - 1} more" if len(writes) > 1 else ""
        return f"fenced(epoch v{checks[0].version}){extra}"
    return "multi[" + ",".join(o.op for o in record.ops) + "]"


def _write(op: TxnOp, actor: str, form: str) -> dict[str, Any]:
    path = op.path or "?"
    entry: dict[str, Any] = {"by": actor, "form": form, "op": op.op}
    if op.op.startswith("create") or op.op == "setData":
        entry["data"] = mask_data(path, op.data)
    if op.op == "setData":
        entry["version"] = op.version
    if op.ephemeral:
        entry["ephemeral"] = True
    return entry


def _is_expansion(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """``after`` is a leader's ISR expansion of ``before`` (same leader, epochs; ISR grown)."""
    if before.get("op") != "setData" or after.get("op") != "setData" or before["by"] != after["by"]:
        return False
    b, a = before.get("data") or {}, after.get("data") or {}
    if not isinstance(b, dict) or not isinstance(a, dict) or "plain" not in (before["form"], after["form"]):
        return False
    if before["form"] != "plain" or after["form"] != "plain":
        return False
    same = all(b.get(k) == a.get(k) for k in ("leader", "leader_epoch", "controller_epoch"))
    return same and set(b.get("isr", [])) < set(a.get("isr", []))


def _collapse_joins(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in history:
        if out and _is_expansion(out[-1], entry):
            joined = dict(entry)
            joined["isr_joins"] = out[-1].get("isr_joins", 1) + 1
            out[-1] = joined
        else:
            out.append(entry)
    return out


REASSIGN_PATH = "/admin/reassign_partitions"


def _reassignments_left(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A controller's rewrites of ``/admin/reassign_partitions`` as partitions complete, by the
    number of entries each leaves (RULES "reassignment completion order")."""
    out = []
    for w in history:
        data, entry = w.get("data"), w
        if w.get("op") == "setData" and w.get("by") != "harness" and isinstance(data, dict):
            left = data.get("partitions")
            if isinstance(left, list):
                entry = {**w, "data": {**data, "partitions": f"{len(left)} left"}}
        out.append(entry)
    return out


def _completed_partition(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """The partition whose reassignment ``after`` completes, if that is all it changes.

    A completion (``KafkaController.updateReplicaAssignmentForPartition`` in phase B) rewrites the
    topic znode with one partition's target replicas and its adding/removing entries gone; every
    other partition, and every other field, is as before."""
    if before.get("op") not in ("create", "setData") or after.get("op") != "setData":
        return None
    if before["by"] != after["by"] or before["by"] == "harness" or before["form"] != after["form"]:
        return None
    b, a = before.get("data"), after.get("data")
    if not isinstance(b, dict) or not isinstance(a, dict) or set(b) != set(a):
        return None
    maps = ("partitions", "adding_replicas", "removing_replicas")
    if any(b.get(k) != a.get(k) for k in b if k not in maps):
        return None
    if not all(isinstance(b.get(k, {}), dict) and isinstance(a.get(k, {}), dict) for k in maps):
        return None
    parts_b, parts_a = b.get("partitions", {}), a.get("partitions", {})
    adding_b, adding_a = b.get("adding_replicas", {}), a.get("adding_replicas", {})
    removing_b, removing_a = b.get("removing_replicas", {}), a.get("removing_replicas", {})
    if set(parts_b) != set(parts_a):
        return None
    changed = {k for k in parts_b if parts_b[k] != parts_a[k]}
    changed |= {k for k in set(adding_b) | set(adding_a) if adding_b.get(k) != adding_a.get(k)}
    changed |= {k for k in set(removing_b) | set(removing_a) if removing_b.get(k) != removing_a.get(k)}
    if len(changed) != 1:
        return None
    (p,) = changed
    was_moving = p in adding_b or p in removing_b
    return p if was_moving and p not in adding_a and p not in removing_a else None


def _completions_unordered(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A topic znode's history with each run of consecutive reassignment completions compared as
    one entry: the partitions completed (a set) and the znode the last one leaves (RULES
    "reassignment completion order"). Every other write is compared as it is."""
    out: list[dict[str, Any]] = []
    prev: dict[str, Any] | None = None
    for entry in history:
        p = _completed_partition(prev, entry) if prev is not None else None
        if p is None:
            out.append(entry)
        elif "completions" in out[-1]:  # prev was a completion too: the run goes on
            done = [*out[-1]["completions"], p]
            out[-1] = {**entry, "completions": sorted(done, key=lambda k: (len(k), k))}
        else:
            out.append({**entry, "completions": [p]})
        prev = entry
    return out


def _notified(data: bytes | None) -> list[str]:
    value = _json(data)
    parts = value.get("partitions", []) if isinstance(value, dict) else []
    return [f"{p.get('topic')}-{p.get('partition')}" for p in parts if isinstance(p, dict)]


def zk_view(records: Sequence[TxnRecord], actors: Actors) -> dict[str, Any]:
    """The step's ZooKeeper writes: per-path histories, notifications, failures, session closes."""
    writes: dict[str, list[dict[str, Any]]] = {}
    notified: dict[str, set[str]] = {}
    failed: dict[str, dict[str, int]] = {}
    closed: dict[str, list[list[str]]] = {}
    for r in records:
        actor = actors.get(r.session_id, "unknown")
        if r.op == "closeSession":
            closed.setdefault(actor, []).append(sorted(r.closed_paths or ()))
            continue
        if r.failed:
            key = (
                "multi[" + ",".join(error_name(c) for c in r.error_codes) + "]"
                if r.op == "multi"
                else error_name(r.error or 0)
            )
            failed.setdefault(actor, {}).setdefault(key, 0)
            failed[actor][key] += 1
            continue
        form = _form(r)
        for op in r.ops if r.op == "multi" else (r.txn,):
            if op.op == "check" or op.path is None:
                continue
            if ISR_CHANGE.match(op.path):
                if op.op.startswith("create"):
                    notified.setdefault(actor, set()).update(_notified(op.data))
                else:
                    writes.setdefault("/isr_change_notification/<consumed>", []).append(
                        {"by": actor, "form": form, "op": op.op}
                    )
                continue
            writes.setdefault(op.path, []).append(_write(op, actor, form))
    for path in list(writes):
        if path.endswith("<consumed>"):
            uniq = {json.dumps(e, sort_keys=True) for e in writes[path]}
            writes[path] = [json.loads(u) for u in sorted(uniq)]
        elif STATE_PATH.match(path):
            writes[path] = _collapse_joins(writes[path])
        elif path == REASSIGN_PATH:
            writes[path] = _reassignments_left(writes[path])
        elif TOPIC_PATH.match(path):
            writes[path] = _completions_unordered(writes[path])
    return {
        "writes": {p: writes[p] for p in sorted(writes)},
        "isr_notified": {a: sorted(v) for a, v in sorted(notified.items())},
        "failed": {a: dict(sorted(v.items())) for a, v in sorted(failed.items())},
        "closed": dict(sorted(closed.items())),
    }


# --- controller requests -------------------------------------------------------------------------


def _epoch_label(epoch: int | None, labels: Mapping[int, str]) -> Any:
    if epoch is None or epoch < 0:
        return epoch
    return labels.get(epoch, "unregistered")


def _entry(r: ControllerRequest, e: PartitionEntry, labels: Mapping[int, str]) -> dict[str, Any]:
    tp = (e.topic, e.partition)
    answer: Any = r.partition_errors.get(tp, r.error_code) if r.error_code is not None else "no answer"
    if r.error_code not in (None, 0):
        answer = r.error_code
    out: dict[str, Any] = {
        "api": r.api,
        "v": r.api_version,
        "from": r.source,
        "ctrl": r.controller_id,
        "cepoch": r.controller_epoch,
        "bepoch": _epoch_label(r.broker_epoch, labels),
        "answer": answer,
    }
    if r.api == "StopReplica":
        out["delete"] = e.delete_partition
        return out
    out.update(
        leader=e.leader,
        leader_epoch=e.leader_epoch,
        isr=sorted(e.isr),
        zk_version=e.zk_version,
        replicas=list(e.replicas),
        state_cepoch=e.controller_epoch,
    )
    if r.api == "LeaderAndIsr":
        out.update(is_new=e.is_new, adding=list(e.adding), removing=list(e.removing))
        out["leader_listed"] = e.leader in r.live_leaders if e.leader is not None and e.leader >= 0 else None
    else:
        out["offline"] = sorted(e.offline)
    return out


def _brokers(r: ControllerRequest) -> list[Any]:
    out = []
    for b in getattr(r.request, "live_brokers", ()) or ():
        listeners = sorted(str(getattr(ep, "listener", "")) for ep in getattr(b, "endpoints", ()) or ())
        out.append([int(b.id_), listeners, getattr(b, "rack", None)])
    return sorted(out, key=lambda x: int(x[0]))


def requests_view(
    requests: Sequence[ControllerRequest], labels: Mapping[int, str], told: dict[Any, Any] | None = None
) -> dict[str, Any]:
    """Per destination broker: per-partition request entries, and every change of the live-broker
    list each incarnation of it is told (``told``: the last list told before these requests, by
    broker and broker epoch; updated)."""
    told = {} if told is None else told
    out: dict[int, dict[str, Any]] = {}
    for r in requests:
        dest = out.setdefault(r.dest, {"partitions": {}, "brokers": [], "undecodable": 0})
        if r.decode_error is not None and r.api == "undecodable":
            dest["undecodable"] += 1
            continue
        if r.api == "UpdateMetadata":
            brokers, incarnation = _brokers(r), (r.dest, r.broker_epoch)
            if told.get(incarnation) != brokers:
                dest["brokers"].append(brokers)
                told[incarnation] = brokers
        for e in r.partitions:
            seq = dest["partitions"].setdefault(f"{e.topic}-{e.partition}", [])
            entry = _entry(r, e, labels)
            if r.api == "UpdateMetadata" and seq and seq[-1]["api"] == "UpdateMetadata":
                seq[-1] = entry  # a run of UpdateMetadata: the last one counts (RULES "UpdateMetadata runs")
            else:
                seq.append(entry)
    return {
        str(d): {**v, "partitions": dict(sorted(v["partitions"].items()))} for d, v in sorted(out.items())
    }


def shutdowns_view(requests: Sequence[ControllerRequest], labels: Mapping[int, str]) -> list[dict[str, Any]]:
    """Every ControlledShutdown a broker sent in the step, in the order the proxies saw them (a
    broker's retries are sequential): who asked whom, with
    which version, broker id and broker epoch, and the answer — its error code and the partitions
    the controller says the broker still leads ("no answer" when none came back)."""
    out = []
    for r in sorted(requests, key=lambda r: r.seq):
        answered = r.error_code is not None
        out.append(
            {
                "from": r.source,
                "to": r.dest,
                "v": r.api_version,
                "broker": r.broker_id,
                "bepoch": _epoch_label(r.broker_epoch, labels),
                "answer": r.error_code if answered else ("undecodable" if r.decode_error else "no answer"),
                "remaining": list(r.remaining) if answered else None,
            }
        )
    return out
