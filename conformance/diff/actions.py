"""Executors of the step vocabulary: one function per operation (conformance ring, drivers).

Each executor acts on a :class:`~conformance.diff.live.DiffCluster` from outside only — signals to
node processes, ZooKeeper writes as Kafka's admin tools make them, Kafka requests on a node's
listeners — and returns what it observed of its own action (write results, answers) for the
step's segment. Where the controller goes away, :func:`handover` names the winner of the
election Kafka leaves open: every other running node's ZooKeeper link is held until the
successor holds ``/controller``. Waiting for the cluster's reaction is the barrier's job
(:mod:`conformance.diff.barrier`), except inside the few steps made of two phases.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.exceptions import KazooException
from kazoo.protocol.serialization import Create
from kazoo.security import OPEN_ACL_UNSAFE

from cluster.admin import encode, topic_znode
from conformance.diff import api, brokerprobe
from conformance.diff.adminapi import ADMIN_EXECUTORS
from conformance.diff.barrier import isr_settled
from conformance.diff.live import DiffCluster, TargetStartError
from conformance.diff.steps import assignment_of, split_tp

__all__ = ["EXECUTORS", "Outcome", "handover"]

Outcome = dict[str, Any]
Params = Mapping[str, Any]
Quiesce = Callable[[], Any]


def _write(fn: Callable[[], Any], dc: DiffCluster | None = None, trigger: str = "") -> str:
    """``ok`` or the ZooKeeper error's name (a harness write that fails is part of the trace). A
    successful write with a ``trigger`` path makes the barrier wait until the controller has read it
    (or its parent) since: the controller reacts to that write in Kafka, whenever it gets to it."""
    when = time.monotonic()
    try:
        fn()
    except KazooException as exc:
        return type(exc).__name__
    if dc is not None and trigger:
        dc.triggers.append((trigger, when))
    return "ok"


def handover(
    dc: DiffCluster, successor: int, act: Callable[[], Outcome], leaving: int | None, *, unseen: bool = False
) -> Outcome:
    """Run ``act`` while only ``successor`` sees ZooKeeper, until it holds a new ``/controller``
    (``unseen``: the successor too sees nothing of what ``act`` does until it is over)."""
    before = dc.controller_stat()
    held = dc.hold(b for b in dc.up() if b != leaving and (unseen or b != successor))
    try:
        out = act()
        if unseen:
            dc.release([successor])
        out["elected"] = dc.wait_controller(successor, before[1] if before else None)
    finally:
        dc.release(held)
    dc.expected_controller = successor
    return out


def _kill(dc: DiffCluster, b: int) -> Outcome:
    dc.cluster.kill(b)
    dc.state[b] = "down"
    return {"session_closed": dc.close_session_of(b)}


def _stop(dc: DiffCluster, b: int) -> Outcome:
    try:
        dc.cluster.stop(b)
        exited = True
    except Exception:  # did not exit in time: never leave it running
        dc.cluster.kill(b)
        exited = False
    dc.state[b] = "down"
    if not exited:
        dc.close_session_of(b)  # a clean exit closed it already; a killed node's must not linger
    return {"exited_by_itself": exited}


def _leave(dc: DiffCluster, p: Params, act: Callable[[DiffCluster, int], Outcome]) -> Outcome:
    b = p["node"]
    if b == dc.expected_controller and p["successor"] is not None:
        return handover(dc, p["successor"], lambda: act(dc, b), b)
    return act(dc, b)


def kill(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    return _leave(dc, p, _kill)


def controlled_shutdown(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    return _leave(dc, p, _stop)


def restart(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    b = p["node"]
    dc.cluster.start([b], wait=False)
    dc.state[b] = "up"
    dc.wait_registered([b])
    return {}


def pause(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    dc.cluster.pause(p["node"])
    dc.state[p["node"]] = "paused"
    return {}


def resume(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    dc.cluster.resume(p["node"])
    dc.state[p["node"]] = "up"
    return {}


def expire_session(dc: DiffCluster, p: Params, quiesce: Quiesce) -> Outcome:
    """Paused, its session closed; once the cluster has reacted, resumed (it re-registers).

    While its session is closed the node is ``expired``: the barrier expects it unregistered (its
    ephemeral znodes went with the session), as it expects a down node, and not running."""
    b = p["node"]
    dc.cluster.pause(b)
    dc.state[b] = "paused"

    def expire() -> Outcome:
        closed = dc.close_session_of(b)
        if closed:
            dc.state[b] = "expired"
        return {"session_closed": closed}

    out = _leave(dc, p, lambda _dc, _b: expire())
    out["while_expired"] = quiesce()
    dc.cluster.resume(b)
    dc.state[b] = "up"
    return out


def move_controller(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    return handover(
        dc, p["successor"], lambda: {"delete": _write(lambda: dc.cluster.zk.delete("/controller"))}, None
    )


def move_controller_backlog(dc: DiffCluster, p: Params, q: Quiesce) -> Outcome:
    """Admin work that waits for the next controller: with every running node's link held (none
    sees a watch event), /controller is deleted and the backlog written; then only the successor is
    let through, so its failover reads every znode of the backlog (KafkaController.onControllerFailover:
    pending preferred elections, deletions, reassignments) instead of a watch handing them over one
    by one. The others see everything once the successor holds /controller."""

    def write() -> Outcome:
        out: Outcome = {"delete": _write(lambda: dc.cluster.zk.delete("/controller"))}
        if p["preferred"]:
            out["preferred"] = preferred_election(dc, {"partitions": p["preferred"]}, q)["created"]
        if p["deletions"]:
            out["deletions"] = delete_topics(dc, {"topics": p["deletions"]}, q)["markers"]
        if p["reassign"]:
            out["reassign"] = reassign(dc, {"targets": p["reassign"], "replace": False}, q)["created"]
        return out

    return handover(dc, p["successor"], write, None, unseen=True)


def bounce(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    """Killed and restarted while the controller's link is held: it sees one BrokerChange. Before
    the restart the leaders have dropped the node from their ISRs (it stopped fetching), so their
    ISR changes come before its new registration whatever the timing."""
    b, held = p["node"], dc.hold([dc.expected_controller])
    try:
        out = _kill(dc, b)
        out["isr_settled"] = isr_settled(dc)
        dc.cluster.start([b], wait=False)
        dc.state[b] = "up"
        dc.wait_registered([b])
    finally:
        dc.release(held)
    return out


# --- admin writes --------------------------------------------------------------------------------


def create_topic_zk(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    zk, t = dc.cluster.zk, p["topic"]
    conf = _write(
        lambda: zk.create(f"/config/topics/{t}", encode({"version": 1, "config": p["config"]}), makepath=True)
    )
    topic = _write(
        lambda: zk.create(f"/brokers/topics/{t}", topic_znode(assignment_of(p["assignment"])), makepath=True),
        dc,
        f"/brokers/topics/{t}",
    )
    return {"config": conf, "topic": topic}


def add_partitions(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    zk, path = dc.cluster.zk, f"/brokers/topics/{p['topic']}"
    try:
        data, stat = zk.get(path)
        current = json.loads(data)
    except (KazooException, ValueError, TypeError):
        return {"topic": "absent"}
    partitions = dict(current.get("partitions", {}))
    partitions.update({k: v for k, v in p["assignment"].items() if k not in partitions})
    new = {**current, "partitions": dict(sorted(partitions.items(), key=lambda kv: int(kv[0])))}
    return {"topic": _write(lambda: zk.set(path, encode(new), version=stat.version), dc, path)}


def _null_markers(dc: DiffCluster, topics: list[str]) -> str:
    """Every marker in one multi, with null data as Kafka writes it (kazoo's API refuses None)."""
    zk = dc.cluster.zk
    txn = zk.transaction()
    for t in topics:
        txn._add(Create(f"{zk.chroot}/admin/delete_topics/{t}", None, OPEN_ACL_UNSAFE, 0), None)
    results = txn.commit()
    bad = [type(r).__name__ for r in results if isinstance(r, Exception)]
    return "ok" if not bad else ",".join(bad)


def delete_topics(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    zk, parent = dc.cluster.zk, "/admin/delete_topics"
    if len(p["topics"]) == 1:
        marker = f"{parent}/{p['topics'][0]}"
        return {"markers": _write(lambda: zk.create(marker, None, makepath=True), dc, parent)}
    zk.ensure_path(parent)
    when = time.monotonic()
    made = _null_markers(dc, list(p["topics"]))
    if made == "ok":
        dc.triggers.append((parent, when))
    return {"markers": made}


def reassign(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    zk, path = dc.cluster.zk, "/admin/reassign_partitions"
    out: Outcome = {}
    if p["replace"]:
        out["deleted"] = _write(lambda: zk.delete(path))
    body = [
        {"topic": split_tp(tp)[0], "partition": split_tp(tp)[1], "replicas": r}
        for tp, r in p["targets"].items()
    ]
    out["created"] = _write(
        lambda: zk.create(path, encode({"version": 1, "partitions": body}), makepath=True)
    )
    return out


def preferred_election(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    body = [{"topic": split_tp(tp)[0], "partition": split_tp(tp)[1]} for tp in p["partitions"]]
    data = encode({"version": 1, "partitions": body})
    return {
        "created": _write(
            lambda: dc.cluster.zk.create("/admin/preferred_replica_election", data, makepath=True)
        )
    }


#: the listener a rewritten registration adds (PLAINTEXT, at the node's CLIENT address): nobody
#: connects to it; it only changes the endpoints the controller caches and sends
EXTRA_LISTENER = "EXTRA"


def rewrite_registration(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    """``/brokers/ids/<node>`` set again with the same data plus an extra listener and/or a rack
    (the JSON fields of BrokerIdZNode v4); the broker's own session keeps the znode (its czxid, the
    broker epoch, does not change)."""
    zk, path = dc.cluster.zk, f"/brokers/ids/{p['node']}"
    try:
        data, stat = zk.get(path)
        current = json.loads(data)
        endpoints = list(current["endpoints"])
        protocols = dict(current["listener_security_protocol_map"])
    except (KazooException, ValueError, TypeError, KeyError):
        return {"registration": "absent"}
    new = dict(current)
    if p["listener"]:
        client = next((e for e in endpoints if str(e).startswith("CLIENT://")), endpoints[0])
        new["endpoints"] = [*endpoints, f"{EXTRA_LISTENER}://{str(client).split('://', 1)[1]}"]
        new["listener_security_protocol_map"] = {**protocols, EXTRA_LISTENER: "PLAINTEXT"}
    if p["rack"] != "none":
        new["rack"] = p["rack"]
    return {"registration": _write(lambda: zk.set(path, encode(new), version=stat.version), dc, path)}


def remove_registration(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    """``/brokers/ids/<node>`` deleted by the harness's own session while the node runs (anyone may
    delete another session's ephemeral znode): the controller's BrokerChange finds it gone."""
    path = f"/brokers/ids/{p['node']}"
    out = {"registration": _write(lambda: dc.cluster.zk.delete(path), dc, path)}
    dc.unregistered.add(p["node"])
    return out


def _config_change(dc: DiffCluster, entity_type: str, name: str, config: Mapping[str, str]) -> Outcome:
    """AdminZkClient.changeEntityConfig: set (or create) the entity's config, then notify."""
    zk, path = dc.cluster.zk, f"/config/{entity_type}/{name}"
    data = encode({"version": 1, "config": dict(config)})
    if zk.exists(path):
        written = _write(lambda: zk.set(path, data))
    else:
        written = _write(lambda: zk.create(path, data, makepath=True))
    note = encode({"version": 2, "entity_path": f"{entity_type}/{name}"})
    notified = _write(lambda: zk.create("/config/changes/config_change_", note, sequence=True, makepath=True))
    return {"config": written, "notification": notified}


def topic_config(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    return _config_change(dc, "topics", p["topic"], p["config"])


def broker_config(dc: DiffCluster, p: Params, _q: Quiesce) -> Outcome:
    return _config_change(dc, "brokers", p["entity"], p["config"])


EXECUTORS: dict[str, Callable[[DiffCluster, Params, Quiesce], Outcome]] = {
    "create_topic_zk": create_topic_zk,
    "create_topics_api": api.create_topics_api,
    "create_topics_auto": api.create_topics_auto,
    "create_partitions_api": api.create_partitions_api,
    "add_partitions": add_partitions,
    "delete_topics": delete_topics,
    "delete_topics_api": api.delete_topics_api,
    "reassign": reassign,
    "preferred_election": preferred_election,
    "topic_config": topic_config,
    "broker_config": broker_config,
    "rewrite_registration": rewrite_registration,
    "remove_registration": remove_registration,
    "controlled_shutdown": controlled_shutdown,
    "kill": kill,
    "shutdown_request": api.shutdown_request,
    "restart": restart,
    "pause": pause,
    "resume": resume,
    "expire_session": expire_session,
    "move_controller": move_controller,
    "move_controller_backlog": move_controller_backlog,
    "bounce": bounce,
    "probe": brokerprobe.probe,
    **ADMIN_EXECUTORS,
}

__all__ += ["TargetStartError"]
