"""The admin-API ops of a schedule (``api-<n>`` processes), played in the simulated world (ring:
drivers — a simulated one).

The same ops as :mod:`chaos.workload_api`, with the same completion values, so that the admin-API
checkers judge a simulated run as they judge a real one:

=====================  ==========================================================================
op                     played as
=====================  ==========================================================================
reassign_api           ``ApiPartitionReassignment`` on the node ``/controller`` names (the event
cancel_reassignment    the node's AlterPartitionReassignments handler puts; null targets cancel)
list_reassignments     ``ListPartitionReassignments`` on that node
elect_leaders          ``ReplicaLeaderElection`` (admin-client trigger) on that node, then, as
                       DelayedElectLeader, the answer for an elected partition once that node's
                       metadata cache shows the new leader
alter_topic_config     the IncrementalAlterConfigs handler's own logic (stored config, SET/DELETE,
                       validation, the config znode and its change notification) on a reachable
                       node drawn from the world's RNG (the client sends it to any broker)
alter_broker_config    the same on a BROKER resource: ``<default>`` on any reachable node, a
                       broker's own config on that broker only (``fail`` when it is not running,
                       as a refused connection; ``info`` when it is paused or cut off)
=====================  ==========================================================================

The request travels on the node's ``CLIENT_<id>`` link and the answer back on it (delays, FIFO, cut
links); a paused node reads it when it runs again. A top-level NOT_CONTROLLER to an
AlterPartitionReassignments or ListPartitionReassignments is sent again to the node
``/controller`` names then (three sends in all, as the real workload's
``cluster.admin_api.to_controller``). The client gives up after :data:`OP_TIMEOUT_MS` of virtual
time, as the real workload does after its 5 s: the op is then ``info`` (it may still happen) and a
later answer is ignored. The request's effect is the reference's own: the event is processed by
the node's controller as the real node's handler has it processed.

Outcomes follow :mod:`chaos.workload_api`: ``ok`` when every answer is 0, ``fail`` when nothing was
sent or every answer means "not done", ``info`` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from chaos.workload_api import NOT_DONE_CODES, outcome
from kafkawire.api_error import ApiError
from kafkawire.states import TopicPartition
from reference_controller.controller.events import (
    ApiPartitionReassignment,
    ElectionTrigger,
    ElectionType,
    ListPartitionReassignments,
    ReplicaLeaderElection,
)
from reference_controller.node.apis_configs import (
    BROKER,
    DELETE,
    SET,
    TOPIC,
    Change,
    IncrementalAlterConfigs,
)

if TYPE_CHECKING:
    from chaos.sim.node import SimNode
    from chaos.sim.world import World

__all__ = ["OP_TIMEOUT_MS", "ApiOps"]

Done = Callable[[str, dict[str, Any] | None, str | None], None]
Target = tuple[TopicPartition, tuple[int, ...] | None]  # a partition's target replicas, None: cancel
#: the workload's op timeout (``chaos.workload.Client.op_timeout_s``), in virtual milliseconds
OP_TIMEOUT_MS = 5000
#: how often a DelayedElectLeader looks at the metadata cache again
ELECT_POLL_MS = 10
#: sends of one AlterPartitionReassignments or ListPartitionReassignments while the answer is
#: NOT_CONTROLLER (``cluster.admin_api.to_controller``'s ``attempts``)
ATTEMPTS = 3
NOT_CONTROLLER = 41


def _named(value: Mapping[str, Any]) -> list[TopicPartition]:
    return [TopicPartition(str(p["topic"]), int(p["partition"])) for p in value.get("partitions") or ()]


class _Request:
    """One request in flight: answered once (by the node or by the client's time-out)."""

    def __init__(self, world: World, op: str, done: Done) -> None:
        self.world, self.op, self._done = world, op, done
        self.started_ms = world.now
        self.finished = False
        world.at(OP_TIMEOUT_MS, lambda: self.finish("info", None, f"{op} timed out"))

    def finish(self, kind: str, value: dict[str, Any] | None, error: str | None) -> None:
        if not self.finished:
            self.finished = True
            self._done(kind, value, error)

    def stamped(self, value: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
        return {**value, **extra, "started_ms": self.started_ms, "ended_ms": self.world.now}


class ApiOps:
    """The admin-API ops of :class:`chaos.sim.actions.Actions` (module docstring)."""

    world: World

    def controller_node(self) -> SimNode | None: ...  # Actions's

    # ---- the way to a node and back ---------------------------------------------------------------
    def _send(
        self, node: SimNode, request: _Request, arrive: Callable[[Callable[[Callable[[], None]], None]], None]
    ) -> None:
        """Deliver to ``node`` on its CLIENT link; ``arrive(answer)`` runs there once the node runs,
        and ``answer(then)`` carries ``then`` back to the client on the same link."""
        link = f"CLIENT_{node.broker_id}"
        life = node.incarnation
        when = self.world.deliver_at(link)
        if when is None:
            return  # the connection hangs: the client's time-out answers

        def back(then: Callable[[], None]) -> None:
            if node.incarnation != life or not node.running:
                return  # the connection died with the process
            returned = self.world.deliver_at(link)
            if returned is not None:
                self.world.at(returned - self.world.now, then)

        def at_node() -> None:
            if node.incarnation != life or not node.running or request.finished:
                return  # refused or lost with the process: the client times out
            if node.paused:  # read once the process runs again
                self.world.at(ELECT_POLL_MS, at_node)
                return
            arrive(back)

        self.world.at(when - self.world.now, at_node)

    def _controller(self, done: Done) -> SimNode | None:
        """The node ``/controller`` names, or None after ``done`` said why nothing was sent."""
        node = self.controller_node()
        if node is None:
            done("fail", None, "no controller to send to: /controller is absent")
            return None
        if not node.running:
            done("fail", None, f"not sent: connection refused by node {node.broker_id}")
            return None
        return node

    def _to_controller(self, op: str, done: Done) -> tuple[SimNode, _Request] | None:
        node = self._controller(done)
        return None if node is None else (node, _Request(self.world, op, done))

    def _ask_controller(
        self,
        op: str,
        done: Done,
        put: Callable[[SimNode, Callable[[Any], None]], None],
        answered: Callable[[SimNode, _Request, Any], None],
    ) -> None:
        """``put(node, reply)`` on the controller's node; ``answered(node, request, result)`` once
        the answer is back. A top-level NOT_CONTROLLER is sent again to the node ``/controller``
        names then, at most :data:`ATTEMPTS` times in all, as ``cluster.admin_api.to_controller``
        does for the real workload."""
        found = self._to_controller(op, done)
        if found is None:
            return
        first, request = found

        def attempt(node: SimNode, n: int) -> None:
            def arrive(answer: Callable[[Callable[[], None]], None]) -> None:
                put(node, lambda result: answer(lambda: back(node, n, result)))

            self._send(node, request, arrive)

        def back(node: SimNode, n: int, result: Any) -> None:
            if request.finished:
                return
            if isinstance(result, ApiError) and result.error == NOT_CONTROLLER and n < ATTEMPTS:
                again = self._controller(request.finish)
                if again is not None:
                    attempt(again, n + 1)
                return
            answered(node, request, result)

        attempt(first, 1)

    # ---- AlterPartitionReassignments ------------------------------------------------------------------
    def _alter(
        self,
        value: Mapping[str, Any],
        targets: list[tuple[TopicPartition, tuple[int, ...] | None]],
        done: Done,
    ) -> None:
        reassignments: dict[TopicPartition, tuple[int, ...] | None] = {}
        for tp, target in targets:  # the handler's toMap: the last entry wins
            reassignments.pop(tp, None)
            reassignments[tp] = target
        self._ask_controller(
            "AlterPartitionReassignments",
            done,
            lambda node, reply: node.put(ApiPartitionReassignment(tuple(reassignments.items()), reply)),
            lambda node, request, result: self._altered(value, node, request, reassignments, result),
        )

    def _altered(
        self,
        value: Mapping[str, Any],
        node: SimNode,
        request: _Request,
        reassignments: Mapping[TopicPartition, Any],
        result: dict[TopicPartition, ApiError] | ApiError,
    ) -> None:
        done = request.stamped(value, controller=node.broker_id)
        if isinstance(result, ApiError):
            done["error_code"] = result.error
            kind = "fail" if result.error in NOT_DONE_CODES else "info"
            request.finish(kind, done, f"error {result.error}: {result.message}")
            return
        codes = [result[tp].error if tp in result else -2 for tp in reassignments]
        done["results"] = [
            {"topic": tp.topic, "partition": tp.partition, "error_code": c}
            for tp, c in zip(reassignments, codes, strict=True)
        ]
        errors = {f"{tp.topic}-{tp.partition}": c for tp, c in zip(reassignments, codes, strict=True) if c}
        request.finish(outcome(codes), done, str(errors) if errors else None)

    def _reassign_api(self, value: Mapping[str, Any], done: Done) -> None:
        topic = str(value["topic"])
        targets: list[Target] = [
            (TopicPartition(topic, int(p)), tuple(int(b) for b in r)) for p, r in value["assignment"].items()
        ]
        self._alter(value, targets, done)

    def _cancel_reassignment(self, value: Mapping[str, Any], done: Done) -> None:
        topic = str(value["topic"])
        targets: list[Target] = [(TopicPartition(topic, int(p)), None) for p in value["partitions"]]
        self._alter(value, targets, done)

    # ---- ListPartitionReassignments -----------------------------------------------------------------
    def _list_reassignments(self, value: Mapping[str, Any], done: Done) -> None:
        named = None if value.get("partitions") is None else frozenset(_named(value))

        def listed(node: SimNode, request: _Request, result: Any) -> None:
            out = request.stamped(value, controller=node.broker_id)
            if isinstance(result, ApiError):
                out["error_code"] = result.error
                request.finish("fail", out, f"error {result.error}: {result.message}")
                return
            out["reassigning"] = [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(a.replicas),
                    "adding": list(a.adding),
                    "removing": list(a.removing),
                }
                for tp, a in sorted(result.items())
            ]
            request.finish("ok", out, None)

        self._ask_controller(
            "ListPartitionReassignments",
            done,
            lambda node, reply: node.put(ListPartitionReassignments(named, reply)),
            listed,
        )

    # ---- ElectLeaders -----------------------------------------------------------------------------
    def _elect_leaders(self, value: Mapping[str, Any], done: Done) -> None:
        found = self._to_controller("ElectLeaders", done)
        if found is None:
            return
        node, request = found
        kind = ElectionType[str(value["election_type"])]
        named = _named(value)

        def arrive(answer: Callable[[Callable[[], None]], None]) -> None:
            def reply(results: Mapping[TopicPartition, ApiError | int]) -> None:
                self._await_leaders(
                    node, request, dict(results), lambda codes: answer(lambda: elected(codes))
                )

            node.put(
                ReplicaLeaderElection(frozenset(named), kind, ElectionTrigger.ADMIN_CLIENT_TRIGGERED, reply)
            )

        def elected(codes: Mapping[TopicPartition, int]) -> None:
            answered = [codes.get(tp, -2) for tp in named]
            results = [
                {"topic": tp.topic, "partition": tp.partition, "error_code": c}
                for tp, c in zip(named, answered, strict=True)
            ]
            errors = [f"{tp.topic}-{tp.partition}: {c}" for tp, c in zip(named, answered, strict=True) if c]
            request.finish(
                outcome(answered), request.stamped(value, results=results), "; ".join(errors) or None
            )

        self._send(node, request, arrive)

    def _await_leaders(
        self,
        node: SimNode,
        request: _Request,
        results: dict[TopicPartition, ApiError | int],
        then: Callable[[dict[TopicPartition, int]], None],
    ) -> None:
        """DelayedElectLeader: an elected partition is answered once ``node``'s metadata cache shows
        its new leader (the client gives up first if it never does)."""
        codes = {tp: r.error for tp, r in results.items() if isinstance(r, ApiError)}
        expected = {tp: r for tp, r in results.items() if not isinstance(r, ApiError)}
        life = node.incarnation

        def shown(tp: TopicPartition) -> bool:
            cache = node.context.metadata_cache if node.context is not None else None
            state = cache.partition_state(tp) if cache is not None else None
            return state is not None and state.leader == expected[tp]

        def look() -> None:
            if request.finished or node.incarnation != life or not node.running:
                return
            if node.paused or not all(shown(tp) for tp in expected):
                self.world.at(ELECT_POLL_MS, look)
                return
            then({**codes, **dict.fromkeys(expected, 0)})

        look()

    # ---- IncrementalAlterConfigs ----------------------------------------------------------------
    def _alter_topic_config(self, value: Mapping[str, Any], done: Done) -> None:
        self._alter_configs((TOPIC, str(value["topic"])), value, done, None)

    def _alter_broker_config(self, value: Mapping[str, Any], done: Done) -> None:
        entity = str(value["entity"])
        if entity == "<default>":
            self._alter_configs((BROKER, ""), value, done, None)
        else:  # a broker's own config goes to that broker (librdkafka routes it there)
            self._alter_configs((BROKER, entity), value, done, int(entity))

    def _alter_configs(
        self, resource: tuple[int, str], value: Mapping[str, Any], done: Done, broker: int | None
    ) -> None:
        reachable = [
            n
            for _, n in sorted(self.world.nodes.items())
            if n.running
            and not n.paused
            and n.context is not None
            and not self.world.link(f"CLIENT_{n.broker_id}").cut
            and broker in (None, n.broker_id)
        ]
        target = self.world.nodes.get(broker) if broker is not None else None
        if broker is not None and (target is None or not target.running):
            done("fail", None, f"not sent: broker {broker} is not running (connection refused)")
            return
        if not reachable:
            done("info", None, "IncrementalAlterConfigs timed out: no broker reachable")
            return
        node = self.world.rng.choice(reachable) if broker is None else reachable[0]
        request = _Request(self.world, "IncrementalAlterConfigs", done)
        changes = [
            Change(str(name), None if setting is None else str(setting), DELETE if setting is None else SET)
            for name, setting in value["config"].items()
        ]

        def arrive(answer: Callable[[Callable[[], None]], None]) -> None:
            if node.context is None or not self.world.zk_connected(node):
                return  # the handler blocks on ZooKeeper: the client times out
            error = IncrementalAlterConfigs(node.context).alter_resource(resource, changes, False)
            answer(lambda: answered(error))

        def answered(error: ApiError) -> None:
            if error.error == 0:
                request.finish("ok", request.stamped(value), None)
                return
            kind = "fail" if error.error in NOT_DONE_CODES else "info"
            request.finish(kind, None, f"IncrementalAlterConfigs: error {error.error}: {error.message}")

        self._send(node, request, arrive)
