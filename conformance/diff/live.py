"""A scenario's running cluster: nodes behind link gates, process states, evidence marks (conformance ring).

:class:`DiffCluster` wraps :class:`cluster.cluster.Cluster` (real nodes of a target, request and
ZooKeeper journals, the chroot's transaction log) for one scenario: every node's ZooKeeper link
goes through a :class:`~conformance.diff.zklink.LinkGate`, the harness keeps the state of every
node process (up, down, paused, expired — it is the one that changes it), and the controller every
choreographed move was meant to elect. :meth:`DiffCluster.start` brings the shape up with the
scenario's first controller as the only node that sees ZooKeeper until it has won.

Snapshots (:meth:`tree`, :meth:`metadata`) are read at the end of each step; marks
(:meth:`mark`) delimit each step's window of transaction-log records and controller requests.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kazoo.exceptions import NoNodeError
from kio.schema.metadata.v7.request import MetadataRequest

from cluster.cluster import Cluster
from cluster.targets import Target
from conformance.diff.scenario import Scenario
from conformance.diff.zklink import GateLoop, LinkGate, close_session
from harness.launcher import Launcher
from probes.request_proxy import send_request

__all__ = ["DIFF_PROFILE", "DiffCluster", "Mark", "TargetStartError"]

#: What differential runs set on every node, on top of the target's profile. Sessions never expire
#: by themselves (a kill closes the killed node's session at once, as its expiry would; the timeout
#: is well above a barrier's deadline, so a node paused through a slow step keeps its session); the first
#: auto-rebalance check stays Kafka's fixed 5 s after a failover and no later check follows.
DIFF_PROFILE: dict[str, str] = {
    "zookeeper.session.timeout.ms": "120000",
    "leader.imbalance.check.interval.seconds": "3600",
    # a node waits while its link is held at start-up (see DiffCluster.start)
    "zookeeper.connection.timeout.ms": "60000",
    # a leader drops a follower that stopped fetching only after the controller has reacted to its
    # death, even a failover's on a loaded machine: otherwise who removes it from the ISR (the
    # leader, without a leader-epoch bump, or the controller, with one) is a race Kafka leaves open
    "replica.lag.time.max.ms": "4000",
}
#: ``expired``: paused with its ZooKeeper session closed (``expire_session``, until it resumes)
ProcState = Literal["up", "down", "paused", "expired"]


class TargetStartError(RuntimeError):
    """A node of the target did not start (or exited) when the scenario needed it: a target error."""


@dataclass(frozen=True)
class Mark:
    records: int
    requests: int


class DiffCluster:
    def __init__(
        self,
        scenario: Scenario,
        target: Target,
        *,
        zk_connect: str,
        txn_log_dir: Path,
        chroot: str,
        base_dir: Path,
        launcher: Launcher | None = None,
        four_letter: Any = None,
        profile: str = "2.5",
    ) -> None:
        self.scenario, self.target, self.zk_connect = scenario, target, zk_connect
        self.loop = GateLoop()
        self.gates: dict[int, LinkGate] = {}
        self.state: dict[int, ProcState] = dict.fromkeys(scenario.broker_ids, "down")
        self.expected_controller = scenario.first_controller
        #: per node: the leader epoch of its phantom partition as the node last accepted it
        self.phantom_epoch: dict[int, int] = {}
        self.current_step = -1
        #: ZooKeeper paths the harness wrote in this step that the controller watches, with when
        self.triggers: list[tuple[str, float]] = []
        #: running nodes whose registration the harness deleted, until they register again
        self.unregistered: set[int] = set()
        #: node → its last registered CLIENT endpoint (:meth:`_client_endpoint`)
        self.client_endpoints: dict[int, tuple[str, int]] = {}
        #: step index → (topic, assignment) of an automatically placed topic (relabelled in its segment)
        self.auto_placed: dict[int, tuple[str, dict[int, list[int]]]] = {}

        def front(bid: int, address: tuple[str, int]) -> tuple[str, int]:
            self.gates[bid] = LinkGate(self.loop, address, held=bid != scenario.first_controller)
            return self.gates[bid].address

        try:
            self.cluster = Cluster(
                target,
                zk_connect_string=zk_connect,
                chroot=chroot,
                txn_log_dir=txn_log_dir,
                base_dir=base_dir,
                profile=profile,
                broker_ids=scenario.broker_ids,
                overrides=DIFF_PROFILE,
                node_overrides=scenario.nodes,
                zk_front=front,
                four_letter=four_letter,
                launcher=launcher,
                record_shutdowns=True,
            )
        except BaseException:
            self._close_gates()
            raise

    # --- processes ------------------------------------------------------------------------------

    def deadline(self, seconds: float) -> float:
        return self.target.deadline(seconds)

    def running(self, bid: int) -> bool:
        return self.state[bid] == "up"

    def up(self) -> list[int]:
        return [b for b, s in sorted(self.state.items()) if s == "up"]

    def start(self, settle: Callable[[], Any]) -> None:
        """Every node at once; only the first controller sees ZooKeeper until it has won and
        settled. The others then register while its own link is held, so it learns of them all
        in one BrokerChange (the order in which brokers register is otherwise a race)."""
        first = self.scenario.first_controller
        self.cluster.start(wait=False)
        self.state[first] = "up"  # the others count as down until their links open
        try:
            if not self.wait_controller(first, None, deadline_s=40.0):
                raise TargetStartError(f"node {first} did not become the first controller")
            self.wait_registered([first])
            settle()
            others = [b for b in self.scenario.broker_ids if b != first]
            held = self.hold([first])
            try:
                self.release(others)
                self.state.update(dict.fromkeys(others, "up"))
                self.wait_registered(others)
            finally:
                self.release(held)
        finally:
            for gate in self.gates.values():
                gate.release()

    def exited(self) -> str | None:
        """Which running node's process has exited, with its code and last output (else None)."""
        for b in self.up():
            node = self.cluster.nodes[b]
            code = node.proc.poll() if node.proc is not None else None
            if code is not None:
                tail = self.cluster.log_tail(b, "server", 5).strip().splitlines()[-3:]
                return f"node {b} exited with {code}" + (
                    f" (last output: {' | '.join(tail)})" if tail else ""
                )
        return None

    def _wait(self, condition: Callable[[], bool], deadline_s: float, what: str) -> bool:
        """Poll ``condition``; a node process that exits meanwhile is a :class:`TargetStartError`."""
        give_up = time.monotonic() + self.deadline(deadline_s)
        while time.monotonic() < give_up:
            gone = self.exited()
            if gone:
                raise TargetStartError(f"{gone} while waiting for {what}")
            with contextlib.suppress(Exception):  # a znode mid-write: look again
                if condition():
                    return True
            time.sleep(0.05)
        return False

    def wait_registered(self, ids: Iterable[int], deadline_s: float = 40.0) -> None:
        wanted = list(ids)
        zk = self.cluster.zk
        if not self._wait(
            lambda: all(zk.exists(f"/brokers/ids/{b}") for b in wanted), deadline_s, f"{wanted} to register"
        ):
            raise TargetStartError(f"nodes {wanted} did not register within {deadline_s:.0f} s")
        self.unregistered.difference_update(wanted)

    def controller_stat(self) -> tuple[int, int] | None:
        """(broker id, czxid) of ``/controller``."""
        try:
            data, stat = self.cluster.zk.get("/controller")
        except NoNodeError:
            return None
        try:
            return int(json.loads(data)["brokerid"]), int(stat.czxid)
        except (ValueError, KeyError, TypeError):
            return -1, int(stat.czxid)

    def wait_controller(self, broker_id: int, not_czxid: int | None, deadline_s: float = 30.0) -> bool:
        """Wait until ``broker_id`` holds a ``/controller`` other than the one created at ``not_czxid``."""

        def elected() -> bool:
            stat = self.controller_stat()
            return stat is not None and stat[0] == broker_id and stat[1] != not_czxid

        return self._wait(elected, deadline_s, f"node {broker_id} to hold /controller")

    def close_session_of(self, bid: int) -> bool:
        session = self.gates[bid].session
        return session is not None and close_session(self.zk_connect, session)

    def hold(self, ids: Iterable[int]) -> list[int]:
        held = list(ids)
        for b in held:
            self.gates[b].hold()
        return held

    def release(self, ids: Iterable[int]) -> None:
        for b in ids:
            self.gates[b].release()

    # --- evidence -------------------------------------------------------------------------------

    def mark(self) -> Mark:
        journal = self.cluster.journal
        return Mark(len(self.cluster.history()), journal.mark() if journal else 0)

    def actors(self) -> dict[int, str]:
        out: dict[int, str] = {}
        with contextlib.suppress(Exception):
            out[int(self.cluster.zk.client_id[0])] = "harness"
        for b, gate in self.gates.items():
            for session, _ in gate.sessions:
                out[session] = f"node-{b}"
        return out

    def tree(self) -> dict[str, tuple[bytes | None, int, int]]:
        """Every znode of the chroot: path → (data, data version, ephemeral owner)."""
        zk, out, level = self.cluster.zk, {}, ["/"]
        while level:
            gets = [(p, zk.get_async(p), zk.get_children_async(p)) for p in level]
            level = []
            for path, got, kids in gets:
                try:
                    data, stat = got.get(timeout=10)
                    children = kids.get(timeout=10)
                except NoNodeError:
                    continue
                if path not in {"/", "/zookeeper"}:
                    out[path] = (data, int(stat.version), int(stat.ephemeralOwner))
                if path != "/zookeeper":
                    level += [f"{path.rstrip('/')}/{c}" for c in sorted(children)]
        return out

    def _client_endpoint(self, b: int) -> tuple[str, int]:
        """Where node ``b`` takes clients: its registration's ``CLIENT`` endpoint, or, while it runs
        with its registration deleted by hand, the one it registered last (it still listens there)."""
        try:
            self.client_endpoints[b] = self.cluster.endpoint(b)
        except RuntimeError:
            if b not in self.client_endpoints:
                raise
        return self.client_endpoints[b]

    def metadata(self) -> dict[str, Any]:
        """Each running node's Metadata v7 answer (all topics)."""
        out: dict[str, Any] = {}
        for b in self.up():
            try:
                host, port = self._client_endpoint(b)
                out[str(b)] = send_request(
                    host, port, MetadataRequest(topics=None, allow_auto_topic_creation=False), 5.0
                )
            except (OSError, RuntimeError, ValueError) as exc:
                out[str(b)] = f"no answer: {type(exc).__name__}"
        return out

    def node_logs(self) -> Mapping[int, str]:
        return {b: self.cluster.log_tail(b, "server", 200) for b in self.scenario.broker_ids}

    # --- end ------------------------------------------------------------------------------------

    def _close_gates(self) -> None:
        for gate in self.gates.values():
            gate.close()
        self.loop.close()

    def close(self) -> None:
        """Kill every node, stop every proxy and gate; never raises."""
        with contextlib.suppress(Exception):
            self.cluster.close()
        self._close_gates()
