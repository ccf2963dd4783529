"""Which scenarios to run: the ones that together reach the most distinct inputs (conformance ring, pure).

Generating a scenario costs a tenth of a millisecond; running one costs seconds on both sides. A
campaign of N scenarios therefore does better to *choose* its N from a larger pool of generated
ones than to take the first N: inputs the generator draws in one scenario in a hundred (two
dynamic config layers with opposite values, ElectLeaders while the preferred replica is down, a
CreateTopics with -1 counts) are then reached in most campaigns instead of by luck.

:func:`features` describes a scenario by what it feeds the cluster, abstracted so that two
inputs a controller would treat alike look alike: each step's operation; each parameter by its
declared type (:mod:`conformance.diff.steps`) — a node by its role when the step runs (the
controller, a paused or stopped broker, a partition's leader or only a replica), a config by its
key and value, an epoch by stale/equal/newer, a reassignment target by how it relates to the
current replicas, a partition list by the state of each partition's preferred replica; the
cluster's state around the step (paused or stopped nodes, a pending reassignment, a topic being
deleted); consecutive operations; every config key's layers in force (static, dynamic
cluster default, dynamic per broker, topic) when each step runs; the nodes' static configs.

:func:`pick` is greedy set cover weighted by rarity and cost: each round takes the scenario whose
not-yet-covered features are worth most per second of run time (:func:`estimated_s`: what its setup
and each of its steps take on the reference, a pause or a leader-balance check after a failover far
more than most steps), a feature being worth log(pool size / the number of scenarios in the pool
that have it), its inverse document frequency, so the rare ones are not crowded out by many common
ones and one that every scenario has is worth nothing; once everything is covered it starts again
on what is left. Ties go to the lower index, so a pick is a pure function of the pool and the
count. The picked scenarios keep their own (seed, index) names: each one is replayed, cached and
shown exactly as when it is run on its own.

Measured on seed 1, generator v15, a pool of 4,000: the first 40 reach 1,242 distinct features in
an estimated 1,078 s; the picked 40 reach 1,412 in 410 s, the picked 100 2,059 in 1,075 s. Per
second rather than per step (one setup counted as four steps, before 2026-11-29), the gate's
candidates of seed 2026 give 10 scenarios reaching 630 features in an estimated 118 s, where the
step-weighted 6 reached 626 in 151 s.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from conformance.diff.model import Model
from conformance.diff.scenario import Scenario
from conformance.diff.steps import KINDS, split_tp

__all__ = ["PICKS", "estimated_s", "features", "pick"]

#: how a campaign chooses its N scenarios: the first N of its seed, or ``pick`` from a pool
PICKS = ("first", "cover")

#: what a step takes on the reference, in seconds: most are one wait for quiescence (about 0.65 s);
#: these wait for more (medians of 206 cached reference traces of 2026-11-29: a pause outlasts the
#: controller's requests to the paused node, a restart or a resume a registration and its ISR)
_STEP_S = {
    "pause": 6.5,
    "bounce": 4.5,
    "restart": 2.0,
    "resume": 2.0,
    "expire_session": 2.0,
    "topic_config": 1.5,
}
_OTHER_STEP_S = 0.65
_SET_UP_S = 1.6
#: with auto.leader.rebalance.enable Kafka runs a leader-balance check 5 s after every failover
#: (KafkaController.onControllerFailover, scheduleAutoLeaderRebalanceTask), and the barrier waits
#: for it: about 7 s more for the setup and for each step that moves the controller
_REBALANCE_CHECK_S = 7.0
_MOVES = ("move_controller", "move_controller_backlog")

#: layers of a config key, in Kafka's order of precedence (lowest first)
_LAYERS = ("static", "default", "broker", "topic")


def _role(model: Model, node: Any) -> str:
    if node is None:
        return "none"
    b = int(node)
    if b not in model.nodes:
        return "unknown"
    state = model.state(b)
    base: str = "ctl" if b == model.controller else state
    if b == model.controller and state != "up":
        base = f"ctl-{state}"
    leads = any(model.leader_guess(t.name, p) == b for t in model.live_topics() for p in t.assignment)
    hosts = any(b in reps for t in model.live_topics() for reps in t.assignment.values())
    return f"{base}/{'leader' if leads else 'replica' if hosts else 'idle'}"


def _replica_roles(model: Model, replicas: Iterable[int]) -> set[str]:
    out: set[str] = set()
    for r in replicas:
        out.add("unknown-broker" if r not in model.nodes else model.state(r))
    return out


def _partition(model: Model, name: str) -> set[str]:
    """One ``<topic>-<p>`` by the state of its preferred replica and of the others."""
    try:
        topic, p = split_tp(name)
    except ValueError:  # a malformed name is just "unknown" here
        return {"unknown"}
    t = model.topics.get(topic)
    if t is None or p not in t.assignment:
        return {"unknown"}
    if topic in model.deleted:
        return {"deleted"}
    reps = t.assignment[p]
    out = {f"rf{len(reps)}"}
    if reps:
        out.add(f"preferred-{model.state(reps[0])}" if reps[0] in model.nodes else "preferred-unknown")
        leader = model.leader_guess(topic, p)
        out.add("led-by-preferred" if leader == reps[0] else "led-by-other" if leader else "no-live")
    out |= {f"some-{s}" for s in _replica_roles(model, reps[1:]) if s != "up"}
    return out


def _target(model: Model, name: str, target: Sequence[int]) -> set[str]:
    try:
        topic, p = split_tp(name)
    except ValueError:
        return {"unknown-partition"}
    t = model.topics.get(topic)
    if t is None or p not in t.assignment or topic in model.deleted:
        return {"unknown-partition"}
    cur, new = tuple(t.assignment[p]), tuple(target)
    out = set()
    if len(set(new)) != len(new):
        out.add("duplicates")
    if not new:
        out.add("empty")
    elif new == cur:
        out.add("same")
    elif set(new) == set(cur):
        out.add("reordered")
    elif set(new) > set(cur):
        out.add("grows")
    elif set(new) < set(cur):
        out.add("shrinks")
    elif set(new) & set(cur):
        out.add("overlaps")
    else:
        out.add("disjoint")
    out |= {f"adds-{s}" for s in _replica_roles(model, set(new) - set(cur))}
    return out


def _value(model: Model, kind: str, value: Any) -> set[str]:
    if kind in ("node", "node?"):
        return {_role(model, value)}
    if kind == "entity":
        return {"default"} if value == "<default>" else {_role(model, value).split("/")[0]}
    if kind == "config":
        return {f"{k}={v}" for k, v in sorted(value.items())} or {"empty"}
    if kind == "int":
        return {"-1" if value == -1 else "n"}
    if kind == "topic":
        if value in model.topics:
            t = model.topics[value]
            out = {"deleted" if value in model.deleted else "live"}
            return out | {f"{k}={v}" for k, v in t.config.items()}
        return _partition(model, value) if "-" in str(value) else {"unknown"}
    if kind == "names" and not value:
        return {"none"}
    if kind == "targets?" and not value:
        return {"none"}
    if kind in ("topics", "names"):
        out = {f"n{min(len(value), 2)}"}
        for name in value:
            out.add("deleted" if name in model.deleted else "live" if name in model.topics else "unknown")
        return out
    if kind == "partitions":
        out = {f"n{min(len(value), 2)}"}
        for name in value:
            out |= _partition(model, name)
        return out
    if kind == "assignment?" and not value:
        return {"automatic"}
    if kind in ("assignment", "assignment?"):
        out = {f"partitions{min(len(value), 3)}"}
        for reps in value.values():
            out.add(f"rf{len(reps)}")
            if len(set(reps)) != len(reps):
                out.add("duplicates")
            out |= {f"replica-{s}" for s in _replica_roles(model, reps)}
        return out
    if kind in ("targets", "targets?"):
        out = {f"n{min(len(value), 2)}"}
        for name, target in value.items():
            out |= _target(model, name, target)
        return out
    return {str(value)}  # bool and the enumerations (epochs, apis, election types)


def _context(model: Model) -> str:
    flags = [
        f"paused{len(model.paused())}" if model.paused() else "",
        f"down{len(model.down())}" if model.down() else "",
        "reassigning" if model.reassign_znode or model.api_original else "",
        "poisoned" if any(n.poisoned for n in model.nodes.values()) else "",
    ]
    return "+".join(f for f in flags if f) or "calm"


class _Layers:
    """Which layers set each config key, and to what (the model does not track dynamic configs)."""

    def __init__(self, scenario: Scenario):
        self.static: dict[str, set[str]] = {}
        for conf in scenario.nodes.values():
            for k, v in conf.items():
                self.static.setdefault(k, set()).add(v)
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[str, dict[int, str]] = {}

    def apply(self, op: str, params: dict[str, Any]) -> None:
        if op == "broker_config":
            entity, config = params["entity"], params["config"]
            if entity == "<default>":
                self.dynamic_default = dict(config)
            else:
                b = int(entity)
                for per in self.dynamic_broker.values():
                    per.pop(b, None)
                for k, v in config.items():
                    self.dynamic_broker.setdefault(k, {})[b] = v
        elif op == "broker_default_api":
            key = "unclean.leader.election.enable"
            if params["value"]:
                self.dynamic_default[key] = params["value"]
            else:
                self.dynamic_default.pop(key, None)

    def signatures(self, model: Model) -> set[str]:
        keys = set(self.static) | set(self.dynamic_default) | set(self.dynamic_broker)
        for t in model.live_topics():
            keys |= set(t.config)
        out = set()
        for k in sorted(keys):
            parts = []
            ctl_static = model.nodes[model.controller].config.get(k)
            if ctl_static is not None:
                parts.append(f"static={ctl_static}")
            if k in self.dynamic_default:
                parts.append(f"default={self.dynamic_default[k]}")
            per = self.dynamic_broker.get(k, {})
            if model.controller in per:
                parts.append(f"own={per[model.controller]}")
            elif per:
                parts.append("other-broker")
            topic_values = sorted({t.config[k] for t in model.live_topics() if k in t.config})
            if topic_values:
                parts.append("topic=" + "|".join(topic_values))
            if parts:
                out.add(f"{k}@{','.join(parts)}")
        return out


def features(scenario: Scenario) -> frozenset[str]:
    """What ``scenario`` feeds the cluster, abstracted (see the module's description)."""
    model = Model.of(scenario)
    layers = _Layers(scenario)
    out = {f"nodes={len(scenario.nodes)}"}
    for conf in scenario.nodes.values():
        out |= {f"node:{k}={v}" for k, v in conf.items()}
    prev = "start"
    for step in scenario.steps:
        kind = KINDS[step.op]
        params = dict(step.params)
        out.add(step.op)
        out.add(f"{step.op}|{_context(model)}")
        out.add(f"{prev}>{step.op}")
        values = []
        for name, typ in kind.params.items():
            if name not in params:
                continue
            abstract = _value(model, typ, params[name])
            out |= {f"{step.op}.{name}={a}" for a in abstract}
            values.append(",".join(sorted(abstract)))
        out.add(f"{step.op}({';'.join(values)})")
        out |= {f"{step.op}|{sig}" for sig in layers.signatures(model)}
        layers.apply(step.op, params)
        kind.apply(model, params)
        prev = step.op
    return frozenset(out)


def estimated_s(scenario: Scenario) -> float:
    """About how long ``scenario`` runs on the reference (:data:`_STEP_S`): what the pick weighs a
    scenario's reach against."""
    rebalance = any(c.get("auto.leader.rebalance.enable") == "true" for c in scenario.nodes.values())
    check = _REBALANCE_CHECK_S if rebalance else 0.0
    total = _SET_UP_S + check
    for step in scenario.steps:
        total += _STEP_S.get(step.op, _OTHER_STEP_S)
        moved = step.op in _MOVES or step.params.get("successor") is not None
        total += check if moved else 0.0
    return total


def pick(pool: Sequence[Scenario], count: int) -> list[Scenario]:
    """``count`` scenarios of ``pool`` that together cover the most (rarity-weighted) features, in
    the pool's order; the whole pool when it has no more than ``count``.

    Lazy greedy: a scenario's gain only shrinks as coverage grows, so a stale gain on top of the
    heap is recomputed and pushed back until the top one is current."""
    if count >= len(pool):
        return list(pool)
    feats = [features(s) for s in pool]
    cost = [estimated_s(s) for s in pool]
    freq = Counter(f for fs in feats for f in fs)
    worth = {f: math.log(len(pool) / n) for f, n in freq.items()}
    chosen: list[int] = []
    covered: set[str] = set()

    def gain(i: int) -> float:
        return sum(worth[f] for f in feats[i] if f not in covered) / cost[i]

    left = set(range(len(pool)))
    while len(chosen) < count:
        heap = [(-gain(i), i) for i in sorted(left)]
        heapq.heapify(heap)
        while heap and len(chosen) < count:
            _, i = heapq.heappop(heap)
            now = gain(i)
            if now <= 1e-12:  # everything left is covered: start again on what is left
                break
            if heap and now + 1e-12 < -heap[0][0]:
                heapq.heappush(heap, (-now, i))
                continue
            chosen.append(i)
            left.discard(i)
            covered |= feats[i]
        if len(chosen) < count:
            if not covered:  # nothing left has any worth: the lowest indices fill up
                chosen += sorted(left)[: count - len(chosen)]
                break
            covered = set()
    return [pool[i] for i in sorted(chosen)]
