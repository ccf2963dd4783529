"""The admin-API steps of the vocabulary and their draws (conformance ring, pure; spec §13).

Since Kafka 2.4 operators reassign partitions, list reassignments, elect leaders and change configs
through the admin API instead of ZooKeeper znodes (KIP-455, KIP-460): AlterPartitionReassignments
(with cancellation: replicas null), ListPartitionReassignments and ElectLeaders go to the
controller (any other broker answers NOT_CONTROLLER), AlterConfigs and IncrementalAlterConfigs are
served by the broker that receives them. Each is one step kind here (:data:`ADMIN_KINDS`, merged
into :data:`conformance.diff.steps.KINDS`), one executor in :mod:`conformance.diff.adminapi` and a
drawer in :data:`ADMIN_SINGLE` (weighed by the generator's ``single`` motif).

``via`` is the broker the request is sent to (mostly the controller: a request to another broker
is the NOT_CONTROLLER path); an empty ``partitions`` list is sent as null (every reassignment /
every partition).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from conformance.diff.model import Model
from conformance.diff.scenario import Step
from conformance.diff.stepkind import StepKind, split_tp

__all__ = ["ADMIN_KINDS", "ADMIN_SINGLE", "CONFIG_KEYS"]

Params = Mapping[str, Any]

#: the topic configs the steps change: the controller reacts to the first (ELECT-5/6, ELECT-9 for
#: the cluster default), the second is validated by the receiving broker; "maybe" and the unknown
#: key are bad input (INVALID_CONFIG, nothing written)
CONFIG_KEYS = ("unclean.leader.election.enable", "min.insync.replicas")


def _via(model: Model, p: Params) -> str | None:
    via = p["via"]
    if via not in model.nodes:
        return f"node {via} is not in the cluster"
    return None if model.state(via) == "up" else f"node {via} is {model.state(via)}, not up"


def _replicas(p: Params) -> str | None:
    bad = sorted({b for r in p["targets"].values() for b in r if not 0 <= b <= 999})
    return f"replica ids {bad} out of range" if bad else None


def _reassign_api(model: Model, p: Params) -> None:
    if p["via"] != model.controller:
        return  # NOT_CONTROLLER: nothing happens
    for tp, replicas in p["targets"].items():
        topic, partition = split_tp(tp)
        t = model.topics.get(topic)
        if t is None or topic in model.deleted or partition not in t.assignment:
            continue
        if not replicas or len(set(replicas)) != len(replicas):
            continue  # INVALID_REPLICA_ASSIGNMENT: nothing changes
        if any(b not in model.nodes or model.state(b) == "down" for b in replicas):
            continue  # a broker that is not alive: INVALID_REPLICA_ASSIGNMENT (unlike the znode path)
        pending = any(model.state(b) == "paused" for b in replicas)
        if pending:
            model.api_original.setdefault(tp, t.assignment[partition])
        else:
            model.api_original.pop(tp, None)
        t.assignment[partition] = tuple(replicas)


def _cancel_api(model: Model, p: Params) -> None:
    if p["via"] != model.controller:
        return
    for tp in p["partitions"]:
        original = model.api_original.pop(tp, None)
        topic, partition = split_tp(tp)
        t = model.topics.get(topic)
        if original is not None and t is not None and partition in t.assignment:
            t.assignment[partition] = original


def _alter_configs(model: Model, p: Params) -> None:
    t = model.topics.get(p["topic"])
    valid = all(k in CONFIG_KEYS for k in p["config"]) and p["config"].get(
        "unclean.leader.election.enable", "true"
    ) in ("true", "false")
    if t is None or not valid:
        return
    t.config = {**t.config, **p["config"]} if p["incremental"] else dict(p["config"])


def _nothing(_m: Model, _p: Params) -> None:
    return None


ADMIN_KINDS: dict[str, StepKind] = {
    k.op: k
    for k in (
        StepKind(
            "reassign_api",
            "AlterPartitionReassignments v0 with `targets` to broker `via` (answer recorded; no"
            " /admin/reassign_partitions is written)",
            {"via": "node", "targets": "targets"},
            ("ADMIN-1", "ADMIN-2", "REASSIGN-16", "REASSIGN-17", "REASSIGN-18", "REASSIGN-20"),
            lambda m, p: _via(m, p) or _replicas(p),
            _reassign_api,
        ),
        StepKind(
            "cancel_reassign_api",
            "AlterPartitionReassignments v0 with null replicas (cancellation) for `partitions`",
            {"via": "node", "partitions": "partitions"},
            ("ADMIN-1", "REASSIGN-19", "REASSIGN-21"),
            _via,
            _cancel_api,
        ),
        StepKind(
            "list_reassignments",
            "ListPartitionReassignments v0 for `partitions` (empty: null, every reassignment)",
            {"via": "node", "partitions": "partitions"},
            ("ADMIN-1", "REASSIGN-22"),
            _via,
            _nothing,
        ),
        StepKind(
            "elect_leaders",
            "ElectLeaders v2 (`election` preferred or unclean) for `partitions` (empty: null, every"
            " partition) to broker `via` (answer recorded, or 'no answer')",
            {"via": "node", "partitions": "partitions", "election": "preferred|unclean"},
            ("ADMIN-1", "ELECT-7", "ELECT-8", "PREFERRED-3", "PREFERRED-4"),
            _via,
            _nothing,
        ),
        StepKind(
            "alter_configs_api",
            "IncrementalAlterConfigs v1 (SET) or AlterConfigs v1 (the whole set) of topic `topic`"
            " to broker `via` (answer recorded)",
            {"via": "node", "topic": "topic", "config": "config", "incremental": "bool"},
            ("ADMIN-3", "ADMIN-4", "ADMIN-5", "ELECT-5", "ELECT-6"),
            _via,
            _alter_configs,
        ),
        StepKind(
            "broker_default_api",
            "IncrementalAlterConfigs v1 of the cluster-wide broker default"
            " unclean.leader.election.enable (SET `value`, or DELETE when empty) to broker `via`",
            {"via": "node", "value": "true|false|"},
            ("ADMIN-3", "ELECT-9"),
            _via,
            _nothing,
        ),
    )
}


# --- draws ---------------------------------------------------------------------------------------


def _via_node(rng: random.Random, model: Model) -> int | None:
    """Mostly the controller; now and then another running broker (the NOT_CONTROLLER path)."""
    up = model.up()
    if not up:
        return None
    if model.state(model.controller) == "up" and rng.random() < 0.85:
        return model.controller
    return rng.choice(up)


def _tps(model: Model) -> list[str]:
    return [tp for t in model.live_topics() for tp in t.partitions()]


def _draw_reassign(rng: random.Random, model: Model) -> Iterator[Step]:
    via, tps = _via_node(rng, model), _tps(model)
    if via is None or not tps:
        return
    ids = sorted(model.nodes)
    targets: dict[str, list[int]] = {}
    for tp in rng.sample(tps, min(len(tps), rng.choice((1, 1, 2)))):
        topic, partition = split_tp(tp)
        current = list(model.topics[topic].assignment[partition])
        spare = [b for b in ids if b not in current]
        kind = rng.choice(("move", "grow", "shrink", "reorder", "down", "duplicate"))
        if kind == "move" and spare:
            targets[tp] = [*current[:-1], rng.choice(spare)]
        elif kind == "grow" and spare:
            targets[tp] = [*current, rng.choice(spare)]
        elif kind == "shrink" and len(current) > 1:
            targets[tp] = current[1:]
        elif kind == "down" and model.down():  # a broker that is not alive: rejected
            targets[tp] = [*current[:-1], rng.choice(model.down())]
        elif kind == "duplicate":  # bad input: INVALID_REPLICA_ASSIGNMENT for this partition only
            targets[tp] = [current[0], current[0]]
        else:
            targets[tp] = current[1:] + current[:1]
    if rng.random() < 0.15:
        targets["nosuch-0"] = [ids[0]]  # UNKNOWN_TOPIC_OR_PARTITION
    yield Step("reassign_api", {"via": via, "targets": targets})


def _draw_cancel(rng: random.Random, model: Model) -> Iterator[Step]:
    via = _via_node(rng, model)
    pending = sorted(model.api_original)
    tps = pending or _tps(model)
    if via is None or not tps:
        return
    chosen = rng.sample(tps, min(len(tps), rng.choice((1, 2))))
    yield Step("cancel_reassign_api", {"via": via, "partitions": chosen})


def _draw_list(rng: random.Random, model: Model) -> Iterator[Step]:
    via = _via_node(rng, model)
    if via is None:
        return
    tps = _tps(model)
    chosen = [] if rng.random() < 0.6 or not tps else rng.sample(tps, min(len(tps), 2))
    yield Step("list_reassignments", {"via": via, "partitions": chosen})


def _draw_elect(rng: random.Random, model: Model) -> Iterator[Step]:
    via, tps = _via_node(rng, model), _tps(model)
    if via is None:
        return
    chosen = [] if rng.random() < 0.2 or not tps else rng.sample(tps, min(len(tps), rng.randint(1, 3)))
    if rng.random() < 0.1:
        chosen.append("nosuch-0")
    election = rng.choice(("preferred", "preferred", "unclean"))
    yield Step("elect_leaders", {"via": via, "partitions": chosen, "election": election})


def _draw_config(rng: random.Random, model: Model) -> Iterator[Step]:
    topics = model.live_topics()
    up = model.up()
    if not topics or not up:
        return
    t = rng.choice(topics)
    conf = {"unclean.leader.election.enable": rng.choice(("true", "true", "false"))}
    if rng.random() < 0.3:
        conf["min.insync.replicas"] = rng.choice(("1", "2"))
    if rng.random() < 0.08:
        conf["unclean.leader.election.enable"] = "maybe"  # INVALID_CONFIG: nothing written
    if rng.random() < 0.05:
        conf["no.such.config"] = "1"  # INVALID_CONFIG
    step = {"via": rng.choice(up), "topic": t.name, "config": conf, "incremental": rng.random() < 0.6}
    yield Step("alter_configs_api", step)


def _draw_broker_default(rng: random.Random, model: Model) -> Iterator[Step]:
    up = model.up()
    if up:
        yield Step("broker_default_api", {"via": rng.choice(up), "value": rng.choice(("true", "false", ""))})


#: op → (weight in the generator's ``single`` motif, drawer)
ADMIN_SINGLE = {
    "reassign_api": (3.0, _draw_reassign),
    "cancel_reassign_api": (1.5, _draw_cancel),
    "list_reassignments": (1.0, _draw_list),
    "elect_leaders": (2.5, _draw_elect),
    "alter_configs_api": (2.0, _draw_config),
    "broker_default_api": (0.7, _draw_broker_default),
}
