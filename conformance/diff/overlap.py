"""Generator v14's extension: work that overlaps other work, and requests after a re-registration
(conformance ring, pure).

Drawn from a seventh stream of each scenario's own (``random.Random("<seed>:<index>:overlap")``),
one scenario in five, and appended after v13's tail, so a v14 scenario is its v13 one plus,
sometimes, a tail of one or two of these four families:

- *deletion meets a reassignment*: a topic's partition is reassigned onto a paused broker (through
  the znode or AlterPartitionReassignments), so the reassignment stays pending, and the topic is
  then deleted (a marker, or DeleteTopics, which waits out its timeout). Kafka's check ("topic
  reassignment in progress", KafkaController.processTopicDeletion) only halts topics already
  queued for deletion (``markTopicIneligibleForDeletion`` intersects with ``topicsToBeDeleted``,
  and the new topics are enqueued after it), so a first request starts the deletion in the middle
  of the reassignment; the halt takes hold at the next deletion event or failover, which half of
  the draws send before the paused broker is let go: another marker (an existing topic, or a name
  never created) or a controller move. Now and then a preferred ElectLeaders (answered
  INVALID_TOPIC_EXCEPTION) or a listing of the partition comes in between.
- *requests for a topic whose deletion waits*: one of the topic's replicas is killed, the topic is
  marked for deletion (its deletion cannot finish while a replica is offline), then
  AlterPartitionReassignments, ElectLeaders, CreatePartitions, ListPartitionReassignments or a
  reassignment znode names it, before the replica comes back and the deletion completes. Kafka
  answers each from ``isTopicQueuedUpForDeletion`` or the deletion marker, not from the topic's
  znodes, which are all still there.
- *after a re-registration*: a broker's ZooKeeper session expires (sometimes the controller's, which
  hands the controller on) and it registers again with a new czxid, which is its new broker epoch
  on both sides (``registerBrokerAndReelect`` on the broker, ``BrokerModifications`` on the
  controller). Then crafted requests carrying an epoch just below the new one — LeaderAndIsr,
  UpdateMetadata or StopReplica to the broker (answered STALE_BROKER_EPOCH) and a ControlledShutdown
  to the controller (the same) — and sometimes the current one, or the broker's own graceful stop,
  whose ControlledShutdown must carry the new epoch to be acted on.

- *a config change over an earlier one*: a topic with one config key stored (created with it, or
  an existing topic with overrides), then an IncrementalAlterConfigs (SET) of the other key — Kafka
  keeps the stored key beside it (AdminManager.incrementalAlterConfigs reads the stored overrides
  first) — sometimes followed by an AlterConfigs naming one key (the whole set: the other key
  goes) and another SET.

Input classes, as the earlier tails are: every pair of admin operations that Kafka serialises
(deletion against reassignment, requests against a pending deletion) is also sent overlapping,
every check of a broker epoch is also made just after the epoch changed, and every config change
is also made over an earlier one it must keep or replace.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from conformance.diff.edges import _steady
from conformance.diff.model import Model, TopicModel
from conformance.diff.scenario import Step

__all__ = ["overlap"]

Family = Callable[[random.Random, Model], Iterator[Step]]


def _topic_up(model: Model, t: TopicModel) -> bool:
    """Every replica of ``t`` on a known node runs (a deletion of it can finish)."""
    return all(model.state(b) == "up" for r in t.assignment.values() for b in r if b in model.nodes)


def _deletes(model: Model) -> bool:
    return model.controller_config("delete.topic.enable", "true") != "false"


# --- deletion meets a reassignment ---------------------------------------------------------------


def _deleted_midway(rng: random.Random, model: Model) -> Iterator[Step]:
    c = model.controller
    if model.state(c) != "up" or not _deletes(model):
        return
    spares = [b for b in _steady(model) if b != c]
    if not spares:
        return
    target = rng.choice(spares)
    others = [b for b in _steady(model) if b != target]
    rf = rng.randint(1, min(2, len(others)))
    name = model.fresh_topic()
    assignment = {str(p): rng.sample(others, rf) for p in range(rng.choice((1, 1, 2)))}
    yield Step("create_topic_zk", {"topic": name, "assignment": assignment, "config": {}})
    current = assignment["0"]
    moved = [*current, target] if rng.random() < 0.5 else [*current[:-1], target]
    tp = f"{name}-0"
    yield Step("pause", {"node": target})  # the new replica cannot catch up: the reassignment waits
    if model.reassign_znode or rng.random() < 0.5:
        yield Step("reassign_api", {"via": c, "targets": {tp: moved}})
    else:
        yield Step("reassign", {"targets": {tp: moved}, "replace": False})
    if rng.random() < 0.3:
        yield Step("list_reassignments", {"via": c, "partitions": [tp]})
    if rng.random() < 0.7:
        yield Step("delete_topics", {"topics": [name]})
    else:  # answered only when its timeout runs out: the deletion waits for the reassignment
        yield Step("delete_topics_api", {"topic": name, "via": rng.choice(others)})
    if rng.random() < 0.3:
        yield Step("elect_leaders", {"via": c, "partitions": [tp], "election": "preferred"})
    meanwhile = rng.choice(("nothing", "nothing", "marker", "move"))
    if meanwhile == "marker":  # a second deletion event: now the topic is queued, so it is halted
        rest = [t.name for t in model.live_topics() if t.name != name and _topic_up(model, t)]
        yield Step(
            "delete_topics",
            {"topics": [rng.choice(rest) if rest and rng.random() < 0.5 else model.fresh_topic()]},
        )
    elif meanwhile == "move":  # the next controller's TopicDeletionManager.init halts it
        successors = [b for b in _steady(model) if b not in (c, target)]
        if successors:
            yield Step("move_controller", {"successor": rng.choice(successors)})
    yield Step("resume", {"node": target})


# --- requests for a topic whose deletion waits ---------------------------------------------------


def _queued_requests(rng: random.Random, model: Model) -> Iterator[Step]:
    c = model.controller
    if model.state(c) != "up" or not _deletes(model):
        return
    steady = _steady(model)
    others = [b for b in steady if b != c]
    if not others:
        return
    victim = rng.choice(others)
    rf = rng.randint(1, min(2, len(steady)))
    name = model.fresh_topic()
    assignment = {"0": [victim, *rng.sample([b for b in steady if b != victim], rf - 1)]}
    if rng.random() < 0.5:
        assignment["1"] = rng.sample(steady, rf)
    yield Step("create_topic_zk", {"topic": name, "assignment": assignment, "config": {}})
    yield Step("kill", {"node": victim, "successor": None})
    yield Step("delete_topics", {"topics": [name]})  # waits for the victim's replica
    t = model.topics.get(name)
    if t is not None:
        for request in rng.sample(_REQUESTS, rng.randint(1, 3)):
            yield from request(rng, model, t)
    yield Step("restart", {"node": victim})  # the deletion completes


def _reassign_queued(rng: random.Random, model: Model, t: TopicModel) -> Iterator[Step]:
    part = rng.choice(sorted(t.assignment))
    current = list(t.assignment[part])
    up = [b for b in model.up() if b not in current]
    target = [*current[1:], rng.choice(up)] if up else current[::-1]
    if rng.random() < 0.75 or model.reassign_znode:
        yield Step("reassign_api", {"via": model.controller, "targets": {f"{t.name}-{part}": target}})
    else:
        yield Step("reassign", {"targets": {f"{t.name}-{part}": target}, "replace": False})


def _elect_queued(rng: random.Random, model: Model, t: TopicModel) -> Iterator[Step]:
    election = rng.choice(("preferred", "preferred", "unclean"))
    yield Step("elect_leaders", {"via": model.controller, "partitions": t.partitions(), "election": election})


def _grow_queued(rng: random.Random, model: Model, t: TopicModel) -> Iterator[Step]:
    count = len(t.assignment) + 1
    yield Step(
        "create_partitions_api", {"via": model.controller, "topic": t.name, "count": count, "assignment": {}}
    )


def _list_queued(rng: random.Random, model: Model, t: TopicModel) -> Iterator[Step]:
    yield Step("list_reassignments", {"via": model.controller, "partitions": t.partitions()})


_REQUESTS = (_reassign_queued, _elect_queued, _grow_queued, _list_queued)


# --- after a re-registration ---------------------------------------------------------------------

#: (api, partition, leader epoch) of a crafted request with a broker epoch one below the current
#: registration's: a correct broker answers STALE_BROKER_EPOCH (77) and applies nothing
_STALE = (
    ("LeaderAndIsr", "phantom", "newer"),
    ("UpdateMetadata", "phantom", "equal"),
    ("UpdateMetadata", "real", "equal"),
    ("StopReplica", "real", "equal"),
)


def _after_reregistration(rng: random.Random, model: Model) -> Iterator[Step]:
    c = model.controller
    steady = _steady(model)
    if model.state(c) != "up" or len(steady) < 2:
        return
    others = [b for b in steady if b != c]
    if others and rng.random() < 0.8:
        b, successor = rng.choice(others), None
    else:
        b, successor = c, rng.choice(others)
    yield Step("expire_session", {"node": b, "successor": successor})
    tps = [tp for t in model.live_topics() for tp in t.partitions()]
    for api, where, lepoch in rng.sample(_STALE, rng.randint(1, 3)):
        if where == "real" and not tps:
            continue
        partition = rng.choice(tps) if where == "real" else "phantom"
        params = {"node": b, "api": api, "partition": partition, "controller_epoch": "equal",
                  "leader_epoch": lepoch, "broker_epoch": "stale", "heal": False}  # fmt: skip
        yield Step("probe", params)
    now = model.controller
    if rng.random() < 0.6 and model.state(now) == "up":
        epoch = rng.choice(("stale", "stale", "equal"))
        yield Step("shutdown_request", {"node": b, "via": now, "broker_epoch": epoch})
    if rng.random() < 0.4 and b != model.controller:
        yield Step("controlled_shutdown", {"node": b, "successor": None})
        yield Step("restart", {"node": b})


# --- a config change over an earlier one --------------------------------------------------------

#: the two topic configs the steps change (conformance.diff.adminsteps.CONFIG_KEYS), with values
_LAYERS = (
    ("unclean.leader.election.enable", ("true", "false")),
    ("min.insync.replicas", ("1", "2")),
)


def _layered_configs(rng: random.Random, model: Model) -> Iterator[Step]:
    up = model.up()
    if not up:
        return
    (first, firsts), (second, seconds) = rng.sample(_LAYERS, 2)
    live = [t for t in model.live_topics() if t.config]
    if live and rng.random() < 0.5:
        t = rng.choice(live)
    else:
        name = model.fresh_topic()
        replicas = rng.sample(up, min(len(up), rng.randint(1, 2)))
        yield Step(
            "create_topic_zk",
            {"topic": name, "assignment": {"0": replicas}, "config": {first: rng.choice(firsts)}},
        )
        created = model.topics.get(name)
        if created is None:
            return
        t = created
    # one key set on its own beside the stored ones, then the whole set replaced or the other key
    # set again: what each kind of request keeps of the keys it does not name
    yield _alter(rng, up, t, second, seconds, incremental=True)
    if rng.random() < 0.5:
        yield _alter(rng, up, t, first, firsts, incremental=False)
    if rng.random() < 0.5:
        yield _alter(rng, up, t, second, seconds, incremental=True)


def _alter(
    rng: random.Random, up: list[int], t: TopicModel, key: str, values: tuple[str, ...], *, incremental: bool
) -> Step:
    via = rng.choice(up)  # drawn before the value
    params = {"via": via, "topic": t.name, "config": {key: rng.choice(values)}, "incremental": incremental}
    return Step("alter_configs_api", params)


FAMILIES: tuple[Family, ...] = (_deleted_midway, _queued_requests, _after_reregistration, _layered_configs)


def overlap(rng: random.Random, model: Model) -> Iterator[Step]:
    for family in rng.sample(FAMILIES, rng.choice((1, 1, 2))):
        if not model.up():
            return
        yield from family(rng, model)
