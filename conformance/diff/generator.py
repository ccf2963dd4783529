"""The seeded scenario generator: one (seed, index) → one scenario (conformance ring, pure).

``generate(seed, index)`` draws everything from ``random.Random(seed * 1_000_003 + index)``: the
shape (3–5 nodes, each with a few of ``unclean.leader.election.enable``, ``delete.topic.enable``,
``auto.leader.rebalance.enable``, ``min.insync.replicas``, one cluster in ten without topic
deletion; the first controller) and a sequence of
*motifs* — short step sequences that reach the states example checks rarely reach:

==========================  ====================================================================
motif                       reaches
==========================  ====================================================================
``shrunk_isr_then_act``     an ISR smaller than the replica set (a paused follower) when the
                            leader is shut down (for real, or by a crafted ControlledShutdown
                            while it keeps running), killed, re-elected or the controller moves
``reassign_inflight_move``  a reassignment pending on a down or paused target when the
                            controller moves; the target returns afterwards
``reassign_target_back``    a broker that restarts while it is the target of a reassignment
``two_deletions``           two deletions one after the other (a watch that must be re-armed)
``deletion_dead_replica``   a deletion that must wait for a dead replica's broker, with partitions
                            added or the controller moved while it waits
``offline_creation``        a topic created while all its replicas' brokers are down (partitions
                            with no state znode), then deleted or the controller moved
``unclean``                 a partition whose ISR is gone while an out-of-ISR replica lives,
                            then an unclean election: the topic's config (znode or admin API)
                            or ElectLeaders UNCLEAN
``api_reassign_cancel``     an admin-API reassignment pending on a paused target, listed, then
                            cancelled (its original replicas restored) or completed first
``probes``                  crafted controller requests with stale/equal/newer epochs
``refused_deletions``       in a cluster without topic deletion: deletions, mostly through
                            DeleteTopics (answered TOPIC_DELETION_DISABLED)
``single``                  any one step of the vocabulary, drawn by weight
==========================  ====================================================================

Thirteen more come from streams of their own (``random.Random("<seed>:<index>:extensions")``,
then ``…:defaults``, ``…:listing``, ``…:edges``, ``…:grow``, ``…:overlap``, ``…:registration``,
``…:halt`` and ``…:removal``), so a scenario's other
draws are those it had before they existed; each is appended after the motifs:

==========================  ====================================================================
``imbalance``               one cluster in eight has auto rebalance on every node at one
                            ``leader.imbalance.per.broker.percentage`` (10, 25 or 50): a broker
                            that leads all but one of the 2–5 partitions it is preferred for (a
                            reordering reassignment made it preferred where another replica
                            leads) when the first rebalance check after a controller move runs
``dynamic_unclean``         one scenario in ten: the controller's own dynamic
                            ``unclean.leader.election.enable`` and the cluster-wide default set
                            to opposite values (before or after) a partition whose only ISR
                            member dies while a live replica is outside the ISR
``failed_election``         one scenario in eight (since v10, drawn after the two above): an
                            ElectLeaders (preferred or unclean) over partitions whose preferred
                            replica died, whose preferred replica leads, and with no live
                            replica, then the dead replica back and a preferred election that
                            succeeds
``reassigning_check``      (v10) half of the clusters with auto rebalance: a broker misled on all
                            its partitions (killed and back) while a reassignment is pending on
                            a paused target when the controller moves (the check moves nothing)
``defaults``                (v10, a third stream ``"<seed>:<index>:defaults"``) one cluster in
                            eight whose nodes set their own ``num.partitions`` and
                            ``default.replication.factor``, ending with a CreateTopics that leaves
                            one or both to the receiving broker (-1), every node up
``listing``                 (v11, a fourth stream ``"<seed>:<index>:listing"``) one scenario in six:
                            ListPartitionReassignments naming a partition reassigned onto a paused
                            broker beside idle ones, a missing partition and a missing topic; a
                            null list through another broker; the same list once it completed
``backlog``                 (v12, a fifth stream ``"<seed>:<index>:edges"``, one scenario in six)
                            admin work written while no node sees ZooKeeper, then read by the next
                            controller's failover (:mod:`conformance.diff.edges`)
``edges``                   (v12, the same stream, one in five) requests naming what the cluster
                            lacks, and requests sent twice, as retries are
``grow``                    (v13, a sixth stream ``"<seed>:<index>:grow"``, one in five)
                            CreatePartitions: automatic or explicit placement, or refused
``overlap``                 (v14, a seventh stream ``"<seed>:<index>:overlap"``, one in five) a
                            deletion while the topic's reassignment waits, requests naming a topic
                            whose deletion waits, stale broker epochs just after a re-registration,
                            a config change over a stored one (:mod:`conformance.diff.overlap`)
``registration``            (v15, an eighth stream ``"<seed>:<index>:registration"``) a stale
                            broker epoch after every expiry nothing checked yet; one scenario in
                            six, a running broker's registration rewritten by hand (an extra
                            listener, a rack) (:mod:`conformance.diff.registrations`)
``halted_retry``            (v15, a ninth stream ``"<seed>:<index>:halt"``, one in six) a
                            deletion started mid-reassignment with a replica down, the replica
                            back, then a second deletion event, a controller move or nothing
                            before the reassignment's paused target answers: whether the failed
                            replica is retried depends on the halt (:mod:`conformance.diff.halts`)
``removed_registration``    (v16, a tenth stream ``"<seed>:<index>:removal"``, one in ten) a
                            running broker's registration deleted by hand, sometimes a topic with a
                            replica on it, then its graceful stop (its ControlledShutdown refused,
                            retried) and mostly its restart (:mod:`conformance.diff.registrations`)
==========================  ====================================================================

Each drawn step is checked against the model (:mod:`conformance.diff.model`) and applied to it;
motifs that pause a node resume it before they end, so no pause outlives its motif (sessions
never expire by accident). Steps that turn out to be no-ops on the real cluster are still valid.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import Any

from conformance.diff.adminsteps import _via_node
from conformance.diff.draws import (
    SINGLE,
    Motif,
    _assignment,
    _create_zk,
    _delete,
    _fault,
    _move,
    _node_config,
    _pick_tp,
    _probes,
    shutdown_request_of,
)
from conformance.diff.edges import backlog, edges, grow
from conformance.diff.halts import halted_retry
from conformance.diff.model import Model, TopicModel
from conformance.diff.overlap import overlap
from conformance.diff.registrations import registration, removed_registration
from conformance.diff.scenario import Scenario, Step
from conformance.diff.steps import KINDS, validate_params

__all__ = ["GENERATOR_VERSION", "generate"]

GENERATOR_VERSION = 16


# --- motifs -------------------------------------------------------------------------------------


def _follower_of(rng: random.Random, model: Model) -> tuple[TopicModel, int, int, int] | None:
    """A replicated partition with a running leader and a running follower (not the controller)."""
    options = []
    for t in model.live_topics():
        for p, replicas in t.assignment.items():
            leader = model.leader_guess(t.name, p)
            followers = [r for r in replicas if r != leader and r in model.nodes and model.state(r) == "up"]
            followers = [f for f in followers if f != model.controller]
            if leader is not None and followers:
                options.append((t, p, leader, rng.choice(followers)))
    return rng.choice(options) if options else None


def _shrunk_isr_then_act(rng: random.Random, model: Model) -> Iterator[Step]:
    found = _follower_of(rng, model)
    if found is None:
        return
    t, p, leader, follower = found
    yield Step("pause", {"node": follower})
    act = rng.choice(("controlled_shutdown", "kill", "shutdown_request", "preferred", "move", "reassign"))
    if act in ("controlled_shutdown", "kill") and model.state(leader) == "up":
        step = _fault(act, model, leader, rng)
        if step is not None:
            yield step
    elif act == "shutdown_request" and model.state(leader) == "up":
        yield shutdown_request_of(rng, model, leader)
    elif act == "preferred" and rng.random() < 0.5 and model.state(model.controller) == "up":
        # ElectLeaders while a follower is out of the ISR: the preferred replica usually leads
        # already, so both kinds are mostly answered ELECTION_NOT_NEEDED (84); the answer is
        # compared, and so is what the controller writes and sends when it does elect
        election = rng.choice(("preferred", "preferred", "unclean"))
        yield Step(
            "elect_leaders", {"via": model.controller, "partitions": [f"{t.name}-{p}"], "election": election}
        )
    elif act == "preferred":
        yield Step("preferred_election", {"partitions": [f"{t.name}-{p}"]})
    elif act == "reassign":
        yield Step(
            "reassign", {"targets": {f"{t.name}-{p}": list(reversed(t.assignment[p]))}, "replace": False}
        )
    else:
        yield from _move(rng, model)
    yield Step("resume", {"node": follower})


def _reassign_inflight_move(rng: random.Random, model: Model) -> Iterator[Step]:
    picked, others = _pick_tp(rng, model), [b for b in model.up() if b != model.controller]
    if picked is None or not others or model.reassign_znode:
        return
    t, p = picked
    target = rng.choice(others)
    yield (
        Step("kill", {"node": target, "successor": None})
        if rng.random() < 0.5
        else Step("pause", {"node": target})
    )
    current = [r for r in t.assignment[p] if r != target]
    yield Step("reassign", {"targets": {f"{t.name}-{p}": [target, *current][:3]}, "replace": False})
    yield from _move(rng, model)
    yield Step("restart" if model.state(target) == "down" else "resume", {"node": target})


def _reassign_target_back(rng: random.Random, model: Model) -> Iterator[Step]:
    picked = _pick_tp(rng, model)
    if picked is None or model.reassign_znode:
        return
    t, p = picked
    if not model.down():
        others = [b for b in model.up() if b != model.controller]
        if not others:
            return
        yield Step("kill", {"node": rng.choice(others), "successor": None})
    back = rng.choice(model.down())
    yield Step("reassign", {"targets": {f"{t.name}-{p}": [*t.assignment[p][:2], back]}, "replace": False})
    yield Step("restart", {"node": back})


def _two_deletions(rng: random.Random, model: Model) -> Iterator[Step]:
    while len(model.live_topics()) < 2:
        yield from _create_zk(rng, model)
    for t in rng.sample(model.live_topics(), 2):  # each through the znode or DeleteTopics
        via = _via_node(rng, model)
        if via is not None and rng.random() < 0.4:
            yield Step("delete_topics_api", {"topic": t.name, "via": via})
        else:
            yield Step("delete_topics", {"topics": [t.name]})


def _deletion_dead_replica(rng: random.Random, model: Model) -> Iterator[Step]:
    """A deletion held up by a dead replica's broker; while it waits, partitions may be added to the
    topic (Kafka undoes them) and the controller may move (the next one resumes the deletion)."""
    picked = _pick_tp(rng, model)
    if picked is None:
        return
    t, p = picked
    victims = [
        r for r in t.assignment[p] if r in model.nodes and model.state(r) == "up" and r != model.controller
    ]
    if not victims:
        return
    victim = rng.choice(victims)
    yield Step("kill", {"node": victim, "successor": None})
    yield Step("delete_topics", {"topics": [t.name]})
    meanwhile = rng.choice(("nothing", "add_partitions", "move", "add_partitions_then_move"))
    if meanwhile.startswith("add_partitions"):
        yield _grown(rng, model, t)
    if meanwhile.endswith("move"):
        yield from _move(rng, model)
    yield Step("restart", {"node": victim})


def _grown(rng: random.Random, model: Model, t: TopicModel) -> Step:
    """``t``'s assignment with one or two partitions more (replicas drawn like a creation's)."""
    rf = len(next(iter(t.assignment.values())))
    extra = _assignment(rng, model, len(t.assignment) + rng.randint(1, 2), rf)
    new = {str(p): list(r) for p, r in t.assignment.items()}
    new.update({p: r for p, r in extra.items() if int(p) not in t.assignment})
    return Step("add_partitions", {"topic": t.name, "assignment": new})


def _offline_creation(rng: random.Random, model: Model) -> Iterator[Step]:
    """A topic created while every one of its replicas' brokers is down: its partitions stay new,
    with no state znode, until a replica returns — and meanwhile it may be deleted, or the
    controller may move."""
    if not model.down():
        others = [b for b in model.up() if b != model.controller]
        if len(others) < 2:
            return
        yield Step("kill", {"node": rng.choice(others), "successor": None})
    down = model.down()
    replicas = rng.sample(down, min(len(down), rng.randint(1, 2)))
    name = model.fresh_topic()
    assignment = {str(p): rng.sample(replicas, len(replicas)) for p in range(rng.randint(1, 2))}
    yield Step("create_topic_zk", {"topic": name, "assignment": assignment, "config": {}})
    then = rng.choice(("delete", "move", "delete_then_move", "nothing"))
    if then.startswith("delete"):
        yield Step("delete_topics", {"topics": [name]})
    if then.endswith("move"):
        yield from _move(rng, model)
    for b in replicas:
        if model.state(b) == "down":
            yield Step("restart", {"node": b})


def _unclean(rng: random.Random, model: Model) -> Iterator[Step]:
    found = _follower_of(rng, model)
    if found is None:
        return
    t, p, leader, follower = found
    others = [
        r
        for r in t.assignment[p]
        if r not in (leader, follower, model.controller) and r in model.nodes and model.state(r) == "up"
    ]
    paused = [follower, *rng.sample(others, 1 if others and rng.random() < 0.5 else 0)]
    for node in paused:  # they leave the ISR: two or more live replicas outside it, or one
        yield Step("pause", {"node": node})
    step = _fault("kill", model, leader, rng) if model.state(leader) == "up" else None
    if step is not None:
        yield step  # the ISR's last member may be gone now
    for node in paused:  # alive, outside the ISR of a leaderless partition
        yield Step("resume", {"node": node})
    if step is None:
        return
    how = rng.choice(("topic_config", "elect_leaders", "alter_configs_api", "broker_config"))
    if how == "broker_config" and "unclean.leader.election.enable" not in t.config and len(paused) == 1:
        # dynamic (the topic has no override of its own): the controller's own id, the cluster-wide
        # default, or both
        own, default = str(model.controller), "<default>"
        layers = rng.choice(([(own, "true")], [(default, "true")], [(own, "false"), (default, "true")],
                             [(default, "false"), (own, "true")]))  # fmt: skip
        for entity, value in layers:  # the broker's own value, when set, wins over the default
            yield Step(
                "broker_config", {"entity": entity, "config": {"unclean.leader.election.enable": value}}
            )
    elif how == "elect_leaders" and model.state(model.controller) == "up":  # ignores the topic's config
        yield Step("elect_leaders", {"via": model.controller, "partitions": [f"{t.name}-{p}"],
                                     "election": "unclean"})  # fmt: skip
    elif how == "alter_configs_api" and model.state(model.controller) == "up":
        conf = {"unclean.leader.election.enable": "true"}
        yield Step("alter_configs_api", {"via": model.controller, "topic": t.name, "config": conf,
                                         "incremental": True})  # fmt: skip
    else:
        conf = {**t.config, "unclean.leader.election.enable": "true"}
        yield Step("topic_config", {"topic": t.name, "config": conf})


def _api_reassign_cancel(rng: random.Random, model: Model) -> Iterator[Step]:
    """An admin-API reassignment kept pending by a paused target (registered, so accepted, but not
    catching up), listed, then cancelled (its original replicas restored) or completed first:
    REASSIGN-16..22 with something to revert. A down target would be refused (not alive)."""
    picked = _pick_tp(rng, model)
    if picked is None or model.state(model.controller) != "up":
        return
    t, p = picked
    spare = [b for b in model.up() if b != model.controller and b not in t.assignment[p]]
    if not spare:
        return
    target, tp, via = rng.choice(spare), f"{t.name}-{p}", model.controller
    yield Step("pause", {"node": target})
    yield Step("reassign_api", {"via": via, "targets": {tp: [*t.assignment[p][:2], target]}})
    yield Step("list_reassignments", {"via": via, "partitions": rng.choice(([], [tp]))})
    completed = rng.random() < 0.3
    if completed:
        yield Step("resume", {"node": target})
    yield Step("cancel_reassign_api", {"via": via, "partitions": [tp]})
    if not completed:
        yield Step("resume", {"node": target})


def _refused_deletions(rng: random.Random, model: Model) -> Iterator[Step]:
    """In a cluster without topic deletion: a deletion (mostly DeleteTopics, answered 73)."""
    yield from _delete(rng, model)


def _single_motif(rng: random.Random, model: Model) -> Iterator[Step]:
    return _single(rng, model)


def _single(rng: random.Random, model: Model) -> Iterator[Step]:
    names = list(SINGLE)
    op = rng.choices(names, weights=[SINGLE[n][0] for n in names])[0]
    yield from SINGLE[op][1](rng, model)


def _draw(rng: random.Random, model: Model, table: dict[str, tuple[float, Motif]]) -> Iterator[Step]:
    names = list(table)
    return table[rng.choices(names, weights=[table[n][0] for n in names])[0]][1](rng, model)


MOTIFS: dict[str, tuple[float, Motif]] = {
    "shrunk_isr_then_act": (3, _shrunk_isr_then_act),
    "reassign_inflight_move": (1.5, _reassign_inflight_move),
    "reassign_target_back": (1.5, _reassign_target_back),
    "two_deletions": (1.5, _two_deletions),
    "deletion_dead_replica": (1.5, _deletion_dead_replica),
    "offline_creation": (1.2, _offline_creation),
    "unclean": (1.5, _unclean),
    "api_reassign_cancel": (1.5, _api_reassign_cancel),
    "probes": (3, _probes),
    "single": (14, _single_motif),
}


# --- extensions: drawn from the scenario's own second stream, appended after the motifs ---------


def _imbalance(rng: random.Random, model: Model) -> Iterator[Step]:
    """A broker ``b`` preferred for k + 1 partitions of a new topic (k of them led by it, one led by
    ``a`` after a reordering reassignment put ``b`` first), then a controller move: the check 5 s
    after the failover compares b's misled share 1/(k+1) with the percentage (a double in Kafka:
    ``imbalanceRatio > leaderImbalancePerBrokerPercentage.toDouble / 100``)."""
    up = [x for x in model.up() if not model.nodes[x].poisoned]  # a poisoned one refuses the controller
    if len(up) < 2 or model.state(model.controller) != "up":
        return
    b, a = rng.sample(up, 2)
    k = rng.randint(1, 4)
    others = [x for x in sorted(model.nodes) if x != b]
    name = model.fresh_topic()
    assignment = {str(p): [b, rng.choice(others)] for p in range(k)}
    assignment[str(k)] = [a, b]
    yield Step("create_topic_zk", {"topic": name, "assignment": assignment, "config": {}})
    # (a reassignment still pending from earlier steps holds every rebalance back, as in Kafka)
    yield Step("reassign", {"targets": {f"{name}-{k}": [b, a]}, "replace": model.reassign_znode})
    yield Step("move_controller", {"successor": rng.choice(model.up())})


def _dynamic_unclean(rng: random.Random, model: Model) -> Iterator[Step]:
    """The controller's own dynamic ``unclean.leader.election.enable`` against the cluster-wide
    default, set to opposite values, around a partition whose only ISR member dies while its other
    replica lives outside the ISR (paused): the broker's own layer decides (DynamicBrokerConfig
    overrides ``<default>``), either before the death or after it (the change itself then triggers
    Kafka's unclean election of offline partitions when the effective value becomes true)."""
    c = model.controller
    candidates = [x for x in model.up() if x != c and not model.nodes[x].poisoned]
    if len(candidates) < 2 or model.state(c) != "up":
        return
    leader, follower = rng.sample(candidates, 2)
    name = model.fresh_topic()
    yield Step("create_topic_zk", {"topic": name, "assignment": {"0": [leader, follower]}, "config": {}})
    own = rng.choice(("true", "false"))
    default = "false" if own == "true" else "true"
    layers = [(str(c), own), ("<default>", default)]
    if rng.random() < 0.5:
        layers.reverse()
    steps = [
        Step("broker_config", {"entity": e, "config": {"unclean.leader.election.enable": v}})
        for e, v in layers
    ]
    before = rng.random() < 0.5
    if before:
        yield from steps
    yield Step("pause", {"node": follower})
    yield Step("kill", {"node": leader, "successor": None})
    if not before:
        yield from steps
    yield Step("resume", {"node": follower})


def _failed_election(rng: random.Random, model: Model) -> Iterator[Step]:
    """ElectLeaders that fail beside ones that are not needed: a new topic whose partition 0 is led
    by its preferred replica ``p``, partition 1 by another replica with ``p`` second, and partition
    2 on ``p`` alone; ``p`` dies, then ElectLeaders (preferred or unclean) for all three — the
    preferred replica gone (partition 0), a live preferred leader (1), no live replica at all (2)
    — and, once ``p`` is back, a preferred election that moves partition 0 back to it."""
    c = model.controller
    candidates = [x for x in model.up() if x != c and not model.nodes[x].poisoned]
    if model.state(c) != "up" or not candidates:
        return
    p = rng.choice(candidates)
    second = rng.choice([x for x in model.up() if x != p])
    name = model.fresh_topic()
    assignment = {"0": [p, second], "1": [second, p], "2": [p]}
    yield Step("create_topic_zk", {"topic": name, "assignment": assignment, "config": {}})
    yield Step("kill", {"node": p, "successor": None})
    election = rng.choice(("preferred", "unclean"))
    yield Step(
        "elect_leaders", {"via": c, "partitions": [f"{name}-{i}" for i in range(3)], "election": election}
    )
    yield Step("restart", {"node": p})
    yield Step("elect_leaders", {"via": c, "partitions": [f"{name}-0"], "election": "preferred"})


def _reassigning_check(rng: random.Random, model: Model) -> Iterator[Step]:
    """A broker that leads none of the partitions it is preferred for (killed and back: its
    leaderships stayed with the others) and a reassignment kept pending by a paused target when
    the controller moves: Kafka's check after the failover moves nothing while any partition is
    being reassigned; the target resumes afterwards and the reassignment completes."""
    c = model.controller
    ok = [x for x in model.up() if x != c and not model.nodes[x].poisoned]
    if model.state(c) != "up" or len(ok) < 2 or model.reassign_znode:
        return
    b, x = rng.sample(ok, 2)
    rest = [y for y in model.up() if y not in (b, x)]
    name = model.fresh_topic()
    yield Step("create_topic_zk", {"topic": name, "assignment": {"0": [b, rng.choice(rest)]}, "config": {}})
    yield Step("kill", {"node": b, "successor": None})
    yield Step("restart", {"node": b})
    yield Step("pause", {"node": x})
    yield Step("reassign", {"targets": {f"{name}-0": [b, *rest[:1], x]}, "replace": False})
    yield Step("move_controller", {"successor": rng.choice([y for y in model.up() if y != x])})
    yield Step("resume", {"node": x})


def _defaults(rng: random.Random, model: Model) -> Iterator[Step]:
    """CreateTopics leaving the partition count and/or the replication factor to the broker (-1,
    KIP-464) in a cluster whose nodes set their own ``num.partitions`` / ``default.replication.factor``:
    the receiving broker's values apply (AdminManager.createTopics), placed automatically."""
    if model.paused() or model.controller_config("delete.topic.enable", "true") == "false":
        return
    for node in model.down():  # placement over every broker (as the single step draws it)
        yield Step("restart", {"node": node})
    counts = rng.choice(((-1, -1), (-1, rng.randint(1, 3)), (rng.randint(1, 4), -1)))
    yield Step(
        "create_topics_auto",
        {"topic": model.fresh_topic(), "via": rng.choice(model.up()), "partitions": counts[0],
         "replication_factor": min(counts[1], len(model.nodes))},
    )  # fmt: skip


def _listing(rng: random.Random, model: Model) -> Iterator[Step]:
    """ListPartitionReassignments naming more than what is being reassigned: a new three-partition
    topic, partition 1 reassigned through the admin API onto a paused broker (pending), then a list
    naming the pending partition, the two idle ones, a partition the topic does not have and a topic
    that does not exist (Kafka answers only the pending one), a null list through another running
    broker (NOT_CONTROLLER unless it is the controller), and once the target resumed and the
    reassignment completed, a list naming that partition and an idle one (nothing pending)."""
    c = model.controller
    spares = [x for x in model.up() if x != c and not model.nodes[x].poisoned]
    if model.state(c) != "up" or not spares:
        return
    spare = rng.choice(spares)
    others = [x for x in model.up() if x != spare]
    if len(others) < 2:
        return
    name = model.fresh_topic()
    assignment = {str(i): rng.sample(others, 2) for i in range(3)}
    yield Step("create_topic_zk", {"topic": name, "assignment": assignment, "config": {}})
    yield Step("pause", {"node": spare})
    pending = f"{name}-1"
    yield Step("reassign_api", {"via": c, "targets": {pending: [*assignment["1"], spare]}})
    named = [f"{name}-0", pending, f"{name}-2", f"{name}-7", "nosuch-0"]
    rng.shuffle(named)
    yield Step("list_reassignments", {"via": c, "partitions": named})
    yield Step("list_reassignments", {"via": rng.choice(others), "partitions": []})
    yield Step("resume", {"node": spare})
    yield Step("list_reassignments", {"via": c, "partitions": [pending, f"{name}-0"]})


def _take(model: Model, steps: list[Step], drawn: Iterable[Step]) -> None:
    """Append each step of ``drawn`` the model accepts (a drawer reads the model as it yields, so
    it sees the steps before it applied)."""
    for step in drawn:
        if _accept(model, step):
            steps.append(step)


def _accept(model: Model, step: Step) -> bool:
    validate_params(step.op, step.params, "generated step")
    kind = KINDS[step.op]
    if kind.check(model, step.params):
        return False
    kind.apply(model, step.params)
    return True


def generate(seed: int, index: int, *, min_steps: int = 5, max_steps: int = 9) -> Scenario:
    """Scenario ``index`` of campaign ``seed``: the same arguments always give the same scenario."""
    rng = random.Random(seed * 1_000_003 + index)
    n = rng.choice((3, 3, 3, 3, 4, 4, 5))
    nodes = {b: _node_config(rng) for b in range(1, n + 1)}
    if rng.random() < 0.1:  # a cluster without topic deletion: markers stay, DeleteTopics is refused
        for conf in nodes.values():
            conf["delete.topic.enable"] = "false"
    aux = random.Random(f"{seed}:{index}:extensions")  # the extensions' own stream (docstring)
    rebalance = aux.random() < 0.125
    if rebalance:
        percentage = aux.choice(("10", "25", "50"))
        for conf in nodes.values():
            conf["auto.leader.rebalance.enable"] = "true"
            conf["leader.imbalance.per.broker.percentage"] = percentage
    dynamic_unclean = aux.random() < 0.1
    defaults = random.Random(f"{seed}:{index}:defaults")  # since v10; its own stream again
    broker_defaults = defaults.random() < 0.125
    if broker_defaults:
        for conf in nodes.values():
            if defaults.random() < 0.6:
                conf["num.partitions"] = str(defaults.randint(1, 3))
                conf["default.replication.factor"] = str(defaults.randint(1, min(3, n)))
    first = rng.choice(sorted(nodes))
    shell = Scenario(nodes, first, ())
    model = Model.of(shell)
    steps: list[Step] = []
    goal = rng.randint(min_steps, max_steps)
    motifs = MOTIFS
    if nodes[first].get("delete.topic.enable") == "false":
        motifs = {**MOTIFS, "refused_deletions": (3, _refused_deletions)}
    for _ in range(goal * 4):
        if len(steps) >= goal:
            break
        _take(model, steps, _create_zk(rng, model) if not model.live_topics() else _draw(rng, model, motifs))
    for extension, on in ((_imbalance, rebalance), (_dynamic_unclean, dynamic_unclean)):
        if on:
            _take(model, steps, extension(aux, model))
    # v10's two, decided from the same stream after v9's have drawn theirs, then drawn
    failed_election = aux.random() < 0.125
    reassigning_check = rebalance and aux.random() < 0.5
    for extension, on in ((_failed_election, failed_election), (_reassigning_check, reassigning_check)):
        if on:
            _take(model, steps, extension(aux, model))
    if broker_defaults:
        _take(model, steps, _defaults(defaults, model))
    listing = random.Random(f"{seed}:{index}:listing")  # since v11; a fourth stream
    if listing.random() < 1 / 6:
        _take(model, steps, _listing(listing, model))
    tail = random.Random(f"{seed}:{index}:edges")  # since v12; a fifth stream (conformance.diff.edges)
    if tail.random() < 1 / 6:
        _take(model, steps, backlog(tail, model))
    if tail.random() < 1 / 5:
        _take(model, steps, edges(tail, model))
    growing = random.Random(f"{seed}:{index}:grow")  # since v13; a sixth stream
    if growing.random() < 1 / 5:
        _take(model, steps, grow(growing, model))
    overlapping = random.Random(f"{seed}:{index}:overlap")  # since v14; a seventh stream
    if overlapping.random() < 1 / 5:
        _take(model, steps, overlap(overlapping, model))
    registering = random.Random(f"{seed}:{index}:registration")  # since v15; an eighth stream
    _take(model, steps, registration(registering, model, steps))
    halting = random.Random(f"{seed}:{index}:halt")  # since v15; a ninth stream
    if halting.random() < 1 / 6:
        _take(model, steps, halted_retry(halting, model))
    removal = random.Random(f"{seed}:{index}:removal")  # since v16; a tenth stream
    if removal.random() < 1 / 10:
        _take(model, steps, removed_registration(removal, model))
    origin: dict[str, Any] = {"seed": seed, "index": index, "generator": GENERATOR_VERSION}
    return Scenario(nodes, first, tuple(steps), origin)
