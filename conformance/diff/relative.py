"""Segment rules that need the step's starting state (conformance ring, pure).

Rules of :data:`conformance.diff.normalise.RULES` that need the znode tree at the end of the previous
step, or what was sent to a paused broker:

- **relative zkVersions** (:func:`relative_versions`): a partition state znode's data version —
  in its writes, in the tree and as the ``zk_version`` of controller requests — is compared as the
  number of writes since the step began. Its absolute value counts every write of earlier steps,
  which earlier segments already compared one by one.
- **a resumed leader's ISR race** (:func:`resumed_leader_race`): in the step that resumes a paused
  node, whether its ISR-expiry timer or a follower's queued fetch is served first is timing
  (Partition.scala@2.5.1 L679 maybeExpandIsr, ReplicaManager.scala@2.5.1 maybeShrinkIsr every
  replica.lag.time.max.ms / 2): the ISR writes of a partition it leads, whose leadership the step
  leaves as it was, are compared by their net effect, and the UpdateMetadata they cause not at all.
- **a resumed broker's queued requests** (in :func:`relative_versions`): in the step that resumes a
  paused broker, a request to it whose partition-state ``zk_version`` is not above the step's
  start was built before the step (the controller builds a request when it acts and sends it when
  the broker reads again): how many of a running leader's ISR writes the controller had read by
  then is timing, so that value is compared only as :data:`BUILT_BEFORE_THE_STEP`.
- **a departed controller's request to a resumed broker** (:func:`departed_controller_race`): a
  request of a controller gone while the broker was paused may be read before the current
  controller's: a LeaderAndIsr answer for the same leader epoch is 0 or 11.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from conformance.diff.normalise import STATE_PATH

__all__ = [
    "BUILT_BEFORE_THE_STEP",
    "departed_controller_race",
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


#: the zk_version of a request to a resumed broker built from a state no newer than the step's start
BUILT_BEFORE_THE_STEP = "built before the step"


def relative_versions(segment: dict[str, Any], before: Tree, resumed: int | None = None) -> None:
    """Every state znode version in ``segment`` as writes since the step began (in place); in the
    step that resumes broker ``resumed``, the versions of its requests that are not above the step's
    start are :data:`BUILT_BEFORE_THE_STEP` (RULES "a resumed broker's queued requests")."""
    for path, history in segment["zk"]["writes"].items():
        if STATE_PATH.match(path):
            start = _start_version(before, path)
            for w in history:
                if isinstance(w.get("version"), int):
                    w["version"] -= start
    for path, entry in segment["tree"].items():
        if STATE_PATH.match(path) and isinstance(entry, list):
            entry[1] -= _start_version(before, path) if path in before else 0
    for dest_id, dest in segment["requests"].items():
        for tp, entries in dest.get("partitions", {}).items():
            if "@" in tp:
                continue
            start = _start_version(before, _state_path(tp))
            for e in entries:
                if isinstance(e.get("zk_version"), int) and e.get("leader") != -2:
                    e["zk_version"] -= start
                    if resumed is not None and int(dest_id) == resumed and e["zk_version"] <= 0:
                        e["zk_version"] = BUILT_BEFORE_THE_STEP


def _leadership(state: Any) -> tuple[Any, ...] | None:
    """(leader, leader epoch, controller epoch) of a state znode's data, ``None`` if it is none."""
    if not isinstance(state, dict):
        return None
    return (state.get("leader"), state.get("leader_epoch"), state.get("controller_epoch"))


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
    """A resumed leader's own ISR writes, net (RULES "a resumed leader's ISR race"): for every
    partition ``node`` led when the step began whose leadership (leader, leader epoch, controller
    epoch) the step leaves as it was, that only ``node`` wrote (plain ISR writes keeping that
    leadership) and on which the controller did not act, the writes become their net effect —
    nothing when the ISR ends as it began, else one write of the end state — and the step's
    UpdateMetadata entries for it are not compared. The partitions it applied to (in place)."""
    actor, writes, dropped = f"node-{node}", segment["zk"]["writes"], []
    for path, start in sorted(before.items()):
        if not STATE_PATH.match(path) or not isinstance(start, list) or not isinstance(start[0], dict):
            continue
        end = segment["tree"].get(path)
        lead = _leadership(start[0])
        if start[0].get("leader") != node or not isinstance(end, list) or _leadership(end[0]) != lead:
            continue
        if not all(
            w.get("by") == actor and w.get("form") == "plain" and _leadership(w.get("data")) == lead
            for w in writes.get(path, [])
        ):
            continue
        m = STATE_PATH.match(path)
        assert m is not None
        tp = f"{m.group(1)}-{m.group(2)}"
        requests = [e for d in segment["requests"].values() for e in d.get("partitions", {}).get(tp, [])]
        if any(_acts(e, start[0]) for e in requests):
            continue  # the controller acted on the partition in this step: compare everything
        changed = sorted(end[0].get("isr") or []) != sorted(start[0].get("isr") or [])
        if changed:
            net = {"by": actor, "form": "plain", "op": "setData", "data": end[0], "version": start[1] + 1}
            writes[path] = [{**net, "net": "the resumed leader's ISR writes (RULES)"}]
            segment["tree"][path] = [end[0], start[1] + 1, *end[2:]]
        else:
            writes.pop(path, None)
            segment["tree"][path] = [end[0], start[1], *end[2:]]  # as if unwritten
            notified = segment["zk"]["isr_notified"].get(actor, [])
            segment["zk"]["isr_notified"][actor] = [x for x in notified if x != tp]
            if not segment["zk"]["isr_notified"][actor]:
                del segment["zk"]["isr_notified"][actor]
        _drop_update_metadata(segment, tp)
        dropped.append(tp)
    if dropped and not segment["zk"]["isr_notified"]:
        writes.pop("/isr_change_notification/<consumed>", None)
    return dropped


def _drop_update_metadata(segment: dict[str, Any], tp: str) -> None:
    """The step's UpdateMetadata entries for ``tp``; a destination left with nothing is dropped."""
    for dest in list(segment["requests"]):
        d = segment["requests"][dest]
        entries = d.get("partitions", {}).get(tp)
        if entries is None:
            continue
        kept = [e for e in entries if e.get("api") != "UpdateMetadata"]
        if kept:
            d["partitions"][tp] = kept
        else:
            del d["partitions"][tp]
        if not d["partitions"] and not d.get("brokers") and not d.get("undecodable"):
            del segment["requests"][dest]


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


def departed_controller_race(
    segment: dict[str, Any], gone: AbstractSet[tuple[int, str, int | None]]
) -> list[str]:
    """In the step that resumes a broker: a LeaderAndIsr the current controller sent it for a
    partition to which a departed controller (or the controller's former incarnation) had already
    sent the same leader epoch while the broker was paused is answered 0 or 11, as the broker reads
    the two connections (RULES "a departed controller's request to a resumed broker"); those
    answers are masked; the ``<broker>:<partition>`` entries masked (in place)."""
    masked = []
    for dest, entries_of in segment["requests"].items():
        for tp, entries in entries_of.get("partitions", {}).items():
            for e in entries:
                if (
                    e.get("api") == "LeaderAndIsr"
                    and (int(dest), tp, e.get("leader_epoch")) in gone
                    and e.get("answer") in (0, 11)
                ):
                    e["answer"] = ACCEPTED_OR_SAME_EPOCH
                    masked.append(f"{dest}:{tp}")
    return sorted(set(masked))
