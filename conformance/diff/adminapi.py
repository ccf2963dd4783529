"""Executors of the admin-API steps (conformance ring, drivers; spec §13).

Each sends one request with :mod:`conformance.checks.admin_wire` (kio 0.5.0 schemas at Kafka
2.5.1's versions over the kit's wire layer) to the step's ``via`` broker and records its answer as
plain JSON values for the step's segment: per-partition ``[error code, message]`` and, for a
listing, ``[replicas, adding, removing]``. A request that gets no answer in time records
``"no answer"`` — what Kafka 2.5.1 does for an ElectLeaders naming a partition without state
(spec §13.7, a tolerated divergence). Waiting for the controller's reaction is the barrier's job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from conformance.checks import admin_wire as aw
from conformance.diff.live import DiffCluster
from conformance.diff.steps import split_tp

__all__ = ["ADMIN_EXECUTORS"]

Params = Mapping[str, Any]
Outcome = dict[str, Any]
#: ElectLeaders' and AlterPartitionReassignments' own timeout: the controller answers within it
REQUEST_TIMEOUT_MS = 5000
TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1
NO_ANSWER = "no answer"


def _tp(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def _answered(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except (OSError, RuntimeError, ValueError):  # timeouts and closed connections are OSErrors
        return None


def _partitions(raw: list[str]) -> list[tuple[str, int]] | None:
    return [split_tp(tp) for tp in raw] if raw else None


def reassign_api(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> Outcome:
    targets = [(split_tp(tp), list(r)) for tp, r in sorted(p["targets"].items())]
    got = _answered(
        lambda: aw.alter_reassignments(dc.cluster, p["via"], targets, timeout_ms=REQUEST_TIMEOUT_MS)
    )
    if got is None:
        return {"answer": NO_ANSWER}
    (code, message), parts = got
    per = {_tp(tp): [c, m] for tp, (c, m) in sorted(parts.items())}
    return {"answer": {"error": code, "message": message, "partitions": per}}


def cancel_reassign_api(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> Outcome:
    targets = [(split_tp(tp), None) for tp in sorted(p["partitions"])]
    got = _answered(
        lambda: aw.alter_reassignments(dc.cluster, p["via"], targets, timeout_ms=REQUEST_TIMEOUT_MS)
    )
    if got is None:
        return {"answer": NO_ANSWER}
    (code, message), parts = got
    per = {_tp(tp): [c, m] for tp, (c, m) in sorted(parts.items())}
    return {"answer": {"error": code, "message": message, "partitions": per}}


def list_reassignments(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> Outcome:
    got = _answered(lambda: aw.list_reassignments(dc.cluster, p["via"], _partitions(p["partitions"])))
    if got is None:
        return {"answer": NO_ANSWER}
    (code, message), listed = got
    per = {_tp(tp): [list(r), list(a), list(x)] for tp, (r, a, x) in sorted(listed.items())}
    return {"answer": {"error": code, "message": message, "reassignments": per}}


def elect_leaders(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> Outcome:
    kind = aw.UNCLEAN if p["election"] == "unclean" else aw.PREFERRED
    got = _answered(
        lambda: aw.elect_leaders(
            dc.cluster,
            p["via"],
            _partitions(p["partitions"]),
            election_type=kind,
            timeout_ms=REQUEST_TIMEOUT_MS,
            wait_s=REQUEST_TIMEOUT_MS / 1000 + 10,
        )
    )
    if got is None:
        return {"answer": NO_ANSWER}
    code, parts = got
    return {
        "answer": {"error": code, "partitions": {_tp(tp): [c, m] for tp, (c, m) in sorted(parts.items())}}
    }


def alter_configs_api(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> Outcome:
    config: Mapping[str, str] = p["config"]
    if p["incremental"]:
        ops = [(k, SET, v) for k, v in sorted(config.items())]
        got = _answered(lambda: aw.incremental_alter_configs(dc.cluster, p["via"], TOPIC, p["topic"], ops))
    else:
        got = _answered(lambda: aw.alter_configs(dc.cluster, p["via"], TOPIC, p["topic"], dict(config)))
    return {"answer": NO_ANSWER if got is None else list(got)}


def broker_default_api(dc: DiffCluster, p: Params, _q: Callable[[], Any]) -> Outcome:
    key = "unclean.leader.election.enable"
    op = [(key, SET, p["value"])] if p["value"] else [(key, DELETE, None)]
    got = _answered(lambda: aw.incremental_alter_configs(dc.cluster, p["via"], BROKER, "", op))
    return {"answer": NO_ANSWER if got is None else list(got)}


ADMIN_EXECUTORS: dict[str, Callable[[DiffCluster, Params, Callable[[], Any]], Outcome]] = {
    "reassign_api": reassign_api,
    "cancel_reassign_api": cancel_reassign_api,
    "list_reassignments": list_reassignments,
    "elect_leaders": elect_leaders,
    "alter_configs_api": alter_configs_api,
    "broker_default_api": broker_default_api,
}
