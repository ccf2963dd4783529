"""Segment rules that need the step's starting state (conformance ring, pure).

Two rules of :data:`conformance.diff.normalise.RULES` compare a segment against the znode tree at
the end of the previous step:

- **relative zkVersions** (:func:`relative_versions`): a partition state znode's data version —
  in its writes, in the tree and as the ``zk_version`` of controller requests — is compared as the
  number of writes since the step began. Its absolute value counts every write of earlier steps,
  which earlier segments already compared one by one.
- **a resumed leader's ISR race** (:func:`resumed_leader_race`): in the step that resumes a paused
  node, a partition that node leads and whose state ends as it began (leader, leader epoch, ISR)
  may or may not have been shrunk and re-expanded by it: whether its ISR-expiry timer or the
  follower's queued fetch is served first after the pause is timing (Partition.scala@2.5.1 L679
  maybeExpandIsr, ReplicaManager.scala@2.5.1 maybeShrinkIsr scheduled every
  replica.lag.time.max.ms / 2). Those ISR writes, their notification and the UpdateMetadata they
  cause are not compared; the state's end value is (the tree and every later step), and so is a
  LeaderAndIsr that only repeats the partition's leader and leader epoch (a failover's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.diff.normalise import STATE_PATH

__all__ = [
    "relative_versions",
    "resumed_leader_race",
    "resumed_stale_isr_writes",
    "shutting_down",
    "successor_answers_open",
]

Tree = Mapping[str, Any]


def _state_path(tp: str) -> str:
    topic, partition = tp.rsplit("-", 1)
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def _start_version(before: Tree, path: str) -> int:
    entry = before.get(path)
    return int(entry[1]) if isinstance(entry, list) and len(entry) > 1 else 0


def relative_versions(segment: dict[str, Any], before: Tree) -> None:
    """Every state znode version in ``segment`` as writes since the step began (in place)."""
    for path, history in segment["zk"]["writes"].items():
        if STATE_PATH.match(path):
            start = _start_version(before, path)
            for w in history:
                if isinstance(w.get("version"), int):
                    w["version"] -= start
    for path, entry in segment["tree"].items():
        if STATE_PATH.match(path) and isinstance(entry, list):
            entry[1] -= _start_version(before, path) if path in before else 0
    for dest in segment["requests"].values():
        for tp, entries in dest.get("partitions", {}).items():
            if "@" in tp:
                continue
            start = _start_version(before, _state_path(tp))
            for e in entries:
                if isinstance(e.get("zk_version"), int) and e.get("leader") != -2:
                    e["zk_version"] -= start


def _same_state(a: Any, b: Any) -> bool:
    if not (isinstance(a, list) and isinstance(b, list)):
        return False
    if not (isinstance(a[0], dict) and isinstance(b[0], dict)):
        return False
    keys = ("leader", "leader_epoch", "isr", "controller_epoch")
    return all(a[0].get(k) == b[0].get(k) for k in keys)


def _acts(entry: Mapping[str, Any], start: Mapping[str, Any]) -> bool:
    """Whether a controller request entry changes the partition: an UpdateMetadata never does (it
    tells); a LeaderAndIsr that repeats the leader and leader epoch the step began with — a new
    controller's failover re-sending every partition — does not; anything else does."""
    if entry.get("api") == "UpdateMetadata":
        return False
    if entry.get("api") == "LeaderAndIsr":
        return (entry.get("leader"), entry.get("leader_epoch")) != (
            start.get("leader"),
            start.get("leader_epoch"),
        )
    return True


def resumed_leader_race(segment: dict[str, Any], before: Tree, node: int) -> list[str]:
    """Drop a resumed leader's shrink-and-re-expand of partitions that end as they began; the
    partitions it applied to (in place)."""
    actor, writes, dropped = f"node-{node}", segment["zk"]["writes"], []
    for path in [p for p in writes if STATE_PATH.match(p)]:
        ours = all(w.get("by") == actor and w.get("form") == "plain" for w in writes[path])
        start, end = before.get(path), segment["tree"].get(path)
        if (
            not ours
            or not _same_state(start, end)
            or not isinstance(start, list)
            or start[0].get("leader") != node
        ):
            continue
        m = STATE_PATH.match(path)
        assert m is not None
        tp = f"{m.group(1)}-{m.group(2)}"
        requests = [e for d in segment["requests"].values() for e in d.get("partitions", {}).get(tp, [])]
        if any(_acts(e, start[0]) for e in requests):
            continue  # the controller acted on the partition in this step: compare everything
        del writes[path]
        segment["tree"][path] = [end[0], start[1], end[2]]  # as if unwritten: later steps count from here
        for d in segment["requests"].values():
            entries = d.get("partitions", {}).get(tp)
            if entries is None:
                continue
            kept = [e for e in entries if e.get("api") != "UpdateMetadata"]
            if kept:
                d["partitions"][tp] = kept
            else:
                del d["partitions"][tp]
        notified = segment["zk"]["isr_notified"].get(actor, [])
        segment["zk"]["isr_notified"][actor] = [x for x in notified if x != tp]
        if not segment["zk"]["isr_notified"][actor]:
            del segment["zk"]["isr_notified"][actor]
        dropped.append(tp)
    if dropped and not segment["zk"]["isr_notified"]:
        writes.pop("/isr_change_notification/<consumed>", None)
    return dropped


def shutting_down(segment: dict[str, Any], node: int) -> None:
    """In the step of ``node``'s controlled shutdown, requests to it are not compared (RULES
    "requests to a broker shutting down")."""
    segment["requests"].pop(str(node), None)


#: the two answers a broker may give a LeaderAndIsr partition whose leader epoch it may already hold
ACCEPTED_OR_SAME_EPOCH = "0|11 (open: the departed controller's request may have come first)"


def successor_answers_open(segment: dict[str, Any], node: int) -> list[str]:
    """In the step of controller ``node``'s own controlled shutdown: its successor's LeaderAndIsr
    answers (0 or 11) for the partitions whose state ``node`` wrote in the step are masked (RULES
    "answers after a controller shutting down"); the partitions (in place)."""
    actor = f"node-{node}"
    written = {
        f"{m.group(1)}-{m.group(2)}"
        for path, history in segment["zk"]["writes"].items()
        if (m := STATE_PATH.match(path)) and any(w.get("by") == actor for w in history)
    }
    masked = []
    for dest in segment["requests"].values():
        for tp, entries in dest.get("partitions", {}).items():
            for e in entries:
                if (
                    tp in written
                    and e.get("api") == "LeaderAndIsr"
                    and e.get("from") != node
                    and e.get("answer") in (0, 11)
                ):
                    e["answer"] = ACCEPTED_OR_SAME_EPOCH
                    masked.append(tp)
    return sorted(set(masked))


def resumed_stale_isr_writes(segment: dict[str, Any], node: int) -> int:
    """In the step that resumes ``node``: its failed conditional writes (BADVERSION) are not
    compared (RULES "a resumed leader's stale ISR write"); how many were dropped (in place)."""
    actor = f"node-{node}"
    mine = segment["zk"]["failed"].get(actor, {})
    dropped = int(mine.pop("BADVERSION", 0))
    if actor in segment["zk"]["failed"] and not mine:
        del segment["zk"]["failed"][actor]
    return dropped
