"""The nemesis: fault packages that start and heal themselves (ring: drivers).

Jepsen's nemesis role (``../shared/guides/anchors-study.md`` §2.3): :meth:`Nemesis.start`
applies one fault described by a ``start_fault`` step's value (see :mod:`chaos.scenarios` for
the kinds) and keeps its heal; :meth:`Nemesis.stop` heals that fault; :meth:`Nemesis.heal_all`
heals everything still active (the final phase) and then puts back anything a composition of
faults may have left: every node running and resumed, every proxy enabled without toxics.

Each fault returns ``(type, value, error)`` for the history: ``ok`` with the resolved targets
(``"controller"`` → the broker id it was at that moment, the link names cut), or ``fail`` when
it could not apply (no controller, node already under a process fault, no ensemble member of
that kind) — a failed fault changed nothing.

Faults compose: link faults on one proxy stack (toxics have unique names per fault, a proxy
disabled by two faults comes back when both healed); process faults claim their node, so a
second process fault or a workload broker bounce on it fails instead of racing.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from chaos.links import ChaosCluster
from chaos.scenarios import LINK_FAULTS
from cluster.cluster import wait_for

__all__ = ["Ensemble", "FaultResult", "Nemesis", "NodeGuard", "start_when_unregistered"]

FaultResult = tuple[str, dict[str, Any], str | None]

#: The least the heal of ``terminate`` waits for the node's exit before it SIGKILLs it.
_EXITED_S = 0.05


class Ensemble(Protocol):
    """The ZooKeeper ensemble faults act on (``harness.zookeeper.ZooKeeperEnsemble``)."""

    @property
    def members(self) -> list[Any]: ...


class NodeGuard:
    """Which nodes a process fault or a broker bounce currently owns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[int] = set()

    def claim(self, bid: int) -> bool:
        with self._lock:
            if bid in self._busy:
                return False
            self._busy.add(bid)
            return True

    def release(self, bid: int) -> None:
        with self._lock:
            self._busy.discard(bid)


@dataclass
class _Active:
    fault_id: str
    heal: Callable[[], None]
    detail: dict[str, Any] = field(default_factory=dict)


_TOXIC: dict[str, Callable[[Mapping[str, Any]], tuple[str, dict[str, Any]]]] = {
    "latency": lambda v: ("latency", {"latency": v["latency_ms"], "jitter": v["jitter_ms"]}),
    "blackhole": lambda v: ("timeout", {"timeout": 0}),
    "reset_peer": lambda v: ("reset_peer", {"timeout": v["timeout_ms"]}),
    "bandwidth": lambda v: ("bandwidth", {"rate": v["rate_kb_s"]}),
    "slicer": lambda v: (
        "slicer",
        {"average_size": v["average_size"], "size_variation": v["size_variation"], "delay": v["delay_us"]},
    ),
}


class Nemesis:
    """Applies and heals faults on one :class:`ChaosCluster` (and its ensemble, if any)."""

    def __init__(
        self,
        cluster: ChaosCluster,
        guard: NodeGuard,
        *,
        ensemble: Ensemble | None = None,
        expiry_deadline_s: float = 20.0,
    ) -> None:
        self.cluster, self.guard, self.ensemble = cluster, guard, ensemble
        self.expiry_deadline_s = expiry_deadline_s
        self.active: dict[str, _Active] = {}
        self._down: dict[str, int] = {}
        self._touched: set[str] = set()

    # --- entry points ---------------------------------------------------------------------------

    def start(self, value: Mapping[str, Any]) -> FaultResult:
        kind = str(value["fault"])
        if kind in LINK_FAULTS:
            return self._link_fault(value)
        if kind == "zk_session_expire":
            return self._session_expire(value)
        if kind in ("zk_member_kill", "zk_leader_pause"):
            return self._ensemble_fault(value)
        return self._process_fault(value)

    def stop(self, fault_id: str) -> FaultResult:
        active = self.active.pop(fault_id, None)
        if active is None:
            return "fail", {"id": fault_id}, "fault not active (it failed to start or was healed)"
        active.heal()
        return "ok", {"id": fault_id, **active.detail}, None

    def heal_all(self) -> dict[str, Any]:
        """Heal every active fault (newest first), then restore every node and proxy."""
        healed = list(reversed(self.active))
        errors: list[str] = []
        for fid in healed:
            try:
                self.stop(fid)
            except Exception as exc:
                errors.append(f"{fid}: {type(exc).__name__}: {exc}")
        self.active.clear()
        self._down.clear()
        for name in sorted(self._touched):
            proxy = self.cluster.fabric[name]
            with contextlib.suppress(Exception):
                for toxic in list(proxy.toxics()):
                    proxy.destroy_toxic(toxic)
                proxy.enable()
        restarted = self._restore_nodes(errors)
        return {"healed": healed, "restarted": restarted, "errors": errors}

    # --- targets --------------------------------------------------------------------------------

    def _node(self, value: Mapping[str, Any]) -> int | None:
        node = value.get("node")
        if node == "controller":
            return self.cluster.controller_id()
        return int(node) if node is not None else None

    def _links(self, value: Mapping[str, Any]) -> list[str] | str:
        fabric, scope = self.cluster.fabric, value["scope"]
        if scope == "link":
            return [str(value["link"])]
        if scope == "partition":
            return fabric.crossing(int(b) for b in value["minority"])
        node = self._node(value)
        if node is None:
            return "no controller to target"
        return fabric.zk_of(node) if scope == "zk" else fabric.of_node(node)

    # --- link faults ----------------------------------------------------------------------------

    def _link_fault(self, value: Mapping[str, Any]) -> FaultResult:
        links = self._links(value)
        if isinstance(links, str):
            return "fail", dict(value), links
        fid, kind = str(value["id"]), str(value["fault"])
        heals = [self._cut(name, fid, kind, value) for name in links]
        detail = {"links": links, "node": self._node(value) if value.get("node") is not None else None}
        self.active[fid] = _Active(fid, _all(reversed(heals)), detail)
        return "ok", {**value, **detail}, None

    def _cut(self, link: str, fid: str, kind: str, value: Mapping[str, Any]) -> Callable[[], None]:
        proxy = self.cluster.fabric[link]
        self._touched.add(link)
        if kind == "down":
            self._down[link] = self._down.get(link, 0) + 1
            proxy.disable()

            def enable() -> None:
                self._down[link] = self._down.get(link, 1) - 1
                if self._down[link] <= 0:
                    proxy.enable()

            return enable
        toxic_type, attributes = _TOXIC[kind](value)
        names = [f"{fid}_{stream}" for stream in ("upstream", "downstream")]
        for name, stream in zip(names, ("upstream", "downstream"), strict=True):
            proxy.add_toxic(type=toxic_type, stream=stream, name=name, attributes=attributes)

        def remove() -> None:
            for name in names:
                with contextlib.suppress(Exception):
                    proxy.destroy_toxic(name)

        return remove

    # --- ZooKeeper faults -----------------------------------------------------------------------

    def _session_expire(self, value: Mapping[str, Any]) -> FaultResult:
        """Blackhole the node's ZooKeeper links until its registration (an ephemeral of its
        session) is gone: the session expired. The heal restores the links."""
        node = self._node(value)
        if node is None:
            return "fail", dict(value), "no controller to target"
        fid = str(value["id"])
        heals = [self._cut(name, fid, "blackhole", value) for name in self.cluster.fabric.zk_of(node)]
        self.active[fid] = _Active(fid, _all(heals), {"node": node})
        started = time.monotonic()
        try:
            wait_for(
                lambda: not self.cluster.zk.exists(f"/brokers/ids/{node}"),
                self.cluster.deadline(self.expiry_deadline_s),
                f"/brokers/ids/{node} gone (session expired)",
                poll_s=0.1,
            )
        except AssertionError as exc:
            return "info", {**value, "node": node}, f"session not seen expiring: {exc}".splitlines()[0]
        return "ok", {**value, "node": node, "expired_after_s": round(time.monotonic() - started, 3)}, None

    def _ensemble_fault(self, value: Mapping[str, Any]) -> FaultResult:
        if self.ensemble is None:
            return "fail", dict(value), "no ZooKeeper ensemble in this run"
        members = self.ensemble.members
        leaders = [m for m in members if m.mode() == "leader"]
        if value["fault"] == "zk_leader_pause" or value.get("member") == "leader":
            if not leaders:
                return "fail", dict(value), "no ensemble leader right now"
            member = leaders[0]
        else:
            member = members[int(value["member"]) - 1]
        fid = str(value["id"])
        detail = {"member": member.name}
        if value["fault"] == "zk_leader_pause":
            member.pause()
            self.active[fid] = _Active(fid, member.resume, detail)
        else:
            member.kill()
            self.active[fid] = _Active(fid, lambda: member.start() and None, detail)
        return "ok", {**value, **detail}, None

    # --- process faults -------------------------------------------------------------------------

    def _process_fault(self, value: Mapping[str, Any]) -> FaultResult:
        node = self._node(value)
        if node is None:
            return "fail", dict(value), "no controller to target"
        if not self.guard.claim(node):
            return "fail", {**value, "node": node}, f"node {node} is already under a process fault or bounce"
        fid, kind, cluster = str(value["id"]), str(value["fault"]), self.cluster
        if not cluster.nodes[node].running:
            self.guard.release(node)
            return "fail", {**value, "node": node}, f"node {node} is not running"
        detail: dict[str, Any] = {"node": node}
        if kind == "kill":
            detail["exit_code"] = cluster.kill(node)
            heal = self._restart_heal(node)
        elif kind == "pause":
            cluster.pause(node)
            heal = self._released(node, lambda: cluster.resume(node))
        elif kind == "terminate":
            cluster.begin_stop(node)
            signalled = time.monotonic()
            heal = self._released(node, lambda: self._end_terminate(node, signalled, detail))
        else:  # restart
            detail.update(self._stop_or_kill(node))
            start_when_unregistered(cluster, node)
            self.guard.release(node)
            heal = _nothing
        self.active[fid] = _Active(fid, heal, detail)
        return "ok", {**value, **detail}, None

    def _stop_or_kill(self, node: int) -> dict[str, Any]:
        """SIGTERM (a controlled shutdown) and wait the target's stop timeout (:meth:`_exit_or_kill`)."""
        self.cluster.begin_stop(node)
        return self._exit_or_kill(node, self.cluster.target.stop_timeout_s)

    def _exit_or_kill(self, node: int, timeout_s: float) -> dict[str, Any]:
        """Wait up to ``timeout_s`` for a SIGTERMed node to exit; one still shutting down then is
        SIGKILLed, as a supervisor does after its grace period. Otherwise the node would exit on
        its own after the heal had already found it running, and stay down (a false liveness
        failure of the harness, not of the controller)."""
        try:
            return {"exit_code": self.cluster.await_stop(node, timeout_s)}
        except (TimeoutError, subprocess.TimeoutExpired):
            return {"exit_code": self.cluster.kill(node), "escalated_to_kill": True}

    def _end_terminate(self, node: int, signalled: float, detail: dict[str, Any]) -> None:
        """The heal of ``terminate``. The node was SIGTERMed when the fault began and ran its
        controlled shutdown while the schedule went on (other faults started and healed meanwhile,
        so a shutdown that needs a link another fault cut can finish once that fault ends). Here
        it gets what is left of the target's stop timeout since the signal to exit, then starts
        again once its registration is gone."""
        if self.cluster.nodes[node].proc is not None:
            left = self.cluster.target.stop_timeout_s - (time.monotonic() - signalled)
            detail.update(self._exit_or_kill(node, max(left, _EXITED_S)))
        start_when_unregistered(self.cluster, node)

    def _restart_heal(self, node: int) -> Callable[[], None]:
        def heal() -> None:
            if not self.cluster.nodes[node].running:
                start_when_unregistered(self.cluster, node)

        return self._released(node, heal)

    def _released(self, node: int, heal: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                heal()
            finally:
                self.guard.release(node)

        return run

    def _restore_nodes(self, errors: list[str]) -> list[int]:
        restarted = []
        for bid, node in self.cluster.nodes.items():
            try:
                if node.paused:
                    self.cluster.resume(bid)
                if not node.running:
                    start_when_unregistered(self.cluster, bid)
                    restarted.append(bid)
            except Exception as exc:
                errors.append(f"node {bid}: {type(exc).__name__}: {exc}")
        if self.ensemble is not None:
            for member in self.ensemble.members:
                with contextlib.suppress(Exception):
                    member.resume()
                    if not member.is_running():
                        member.start()
        return restarted


def start_when_unregistered(cluster: ChaosCluster, bid: int, deadline_s: float = 15.0) -> None:
    """Start node ``bid`` once its previous registration is gone.

    A killed node's ephemeral ``/brokers/ids/<id>`` lives until its session expires; a Kafka
    broker started before that finds it owned by another session and exits (Kafka 2.5
    ``checkedEphemeralCreate``), so a supervisor waits for the expiry — as this heal does.
    """
    with contextlib.suppress(AssertionError):
        wait_for(
            lambda: not cluster.zk.exists(f"/brokers/ids/{bid}"),
            cluster.deadline(deadline_s),
            f"/brokers/ids/{bid} gone before restarting it",
            poll_s=0.1,
        )
    cluster.start([bid], wait=False)


def _all(heals: Iterable[Callable[[], None]]) -> Callable[[], None]:
    steps = list(heals)

    def run() -> None:
        for heal in steps:
            heal()

    return run


def _nothing() -> None:
    return None
