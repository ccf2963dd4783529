"""Shrink a diverging scenario while its first divergence keeps its signature (conformance ring).

Delta debugging on scenarios, greedy and budgeted (default 5 minutes):

1. cut every step after the diverging one (nothing later can have caused it);
2. remove steps in chunks — halves, quarters, … single steps (ddmin's complement tests);
3. remove a node (steps that name it go; replica lists lose it; the first controller moves on);
4. remove a topic (every step, replica list and partition name that mentions it);
5. remove a topic's last partition everywhere;
6. drop config keys, of nodes and of topics, one at a time.

A candidate must load (:meth:`Scenario.from_json` replays every precondition) and, run on the
reference and on the target, diverge with the same signature (operation, component, key pattern:
:attr:`Divergence.signature`). Candidates are tried in parallel batches on the campaign's pool; the
first success of a batch (in candidate order) is kept and the search goes on from it. The result
is the smallest scenario found when the candidates or the budget run out.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

from conformance.diff.campaign import Campaign
from conformance.diff.compare import compare
from conformance.diff.scenario import Scenario, ScenarioError
from conformance.diff.steps import split_tp

__all__ = ["Shrinker", "signature"]

Json = dict[str, Any]


def signature(reference: Json | None, target: Json | None) -> str | None:
    if reference is None or target is None:
        return None
    d = compare(reference, target).divergence
    return None if d is None else d.signature


def _candidate(data: Json) -> Scenario | None:
    try:
        return Scenario.from_json(data, "candidate")
    except (ScenarioError, ValueError, KeyError, TypeError, IndexError):
        return None


def _with_steps(s: Scenario, steps: list[Json]) -> Json:
    data = s.to_json()
    data["steps"] = steps
    return data


def _chunks(s: Scenario) -> Iterator[Json]:
    steps = [st.to_json() for st in s.steps]
    size = max(1, len(steps) // 2)
    while size >= 1:
        for start in range(len(steps) - size, -1, -size):
            yield _with_steps(s, steps[:start] + steps[start + size :])
        size //= 2


def _mentions_node(step: Json, b: int) -> bool:
    return b in (step.get("node"), step.get("successor"), step.get("via"))


def _without_node(s: Scenario, b: int) -> Json:
    data = copy.deepcopy(s.to_json())
    data["nodes"].pop(str(b))
    if data["first_controller"] == b:
        data["first_controller"] = int(min(data["nodes"], key=int))
    steps = []
    for step in data["steps"]:
        if _mentions_node(step, b):
            continue
        if "reassign" in step:  # a backlog's reassignment may end empty (then none is written)
            step["reassign"] = {k: [r for r in v if r != b] for k, v in step["reassign"].items()}
            step["reassign"] = {k: v for k, v in step["reassign"].items() if v}
        for key in ("assignment", "targets"):
            if step.get(key):  # an empty one (automatic placement) stays empty
                step[key] = {k: [r for r in v if r != b] for k, v in step[key].items()}
                step[key] = {k: v for k, v in step[key].items() if v}
                if not step[key]:
                    break
        else:
            steps.append(step)
    data["steps"] = steps
    return data


def _topic_of(tp: str) -> str:
    try:
        return split_tp(tp)[0]
    except ValueError:
        return tp


def _without_topic(s: Scenario, topic: str) -> Json:
    data = copy.deepcopy(s.to_json())
    steps = []
    for step in data["steps"]:
        if step.get("topic") == topic or (
            step.get("partition") not in (None, "phantom") and _topic_of(step["partition"]) == topic
        ):
            continue
        if "topics" in step:
            step["topics"] = [t for t in step["topics"] if t != topic]
            if not step["topics"]:
                continue
        if "targets" in step:
            step["targets"] = {tp: r for tp, r in step["targets"].items() if _topic_of(tp) != topic}
            if not step["targets"]:
                continue
        if "partitions" in step and isinstance(step["partitions"], list):
            step["partitions"] = [tp for tp in step["partitions"] if _topic_of(tp) != topic]
        _backlog_without(step, lambda tp: _topic_of(tp) == topic, topic)
        steps.append(step)
    data["steps"] = steps
    return data


def _backlog_without(step: Json, gone: Any, topic: str | None) -> None:
    """A controller move's backlog (its lists may end empty: that part is then not written)."""
    if "preferred" in step:
        step["preferred"] = [tp for tp in step["preferred"] if not gone(tp)]
    if "reassign" in step:
        step["reassign"] = {tp: r for tp, r in step["reassign"].items() if not gone(tp)}
    if topic is not None and "deletions" in step:
        step["deletions"] = [t for t in step["deletions"] if t != topic]


def _without_last_partition(s: Scenario, topic: str) -> Json | None:
    data = copy.deepcopy(s.to_json())
    creates = [st for st in data["steps"] if st.get("topic") == topic and "assignment" in st]
    if not creates or len(creates[0]["assignment"]) < 2:
        return None
    last = str(max(int(p) for p in creates[0]["assignment"]))
    gone = f"{topic}-{last}"
    for step in data["steps"]:
        if step.get("topic") == topic and "assignment" in step:
            step["assignment"].pop(last, None)
        if "targets" in step:
            step["targets"].pop(gone, None)
        if isinstance(step.get("partitions"), list):
            step["partitions"] = [tp for tp in step["partitions"] if tp != gone]
        _backlog_without(step, lambda tp: tp == gone, None)
    data["steps"] = [st for st in data["steps"] if st.get("partition") != gone and st.get("targets", True)]
    return data


def _without_configs(s: Scenario) -> Iterator[Json]:
    base = s.to_json()
    for b, conf in base["nodes"].items():
        for key in conf:
            data = copy.deepcopy(base)
            data["nodes"][b].pop(key)
            yield data
    for i, step in enumerate(base["steps"]):
        for key in step.get("config", {}) if isinstance(step.get("config"), dict) else {}:
            data = copy.deepcopy(base)
            data["steps"][i]["config"].pop(key)
            yield data


def _made(transform: Any, *args: Any) -> Json | None:
    """A transformation's candidate, or None where it meets an edge of the scenario it cannot make
    a candidate of (never the end of shrinking)."""
    try:
        made: Json | None = transform(*args)
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return made


def candidates(s: Scenario, diverging_step: int) -> Iterator[Json]:
    if diverging_step + 1 < len(s.steps):
        yield _with_steps(s, [st.to_json() for st in s.steps[: max(diverging_step + 1, 0)]])
    yield from _chunks(s)
    topics = sorted(
        {st.params["topic"] for st in s.steps if st.op in ("create_topic_zk", "create_topics_api")}
    )
    made = [_made(_without_node, s, b) for b in s.broker_ids if len(s.broker_ids) > 1]
    made += [_made(_without_topic, s, t) for t in topics]
    made += [_made(_without_last_partition, s, t) for t in topics]
    yield from (m for m in made if m is not None)
    yield from _without_configs(s)


class Shrinker:
    def __init__(
        self, campaign: Campaign, *, budget_s: float, parallel: int, say: Callable[[str], None]
    ) -> None:
        self.campaign, self.budget_s, self.parallel, self.say = campaign, budget_s, max(1, parallel), say
        self.runs = 0

    def _keeps(self, batch: list[Scenario], wanted: str) -> tuple[int, int] | None:
        """(index in batch, diverging step) of the first candidate that keeps ``wanted``."""
        pairs = self.campaign.pair(batch)
        self.runs += len(batch)
        for i, (ref, tgt, _) in enumerate(pairs):
            if tgt.trace is None or ref is None:
                continue
            d = compare(ref, tgt.trace).divergence
            if d is not None and d.signature == wanted:
                return i, d.step
        return None

    def shrink(self, scenario: Scenario, wanted: str, diverging_step: int) -> Scenario:
        deadline = time.monotonic() + self.budget_s
        best, step = scenario, diverging_step
        progress = True
        while progress and time.monotonic() < deadline:
            progress = False
            seen: set[str] = set()
            pool: list[Scenario] = []
            for data in candidates(best, step):
                c = _candidate(data)
                if c is None or c.key() in seen or c.key() == best.key():
                    continue
                seen.add(c.key())
                pool.append(c)
                if len(pool) < self.parallel:
                    continue
                found = self._keeps(pool, wanted)
                if found is not None:
                    best, step = pool[found[0]], found[1]
                    self.say(f"  shrunk to {len(best.nodes)} nodes, {len(best.steps)} steps")
                    progress = True
                    break
                pool = []
                if time.monotonic() > deadline:
                    break
            if not progress and pool and time.monotonic() < deadline:
                found = self._keeps(pool, wanted)
                if found is not None:
                    best, step = pool[found[0]], found[1]
                    progress = True
        return best
