"""Seeded schedules of workload ops and faults (decisions ring, pure: no I/O, no clock).

One seed and one scenario give the whole schedule, as Jepsen's generators do with explicit time:
``random.Random(seed)`` draws every op, every argument, every fault, its target and its timing,
in a fixed order, so :func:`generate` is a pure function and a run is replayed by generating its
schedule again (``python -m chaos replay`` checks the regenerated schedule equals the stored one).

A :class:`Step` is "at ``at_s`` seconds after the workload starts, ``process`` invokes ``f`` with
``value``". Processes are ``client-<n>`` (workload), ``api-<n>`` (the admin-API ops, drawn from
their own stream ``random.Random(f"{seed}:api")`` so the other processes' steps do not depend on
them) and ``nemesis`` (faults); each process's steps
are in time order and a process runs one op at a time (the history's rule), so a step may start
later than ``at_s`` when the previous op of its process was slow.

Steps of one schedule, worked example (scenario ``process``, seed 7, abbreviated)::

    at_s  process   f             value
    0.00  client-0  create_topic  {"topic": "t0", "assignment": {"0": [2, 3], "1": [3, 1]}}
    0.00  client-1  create_topic  {"topic": "t1", "assignment": {"0": [1, 2]}}
    0.41  nemesis   start_fault   {"id": "kill-0", "fault": "kill", "node": "controller"}
    0.63  client-1  reassign      {"topic": "t0", "assignment": {"0": [3, 1]}}
    2.10  nemesis   stop_fault    {"id": "kill-0", "fault": "kill"}
    …

Fault targets are data: a broker id, or ``"controller"`` resolved when the fault starts (the
resolved id goes into the history). The final heal and quiescence are runner phases, not steps.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.scenarios import ENSEMBLE_ONLY, LINK_FAULTS, PROCESS_FAULTS, Scenario, scenario_named

__all__ = [
    "TOPIC_CONFIGS",
    "Schedule",
    "Step",
    "assignment_for",
    "generate",
    "link_names",
]

TOPIC_POOL = 5  # names t0..t4: the workload deletes and recreates names
CONTROLLER = "controller"


@dataclass(frozen=True)
class Step:
    """At ``at_s`` after the workload starts, ``process`` invokes ``f`` with ``value``."""

    at_s: float
    process: str
    f: str
    value: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"at_s": self.at_s, "process": self.process, "f": self.f, "value": dict(self.value)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Step:
        return cls(float(obj["at_s"]), str(obj["process"]), str(obj["f"]), dict(obj["value"]))


@dataclass(frozen=True)
class Schedule:
    """The whole plan of one run: scenario, seed, brokers, and every step in time order."""

    scenario: str
    seed: int
    broker_ids: tuple[int, ...]
    steps: tuple[Step, ...]

    @property
    def fault_kinds(self) -> tuple[str, ...]:
        """The distinct fault kinds this schedule starts, sorted (the run's fault package)."""
        return tuple(sorted({str(s.value["fault"]) for s in self.steps if s.f == "start_fault"}))

    @property
    def processes(self) -> tuple[str, ...]:
        return tuple(sorted({s.process for s in self.steps}))

    def for_process(self, process: str) -> list[Step]:
        return [s for s in self.steps if s.process == process]

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "broker_ids": list(self.broker_ids),
            "steps": [s.to_json() for s in self.steps],
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Schedule:
        return cls(
            str(obj["scenario"]),
            int(obj["seed"]),
            tuple(int(b) for b in obj["broker_ids"]),
            tuple(Step.from_json(s) for s in obj["steps"]),
        )

    def describe(self) -> str:
        """The schedule as text, one step a line (printed for failed runs)."""
        lines = [f"scenario {self.scenario} seed {self.seed} brokers {list(self.broker_ids)}"]
        lines += [
            f"{s.at_s:7.3f}  {s.process:9}  {s.f:19} {json.dumps(dict(s.value), sort_keys=True)}"
            for s in self.steps
        ]
        return "\n".join(lines)


def link_names(broker_ids: Sequence[int], zk_servers: int = 1) -> list[str]:
    """Every proxied link of a cluster, named as its Toxiproxy proxy (without a run prefix).

    ``ZK_<x>`` (``ZK_<x>_<s>`` with several ZooKeeper servers): node x → ZooKeeper;
    ``CTRL_<x>_<y>``: controller x → broker y (y may be x); ``FROM_<x>_<y>``: follower x fetches
    from leader y (x ≠ y); ``CLIENT_<y>``: clients → broker y.
    """
    ids = sorted(broker_ids)
    zk = [f"ZK_{x}" if zk_servers == 1 else f"ZK_{x}_{s}" for x in ids for s in range(1, zk_servers + 1)]
    ctrl = [f"CTRL_{x}_{y}" for x in ids for y in ids]
    fetch = [f"FROM_{x}_{y}" for x in ids for y in ids if x != y]
    return zk + ctrl + fetch + [f"CLIENT_{y}" for y in ids]


def assignment_for(rng: random.Random, ids: Sequence[int], partitions: int, rf: int) -> dict[str, list[int]]:
    """A rotating replica assignment (Kafka's default shape) starting at a random broker."""
    start = rng.randrange(len(ids))
    return {str(p): [ids[(start + p + j) % len(ids)] for j in range(rf)] for p in range(partitions)}


# --- workload -----------------------------------------------------------------------------------


@dataclass
class _Model:
    """What the schedule itself created (the generator's view; the run may diverge)."""

    partitions: dict[str, int] = field(default_factory=dict)


UNCLEAN = "unclean.leader.election.enable"

#: Topic configs the workload sets (None: DELETE, back to the default). Unclean leader election
#: is among them on purpose: the checkers must tell an unclean leader a config allowed.
TOPIC_CONFIGS: tuple[tuple[str, tuple[str | None, ...]], ...] = (
    ("retention.ms", ("60000", "3600000", None)),
    ("min.insync.replicas", ("1", "2", None)),
    ("unclean.leader.election.enable", ("true", "false", None)),
    ("segment.ms", ("600000", None)),
)


def _workload_op(
    rng: random.Random, sc: Scenario, ids: Sequence[int], model: _Model
) -> tuple[str, dict[str, Any]]:
    op = rng.choice(sc.ops)
    existing = sorted(model.partitions)
    if op in ("create_topic", "create_topic_admin") or not existing:
        op = op if op in ("create_topic", "create_topic_admin") else "create_topic"
        topic = f"t{rng.randrange(TOPIC_POOL)}"
        partitions, rf = rng.randint(1, 3), rng.randint(1, min(3, len(ids)))
        model.partitions[topic] = partitions
        if op == "create_topic":
            return op, {"topic": topic, "assignment": assignment_for(rng, ids, partitions, rf)}
        return op, {"topic": topic, "partitions": partitions, "replication_factor": rf}
    topic = rng.choice(existing)
    count = model.partitions[topic]
    if op == "add_partitions":
        rf = rng.randint(1, min(3, len(ids)))
        new = assignment_for(rng, ids, count + 1, rf)
        model.partitions[topic] = count + 1
        return op, {"topic": topic, "partitions": count + 1, "assignment": {str(count): new[str(count)]}}
    if op == "reassign":
        p = rng.randrange(count)
        return op, {"topic": topic, "assignment": {str(p): rng.sample(list(ids), rng.randint(1, len(ids)))}}
    if op == "preferred_election":
        return op, {"partitions": [{"topic": topic, "partition": rng.randrange(count)}]}
    if op == "delete_topic":
        del model.partitions[topic]
        return op, {"topic": topic}
    return "broker_bounce", {"broker_id": rng.choice(list(ids))}


def _api_steps(seed: int, sc: Scenario, ids: Sequence[int], client: Sequence[Step]) -> list[Step]:
    """The admin-API clients' steps (``api-<n>``), drawn from their own seeded stream so that the
    other processes' steps are those the scenario drew before the admin-API ops existed. They
    pick among the topics the clients' steps create, with their largest partition count."""
    rng = random.Random(f"{seed}:api")  # str seeds are hashed deterministically (SHA-512)
    model = _Model()
    for step in client:
        if step.f in ("create_topic", "create_topic_admin", "add_partitions"):
            count = int(step.value.get("partitions") or len(step.value.get("assignment") or {}) or 1)
            topic = str(step.value["topic"])
            model.partitions[topic] = max(count, model.partitions.get(topic, 0))
    topics = sorted(model.partitions) or ["t0"]
    steps: list[Step] = []
    for c in range(sc.api_clients):
        reassigned: list[tuple[str, int]] = []
        t = rng.uniform(0.2, 0.6)
        while t < sc.duration_s:
            op = rng.choice(sc.api_ops)
            f, value = _api_op(rng, op, ids, model, topic=rng.choice(topics), reassigned=reassigned)
            steps.append(Step(round(t, 3), f"api-{c}", f, value))
            t += rng.uniform(*sc.api_gap_s)
    return steps


def _api_op(
    rng: random.Random,
    op: str,
    ids: Sequence[int],
    model: _Model,
    *,
    topic: str,
    reassigned: list[tuple[str, int]],
) -> tuple[str, dict[str, Any]]:
    """An admin-API op on ``topic`` (targets of 1..n replicas: grows, shrinks and moves)."""
    count = model.partitions.get(topic, 2)
    p = rng.randrange(count)
    if op == "reassign_api":
        reassigned.append((topic, p))
        return op, {"topic": topic, "assignment": {str(p): rng.sample(list(ids), rng.randint(1, len(ids)))}}
    if op == "cancel_reassignment":
        # mostly the client's latest API reassignment, so some cancellations find one in flight
        if reassigned and rng.random() < 0.7:
            topic, p = reassigned[-1]
        return op, {"topic": topic, "partitions": [p]}
    if op == "list_reassignments":
        if rng.random() < 0.5:
            return op, {"partitions": None}
        return op, {"partitions": [{"topic": topic, "partition": q} for q in range(count)]}
    if op == "elect_leaders":
        kind = rng.choice(("PREFERRED", "UNCLEAN"))
        return op, {"election_type": kind, "partitions": [{"topic": topic, "partition": p}]}
    if op == "alter_broker_config":
        # the dynamic layers the controller reads unclean.leader.election.enable from: a broker's
        # own (/config/brokers/<id>, which wins) and the cluster-wide default
        entity = rng.choice(("<default>", "<default>", str(rng.choice(list(ids)))))
        return op, {"entity": entity, "config": {UNCLEAN: rng.choice(("true", "false", None))}}
    name, values = rng.choice(TOPIC_CONFIGS)
    return "alter_topic_config", {"topic": topic, "config": {name: rng.choice(values)}}


def _client_steps(rng: random.Random, sc: Scenario, ids: Sequence[int], model: _Model) -> list[Step]:
    steps: list[Step] = []
    for c in range(sc.clients):
        process = f"client-{c}"
        topic = f"t{c}"
        model.partitions[topic] = 2
        steps.append(
            Step(0.0, process, "create_topic", {"topic": topic, "assignment": assignment_for(rng, ids, 2, 2)})
        )
        t = rng.uniform(0.1, 0.4)
        while t < sc.duration_s:
            f, value = _workload_op(rng, sc, ids, model)
            steps.append(Step(round(t, 3), process, f, value))
            t += rng.uniform(0.25, 0.9)
    return steps


# --- faults -------------------------------------------------------------------------------------


def _node_target(rng: random.Random, ids: Sequence[int]) -> int | str:
    return CONTROLLER if rng.random() < 0.4 else rng.choice(list(ids))


def _link_params(rng: random.Random, fault: str) -> dict[str, Any]:
    if fault == "latency":
        return {"latency_ms": rng.choice((50, 200, 600, 1500)), "jitter_ms": rng.choice((0, 20, 100))}
    if fault == "bandwidth":
        return {"rate_kb_s": rng.choice((1, 8, 64))}
    if fault == "slicer":
        return {
            "average_size": rng.choice((1, 16, 64)),
            "size_variation": 0,
            "delay_us": rng.choice((100, 2000)),
        }
    if fault == "reset_peer":
        return {"timeout_ms": rng.choice((0, 100, 500))}
    return {}


def _fault(rng: random.Random, sc: Scenario, ids: Sequence[int], fid: int, zk_servers: int) -> dict[str, Any]:
    kind = rng.choice(sc.faults)
    value: dict[str, Any] = {"id": f"{kind}-{fid}", "fault": kind}
    if kind in LINK_FAULTS:
        scope = rng.choice(sc.scopes)
        value["scope"] = scope
        if scope == "link":
            value["link"] = rng.choice(link_names(ids, zk_servers))
        elif scope in ("node", "zk"):
            value["node"] = _node_target(rng, ids)
        else:
            value["minority"] = sorted(rng.sample(list(ids), max(1, (len(ids) - 1) // 2)))
        value |= _link_params(rng, kind)
    elif kind in PROCESS_FAULTS or kind == "zk_session_expire":
        value["node"] = _node_target(rng, ids)
    elif kind == "zk_member_kill":
        # member 1 keeps the transaction log the run reads: a kill draws the leader or another member
        value["member"] = "leader" if rng.random() < 0.5 else rng.randrange(2, zk_servers + 1)
    return value


def _nemesis_steps(rng: random.Random, sc: Scenario, ids: Sequence[int], zk_servers: int) -> list[Step]:
    steps: list[Step] = []
    gap = sc.fault_gap_scale  # 1.0 but in a dense variant (chaos.scenarios.dense)
    t, fid = rng.uniform(0.3, 0.8) * gap, 0
    for _ in range(sc.fault_rounds):
        if t >= sc.duration_s:
            break
        active: list[tuple[float, dict[str, Any]]] = []
        start = t
        for _k in range(rng.randint(1, sc.concurrent_faults)):
            value = _fault(rng, sc, ids, fid, zk_servers)
            fid += 1
            steps.append(Step(round(start, 3), "nemesis", "start_fault", value))
            active.append((start + rng.uniform(*sc.hold_s), value))
            start += rng.uniform(0.1, 0.5) * gap
        end = max(start, *(until for until, _ in active))
        for until, value in sorted(active, key=lambda a: a[0], reverse=True):
            stop = {"id": value["id"], "fault": value["fault"]}
            steps.append(Step(round(max(until, start), 3), "nemesis", "stop_fault", stop))
        t = end + rng.uniform(0.4, 1.2) * gap
    steps.sort(key=lambda s: s.at_s)  # stable: equal times keep draw order
    return steps


def generate(scenario: Scenario | str, seed: int) -> Schedule:
    """The whole schedule of ``scenario`` for ``seed`` (same arguments → equal schedules)."""
    sc = scenario_named(scenario) if isinstance(scenario, str) else scenario
    rng = random.Random(seed)
    ids = tuple(range(1, sc.brokers + 1))
    zk_servers = 3 if sc.zookeeper == "ensemble" else 1
    if any(f in ENSEMBLE_ONLY for f in sc.faults) and sc.zookeeper != "ensemble":
        raise ValueError(f"scenario {sc.name}: {sorted(ENSEMBLE_ONLY)} need zookeeper='ensemble'")
    model = _Model()
    client = _client_steps(rng, sc, ids, model)
    nemesis = _nemesis_steps(rng, sc, ids, zk_servers)
    api = _api_steps(seed, sc, ids, client)
    client = _broker_defaults(seed, client)
    steps = sorted(client + nemesis + api, key=lambda s: (s.at_s, s.process))
    return Schedule(sc.name, seed, ids, tuple(steps))


#: the share of CreateTopics ops that leave the partition count, and (independently) the
#: replication factor, to the controller's broker config (-1: ``num.partitions`` /
#: ``default.replication.factor``, KIP-464)
BROKER_DEFAULT_SHARE = 0.25


def _broker_defaults(seed: int, client: list[Step]) -> list[Step]:
    """``create_topic_admin`` steps with -1 for the partition count or the replication factor, drawn
    from their own seeded stream so that every other draw of a seed stays what it was."""
    rng = random.Random(f"{seed}:defaults")  # str seeds are hashed deterministically (SHA-512)
    out = []
    for step in client:
        if step.f != "create_topic_admin":
            out.append(step)
            continue
        value = dict(step.value)
        for key in ("partitions", "replication_factor"):
            if rng.random() < BROKER_DEFAULT_SHARE:
                value[key] = -1
        out.append(Step(step.at_s, step.process, step.f, value))
    return out
