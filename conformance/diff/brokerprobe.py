"""Broker probes: a crafted controller request with chosen epochs, and the broker's answer (conformance ring).

A probe plays a controller towards one broker (spec §7.3, §7.4): LeaderAndIsr, UpdateMetadata or
StopReplica built with :mod:`cluster.crafted`, sent straight to the broker's controller listener
(not through the recording proxy, so the controller's own request trace stays the controller's).
Epochs are chosen relative to what the cluster shows at that moment — the controller epoch in
``/controller_epoch``, the broker epoch (czxid of ``/brokers/ids/<id>``), the partition's leader
epoch in its state znode — as ``stale`` (one less), ``equal`` or ``newer`` (one more); the broker
epoch may also be ``none`` (-1, "not checked"). The target is a real partition (its current
state) or the node's *phantom* partition ``probe-<id>-0`` (replicas [id], unknown to the
controller), which takes the epochs that would change a real partition. Only the answer and the
relative epochs are recorded. ``heal`` restarts the node afterwards: a newer controller epoch
makes a broker refuse the real controller until it restarts (Kafka does the same).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.exceptions import NoNodeError

from cluster import crafted
from cluster.nodeconfig import control_listener, inter_broker_listener
from conformance.diff.live import DiffCluster, TargetStartError
from conformance.diff.steps import split_tp

__all__ = ["probe"]

Params = Mapping[str, Any]
_DELTA = {"stale": -1, "equal": 0, "newer": 1}
PHANTOM_FIRST_EPOCH = 5


def _get(dc: DiffCluster, path: str) -> tuple[Any, Any]:
    data, stat = dc.cluster.zk.get(path)
    return json.loads(data), stat


def _endpoints(dc: DiffCluster) -> dict[int, list[tuple[str, str, int]]]:
    out: dict[int, list[tuple[str, str, int]]] = {}
    for child in dc.cluster.zk.get_children("/brokers/ids"):
        reg, _ = _get(dc, f"/brokers/ids/{child}")
        eps = []
        for ep in reg.get("endpoints", []):
            name, rest = str(ep).split("://", 1)
            host, port = rest.rsplit(":", 1)
            eps.append((name, host, int(port)))
        out[int(child)] = eps
    return out


def _state(dc: DiffCluster, node: int, target: str) -> crafted.PartitionSpec | None:
    """The partition state the probe starts from (leader epoch not yet adjusted)."""
    if target == "phantom":
        epoch = dc.phantom_epoch.get(node, PHANTOM_FIRST_EPOCH)
        return crafted.PartitionSpec(f"probe-{node}", 0, node, epoch, (node,), (node,), 0, 1, True)
    topic, partition = split_tp(target)
    try:
        state, stat = _get(dc, f"/brokers/topics/{topic}/partitions/{partition}/state")
        assignment, _ = _get(dc, f"/brokers/topics/{topic}")
    except (NoNodeError, ValueError):
        return None
    replicas = tuple(assignment.get("partitions", {}).get(str(partition), ()))
    return crafted.PartitionSpec(
        topic,
        partition,
        int(state["leader"]),
        int(state["leader_epoch"]),
        tuple(state["isr"]),
        replicas,
        int(stat.version),
        int(state["controller_epoch"]),
        False,
    )


def _request(
    dc: DiffCluster, p: Params, spec: crafted.PartitionSpec, *, cid: int, cepoch: int, bepoch: int
) -> Any:
    node, api = p["node"], p["api"]
    spec = crafted.PartitionSpec(
        **{**spec.__dict__, "leader_epoch": spec.leader_epoch + _DELTA[p["leader_epoch"]]}
    )
    endpoints = _endpoints(dc)
    if api == "LeaderAndIsr":
        leader = [
            (spec.leader, host, port)
            for name, host, port in endpoints.get(spec.leader, [])
            if name == inter_broker_listener(node)
        ]
        return crafted.leader_and_isr_request(
            [spec], controller_id=cid, controller_epoch=cepoch, broker_epoch=bepoch, live_leaders=leader
        )
    if api == "UpdateMetadata":
        brokers = [crafted.BrokerSpec(b, tuple(eps)) for b, eps in sorted(endpoints.items())]
        return crafted.update_metadata_request(
            [spec], brokers, controller_id=cid, controller_epoch=cepoch, broker_epoch=bepoch
        )
    return crafted.stop_replica_request(
        [(spec.topic, spec.partition)],
        delete=p["partition"] == "phantom",
        controller_id=cid,
        controller_epoch=cepoch,
        broker_epoch=bepoch,
    )


def _send(dc: DiffCluster, p: Params, spec: crafted.PartitionSpec) -> dict[str, Any]:
    node = p["node"]
    controller = dc.controller_stat()
    cid = controller[0] if controller else dc.expected_controller
    cepoch = int(dc.cluster.zk.get("/controller_epoch")[0]) + _DELTA[p["controller_epoch"]]
    registration = dc.cluster.zk.exists(f"/brokers/ids/{node}")
    if registration is None:  # a node of the target that died is its error; else the trace shows it
        gone = dc.exited()
        if gone:
            raise TargetStartError(f"{gone} before the probe of node {node}")
        return {"answer": f"node {node} not registered: nothing sent"}
    czxid = int(registration.czxid)
    bepoch = -1 if p["broker_epoch"] == "none" else czxid + _DELTA[p["broker_epoch"]]
    request = _request(dc, p, spec, cid=cid, cepoch=cepoch, bepoch=bepoch)
    port = dc.cluster.bind_port(node, control_listener(cid))
    try:
        got = crafted.answer(crafted.send(("127.0.0.1", port), request))
    except OSError as exc:
        return {"answer": f"no answer: {type(exc).__name__}"}
    partitions = {
        "phantom" if tp[0] == f"probe-{node}" else f"{tp[0]}-{tp[1]}": code
        for tp, code in sorted(got.partition_errors.items())
    }
    accepted = got.error_code == 0 and all(c == 0 for c in partitions.values())
    if p["partition"] == "phantom" and accepted:
        if p["api"] == "LeaderAndIsr":
            dc.phantom_epoch[node] = spec.leader_epoch + _DELTA[p["leader_epoch"]]
        elif p["api"] == "StopReplica":
            dc.phantom_epoch.pop(node, None)
    return {"answer": {"error": got.error_code, "partitions": partitions}}


def probe(dc: DiffCluster, p: Params, quiesce: Callable[[], Any]) -> dict[str, Any]:
    spec = _state(dc, p["node"], p["partition"])
    out: dict[str, Any] = (
        {"answer": "no partition state: nothing sent"} if spec is None else _send(dc, p, spec)
    )
    if p["heal"]:  # a failure, then (once the cluster has reacted) a startup: two BrokerChanges
        node = p["node"]
        dc.cluster.kill(node)
        dc.state[node] = "down"
        dc.close_session_of(node)
        out["while_down"] = quiesce()
        dc.state[node] = "up"
        dc.cluster.start([node], wait=False)
        dc.wait_registered([node])
        dc.phantom_epoch.pop(node, None)  # the phantom's log survives the restart, its epoch does not matter
        out["healed"] = True
    return out
