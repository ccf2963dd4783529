"""Generator v15's second extension: a topic deletion that must be retried while it is halted
(conformance ring, pure).

Drawn from a ninth stream of each scenario's own (``random.Random("<seed>:<index>:halt")``), one
scenario in six, and appended after the registration tail (:mod:`conformance.diff.registrations`).

Kafka 2.5.1's TopicDeletionManager keeps one set of topics whose deletion is halted
(``topicsIneligibleForDeletion``) for every reason: replicas offline, a replica deletion that
failed, a reassignment in progress. A halted topic still completes when every replica answers its
StopReplica, and its failed replicas are still moved back to OfflineReplica
(``resumeDeletions``), but no new StopReplica is sent for it until something lifts the halt: a
broker that holds one of its replicas starts (``onBrokerStartup``) or its reassignment completes.
The family makes the retry depend on the halt:

1. a topic with a replica on a broker R that is then killed, so that R's replica fails to delete
   (``startReplicaDeletion`` moves a dead replica to ReplicaDeletionIneligible);
2. its partition reassigned onto a paused broker P (the reassignment cannot finish), and the topic
   deleted — the deletion starts (the "reassignment in progress" check halts only topics already
   queued) and waits for P's answer;
3. R back (its start lifts every halt of the topic);
4. sometimes a second deletion event (a marker for a name never created, or for a topic whose
   deletion can finish) or a controller move — each halts the topic again, as its partition is
   still being reassigned — and sometimes nothing;
5. P back: its StopReplica answered, R's replica is retried only if nothing halts the topic.

Input class: a deletion whose retry comes after each of the events that halt or resume it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from conformance.diff.edges import _steady
from conformance.diff.model import Model
from conformance.diff.scenario import Step

__all__ = ["halted_retry"]


def _deletes(model: Model) -> bool:
    return model.controller_config("delete.topic.enable", "true") != "false"


def halted_retry(rng: random.Random, model: Model) -> Iterator[Step]:
    c = model.controller
    steady = _steady(model)
    if model.state(c) != "up" or not _deletes(model) or len(steady) < 3:
        return
    r, p = rng.sample([b for b in steady if b != c], 2)
    x = rng.choice([b for b in steady if b not in (r, p)])
    name = model.fresh_topic()
    replicas = [r, x] if rng.random() < 0.5 else [x, r]
    yield Step("create_topic_zk", {"topic": name, "assignment": {"0": replicas}, "config": {}})
    yield Step("kill", {"node": r, "successor": None})
    yield Step("pause", {"node": p})
    tp = f"{name}-0"
    if model.reassign_znode or rng.random() < 0.5:
        yield Step("reassign_api", {"via": c, "targets": {tp: [*replicas, p]}})
    else:
        yield Step("reassign", {"targets": {tp: [*replicas, p]}, "replace": False})
    yield Step("delete_topics", {"topics": [name]})
    yield Step("restart", {"node": r})
    then = rng.choice(("marker", "marker", "move", "nothing"))
    if then == "marker":
        done = [t.name for t in model.live_topics() if t.name != name and _whole(model, t.assignment)]
        ghost = rng.random() < 0.6 or not done
        yield Step("delete_topics", {"topics": [model.fresh_topic() if ghost else rng.choice(done)]})
    elif then == "move":
        successors = [b for b in _steady(model) if b not in (model.controller, p)]
        if successors:
            yield Step("move_controller", {"successor": rng.choice(successors)})
    yield Step("resume", {"node": p})


def _whole(model: Model, assignment: dict[int, tuple[int, ...]]) -> bool:
    """Every replica on a running node: a deletion of the topic can finish."""
    return all(model.state(b) == "up" for rs in assignment.values() for b in rs if b in model.nodes)
