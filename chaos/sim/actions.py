"""The workload ops and faults of a schedule, carried out in the simulated world (ring: drivers —
a simulated one).

The same vocabulary as :mod:`chaos.workload` and :mod:`chaos.nemesis`, with the same outcomes in
the history (``ok`` / ``fail`` / ``info`` with the resolved targets):

- workload: ``create_topic``, ``add_partitions``, ``reassign``, ``preferred_election``,
  ``delete_topic`` on an admin ZooKeeper session (the real client's own session, not proxied);
  ``create_topic_admin`` as the active controller's broker writes it (CreateTopics goes to the
  controller; it answers NOT_CONTROLLER when there is none or its CLIENT link is cut);
  ``broker_bounce`` = controlled shutdown, exit, start once unregistered; the admin-API ops of
  the ``api-<n>`` processes in :mod:`chaos.sim.api_ops`;
- faults: link faults on the links the scope names (cut: blackhole, down, reset_peer; slowed:
  latency, bandwidth, slicer), ``kill`` / ``pause`` / ``terminate`` / ``restart``,
  ``zk_session_expire`` (the node's ZooKeeper link cut until the server expired its session).
  ``zk_member_kill`` and ``zk_leader_pause`` need an ensemble, which the model has not.

Every op completes through ``done(type, value, error)``, possibly later in virtual time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from chaos.generator import CONTROLLER
from chaos.sim.api_ops import ApiOps
from chaos.sim.node import SimNode
from chaos.sim.world import World
from reference_controller import zkdata
from reference_controller.controller.events import ControlledShutdown, ControlledShutdownResult
from reference_controller.controller.ports import CreateOp, SetDataOp, ZkCode
from reference_controller.node import admin
from reference_controller.node.admin import AdminError
from reference_controller.node.apis_admin import plan_creation
from reference_controller.node.zk_port import NodeZkError, create_recursive
from reference_controller.zkdata import ReplicaAssignment

__all__ = ["Actions", "Done", "slow_delay_ms"]

Done = Callable[[str, dict[str, Any] | None, str | None], None]
#: a fault's heal: undoes the fault, then calls its continuation when the heal is over (a killed
#: node's heal ends once the node is started again, as the real nemesis's stop returns then)
Heal = Callable[[Callable[[], None]], None]
CUTTING = ("blackhole", "down", "reset_peer")
SHUTDOWN_WAIT_MS = 5000


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Actions(ApiOps):
    """Workload ops and faults over one world (module docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.admin = world.zk.client()
        self.active: dict[str, tuple[Heal, dict[str, Any]]] = {}
        self.faulted: set[int] = set()  # nodes under a process fault or a bounce

    # ---- dispatch -------------------------------------------------------------------------------
    def invoke(self, f: str, value: Mapping[str, Any], done: Done) -> None:
        if f == "start_fault":
            self.start_fault(value, done)
        elif f == "stop_fault":
            active = self.active.pop(str(value["id"]), None)
            if active is None:
                done("fail", {"id": value["id"]}, "fault not active (it failed to start or was healed)")
                return
            heal, detail = active
            heal(lambda: done("ok", {"id": value["id"], **detail}, None))
        else:
            getattr(self, f"_{f}")(value, done)

    def heal_all(self) -> dict[str, Any]:
        healed = sorted(self.active)
        for fid in healed:
            self.active.pop(fid)[0](_nothing)
        restarted = [b for b, n in sorted(self.world.nodes.items()) if not n.running]
        for bid in restarted:
            self.start_node(self.world.nodes[bid])
        return {"healed": healed, "restarted": restarted, "errors": []}

    # ---- workload (the admin session) ---------------------------------------------------------------
    def _create_topic(self, value: Mapping[str, Any], done: Done) -> None:
        topic = str(value["topic"])
        assignment = {int(p): list(r) for p, r in value["assignment"].items()}
        zk = self.admin
        if zk.exists(zkdata.topic_path(topic)) is not None:
            return done("fail", None, "topic exists")
        config = _encode({"version": 1, "config": {}})
        if zk.set(SetDataOp(zkdata.config_topic_path(topic), config)).code == ZkCode.NONODE:
            create_recursive(zk, zkdata.config_topic_path(topic), config)
        created = create_recursive(
            zk,
            zkdata.topic_path(topic),
            zkdata.encode_topic({p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()}),
        )
        if created.code == ZkCode.NODEEXISTS:
            return done("fail", None, "topic exists")
        return done("ok", None, None)

    def _add_partitions(self, value: Mapping[str, Any], done: Done) -> None:
        topic = str(value["topic"])
        found = self.admin.get(zkdata.topic_path(topic))
        if found.stat is None:
            return done("fail", None, "topic does not exist")
        body = json.loads(found.data or b"{}")
        partitions: dict[str, list[int]] = body.get("partitions", {})
        new = {p: list(r) for p, r in value["assignment"].items() if p not in partitions}
        if len(partitions) + len(new) != int(value["partitions"]) or not new:
            return done(
                "fail", None, f"topic has {len(partitions)} partitions; cannot grow to {value['partitions']}"
            )
        body["partitions"] = {**partitions, **new}
        written = self.admin.set(SetDataOp(zkdata.topic_path(topic), _encode(body), found.stat.version))
        if not written.ok:
            return done("fail", None, "topic znode changed meanwhile")
        return done("ok", None, None)

    def _admin_create(self, path: str, data: bytes, busy: str, done: Done) -> None:
        created = create_recursive(self.admin, path, data)
        if created.code == ZkCode.NODEEXISTS:
            return done("fail", None, busy)
        return done("ok", None, None)

    def _reassign(self, value: Mapping[str, Any], done: Done) -> None:
        topic = str(value["topic"])
        if self.admin.exists(zkdata.topic_path(topic)) is None:
            return done("fail", None, "topic does not exist")
        parts = [
            {"topic": topic, "partition": int(p), "replicas": list(r)} for p, r in value["assignment"].items()
        ]
        body = _encode({"version": 1, "partitions": parts})
        return self._admin_create("/admin/reassign_partitions", body, "a reassignment is in progress", done)

    def _preferred_election(self, value: Mapping[str, Any], done: Done) -> None:
        parts = [{"topic": str(p["topic"]), "partition": int(p["partition"])} for p in value["partitions"]]
        body = _encode({"version": 1, "partitions": parts})
        busy = "a preferred replica election is in progress"
        return self._admin_create("/admin/preferred_replica_election", body, busy, done)

    def _delete_topic(self, value: Mapping[str, Any], done: Done) -> None:
        topic = str(value["topic"])
        if self.admin.exists(zkdata.topic_path(topic)) is None:
            return done("fail", None, "topic does not exist")
        created = self.admin.create(CreateOp(zkdata.delete_topic_path(topic), None))
        if created.code == ZkCode.NODEEXISTS:
            return done("fail", None, "topic is already marked for deletion")
        return done("ok", None, None)

    def _create_topic_admin(self, value: Mapping[str, Any], done: Done) -> None:
        controller = self.controller_node()
        if controller is None or controller.paused or self.world.link(f"CLIENT_{controller.broker_id}").cut:
            return done("fail", None, "NOT_CONTROLLER: no reachable controller")
        if controller.zk is None or controller.context is None or not self.world.zk_connected(controller):
            return done("info", None, "CreateTopics timed out")
        topic = str(value["topic"])
        # the node's own CreateTopics decision (metadata cache, -1 = the broker's defaults,
        # placement over its live brokers), then its write
        refused, assignment = plan_creation(
            controller.context, topic, int(value["partitions"]), int(value["replication_factor"]), {}
        )
        if refused is not None:
            return done("fail", None, f"CreateTopics: error {refused[0]}: {refused[1]}")
        try:
            admin.create_topic_with_assignment(controller.zk, topic, {}, assignment)
        except AdminError as exc:
            return done("fail", None, str(exc))
        except NodeZkError as exc:
            return done("info", None, str(exc))
        return done("ok", None, None)

    def _broker_bounce(self, value: Mapping[str, Any], done: Done) -> None:
        node = self.world.nodes[int(value["broker_id"])]
        if node.broker_id in self.faulted:
            return done("fail", None, f"node {node.broker_id} is under a process fault")
        if not node.running:
            return done("fail", None, f"node {node.broker_id} is not running")
        self.faulted.add(node.broker_id)

        def stopped() -> None:
            self.start_when_unregistered(node, lambda: self._released(node, done, {**value, "exit_code": 0}))

        self.controlled_shutdown(node, stopped)
        return None

    def _released(self, node: SimNode, done: Done, value: dict[str, Any]) -> None:
        self.faulted.discard(node.broker_id)
        done("ok", value, None)

    # ---- processes --------------------------------------------------------------------------------
    def controller_node(self) -> SimNode | None:
        found = self.admin.get(zkdata.CONTROLLER)
        if found.stat is None or found.data is None:
            return None
        return self.world.nodes.get(int(json.loads(found.data)["brokerid"]))

    def start_node(self, node: SimNode) -> None:
        node.start()
        self.world.disconnected_since.pop(node.broker_id, None)  # a new life, a new session
        self.world.expired.discard(node.broker_id)
        self.world.register_when_possible(node, first=True)

    def start_when_unregistered(self, node: SimNode, then: Callable[[], None]) -> None:
        """Start the node once its old registration is gone (the next life registers at once)."""

        def check() -> None:
            if node.running:  # started meanwhile (the final heal)
                then()
            elif self.admin.exists(zkdata.broker_path(node.broker_id)) is None:
                self.start_node(node)
                then()
            else:
                self.world.at(100, check)

        check()

    def controlled_shutdown(self, node: SimNode, then: Callable[[], None]) -> None:
        """SIGTERM: ControlledShutdown to the controller (answer awaited up to 5 s), then exit."""
        finished = [False]

        def finish(result: ControlledShutdownResult | None = None) -> None:
            if result is not None and controller is not None:  # the answer, for the differential mode
                self.world.exchanges.append(
                    (self.world.now, node.broker_id, controller.broker_id, -1, "ControlledShutdown", result)
                )
            if not finished[0]:
                finished[0] = True
                self.world.at(1, exit_now)  # the answer travels back; never inside the controller's event

        def exit_now() -> None:
            if node.running:
                node.stop(close_session=True)
            then()

        controller = self.controller_node()
        if controller is None or not controller.running or node.context is None:
            return finish()
        event = ControlledShutdown(node.broker_id, node.context.replica_manager.broker_epoch, finish)
        when = self.world.deliver_at(f"CTRL_{node.broker_id}_{controller.broker_id}")
        if when is not None:
            self.world.at(
                when - self.world.now, lambda: controller.put(event) if controller.running else None
            )
        self.world.at(SHUTDOWN_WAIT_MS, finish)
        return None

    # ---- faults -----------------------------------------------------------------------------------
    def start_fault(self, value: Mapping[str, Any], done: Done) -> None:
        kind = str(value["fault"])
        if kind in ("zk_member_kill", "zk_leader_pause"):
            return done("fail", dict(value), "no ZooKeeper ensemble in the simulation")
        target = value.get("node")
        node_id = self._resolve(target)
        if target is not None and node_id is None:
            return done("fail", dict(value), "no controller to target")
        resolved = {**value, "node": node_id} if target is not None else dict(value)
        if kind in ("kill", "pause", "terminate", "restart"):
            assert node_id is not None
            return self._process_fault(kind, self.world.nodes[node_id], resolved, done)
        if kind == "zk_session_expire":
            assert node_id is not None
            return self._session_expire(self.world.nodes[node_id], resolved, done)
        links = self._links(value, node_id)
        undo = self._cut(links) if kind in CUTTING else self._slow(links, value)
        self.active[str(value["id"])] = (_at_once(undo), {"links": links})
        return done("ok", {**resolved, "links": links}, None)

    def _resolve(self, target: object) -> int | None:
        if target == CONTROLLER:
            node = self.controller_node()
            return None if node is None else node.broker_id
        return None if target is None else int(str(target))

    def _links(self, value: Mapping[str, Any], node: int | None) -> list[str]:
        from chaos.generator import link_names  # noqa: PLC0415

        names = link_names(sorted(self.world.nodes))
        scope = value.get("scope")
        if scope == "link":
            return [str(value["link"])]
        if scope == "partition":
            side = {int(b) for b in value["minority"]}
            return [n for n in names if _crosses(n, side)]
        assert node is not None
        if scope == "zk":
            return [f"ZK_{node}"]
        return [n for n in names if node in _ends(n)]

    def _cut(self, links: list[str]) -> Callable[[], None]:
        for name in links:
            self.world.link(name).cut += 1
            self._zk_link_changed(name)

        def heal() -> None:
            for name in links:
                self.world.link(name).cut -= 1
                self._zk_link_changed(name)

        return heal

    def _slow(self, links: list[str], value: Mapping[str, Any]) -> Callable[[], None]:
        added = slow_delay_ms(value, self.world.rng.randint(0, int(value.get("jitter_ms", 0))))
        for name in links:
            self.world.link(name).delay_ms += added

        def heal() -> None:
            for name in links:
                self.world.link(name).delay_ms -= added

        return heal

    def _zk_link_changed(self, name: str) -> None:
        if not name.startswith("ZK_"):
            return
        node = self.world.nodes[_ends(name)[0]]
        if self.world.zk_connected(node):
            self.world.regain_zookeeper(node, link_broke=True)
        elif node.running:
            self.world.lose_zookeeper(node)

    def _process_fault(self, kind: str, node: SimNode, value: dict[str, Any], done: Done) -> None:
        if node.broker_id in self.faulted:
            return done("fail", value, f"node {node.broker_id} is already under a process fault or bounce")
        if not node.running:
            return done("fail", value, f"node {node.broker_id} is not running")
        self.faulted.add(node.broker_id)
        fid = str(value["id"])
        if kind == "pause":
            node.paused = True
            self.world.lose_zookeeper(node)
            self.active[fid] = (_at_once(lambda: self._resume(node)), {})
            return done("ok", value, None)
        if kind == "kill":
            node.stop(close_session=False)
            self.world.lose_zookeeper(node)
            self.active[fid] = (lambda then: self._restart(node, then), {})
            return done("ok", {**value, "exit_code": -9}, None)
        if kind == "terminate":  # the controlled shutdown runs while the schedule goes on
            exited: list[bool] = []
            waiting: list[Callable[[], None]] = []

            def on_exit() -> None:
                exited.append(True)
                while waiting:
                    waiting.pop()()

            def heal(then: Callable[[], None]) -> None:  # the real heal waits for the exit too
                waiting.append(lambda: self._restart(node, then))
                if exited:
                    on_exit()

            self.controlled_shutdown(node, on_exit)
            self.active[fid] = (heal, {})
            return done("ok", value, None)
        self.controlled_shutdown(  # restart: SIGTERM, then start again; nothing left to heal
            node, lambda: self.start_when_unregistered(node, lambda: self._released(node, done, value))
        )
        return None

    def _resume(self, node: SimNode) -> None:
        node.paused = False
        self.faulted.discard(node.broker_id)
        self.world.regain_zookeeper(node)
        self.world.kick(node)

    def _restart(self, node: SimNode, then: Callable[[], None]) -> None:
        """The heal of a kill or terminate: start the node once its registration is gone; the
        heal (and the node's process-fault claim) ends when it is started, as the real nemesis's."""

        def started() -> None:
            self.faulted.discard(node.broker_id)
            then()

        if node.running:
            return started()
        self.start_when_unregistered(node, started)
        return None

    def _session_expire(self, node: SimNode, value: dict[str, Any], done: Done) -> None:
        heal = self._cut([f"ZK_{node.broker_id}"])
        started = self.world.now

        def check() -> None:
            if node.broker_id in self.world.expired or not node.running:
                heal()
                done("ok", {**value, "expired_after_s": round((self.world.now - started) / 1000, 3)}, None)
            else:
                self.world.at(50, check)

        self.world.at(50, check)


def _nothing() -> None:
    return None


def _at_once(undo: Callable[[], None]) -> Heal:
    """A heal that is over as soon as ``undo`` returned (links, a pause)."""

    def heal(then: Callable[[], None]) -> None:
        undo()
        then()

    return heal


def slow_delay_ms(value: Mapping[str, Any], jitter_ms: int) -> int:
    """The delay a slowing fault adds to each message on its links, both ways (``jitter_ms``: the
    jitter drawn for this fault, once)."""
    if value["fault"] == "bandwidth":
        return 1000 // max(1, int(value.get("rate_kb_s", 1)))
    if value["fault"] == "slicer":
        return int(value.get("delay_us", 1000)) // 1000 * 4
    return int(value.get("latency_ms", 0)) + jitter_ms


def _ends(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.split("_")[1:])


def _crosses(name: str, side: set[int]) -> bool:
    ends = _ends(name)
    if name.startswith(("CTRL_", "FROM_")):
        return (ends[0] in side) != (ends[1] in side)
    return name.startswith("ZK_") and ends[0] in side
