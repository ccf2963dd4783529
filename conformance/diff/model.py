"""The generator's view of a scenario's cluster: processes, controller, topics (conformance ring, pure).

What the harness controls is exact: which node processes are up, down or paused, and which node
is the controller (every controller move is choreographed to a named successor, so the winner is
known). What the controller does is only approximated — topic assignments after reassignments,
deletions that should complete — enough to pick meaningful steps, never used to judge a trace.

:func:`replay` walks a scenario's steps over a fresh model, checking each step's precondition
(:mod:`conformance.diff.steps`), so a scenario that replays can be executed: no kill of a node that
is down, no restart of one that is up, a successor wherever the controller goes away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from conformance.diff.scenario import ScenarioError

if TYPE_CHECKING:
    from conformance.diff.scenario import Scenario

__all__ = ["Model", "NodeModel", "TopicModel", "controllers", "replay"]

NodeState = Literal["up", "down", "paused"]


@dataclass
class NodeModel:
    broker_id: int
    config: dict[str, str]
    state: NodeState = "up"
    #: a probe gave it a newer controller epoch: it refuses the real controller until restarted
    poisoned: bool = False
    #: its /brokers/ids/<id> was deleted by hand while it runs: the controller counts it as gone
    #: until it registers again (its next start)
    unregistered: bool = False


@dataclass
class TopicModel:
    name: str
    assignment: dict[int, tuple[int, ...]]
    config: dict[str, str] = field(default_factory=dict)

    def partitions(self) -> list[str]:
        return [f"{self.name}-{p}" for p in sorted(self.assignment)]


@dataclass
class Model:
    nodes: dict[int, NodeModel]
    controller: int
    topics: dict[str, TopicModel] = field(default_factory=dict)
    #: topics whose deletion was asked for (gone, or stuck as Kafka leaves them)
    deleted: set[str] = field(default_factory=set)
    #: /admin/reassign_partitions is believed to exist (a pending reassignment keeps it)
    reassign_znode: bool = False
    #: topics a znode reassignment that may still be pending names (their topic znode may hold
    #: adding/removing replicas)
    reassigning: set[str] = field(default_factory=set)
    #: names ever used, so the generator never reuses one
    names_used: set[str] = field(default_factory=set)
    #: "<topic>-<partition>" → its replicas before an admin-API reassignment that is still pending
    api_original: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, scenario: Scenario) -> Model:
        nodes = {b: NodeModel(b, dict(conf)) for b, conf in scenario.nodes.items()}
        return cls(nodes=nodes, controller=scenario.first_controller)

    # --- queries --------------------------------------------------------------------------------

    def up(self) -> list[int]:
        return sorted(b for b, n in self.nodes.items() if n.state == "up")

    def down(self) -> list[int]:
        return sorted(b for b, n in self.nodes.items() if n.state == "down")

    def paused(self) -> list[int]:
        return sorted(b for b, n in self.nodes.items() if n.state == "paused")

    def state(self, broker_id: int) -> NodeState:
        return self.nodes[broker_id].state

    def config(self, broker_id: int, key: str, default: str) -> str:
        return self.nodes[broker_id].config.get(key, default)

    def controller_config(self, key: str, default: str) -> str:
        return self.config(self.controller, key, default)

    def live_topics(self) -> list[TopicModel]:
        return [t for name, t in sorted(self.topics.items()) if name not in self.deleted]

    def leader_guess(self, topic: str, partition: int) -> int | None:
        """The first running replica: Kafka's leader in the common case (no unclean election)."""
        t = self.topics.get(topic)
        replicas = t.assignment.get(partition, ()) if t else ()
        return next((r for r in replicas if r in self.nodes and self.state(r) != "down"), None)

    # --- changes --------------------------------------------------------------------------------

    def set_state(self, broker_id: int, state: NodeState) -> None:
        node = self.nodes[broker_id]
        if state == "down":
            node.poisoned = False
            node.unregistered = False
        node.state = state

    def add_topic(self, name: str, assignment: dict[int, tuple[int, ...]], config: dict[str, str]) -> None:
        self.names_used.add(name)
        if name not in self.topics and name not in self.deleted:
            self.topics[name] = TopicModel(name, dict(assignment), dict(config))

    def fresh_topic(self) -> str:
        i = 0
        while f"t{i}" in self.names_used:
            i += 1
        self.names_used.add(f"t{i}")
        return f"t{i}"


def controllers(scenario: Scenario) -> list[int]:
    """The controller the choreography elects, at the start-up and after each step."""
    from conformance.diff.steps import KINDS  # noqa: PLC0415 - steps imports this module

    model = Model.of(scenario)
    out = [model.controller]
    for step in scenario.steps:
        KINDS[step.op].apply(model, step.params)
        out.append(model.controller)
    return out


def replay(scenario: Scenario, where: str = "scenario") -> Model:
    """The model after every step; :class:`ScenarioError` at the first step whose precondition fails."""
    from conformance.diff.steps import KINDS  # noqa: PLC0415 - steps imports this module

    model = Model.of(scenario)
    for i, step in enumerate(scenario.steps):
        kind = KINDS[step.op]
        problem = kind.check(model, step.params)
        if problem:
            raise ScenarioError(f"{where}: step {i} {step.describe()}: {problem}")
        kind.apply(model, step.params)
    return model
