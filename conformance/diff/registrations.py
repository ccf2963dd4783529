"""Generator v15's extension: a broker's registration as input (conformance ring, pure).

Drawn from an eighth stream of each scenario's own (``random.Random("<seed>:<index>:registration")``)
and appended after v14's tail, so a v15 scenario is its v14 one plus, sometimes, a tail of these:

- *the epoch after an expiry* (every scenario whose steps expired a broker's session, when that
  broker still runs at the end and nothing has checked its new epoch since): a crafted request with
  a broker epoch one below the broker's new registration (answered STALE_BROKER_EPOCH by a broker
  that took the new czxid as its epoch, accepted by one that kept the old), and a ControlledShutdown
  for it with the same epoch sent to the controller (refused the same way). Not drawn: an expiry
  with nothing after it that looks at the epoch tells nothing about the epoch.
- *a registration rewritten by hand* (one scenario in six): ``/brokers/ids/<b>`` of a running
  broker rewritten with an extra listener and/or a rack. Kafka's controller
  (``KafkaController.processBrokerModification``) acts only when the endpoints changed: it caches
  the new registration and sends UpdateMetadata to every broker; a rack alone changes nothing it
  sends until a new controller reads the registrations afresh. Then something that makes the
  controller describe the broker again — a topic with a replica on it, another broker bounced, or a
  controller move — and sometimes the broker bounced itself, which registers it again as it was.

And v16's, from a tenth stream (``"<seed>:<index>:removal"``, one scenario in ten):

- *a registration deleted by hand* (:func:`removed_registration`): ``/brokers/ids/<b>`` of a
  running broker that is not the controller deleted while the process runs. The controller handles
  it as a failed broker (elections away from it, ISR removals, no more requests to it) though it
  still runs; sometimes a topic is then created with a replica on it (offline from the start); then
  its graceful stop, whose ControlledShutdown the controller cannot place (Kafka 2.5.1 answers
  UNKNOWN_SERVER_ERROR: the broker-epoch lookup fails first), so the broker retries and stops
  anyway; mostly it is started again, registering afresh.

Input classes, as the earlier tails are: every change of a broker epoch is followed by a request
that carries the epoch just below it, and every field of a registration is also changed while the
broker stays registered.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from conformance.diff.edges import _steady
from conformance.diff.model import Model
from conformance.diff.scenario import Step

__all__ = ["registration", "removed_registration"]

#: crafted requests with a broker epoch one below the current registration's: (api, leader epoch)
_STALE = (("UpdateMetadata", "equal"), ("LeaderAndIsr", "newer"))


def _unchecked_expiry(steps: Sequence[Step]) -> int | None:
    """The last broker whose session a step expired and whose epoch nothing checked since."""
    checked: set[int] = set()
    for step in reversed(steps):
        p = step.params
        if step.op in ("probe", "shutdown_request") and p.get("broker_epoch") == "stale":
            checked.add(p["node"])
        elif step.op in ("bounce", "restart", "kill", "controlled_shutdown"):
            checked.add(p["node"])  # a later registration, or none: not the expiry's any more
        elif step.op == "expire_session" and p["node"] not in checked:
            return int(p["node"])
    return None


def _epoch_after_expiry(rng: random.Random, model: Model, steps: Sequence[Step]) -> Iterator[Step]:
    b = _unchecked_expiry(steps)
    if b is None or b not in _steady(model):
        return
    api, leader_epoch = rng.choice(_STALE)
    yield Step(
        "probe",
        {"node": b, "api": api, "partition": "phantom", "controller_epoch": "equal",
         "leader_epoch": leader_epoch, "broker_epoch": "stale", "heal": False},
    )  # fmt: skip
    if model.state(model.controller) == "up":
        yield Step("shutdown_request", {"node": b, "via": model.controller, "broker_epoch": "stale"})


def _rewritten_registration(rng: random.Random, model: Model) -> Iterator[Step]:
    c = model.controller
    steady = _steady(model)
    if model.state(c) != "up" or len(steady) < 2:
        return
    b = rng.choice(steady)
    listener = rng.random() < 0.7
    rack = rng.choice(("none", "r1", "r2")) if listener else rng.choice(("r1", "r2"))
    yield Step("rewrite_registration", {"node": b, "listener": listener, "rack": rack})
    others = [x for x in steady if x != b]
    then = rng.choice(("topic", "topic", "bounce_other", "move"))
    if then == "topic":
        name = model.fresh_topic()
        replicas = [b, *rng.sample(others, min(len(others), rng.randint(0, 1)))]
        rng.shuffle(replicas)
        yield Step("create_topic_zk", {"topic": name, "assignment": {"0": replicas}, "config": {}})
    elif then == "bounce_other" and [x for x in others if x != c]:
        yield Step("bounce", {"node": rng.choice([x for x in others if x != c])})
    else:
        yield Step("move_controller", {"successor": rng.choice([x for x in steady if x != c])})
    if rng.random() < 0.4 and b != model.controller and model.state(model.controller) == "up":
        yield Step("bounce", {"node": b})


def registration(rng: random.Random, model: Model, steps: Sequence[Step]) -> Iterator[Step]:
    """The tail: the epoch check after an expiry whenever one is due, then (one in six) a rewritten
    registration."""
    yield from _epoch_after_expiry(rng, model, steps)
    if rng.random() < 1 / 6 and model.up():
        yield from _rewritten_registration(rng, model)


def removed_registration(rng: random.Random, model: Model) -> Iterator[Step]:
    """The tail of a registration deleted by hand (module docstring)."""
    c = model.controller
    candidates = [b for b in _steady(model) if b != c and not model.nodes[b].unregistered]
    if model.state(c) != "up" or not candidates:
        return
    b = rng.choice(candidates)
    yield Step("remove_registration", {"node": b})
    if rng.random() < 0.5:
        others = [x for x in model.up() if x != b]
        replicas = [b, *rng.sample(others, min(len(others), rng.randint(0, 1)))]
        rng.shuffle(replicas)
        topic = model.fresh_topic()
        yield Step("create_topic_zk", {"topic": topic, "assignment": {"0": replicas}, "config": {}})
    yield Step("controlled_shutdown", {"node": b, "successor": None})
    if rng.random() < 0.7:
        yield Step("restart", {"node": b})
