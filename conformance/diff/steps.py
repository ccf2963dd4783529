"""The step vocabulary: every input a controller reacts to, as data (conformance ring, pure).

One :class:`StepKind` per operation: its parameters and their types, the precondition it needs on
the cluster model (checked when a scenario loads), how it changes the model, and the behaviour IDs
it exercises. The executors live in :mod:`conformance.diff.actions` (one function per operation,
same name) and the generator's weights in :mod:`conformance.diff.generator`; adding an input —
an admin API such as ElectLeaders or AlterPartitionReassignments — is one entry here, one executor
and one weight.

Parameter types: ``node`` (a broker id of the scenario), ``node?`` (or null), ``nodes``,
``topic``/``topics`` (names; ``names``: a list that may be empty), ``assignment``
(``{"<partition>": [broker ids]}``), ``targets`` (``{"<topic>-<partition>": [broker ids]}``;
``targets?`` and ``assignment?`` may be empty), ``partitions`` (``["<topic>-<partition>"]``),
``config`` (``{key: value}`` strings), ``int``, ``bool`` and ``a|b|c`` (one of the words).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from conformance.diff.adminsteps import ADMIN_KINDS
from conformance.diff.model import Model
from conformance.diff.placement import rack_unaware
from conformance.diff.scenario import ScenarioError
from conformance.diff.stepkind import _TP, StepKind, split_tp

__all__ = ["KINDS", "StepKind", "create_partitions_outcome", "split_tp", "validate_params"]

Params = Mapping[str, Any]
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,60}$")


# --- parameter validation -----------------------------------------------------------------------


def _ids(raw: Any) -> bool:
    return isinstance(raw, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in raw)


def _type_problem(kind: str, raw: Any) -> str | None:
    if "|" in kind:
        return None if raw in kind.split("|") else f"must be one of {kind.split('|')}"
    if kind == "node":
        return None if isinstance(raw, int) and not isinstance(raw, bool) else "must be a broker id"
    if kind == "node?":
        return None if raw is None else _type_problem("node", raw)
    if kind == "nodes":
        return None if _ids(raw) and raw else "must be a non-empty list of broker ids"
    if kind == "topic":
        return None if isinstance(raw, str) and _TOPIC.match(raw) else "must be a topic name"
    if kind == "entity":
        ok = raw == "<default>" or (isinstance(raw, str) and raw.isdigit())
        return None if ok else 'must be "<default>" or a broker id (a string)'
    if kind == "topics":
        ok = isinstance(raw, list) and bool(raw) and all(isinstance(t, str) and _TOPIC.match(t) for t in raw)
        return None if ok else "must be a non-empty list of topic names"
    if kind == "names":
        ok = isinstance(raw, list) and all(isinstance(t, str) and _TOPIC.match(t) for t in raw)
        return None if ok else "must be a list of topic names (it may be empty)"
    if kind == "assignment":
        ok = isinstance(raw, dict) and bool(raw) and all(str(p).isdigit() and _ids(r) for p, r in raw.items())
        return None if ok else 'must be {"<partition>": [broker ids]}'
    if kind == "targets":
        ok = (
            isinstance(raw, dict)
            and bool(raw)
            and all(_TP.match(str(tp)) and _ids(r) for tp, r in raw.items())
        )
        return None if ok else 'must be {"<topic>-<partition>": [broker ids]}'
    if kind == "targets?":
        ok = isinstance(raw, dict) and all(_TP.match(str(tp)) and _ids(r) for tp, r in raw.items())
        return None if ok else 'must be {"<topic>-<partition>": [broker ids]} (it may be empty)'
    if kind == "assignment?":
        ok = isinstance(raw, dict) and all(str(p).isdigit() and _ids(r) for p, r in raw.items())
        return None if ok else 'must be {"<partition>": [broker ids]} (it may be empty)'
    if kind == "partitions":
        ok = isinstance(raw, list) and all(isinstance(tp, str) and _TP.match(tp) for tp in raw)
        return None if ok else 'must be ["<topic>-<partition>", ...]'
    if kind == "config":
        ok = isinstance(raw, dict) and all(isinstance(v, str) for v in raw.values())
        return None if ok else "must be a table of strings"
    if kind == "int":
        return None if isinstance(raw, int) and not isinstance(raw, bool) else "must be an integer"
    if kind == "bool":
        return None if isinstance(raw, bool) else "must be true or false"
    raise AssertionError(f"unknown parameter type {kind}")


def validate_params(op: str, params: Params, where: str) -> None:
    kind = KINDS.get(op)
    if kind is None:
        raise ScenarioError(f"{where}: unknown operation {op!r}; known: {', '.join(sorted(KINDS))}")
    missing = sorted(set(kind.params) - set(params))
    extra = sorted(set(params) - set(kind.params))
    if missing or extra:
        raise ScenarioError(f"{where}: {op} takes {sorted(kind.params)}; missing {missing}, unknown {extra}")
    for name, typ in kind.params.items():
        problem = _type_problem(typ, params[name])
        if problem:
            raise ScenarioError(f"{where}: {op}.{name} {problem}, got {params[name]!r}")


def assignment_of(raw: Mapping[str, list[int]]) -> dict[int, tuple[int, ...]]:
    return {int(p): tuple(r) for p, r in sorted(raw.items(), key=lambda kv: int(kv[0]))}


# --- preconditions -------------------------------------------------------------------------------


def _known(model: Model, *ids: int | None) -> str | None:
    bad = [b for b in ids if b is not None and b not in model.nodes]
    return f"node(s) {bad} are not in the cluster" if bad else None


def _needs(model: Model, node: int, state: str) -> str | None:
    return _known(model, node) or (
        None if model.state(node) == state else f"node {node} is {model.state(node)}, not {state}"
    )


def _successor(model: Model, node: int | None, successor: int | None) -> str | None:
    """The controller may only go away towards a named, running successor (the choreographed winner)."""
    if node is not None and node != model.controller:
        return None if successor is None else f"successor given but node {node} is not the controller"
    if successor is None:
        return f"node {node} is the controller: a successor is required"
    problem = _known(model, successor)
    if problem:
        return problem
    if model.state(successor) != "up" or successor == node:
        return f"successor {successor} must be another running node"
    return None


def _all(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


def _nothing(_m: Model, _p: Params) -> None:
    return None


def _ok(_m: Model, _p: Params) -> str | None:
    return None


def _running(model: Model, params: Params) -> str | None:
    return _needs(model, params["node"], "up")


def _via(model: Model, params: Params) -> str | None:
    return _needs(model, params["via"], "up")


def _replicas_known(model: Model, replicas: list[list[int]]) -> str | None:
    # ids outside the cluster are allowed on purpose (an unregistered broker), but not absurd ones
    bad = sorted({b for r in replicas for b in r if not 0 <= b <= 999})
    return f"replica ids {bad} out of range" if bad else None


# --- model updates -------------------------------------------------------------------------------


def _create_zk(model: Model, p: Params) -> None:
    model.add_topic(p["topic"], assignment_of(p["assignment"]), dict(p["config"]))


def _create_api(model: Model, p: Params) -> None:
    sizes = {len(r) for r in p["assignment"].values()}
    valid = len(sizes) == 1 and all(len(set(r)) == len(r) for r in p["assignment"].values())
    if valid:
        model.add_topic(p["topic"], assignment_of(p["assignment"]), dict(p["config"]))
    else:
        model.names_used.add(p["topic"])


def _add_partitions(model: Model, p: Params) -> None:
    topic = model.topics.get(p["topic"])
    if topic is not None and p["topic"] not in model.deleted:
        topic.assignment = assignment_of(p["assignment"])


def create_partitions_outcome(model: Model, p: Params) -> dict[int, tuple[int, ...]] | None:
    """The partitions a CreatePartitions adds as Kafka 2.5.1 answers it (AdminManager.createPartitions,
    AdminZkClient.addPartitions), or None when it is refused: sent to a broker that is not the
    controller, a topic that does not exist or is queued for deletion, a reassignment possibly in
    progress (a znode reassignment of the topic that may not have completed, or a pending one
    through the admin API), a count not above the current one, or an explicit assignment naming an
    unregistered broker, the wrong number of partitions, a broker twice or another replication
    factor. The automatic placement starts at the first broker whose id is at least partition 0's
    first replica."""
    t = model.topics.get(p["topic"])
    if p["via"] != model.controller or t is None or t.name in model.deleted or 0 not in t.assignment:
        return None
    if t.name in model.reassigning or any(tp in model.api_original for tp in t.partitions()):
        return None
    old, count, rf = len(t.assignment), p["count"], len(t.assignment[0])
    registered = sorted(b for b in model.nodes if model.state(b) != "down")
    if count <= old or max(t.assignment) != old - 1:
        return None
    if p["assignment"]:
        new = {
            old + i: tuple(r)
            for i, (_, r) in enumerate(sorted(p["assignment"].items(), key=lambda kv: int(kv[0])))
        }
        ok = len(new) == count - old and all(
            len(r) == rf and len(set(r)) == rf and set(r) <= set(registered) for r in new.values()
        )
        return new if ok else None
    if rf > len(registered) or not registered:
        return None
    start = next((i for i, b in enumerate(registered) if b >= t.assignment[0][0]), 0)
    return rack_unaware(registered, count - old, rf, start=start, shift=start, first_id=old)


def _create_partitions(model: Model, p: Params) -> None:
    new = create_partitions_outcome(model, p)
    if new is not None:
        model.topics[p["topic"]].assignment.update(new)


def _delete(model: Model, p: Params) -> None:
    if model.controller_config("delete.topic.enable", "true") == "false":
        return
    for name in p["topics"]:
        if name in model.topics:
            model.deleted.add(name)


def _delete_one(model: Model, p: Params) -> None:
    _delete(model, {"topics": [p["topic"]]})


def _reassign(model: Model, p: Params) -> None:
    pending = False
    for tp, replicas in p["targets"].items():
        topic, partition = split_tp(tp)
        t = model.topics.get(topic)
        if t is None or topic in model.deleted or partition not in t.assignment:
            continue
        t.assignment[partition] = tuple(replicas)
        late = any(b not in model.nodes or model.state(b) != "up" for b in replicas)
        if late:
            model.reassigning.add(topic)
        pending |= late
    model.reassign_znode = pending or (model.reassign_znode and not p["replace"])


def _config(model: Model, p: Params) -> None:
    t = model.topics.get(p["topic"])
    if t is not None:
        t.config = dict(p["config"])


def _gone(model: Model, p: Params) -> None:
    model.set_state(p["node"], "down")
    if p["node"] == model.controller:
        model.controller = p["successor"]


def _moved(model: Model, p: Params) -> None:
    if p.get("node") == model.controller or "node" not in p:
        model.controller = p["successor"]


def _backlog(model: Model, p: Params) -> None:
    _delete(model, {"topics": p["deletions"]})
    if p["reassign"]:
        _reassign(model, {"targets": p["reassign"], "replace": False})
    model.controller = p["successor"]


def _check_backlog(model: Model, p: Params) -> str | None:
    """A successor that is not the controller: the controller itself would also get the watch
    events of the backlog's writes, queued behind its re-election (the failover has read them by
    then, but whether a reassignment it resumed is still running when the queued event is handled
    would be a matter of timing)."""
    if p["successor"] == model.controller:
        return "the successor must be another node than the controller"
    if p["reassign"] and model.reassign_znode:
        return "/admin/reassign_partitions exists (a reassignment is pending): no second one"
    if model.state(model.controller) != "up":
        return "the controller must be running"
    return _all(_needs(model, p["successor"], "up"), _replicas_known(model, list(p["reassign"].values())))


def _probe(model: Model, p: Params) -> None:
    if p["heal"]:
        model.nodes[p["node"]].poisoned = False
    elif p["controller_epoch"] == "newer":
        model.nodes[p["node"]].poisoned = True


def _check_probe(model: Model, p: Params) -> str | None:
    problem = _running(model, p)
    if problem or p["partition"] == "phantom":
        return problem
    if p["node"] == model.controller and p["heal"]:
        return "a probe that heals restarts its node: not the controller"
    topic, _ = split_tp(p["partition"])
    if topic not in model.topics:
        return f"probe of unknown topic {topic}"
    # a real partition only takes requests that change nothing on a correct broker: its follower
    # would otherwise stop fetching, which makes the ISR's next change a matter of timing
    if p["api"] == "LeaderAndIsr" and p["leader_epoch"] == "newer":
        return "a newer leader epoch goes to the phantom partition, not to a real one"
    if p["api"] == "StopReplica" and "stale" not in (p["controller_epoch"], p["broker_epoch"]):
        return "StopReplica for a real partition needs a stale controller or broker epoch"
    return None


def _check_shutdown_request(model: Model, p: Params) -> str | None:
    """The named broker runs (its controlled shutdown is acted on and everything sent to it is seen)
    or is down (BROKER_NOT_AVAILABLE); a paused one would answer whenever it resumes."""
    node = p["node"]
    if node not in model.nodes:
        return f"node {node} is not in the cluster"
    if model.state(node) == "paused":
        return f"node {node} is paused: its controlled shutdown's requests would wait for its resume"
    return _via(model, p)


def _check_rewrite(model: Model, p: Params) -> str | None:
    """A registered broker (one that is paused holds its registration, but the controller's update
    would wait for it), and a change: an extra listener, a rack, or both."""
    if not p["listener"] and p["rack"] == "none":
        return "a rewrite changes something: an extra listener, a rack, or both"
    return _running(model, p) or _registered(model, p)


def _registered(model: Model, p: Params) -> str | None:
    if model.nodes[p["node"]].unregistered:
        return f"node {p['node']}'s registration was deleted: it registers again only when it starts"
    return None


def _check_removal(model: Model, p: Params) -> str | None:
    """A running, registered broker that is not the controller (whose own registration going
    away would be another input: a controller that counts itself dead)."""
    if p["node"] == model.controller:
        return f"node {p['node']} is the controller"
    return _running(model, p) or _registered(model, p)


def _unregister(model: Model, p: Params) -> None:
    model.nodes[p["node"]].unregistered = True


def _check_auto(model: Model, p: Params) -> str | None:
    if model.down() or model.paused():
        return "automatic placement needs every node running (its topic is deleted again at once)"
    if model.controller_config("delete.topic.enable", "true") == "false":
        return "automatic placement needs delete.topic.enable on the controller (the topic is deleted again)"
    return _via(model, p)


def _check_bounce(model: Model, p: Params) -> str | None:
    return _all(
        _running(model, p),
        "the controller cannot bounce within its session" if p["node"] == model.controller else None,
        None if model.state(model.controller) == "up" else "the controller must be running",
    )


_NODE_FAULT = {"node": "node", "successor": "node?"}
_EPOCH = "stale|equal|newer"

KINDS: dict[str, StepKind] = {
    k.op: k
    for k in (
        StepKind(
            "create_topic_zk",
            "admin topic creation: /config/topics/<t> then /brokers/topics/<t> (AdminZkClient)",
            {"topic": "topic", "assignment": "assignment", "config": "config"},
            ("TOPIC-2", "TOPIC-3", "PSM-2", "PSM-3", "TOPIC-6"),
            lambda m, p: _replicas_known(m, list(p["assignment"].values())),
            _create_zk,
        ),
        StepKind(
            "create_topics_api",
            "CreateTopics v4 with an explicit assignment, sent to broker `via` (answer recorded)",
            {"topic": "topic", "via": "node", "assignment": "assignment", "config": "config"},
            ("TOPIC-1", "TOPIC-4", "PSM-2"),
            lambda m, p: _via(m, p) or _replicas_known(m, list(p["assignment"].values())),
            _create_api,
        ),
        StepKind(
            "create_topics_auto",
            "CreateTopics with automatic placement, checked against Kafka's rack-unaware rule, then"
            " deleted in the same step (the placement's random start is Kafka's to choose)",
            {"topic": "topic", "via": "node", "partitions": "int", "replication_factor": "int"},
            ("TOPIC-1", "TOPIC-4", "TOPIC-6", "TOPIC-8", "DELETE-1", "DELETE-2"),
            _check_auto,
            lambda m, p: m.names_used.add(p["topic"]),
        ),
        StepKind(
            "add_partitions",
            "admin partition addition: /brokers/topics/<t> rewritten with the full new assignment",
            {"topic": "topic", "assignment": "assignment"},
            ("TOPIC-5",),
            lambda m, p: _replicas_known(m, list(p["assignment"].values())),
            _add_partitions,
        ),
        StepKind(
            "create_partitions_api",
            "CreatePartitions v2 growing `topic` to `count` partitions, to broker `via`: `assignment`"
            " names the new partitions' replicas (empty: Kafka's automatic placement); answer recorded",
            {"via": "node", "topic": "topic", "count": "int", "assignment": "assignment?"},
            ("TOPIC-5", "TOPIC-6"),
            lambda m, p: _via(m, p) or _replicas_known(m, list(p["assignment"].values())),
            _create_partitions,
        ),
        StepKind(
            "delete_topics",
            "deletion markers /admin/delete_topics/<t> for every topic, created in one multi (one batch)",
            {"topics": "topics"},
            ("DELETE-1", "DELETE-2", "DELETE-3", "DELETE-4", "LISTEN-5"),
            _ok,
            _delete,
        ),
        StepKind(
            "delete_topics_api",
            "DeleteTopics v4 for one topic, sent to broker `via` (answer recorded)",
            {"topic": "topic", "via": "node"},
            ("DELETE-1", "DELETE-2"),
            _via,
            _delete_one,
        ),
        StepKind(
            "reassign",
            "/admin/reassign_partitions created with `targets` (replace: the existing znode is deleted"
            " by hand first, which Kafka's creation-only watch does not see)",
            {"targets": "targets", "replace": "bool"},
            (*(f"REASSIGN-{i}" for i in range(1, 16)), "LISTEN-3"),
            lambda m, p: _replicas_known(m, list(p["targets"].values())),
            _reassign,
        ),
        StepKind(
            "preferred_election",
            "/admin/preferred_replica_election created for `partitions`",
            {"partitions": "partitions"},
            ("PREFERRED-1", "PREFERRED-2", "ELECT-3", "LISTEN-3"),
            _ok,
            _nothing,
        ),
        StepKind(
            "topic_config",
            "/config/topics/<t> set, then a /config/changes/config_change_<seq> notification",
            {"topic": "topic", "config": "config"},
            ("ELECT-5", "ELECT-6"),
            _ok,
            _config,
        ),
        StepKind(
            "broker_config",
            "/config/brokers/<entity> set (<default> or a broker id), then a config_change notification",
            {"entity": "entity", "config": "config"},
            ("ELECT-5",),
            _ok,
            _nothing,
        ),
        StepKind(
            "controlled_shutdown",
            "SIGTERM: the node's controlled shutdown, then its exit",
            _NODE_FAULT,
            ("SHUTDOWN-1", "SHUTDOWN-2", "SHUTDOWN-3", "ELECT-4", "EPOCH-3"),
            lambda m, p: _running(m, p) or _successor(m, p["node"], p["successor"]),
            _gone,
        ),
        StepKind(
            "shutdown_request",
            "ControlledShutdown v3 for `node` sent to `via` by the harness while the node keeps"
            " running (broker epoch stale, equal, newer or none; answer and remaining partitions"
            " recorded)",
            {"node": "node", "via": "node", "broker_epoch": "stale|equal|newer|none"},
            ("SHUTDOWN-1", "ELECT-4", "ISR-2"),
            _check_shutdown_request,
            _nothing,
        ),
        StepKind(
            "rewrite_registration",
            "/brokers/ids/<node> of a running broker rewritten by hand: an extra listener (`listener`)"
            " and/or a rack (`rack`; none: as it was); Kafka's controller acts only on changed"
            " endpoints (its cache, UpdateMetadata to every broker), a rack alone waits for a new"
            " controller",
            {"node": "node", "listener": "bool", "rack": "none|r1|r2"},
            ("BROKER-6", "REQ-2"),
            _check_rewrite,
            _nothing,
        ),
        StepKind(
            "remove_registration",
            "/brokers/ids/<node> of a running broker (not the controller) deleted by hand: the"
            " controller handles it as a failed broker while the process goes on running; it"
            " registers again only when it next starts (a ControlledShutdown meanwhile is refused)",
            {"node": "node"},
            ("BROKER-3", "BROKER-4", "SHUTDOWN-1", "SHUTDOWN-2"),
            _check_removal,
            _unregister,
        ),
        StepKind(
            "kill",
            "SIGKILL, then the node's ZooKeeper session closed at once (as its expiry would)",
            _NODE_FAULT,
            ("BROKER-3", "BROKER-4", "EPOCH-3", "FAILOVER-1", "FAILOVER-2", "FAILOVER-3", "ELECT-1"),
            lambda m, p: _running(m, p) or _successor(m, p["node"], p["successor"]),
            _gone,
        ),
        StepKind(
            "restart",
            "start a node that is down and wait for its registration",
            {"node": "node"},
            ("BROKER-2", "REASSIGN-14", "DELETE-3", "PSM-3"),
            lambda m, p: _needs(m, p["node"], "down"),
            lambda m, p: m.set_state(p["node"], "up"),
        ),
        StepKind(
            "pause",
            "SIGSTOP the node (its session stays; it stops fetching, so leaders shrink their ISRs)",
            {"node": "node"},
            ("ISR-1", "ISR-2"),
            _running,
            lambda m, p: m.set_state(p["node"], "paused"),
        ),
        StepKind(
            "resume",
            "SIGCONT a paused node",
            {"node": "node"},
            ("ISR-1", "ISR-2"),
            lambda m, p: _needs(m, p["node"], "paused"),
            lambda m, p: m.set_state(p["node"], "up"),
        ),
        StepKind(
            "expire_session",
            "the node's ZooKeeper session expires while it is paused; it then resumes and re-registers",
            _NODE_FAULT,
            ("EPOCH-6", "BROKER-2", "BROKER-3", "EPOCH-3"),
            lambda m, p: _running(m, p) or _successor(m, p["node"], p["successor"]),
            _moved,
        ),
        StepKind(
            "move_controller",
            "/controller deleted by hand; `successor` is the one node that sees it first",
            {"successor": "node"},
            ("EPOCH-3", "EPOCH-5", "FAILOVER-1", "FAILOVER-2", "FAILOVER-3", "REASSIGN-15"),
            lambda m, p: _needs(m, p["successor"], "up"),
            _moved,
        ),
        StepKind(
            "move_controller_backlog",
            "every running node's ZooKeeper link held, /controller deleted, then admin work written"
            " that no controller reads — /admin/preferred_replica_election for `preferred`, deletion"
            " markers for `deletions` (one multi), /admin/reassign_partitions for `reassign` (each"
            " only when not empty) — then `successor` alone sees ZooKeeper: its failover finds them",
            {"successor": "node", "preferred": "partitions", "deletions": "names", "reassign": "targets?"},
            (
                *("FAILOVER-1", "FAILOVER-3", "EPOCH-3", "PREFERRED-1", "PREFERRED-2"),
                *("DELETE-1", "DELETE-2", "DELETE-4", "REASSIGN-1", "REASSIGN-15"),
            ),
            _check_backlog,
            _backlog,
        ),
        StepKind(
            "bounce",
            "the node is killed and restarted while the controller does not look (one BrokerChange)",
            {"node": "node"},
            ("BROKER-5",),
            _check_bounce,
            _nothing,
        ),
        StepKind(
            "probe",
            "a crafted controller request straight to the node's controller listener, with stale,"
            " equal or newer epochs (answer recorded; heal: the node is restarted afterwards)",
            {
                "node": "node",
                "api": "LeaderAndIsr|UpdateMetadata|StopReplica",
                "partition": "topic",
                "controller_epoch": _EPOCH,
                "leader_epoch": _EPOCH,
                "broker_epoch": "stale|equal|newer|none",
                "heal": "bool",
            },
            ("FENCE-2", "FENCE-3"),
            _check_probe,
            _probe,
        ),
    )
} | ADMIN_KINDS
