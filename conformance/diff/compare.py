"""A target's trace against the reference's: the first divergence, its behaviour IDs (conformance, pure).

Segments are compared in step order and, inside a segment, component by component: the step's
own action and answers, the barrier's outcome, ZooKeeper writes (per path), ISR notifications,
failed writes and closed sessions, controller requests (per broker and partition, then the
live-broker lists), the znode tree, and the brokers' Metadata. The first difference is a
:class:`Divergence`: where it is (step, component, concrete location), what Kafka 2.5.1 did (the
reference's value) and what the target did, its *signature* (operation, component, key with
names and numbers replaced by ``*``) — what the shrinker keeps — and the behaviour IDs of
``behaviours.toml`` plus the step's own.

Tolerated divergences (:data:`TOLERATED`) are Kafka 2.5.1 defects the spec lets a target fix; a
divergence that matches one is listed, never dropped silently, and comparison goes on past it.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import catalogue
from conformance.diff.steps import KINDS

__all__ = ["TOLERATED", "Divergence", "Tolerated", "compare", "ids_for", "render"]

MAP_PATH = Path(__file__).resolve().parent / "behaviours.toml"
_NUMBERS = re.compile(r"\d+")


@dataclass(frozen=True)
class Tolerated:
    name: str
    spec: str
    applies: Callable[[Divergence], bool]


@dataclass(frozen=True)
class Divergence:
    step: int
    op: str
    component: str
    location: str
    key: str
    reference: Any
    target: Any
    ids: tuple[str, ...] = ()
    tolerated: str | None = None

    @property
    def pattern(self) -> str:
        key = re.sub(r"/brokers/topics/[^/]+", "/brokers/topics/*", self.key)
        key = re.sub(r"/(delete_topics|topics)/[^/]+", r"/\1/*", key)
        return _NUMBERS.sub("*", key)

    @property
    def signature(self) -> str:
        return f"{self.op}|{self.component}|{self.pattern}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "signature": self.signature, "ids": list(self.ids)}


#: Kafka 2.5.1 defects a target may fix (spec §13.7). ElectLeaders is not in the step vocabulary
#: yet; the entry matches its answer as soon as it is.
TOLERATED: tuple[Tolerated, ...] = (
    Tolerated(
        "ElectLeaders for a partition without state is never answered",
        "spec §13.7, §13.3.6",
        lambda d: d.op == "elect_leaders" and d.component == "answer" and d.reference == "no answer",
    ),
)


def _load_map() -> list[tuple[re.Pattern[str], re.Pattern[str], tuple[str, ...]]]:
    known = {b.id for b in catalogue.CATALOGUE}
    data = tomllib.loads(MAP_PATH.read_text(encoding="utf-8"))
    out = []
    for i, entry in enumerate(data.get("map", [])):
        ids = tuple(entry["ids"])
        bad = [x for x in ids if x not in known]
        if bad:
            raise ValueError(f"{MAP_PATH}: map #{i + 1} names unknown behaviour IDs {bad}")
        out.append((re.compile(f"^({entry['where']})$"), re.compile(entry["match"]), ids))
    return out


_MAP = _load_map()


def ids_for(op: str, component: str, key: str) -> tuple[str, ...]:
    found: list[str] = []
    for where, match, ids in _MAP:
        if where.match(component) and match.search(key):
            found += [i for i in ids if i not in found]
    kind = KINDS.get(op)
    return tuple(found + [i for i in (kind.ids if kind else ()) if i not in found])


# --- walking two segments ------------------------------------------------------------------------

Diff = tuple[str, str, str, Any, Any]  # component, location, key, reference, target


def _first_field(a: Any, b: Any) -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        return next((k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)), "")
    return ""


def _mapping(component: str, a: Mapping[str, Any], b: Mapping[str, Any], where: str = "") -> Iterator[Diff]:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            yield component, f"{where}{k}", k, a.get(k, "absent"), b.get(k, "absent")


def _writes(a: Mapping[str, Any], b: Mapping[str, Any]) -> Iterator[Diff]:
    for path in sorted(set(a) | set(b)):
        x, y = a.get(path, []), b.get(path, [])
        if x == y:
            continue
        forms = [e.get("form") for e in x] != [e.get("form") for e in y] and len(x) == len(y)
        yield "zk", path, f"{path}.form" if forms else path, x or "no write", y or "no write"


def _pooled_key(u: Any, v: Any) -> str:
    """``<api>.pooled``: a group ``[entries, brokers]`` of the pooled requests (views.relabel_topic)."""
    for group in (u, v):
        if isinstance(group, list) and group and isinstance(group[0], list):
            first = next((e for e in group[0] if isinstance(e, dict)), None)
            if first is not None:
                return f"{first.get('api', '?')}.pooled"
    return "?.pooled"


def _requests(a: Mapping[str, Any], b: Mapping[str, Any]) -> Iterator[Diff]:
    for dest in sorted(set(a) | set(b), key=str):
        x, y = a.get(dest, {}), b.get(dest, {})
        px, py = x.get("partitions", {}), y.get("partitions", {})
        for tp in sorted(set(px) | set(py)):
            ex, ey = px.get(tp, []), py.get(tp, [])
            for i in range(max(len(ex), len(ey))):
                u, v = (ex[i] if i < len(ex) else None), (ey[i] if i < len(ey) else None)
                if u == v:
                    continue
                if not isinstance(u or v, dict):  # a pool of the brokers outside an automatic placement
                    yield (
                        "requests",
                        f"to broker {dest}, {tp}, group #{i + 1}",
                        _pooled_key(u, v),
                        u or "none",
                        v or "none",
                    )
                    break
                api = (u or v or {}).get("api", "?")
                key = (
                    f"{api}.{_first_field(u, v)}"
                    if u and v and u.get("api") == v.get("api")
                    else f"{api}.count"
                )
                yield "requests", f"to broker {dest}, {tp}, request #{i + 1}", key, u or "none", v or "none"
                break
        if x.get("brokers") != y.get("brokers"):
            yield "requests", f"to broker {dest}", "brokers", x.get("brokers"), y.get("brokers")
        if x.get("undecodable") != y.get("undecodable"):
            yield "requests", f"to broker {dest}", "undecodable", x.get("undecodable"), y.get("undecodable")


def _shutdowns(a: list[Any], b: list[Any]) -> Iterator[Diff]:
    """The brokers' ControlledShutdown requests of the step, one by one: the first that differs."""
    for i in range(max(len(a), len(b))):
        u, v = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        if u == v:
            continue
        field_ = _first_field(u, v) if u and v else "count"
        where = f"ControlledShutdown #{i + 1} from broker {(u or v or {}).get('from', '?')}"
        yield "requests", where, f"ControlledShutdown.{field_}", u or "none", v or "none"
        return


def _action(op: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> Iterator[Diff]:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            answer = k in ("answer", "placement")
            yield ("answer" if answer else "action"), k, f"{op}:{k}", a.get(k, "absent"), b.get(k, "absent")


def _segment(a: Mapping[str, Any], b: Mapping[str, Any]) -> Iterator[Diff]:
    yield from _action(a.get("op", "?"), a.get("action", {}), b.get("action", {}))
    if a.get("barrier") != b.get("barrier"):
        yield "barrier", "barrier", "barrier", a.get("barrier"), b.get("barrier")
    za, zb = a.get("zk", {}), b.get("zk", {})
    yield from _writes(za.get("writes", {}), zb.get("writes", {}))
    for part in ("isr_notified", "failed", "closed"):
        if za.get(part) != zb.get(part):
            yield "zk", part, part, za.get(part), zb.get(part)
    yield from _requests(a.get("requests", {}), b.get("requests", {}))
    yield from _shutdowns(a.get("shutdowns", []), b.get("shutdowns", []))
    yield from _mapping("tree", a.get("tree", {}), b.get("tree", {}))
    for broker in sorted(set(a.get("metadata", {})) | set(b.get("metadata", {}))):
        ma, mb = a.get("metadata", {}).get(broker), b.get("metadata", {}).get(broker)
        if ma != mb:
            sub = _first_field(ma, mb)
            yield "metadata", f"broker {broker} {sub}".strip(), f"metadata.{sub}", ma, mb


@dataclass
class Comparison:
    divergence: Divergence | None
    tolerated: list[Divergence] = field(default_factory=list)


def compare(reference: Mapping[str, Any], target: Mapping[str, Any]) -> Comparison:
    """The first non-tolerated divergence of ``target``'s trace from ``reference``'s (and the
    tolerated ones met before it)."""
    out = Comparison(None)
    segs_a, segs_b = reference.get("segments", []), target.get("segments", [])
    for a, b in zip(segs_a, segs_b, strict=False):
        for diff in _segment(a, b):
            d = _make(a["step"], a["op"], diff)
            if d.tolerated:
                out.tolerated.append(d)
                continue
            out.divergence = d
            return out
    if len(segs_a) != len(segs_b) or reference.get("status") != target.get("status"):
        longer = segs_a if len(segs_a) > len(segs_b) else segs_b
        seg = longer[min(len(segs_a), len(segs_b))] if len(segs_a) != len(segs_b) else longer[-1]
        diff = ("status", "the run", "status", _status(reference), _status(target))
        out.divergence = _make(seg["step"], seg["op"], diff)
    return out


def _status(trace: Mapping[str, Any]) -> str:
    status = str(trace.get("status"))
    return f"{status}: {trace['error']}" if trace.get("error") else status


def _make(step: int, op: str, diff: Diff) -> Divergence:
    component, location, key, ra, ta = diff
    d = Divergence(step, op, component, location, key, ra, ta, ids_for(op, component, key))
    name = next((t.name for t in TOLERATED if t.applies(d)), None)
    return Divergence(step, op, component, location, key, ra, ta, d.ids, name)


def render(d: Divergence, scenario_steps: list[str] | None = None) -> str:
    """The divergence as a reader wants it: the step, then Kafka 2.5.1 and the target side by side."""
    step = "setup (cluster start and first election)" if d.step == -1 else f"step {d.step} ({d.op})"
    if scenario_steps and 0 <= d.step < len(scenario_steps):
        step += f": {scenario_steps[d.step]}"
    lines = [
        f"first divergence at {step}",
        f"  where: {d.component}: {d.location}",
        f"  behaviour IDs: {', '.join(d.ids) or '-'}",
        "  Kafka 2.5.1 (reference):",
        *("    " + line for line in _pretty(d.reference)),
        "  target:",
        *("    " + line for line in _pretty(d.target)),
    ]
    return "\n".join(lines)


def _pretty(value: Any) -> list[str]:
    text = json.dumps(value, sort_keys=True, indent=1, default=str) if not isinstance(value, str) else value
    lines = text.splitlines()
    return lines[:60] + ([f"... ({len(lines) - 60} more lines)"] if len(lines) > 60 else [])
