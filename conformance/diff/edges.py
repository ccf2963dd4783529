"""Generator v12's extensions: a failover finding a backlog; requests at the edges (conformance ring, pure).

Both are drawn from a fifth stream of each scenario's own (``random.Random("<seed>:<index>:edges")``)
and appended after v11's tail, so a v12 scenario is its v11 one plus, sometimes, a tail.

``backlog`` (one scenario in six) — admin work that waits for the next controller. Kafka's
failover reads every admin znode itself (KafkaController.onControllerFailover: the pending
preferred elections through ``fetchPendingPreferredReplicaElections``, which drops partitions whose
leader is already preferred and topics being deleted; ``fetchTopicDeletionsInProgress`` and
``TopicDeletionManager.init``; ``initializePartitionReassignments``), a path apart from the watch
handlers that serve the same znodes while a controller runs. The step
``move_controller_backlog`` writes the znodes while no node sees ZooKeeper, then lets only the
successor see it. Half the time a partition is first made to be led by a replica that is not its
preferred one (its preferred replica killed and back), beside one led by its preferred replica.

``edges`` (one scenario in five) — two or three requests from families of their own:

- *a name that is not there*: AlterConfigs / IncrementalAlterConfigs of a topic that never existed
  or was deleted; ElectLeaders and AlterPartitionReassignments naming a partition number the topic
  does not have; cancelling a reassignment that is not pending; CreateTopics of a topic that
  exists; DeleteTopics of a topic that never existed;
- *the same request again*: a crafted ControlledShutdown retried — after a first attempt that left
  the broker leading a partition (its only other replica paused out of the ISR, then caught up
  again), or after one that moved everything — as a broker retries while partitions remain
  (``controlled.shutdown.max.retries``); the same ElectLeaders, AlterPartitionReassignments or
  preferred-election znode twice; DeleteTopics of a topic twice.

These are input classes, not answers to known bugs: every admin request is also sent naming what
the cluster lacks, and every request a client or a broker retries is also sent twice.

``grow`` (generator v13, a sixth stream ``"<seed>:<index>:grow"``, one scenario in five) —
CreatePartitions, the one controller-routed admin request v12 never sent (partitions were only
added by rewriting the topic znode): one to three requests growing a topic by automatic placement
(Kafka's rule from a fixed start: the first broker whose id is at least partition 0's first
replica) or by an explicit assignment, and now and then one Kafka refuses — a count not above the
current one, an assignment of the wrong size, replication factor or with an unregistered broker,
a topic that does not exist, a topic queued for deletion or being reassigned, a broker that is not
the controller. Written after the fourth fresh set showed the gap.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from conformance.diff.adminsteps import _via_node
from conformance.diff.model import Model, TopicModel
from conformance.diff.scenario import Step

__all__ = ["backlog", "edges", "grow"]

Family = Callable[[random.Random, Model], Iterator[Step]]


def _steady(model: Model) -> list[int]:
    """Running nodes that take the controller's requests (a probed one may refuse them)."""
    return [b for b in model.up() if not model.nodes[b].poisoned]


def _all_up(model: Model, replicas: tuple[int, ...] | list[int]) -> bool:
    return all(b in model.nodes and model.state(b) == "up" for b in replicas)


def _missing_partition(t: TopicModel, rng: random.Random) -> str:
    return f"{t.name}-{max(t.assignment) + rng.randint(1, 3)}"


# --- backlog -------------------------------------------------------------------------------------


def backlog(rng: random.Random, model: Model) -> Iterator[Step]:
    c = model.controller
    others = [b for b in _steady(model) if b != c]
    if model.state(c) != "up" or not others:
        return
    if rng.random() < 0.5 and len(others) >= 2:
        p, q = rng.sample(others, 2)  # p preferred for partition 0, q for partition 1
        name = model.fresh_topic()
        yield Step("create_topic_zk", {"topic": name, "assignment": {"0": [p, q], "1": [q, p]}, "config": {}})
        yield Step("kill", {"node": p, "successor": None})  # partition 0's leadership goes to q
        yield Step("restart", {"node": p})
    live = model.live_topics()
    preferred = [tp for t in rng.sample(live, min(len(live), rng.randint(1, 2))) for tp in t.partitions()][:5]
    if live and rng.random() < 0.2:
        preferred.append(_missing_partition(rng.choice(live), rng))
    deletions: list[str] = []
    if live and rng.random() < 0.4:
        deletions.append(rng.choice(live).name)
    if rng.random() < 0.15:
        deletions.append(model.fresh_topic())  # a marker for a topic that does not exist
    reassign: dict[str, list[int]] = {}
    if live and not model.reassign_znode and rng.random() < 0.4:
        t = rng.choice([t for t in live if t.name not in deletions] or live)
        part = rng.choice(sorted(t.assignment))
        current = list(t.assignment[part])
        spare = [b for b in sorted(model.nodes) if b not in current]
        if spare and rng.random() < 0.6:
            target = [*current[:-1], rng.choice(spare)]  # a down spare keeps it pending
        else:
            target = current[1:] + current[:1]
        if target != current and t.name not in deletions:
            reassign[f"{t.name}-{part}"] = target
    successor = rng.choice([b for b in _steady(model) if b != model.controller] or [model.controller])
    yield Step(
        "move_controller_backlog",
        {"successor": successor, "preferred": preferred, "deletions": deletions, "reassign": reassign},
    )


# --- edges: a name that is not there -------------------------------------------------------------


def _absent_config(rng: random.Random, model: Model) -> Iterator[Step]:
    gone = sorted(model.deleted)
    topic = rng.choice(gone) if gone and rng.random() < 0.5 else model.fresh_topic()
    config = rng.choice(({"unclean.leader.election.enable": "true"}, {"min.insync.replicas": "1"}))
    yield Step(
        "alter_configs_api",
        {"via": rng.choice(model.up()), "topic": topic, "config": config, "incremental": rng.random() < 0.5},
    )


def _absent_election(rng: random.Random, model: Model) -> Iterator[Step]:
    live = model.live_topics()
    if not live:
        return
    t = rng.choice(live)
    named = [rng.choice(t.partitions()), _missing_partition(t, rng)]
    if rng.random() < 0.3:
        named.append(f"{model.fresh_topic()}-0")
    rng.shuffle(named)
    election = rng.choice(("preferred", "preferred", "unclean"))
    yield Step("elect_leaders", {"via": _via_node(rng, model), "partitions": named, "election": election})


def _absent_reassign(rng: random.Random, model: Model) -> Iterator[Step]:
    live = model.live_topics()
    if not live:
        return
    t = rng.choice(live)
    up = model.up()
    targets = {_missing_partition(t, rng): rng.sample(up, min(len(up), 2))}
    if rng.random() < 0.5:  # beside a real reordering
        part = rng.choice(sorted(t.assignment))
        current = list(t.assignment[part])
        if len(current) > 1 and _all_up(model, current):
            targets[f"{t.name}-{part}"] = current[1:] + current[:1]
    yield Step("reassign_api", {"via": _via_node(rng, model), "targets": targets})


def _idle_cancel(rng: random.Random, model: Model) -> Iterator[Step]:
    live = model.live_topics()
    idle = [tp for t in live for tp in t.partitions() if tp not in model.api_original]
    if not idle:
        return
    named = [rng.choice(idle)]
    if rng.random() < 0.5:
        named.append(_missing_partition(rng.choice(live), rng))
    yield Step("cancel_reassign_api", {"via": _via_node(rng, model), "partitions": named})


def _existing_create(rng: random.Random, model: Model) -> Iterator[Step]:
    live = model.live_topics()
    if not live:
        return
    t, up = rng.choice(live), model.up()
    params = {"topic": t.name, "via": rng.choice(up), "assignment": {"0": [rng.choice(up)]}, "config": {}}
    yield Step("create_topics_api", params)


def _absent_delete(rng: random.Random, model: Model) -> Iterator[Step]:
    yield Step("delete_topics_api", {"topic": model.fresh_topic(), "via": rng.choice(model.up())})


# --- edges: the same request again ---------------------------------------------------------------


def _retried_shutdown(rng: random.Random, model: Model) -> Iterator[Step]:
    c = model.controller
    steady = _steady(model)
    if model.state(c) != "up" or not steady:
        return
    b = rng.choice(steady)
    followers = [x for x in steady if x not in (b, c)]
    request = Step("shutdown_request", {"node": b, "via": c, "broker_epoch": "equal"})
    if followers and rng.random() < 0.6:
        f = rng.choice(followers)
        name = model.fresh_topic()
        yield Step("create_topic_zk", {"topic": name, "assignment": {"0": [b, f]}, "config": {}})
        yield Step("pause", {"node": f})  # the ISR shrinks to [b]: the first attempt leaves t-0 on b
        yield request
        yield Step("resume", {"node": f})  # f catches up and is back in the ISR
        yield request  # the retry: leadership can move now
    else:
        yield request
        yield request


def _repeated(rng: random.Random, model: Model) -> Iterator[Step]:
    live = model.live_topics()
    if not live:
        return
    t = rng.choice(live)
    kind = rng.choice(("elect", "reassign", "znode", "delete"))
    if kind == "elect":
        step = Step(
            "elect_leaders",
            {"via": _via_node(rng, model), "partitions": t.partitions()[:3], "election": "preferred"},
        )
    elif kind == "reassign":
        part = rng.choice(sorted(t.assignment))
        current = list(t.assignment[part])
        spare = [b for b in model.up() if b not in current]
        target = [*current[:-1], rng.choice(spare)] if spare else current[::-1]
        step = Step("reassign_api", {"via": _via_node(rng, model), "targets": {f"{t.name}-{part}": target}})
    elif kind == "znode":
        step = Step("preferred_election", {"partitions": t.partitions()[:3]})
    else:
        if model.controller_config("delete.topic.enable", "true") == "false" or not all(
            _all_up(model, r) for r in t.assignment.values()
        ):
            return  # a deletion that cannot finish would keep the second DeleteTopics waiting
        step = Step("delete_topics_api", {"topic": t.name, "via": rng.choice(model.up())})
    yield step
    yield step


FAMILIES: tuple[Family, ...] = (
    _absent_config,
    _absent_election,
    _absent_reassign,
    _idle_cancel,
    _existing_create,
    _absent_delete,
    _retried_shutdown,
    _repeated,
)


def edges(rng: random.Random, model: Model) -> Iterator[Step]:
    if not model.up():
        return
    for family in rng.sample(FAMILIES, rng.randint(2, 3)):
        if not model.up():
            return
        yield from family(rng, model)


# --- grow: CreatePartitions ----------------------------------------------------------------------


def _grow_one(rng: random.Random, model: Model) -> Iterator[Step]:
    live = [t for t in model.live_topics() if 0 in t.assignment]
    up = model.up()
    if not up:
        return
    if not live or rng.random() < 0.25:  # a topic of its own, so nothing pending holds it back
        rf = rng.randint(1, min(3, len(up)))
        name = model.fresh_topic()
        assignment = {str(p): rng.sample(up, rf) for p in range(rng.randint(1, 2))}
        yield Step("create_topic_zk", {"topic": name, "assignment": assignment, "config": {}})
        live = [model.topics[name]]
    t = rng.choice(live)
    old, rf = len(t.assignment), len(t.assignment[0])
    registered = [b for b in sorted(model.nodes) if model.state(b) != "down"]
    via = model.controller if model.state(model.controller) == "up" else rng.choice(up)
    count, assignment = old + rng.randint(1, 3), {}
    kind = rng.choices(("auto", "explicit", "refused"), weights=(5, 3, 2))[0]
    if kind == "explicit" and len(registered) >= rf:
        assignment = {str(p): rng.sample(registered, rf) for p in range(old, count)}
    elif kind == "refused":
        wrong = rng.choice(("same", "fewer", "size", "rf", "unknown", "missing", "not-controller"))
        if wrong == "same":
            count = old
        elif wrong == "fewer" and old > 1:
            count = old - 1
        elif wrong == "size":
            assignment = {
                str(p): rng.sample(registered, min(rf, len(registered))) for p in range(old, count + 1)
            }
        elif wrong == "rf" and len(registered) > rf:
            assignment = {str(p): rng.sample(registered, rf + 1) for p in range(old, count)}
        elif wrong == "unknown":
            assignment = {str(p): [max(model.nodes) + 1 + i for i in range(rf)] for p in range(old, count)}
        elif wrong == "missing":
            yield Step(
                "create_partitions_api",
                {"via": via, "topic": model.fresh_topic(), "count": 2, "assignment": {}},
            )
            return
        elif wrong == "not-controller" and len(up) > 1:
            via = rng.choice([b for b in up if b != model.controller])
    yield Step(
        "create_partitions_api", {"via": via, "topic": t.name, "count": count, "assignment": assignment}
    )


def grow(rng: random.Random, model: Model) -> Iterator[Step]:
    for _ in range(rng.choice((1, 1, 2, 3))):
        yield from _grow_one(rng, model)
