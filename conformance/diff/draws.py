"""Single steps for the generator: each draws one step (or a short run) from the model (conformance, pure).

Every drawer takes the campaign's ``random.Random`` and the cluster model
(:mod:`conformance.diff.model`) and yields steps; :data:`SINGLE` weighs them for the generator's
``single`` motif (:mod:`conformance.diff.generator`). The order of the ``rng`` calls is part of
what a seed means: changing it changes every scenario (bump ``GENERATOR_VERSION``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from conformance.diff.adminsteps import ADMIN_SINGLE, _via_node
from conformance.diff.model import Model, TopicModel
from conformance.diff.scenario import Step

Motif = Callable[[random.Random, Model], Iterator[Step]]


def _node_config(rng: random.Random) -> dict[str, str]:
    conf: dict[str, str] = {}
    if rng.random() < 0.25:
        conf["unclean.leader.election.enable"] = rng.choice(("true", "false"))
    if rng.random() < 0.12:
        conf["delete.topic.enable"] = "false"
    if rng.random() < 0.1:
        conf["auto.leader.rebalance.enable"] = "true"
        if rng.random() < 0.6:  # a broker is rebalanced when its share of misled partitions exceeds it
            conf["leader.imbalance.per.broker.percentage"] = rng.choice(("0", "25", "50", "100"))
    if rng.random() < 0.2:
        conf["min.insync.replicas"] = rng.choice(("1", "2"))
    return conf


def _assignment(rng: random.Random, model: Model, partitions: int, rf: int) -> dict[str, list[int]]:
    ids = sorted(model.nodes)
    out: dict[str, list[int]] = {}
    for p in range(partitions):
        replicas = rng.sample(ids, min(rf, len(ids)))
        if rng.random() < 0.05:  # a replica on a broker that is not in the cluster
            replicas[-1] = max(ids) + rng.randint(1, 3)
        out[str(p)] = replicas
    return out


def _topic_config(rng: random.Random) -> dict[str, str]:
    conf: dict[str, str] = {}
    if rng.random() < 0.15:
        conf["unclean.leader.election.enable"] = rng.choice(("true", "false"))
    if rng.random() < 0.15:
        conf["min.insync.replicas"] = rng.choice(("1", "2"))
    return conf


def _pick_topic(rng: random.Random, model: Model) -> TopicModel | None:
    topics = model.live_topics()
    return rng.choice(topics) if topics else None


def _pick_tp(rng: random.Random, model: Model) -> tuple[TopicModel, int] | None:
    t = _pick_topic(rng, model)
    return (t, rng.choice(sorted(t.assignment))) if t else None


def _successor(rng: random.Random, model: Model, node: int) -> int | None:
    if node != model.controller:
        return None
    others = [b for b in model.up() if b != node]
    return rng.choice(others) if others else None


def _fault(op: str, model: Model, node: int, rng: random.Random) -> Step | None:
    successor = _successor(rng, model, node)
    if node == model.controller and successor is None:
        return None
    return Step(op, {"node": node, "successor": successor})


# --- single steps -------------------------------------------------------------------------------


def _create_zk(rng: random.Random, model: Model) -> Iterator[Step]:
    rf = rng.randint(1, min(3, len(model.nodes)))
    yield Step(
        "create_topic_zk",
        {
            "topic": model.fresh_topic(),
            "assignment": _assignment(rng, model, rng.randint(1, 3), rf),
            "config": _topic_config(rng),
        },
    )


def _create_api(rng: random.Random, model: Model) -> Iterator[Step]:
    if not model.up():
        return
    rf = rng.randint(1, min(3, len(model.nodes)))
    assignment = _assignment(rng, model, rng.randint(1, 3), rf)
    existing = _pick_topic(rng, model)
    topic = existing.name if existing and rng.random() < 0.1 else model.fresh_topic()
    if rng.random() < 0.1 and len(assignment) > 1:  # replication factors differ: invalid
        assignment["0"] = (
            assignment["0"][:1] + [b for b in sorted(model.nodes) if b not in assignment["0"]][:1]
        )
    via = _via_node(rng, model)  # mostly the controller: Kafka 2.5 answers NOT_CONTROLLER elsewhere
    yield Step(
        "create_topics_api",
        {"topic": topic, "via": via, "assignment": assignment, "config": _topic_config(rng)},
    )


def _create_auto(rng: random.Random, model: Model) -> Iterator[Step]:
    if model.down() or model.paused() or model.controller_config("delete.topic.enable", "true") == "false":
        return
    yield Step(
        "create_topics_auto",
        {
            "topic": model.fresh_topic(),
            "via": rng.choice(model.up()),
            # -1: the receiving broker's num.partitions / default.replication.factor (KIP-464)
            "partitions": rng.randint(1, 4) if rng.random() >= 0.2 else -1,
            "replication_factor": rng.randint(1, min(3, len(model.nodes))) if rng.random() >= 0.25 else -1,
        },
    )


def _add_partitions(rng: random.Random, model: Model) -> Iterator[Step]:
    t = _pick_topic(rng, model)
    if t is None:
        return
    rf = len(next(iter(t.assignment.values())))
    extra = _assignment(rng, model, len(t.assignment) + rng.randint(1, 2), rf)
    new = {str(p): list(r) for p, r in t.assignment.items()}
    new.update({p: r for p, r in extra.items() if int(p) not in t.assignment})
    yield Step("add_partitions", {"topic": t.name, "assignment": new})


def _delete(rng: random.Random, model: Model) -> Iterator[Step]:
    topics = model.live_topics()
    if not topics:
        return
    chosen = rng.sample(topics, min(len(topics), rng.choice((1, 1, 2))))
    names = [t.name for t in chosen]
    if rng.random() < 0.05:
        names.append("gone")  # a marker for a topic that does not exist
    via = _via_node(rng, model)
    # without topic deletion the znode path only loses its marker; DeleteTopics has an answer (73)
    api_share = 0.8 if model.controller_config("delete.topic.enable", "true") == "false" else 0.45
    if len(names) == 1 and via is not None and rng.random() < api_share:
        yield Step("delete_topics_api", {"topic": names[0], "via": via})
    else:
        yield Step("delete_topics", {"topics": names})


def _reassign_targets(rng: random.Random, model: Model, t: TopicModel, p: int) -> list[int]:
    current, ids = list(t.assignment[p]), sorted(model.nodes)
    kind = rng.choice(("grow", "shrink", "move", "reorder", "dead", "same"))
    spare = [b for b in ids if b not in current]
    if kind == "grow" and spare:
        return [*current, rng.choice(spare)]
    if kind == "shrink" and len(current) > 1:
        return current[:-1]
    if kind == "move" and spare:
        return [*current[:-1], rng.choice(spare)]
    if kind == "reorder" and len(current) > 1:
        return current[1:] + current[:1]
    dead = [b for b in model.down() if b not in current[:-1]]
    if kind == "dead" and dead:
        return [*current[:-1], rng.choice(dead)]
    return current


def _reassign(rng: random.Random, model: Model) -> Iterator[Step]:
    targets: dict[str, list[int]] = {}
    for _ in range(rng.choice((1, 1, 2))):
        picked = _pick_tp(rng, model)
        if picked:
            t, p = picked
            targets[f"{t.name}-{p}"] = _reassign_targets(rng, model, t, p)
    if rng.random() < 0.15 or not targets:
        targets["nosuch-0"] = [sorted(model.nodes)[0]]  # an unknown partition
    yield Step("reassign", {"targets": targets, "replace": model.reassign_znode})


def _preferred(rng: random.Random, model: Model) -> Iterator[Step]:
    tps = [tp for t in model.live_topics() for tp in t.partitions()]
    chosen = rng.sample(tps, min(len(tps), rng.randint(1, 3))) if tps else []
    if rng.random() < 0.1 or not chosen:
        chosen.append("nosuch-0")
    yield Step("preferred_election", {"partitions": chosen})


def _config(rng: random.Random, model: Model) -> Iterator[Step]:
    t = _pick_topic(rng, model)
    if t is not None:
        conf = dict(t.config)
        conf["unclean.leader.election.enable"] = rng.choice(("true", "true", "false"))
        yield Step("topic_config", {"topic": t.name, "config": conf})


def _broker_config(rng: random.Random, model: Model) -> Iterator[Step]:
    """A dynamic broker config through its znode (``kafka-configs --entity-type brokers``): the
    cluster-wide default, the controller's own id, or another broker's id (which the controller
    does not apply), set to true or false, or emptied (every override of that entity removed)."""
    others = [b for b in model.nodes if b != model.controller]
    entity = rng.choice(("<default>", str(model.controller), str(rng.choice(others or [model.controller]))))
    value = rng.choice(("true", "true", "false", ""))
    yield Step(
        "broker_config",
        {"entity": entity, "config": {"unclean.leader.election.enable": value} if value else {}},
    )


def _fault_step(op: str) -> Motif:
    def motif(rng: random.Random, model: Model) -> Iterator[Step]:
        up = model.up()
        if len(up) > 1:
            step = _fault(op, model, rng.choice(up), rng)
            if step is not None:
                yield step

    return motif


def _restart(rng: random.Random, model: Model) -> Iterator[Step]:
    if model.down():
        yield Step("restart", {"node": rng.choice(model.down())})


def _move(rng: random.Random, model: Model) -> Iterator[Step]:
    if model.up():
        yield Step("move_controller", {"successor": rng.choice(model.up())})


def _bounce(rng: random.Random, model: Model) -> Iterator[Step]:
    others = [b for b in model.up() if b != model.controller]
    if others and model.state(model.controller) == "up":
        yield Step("bounce", {"node": rng.choice(others)})


def _probe_step(rng: random.Random, model: Model, node: int) -> Step:
    tps = [tp for t in model.live_topics() for tp in t.partitions()]
    partition = rng.choice(tps) if tps and rng.random() < 0.5 else "phantom"
    api = rng.choice(("LeaderAndIsr", "LeaderAndIsr", "UpdateMetadata", "StopReplica"))
    cepoch = rng.choice(("stale", "equal", "equal", "newer"))
    bepoch = rng.choice(("stale", "equal", "newer", "none"))
    lepoch = rng.choice(("stale", "equal", "newer"))
    if partition != "phantom" and api == "LeaderAndIsr" and lepoch == "newer":
        lepoch = "equal"
    if partition != "phantom" and api == "StopReplica" and "stale" not in (cepoch, bepoch):
        cepoch = "stale"
    return Step(
        "probe",
        {
            "node": node,
            "api": api,
            "partition": partition,
            "controller_epoch": cepoch,
            "leader_epoch": lepoch,
            "broker_epoch": bepoch,
            "heal": cepoch == "newer" and node != model.controller,
        },
    )


def shutdown_request_of(rng: random.Random, model: Model, node: int) -> Step:
    """A crafted ControlledShutdown for ``node``: mostly to the controller with the current broker
    epoch (acted on), sometimes stale (77), newer or unset (acted on), or to another broker (11)."""
    epoch = rng.choices(("equal", "stale", "newer", "none"), weights=(5, 2, 1, 1))[0]
    others = [b for b in model.up() if b != model.controller]
    via = model.controller
    if others and (model.state(model.controller) != "up" or rng.random() < 0.12):
        via = rng.choice(others)
    return Step("shutdown_request", {"node": node, "via": via, "broker_epoch": epoch})


def _shutdown_request(rng: random.Random, model: Model) -> Iterator[Step]:
    if not model.up():
        return
    down = model.down()
    node = rng.choice(down) if down and rng.random() < 0.15 else rng.choice(model.up())
    yield shutdown_request_of(rng, model, node)


#: (api, target, controller epoch, leader epoch, broker epoch): combinations whose answer tells a
#: correct broker from a lax one (spec §7.3, §7.4); a probe motif draws a few, then a random one
INFORMATIVE = (
    ("LeaderAndIsr", "real", "equal", "equal", "equal"),  # equal leader epoch: 11 for the partition
    ("LeaderAndIsr", "real", "equal", "stale", "none"),  # older leader epoch: 11
    ("LeaderAndIsr", "phantom", "equal", "newer", "equal"),  # accepted: 0
    ("LeaderAndIsr", "phantom", "stale", "newer", "equal"),  # older controller epoch: 11, nothing applied
    ("UpdateMetadata", "real", "stale", "equal", "equal"),  # older controller epoch: 11
    ("StopReplica", "real", "stale", "equal", "equal"),  # older controller epoch: 11, the replica stays
    ("StopReplica", "real", "equal", "equal", "stale"),  # older broker epoch: 77
    ("LeaderAndIsr", "phantom", "equal", "newer", "newer"),  # a newer broker epoch is accepted
    ("UpdateMetadata", "phantom", "equal", "equal", "stale"),  # older broker epoch: 77
)


def _probe_of(rng: random.Random, model: Model, node: int, combo: tuple[str, ...]) -> Step | None:
    api, where, cepoch, lepoch, bepoch = combo
    tps = [tp for t in model.live_topics() for tp in t.partitions()]
    if where == "real" and not tps:
        return None
    partition = rng.choice(tps) if where == "real" else "phantom"
    params = {"node": node, "api": api, "partition": partition, "controller_epoch": cepoch,
              "leader_epoch": lepoch, "broker_epoch": bepoch, "heal": cepoch == "newer"}  # fmt: skip
    return Step("probe", params)


def _probes(rng: random.Random, model: Model) -> Iterator[Step]:
    candidates = [b for b in model.up() if not model.nodes[b].poisoned and b != model.controller]
    if not candidates:
        return
    node = rng.choice(candidates)
    for combo in rng.sample(INFORMATIVE, rng.randint(2, 4)):
        step = _probe_of(rng, model, node, combo)
        if step is not None:
            yield step
    if rng.random() < 0.3:
        yield _probe_step(rng, model, node)


SINGLE: dict[str, tuple[float, Motif]] = {
    "create_topic_zk": (6, _create_zk),
    "create_topics_api": (3, _create_api),
    "create_topics_auto": (2, _create_auto),
    "add_partitions": (2, _add_partitions),
    "delete_topics": (4, _delete),
    "reassign": (5, _reassign),
    "preferred_election": (3, _preferred),
    "topic_config": (2, _config),
    "broker_config": (1.5, _broker_config),
    "controlled_shutdown": (3, _fault_step("controlled_shutdown")),
    "kill": (3, _fault_step("kill")),
    "shutdown_request": (5, _shutdown_request),
    "restart": (4, _restart),
    "expire_session": (1.5, _fault_step("expire_session")),
    "move_controller": (2, _move),
    "bounce": (2.5, _bounce),
    "probe": (3, _probes),
    **ADMIN_SINGLE,  # the admin APIs (spec §13)
}
