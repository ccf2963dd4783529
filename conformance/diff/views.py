"""Step-end snapshots as compared; relabelling of automatically placed topics (conformance ring, pure).

- :func:`tree_view`: every znode of the scenario's chroot at the end of a step — data as
  :func:`~conformance.diff.normalise.mask_data` leaves it, data version, ephemeral owner (an
  actor, not a session id); pending ISR-change notifications as the union of their partitions.
- :func:`metadata_view`: a broker's Metadata answer (v7): controller, broker ids and racks,
  per-partition leader, leader epoch, replicas, ISR and offline replicas (sorted), error codes.
- :func:`placement_problem` / :func:`relabel_topic`: the "automatic placement" rule of
  :data:`~conformance.diff.normalise.RULES`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.diff.normalise import ISR_CHANGE, Actors, mask_data
from conformance.diff.placement import rack_unaware

__all__ = ["metadata_view", "placement_problem", "relabel_topic", "tree_view"]

RawTree = Mapping[str, tuple[bytes | None, int, int]]  # path → (data, data version, ephemeral owner)


def tree_view(raw: RawTree, actors: Actors) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pending: set[str] = set()
    for path in sorted(raw):
        data, version, owner = raw[path]
        if ISR_CHANGE.match(path):
            value = mask_data(path, data)
            parts = value.get("partitions", []) if isinstance(value, dict) else []
            pending.update(f"{p.get('topic')}-{p.get('partition')}" for p in parts if isinstance(p, dict))
            continue
        out[path] = [mask_data(path, data), version, actors.get(owner, "unknown") if owner else None]
    if pending:
        out["/isr_change_notification/<pending>"] = sorted(pending)
    return out


def metadata_view(response: Any) -> dict[str, Any]:
    topics: dict[str, Any] = {}
    for t in response.topics:
        parts = {
            str(int(p.partition_index)): {
                "error": int(p.error_code),
                "leader": int(p.leader_id),
                "leader_epoch": int(p.leader_epoch),
                "replicas": [int(b) for b in p.replica_nodes],
                "isr": sorted(int(b) for b in p.isr_nodes),
                "offline": sorted(int(b) for b in p.offline_replicas),
            }
            for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
        }
        topics[str(t.name)] = {
            "error": int(t.error_code),
            "internal": bool(t.is_internal),
            "partitions": parts,
        }
    return {
        "controller": int(response.controller_id),
        "brokers": sorted([int(b.node_id), b.rack] for b in response.brokers),
        "topics": dict(sorted(topics.items())),
    }


# --- automatic placement -------------------------------------------------------------------------


def placement_problem(assignment: Mapping[int, Sequence[int]], brokers: Sequence[int], rf: int) -> str | None:
    """None when Kafka's rack-unaware rule yields ``assignment`` for some order of the live brokers
    (Kafka takes them in its metadata cache's LongMap iteration order) and some replica shift."""
    live = sorted(brokers)
    if not live or any(len(r) != rf for r in assignment.values()):
        return f"replication factor {rf} not kept: {dict(assignment)}"
    if sorted(assignment) != list(range(len(assignment))):
        return f"partitions are not 0..{len(assignment) - 1}: {sorted(assignment)}"
    wanted = {p: list(r) for p, r in assignment.items()}
    if len(live) == 1:
        return None if all(r == live for r in wanted.values()) else f"{wanted} is not all on broker {live[0]}"
    for order in itertools.permutations(live):
        for shift in range(len(live)):
            placed = rack_unaware(order, len(wanted), rf, start=0, shift=shift)
            if {p: list(r) for p, r in placed.items()} == wanted:
                return None
    return f"no broker order and replica shift of Kafka's rack-unaware placement over {live} gives {wanted}"


def _label(replicas: Sequence[int], broker: Any) -> Any:
    if not isinstance(broker, int) or broker < 0:
        return broker
    return f"r{list(replicas).index(broker)}" if broker in replicas else "other"


def _relabel_state(value: Any, replicas: Sequence[int]) -> Any:
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for key in ("leader",):
        if key in out:
            out[key] = _label(replicas, out[key])
    for key in ("isr", "replicas", "offline", "adding", "removing"):
        if isinstance(out.get(key), list):
            out[key] = (
                sorted(_label(replicas, b) for b in out[key])
                if key != "replicas"
                else [_label(replicas, b) for b in out[key]]
            )
    return out


def relabel_topic(segment: dict[str, Any], topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
    """Replace every broker id of ``topic``'s partitions in ``segment`` by its replica position."""
    prefix = f"/brokers/topics/{topic}"
    writes = segment["zk"]["writes"]
    for path in [p for p in writes if p == prefix or p.startswith(prefix + "/")]:
        part = _partition_of(path)
        for w in writes[path]:
            if path == prefix and isinstance(w.get("data"), dict):
                w["data"] = {
                    **w["data"],
                    "partitions": {p: len(r) for p, r in w["data"].get("partitions", {}).items()},
                }
            elif part is not None:
                w["data"] = _relabel_state(w.get("data"), assignment.get(part, ()))
        if part is not None and path.endswith("/state"):
            _isr_changes_unordered(writes[path])
    moved: dict[str, dict[str, list[Any]]] = {}
    for dest, view in segment["requests"].items():
        for tp in [k for k in view["partitions"] if k.rsplit("-", 1)[0] == topic]:
            replicas = assignment.get(int(tp.rsplit("-", 1)[1]), ())
            label = _label(replicas, int(dest))
            entries = [_relabel_entry(e, replicas, label) for e in view["partitions"].pop(tp)]
            key = json.dumps(entries, sort_keys=True)
            bucket = moved.setdefault(f"{tp}@{label}", {})
            bucket[key] = [*bucket.get(key, []), 1]
    segment["requests"]["auto-placed"] = {
        "partitions": {
            k: [[json.loads(e), len(n)] for e, n in sorted(v.items())] for k, v in sorted(moved.items())
        }
    }


def _relabel_entry(entry: Any, replicas: Sequence[int], label: str) -> Any:
    """A request entry relabelled; its broker-epoch label ``<id>#<registration>`` becomes the
    destination's position (``r<i>`` or ``other``)."""
    out = _relabel_state(entry, replicas)
    if isinstance(out, dict) and isinstance(out.get("bepoch"), str) and "#" in out["bepoch"]:
        # which broker holds a position — and so which of its registrations the epoch names — is
        # the random placement's choice: the label keeps the position only
        out["bepoch"] = label
    return out


def _isr_changes_unordered(writes: list[dict[str, Any]]) -> None:
    """The state changes after a partition's creation: when the topic is deleted, Kafka takes its
    replicas offline one broker at a time in its map's order of broker ids, so which position
    leaves the ISR first depends on the random placement's ids. Each such write keeps its op,
    version, leader epoch and controller epoch; the last one also its leader and ISR size."""
    changes = [w for w in writes if w.get("op") == "setData" and isinstance(w.get("data"), dict)]
    for i, w in enumerate(changes):
        data = w["data"]
        kept = {k: data[k] for k in ("controller_epoch", "leader_epoch", "version") if k in data}
        if i == len(changes) - 1:
            kept["leader"] = data.get("leader") if data.get("leader") == -1 else "a replica"
            kept["isr_size"] = len(data.get("isr") or [])
        w["data"] = kept


def _partition_of(path: str) -> int | None:
    parts = path.split("/")
    return int(parts[5]) if len(parts) > 5 and parts[4] == "partitions" and parts[5].isdigit() else None
