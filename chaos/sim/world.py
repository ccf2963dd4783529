"""The simulated world: a virtual clock, one event heap, one seeded RNG, the nodes, the
ZooKeeper, and the network between them (ring: drivers — a simulated one; no threads, sockets
or wall-clock time).

Time jumps from one scheduled callback to the next (``run_until``). Every message travels over a
named link, named as the real run's Toxiproxy proxies (:func:`chaos.generator.link_names`):
``ZK_<x>`` node x ↔ ZooKeeper (watch notifications; while cut, the node's controller blocks on
ZooKeeper as kazoo's calls do, and after ``zookeeper.session.timeout.ms`` the server expires the
session), ``CTRL_<x>_<y>`` controller x → broker y, ``CLIENT_<y>`` clients → broker y. Each
connection is FIFO (a message never overtakes an earlier one on the same link); a link can be
cut (blackhole, down, reset: nothing passes; a controller's send thread retries every 100 ms as
Kafka's does) or slowed (latency, bandwidth, slicer: added delay).

A controller channel is Kafka's RequestSendThread: one request in flight per broker, the next
sent when its answer is back; what each broker received and answered is journalled as the
real run's request proxies journal it (:class:`~chaos.checkers.final_state.ReceivedRequest`).
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from chaos.checkers.final_state import ReceivedRequest, RequestPartition
from chaos.sim.node import SimNode
from chaos.sim.zk import SimZooKeeper
from reference_controller.controller.driver import wire
from reference_controller.controller.driver.channel import request_version
from reference_controller.controller.effects import (
    BrokerRequest,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from reference_controller.controller.events import ControllerEvent
from reference_controller.testing.memory_zk import MemoryZkClient
from reference_controller.zkdata import BrokerInfo

__all__ = ["World"]

BACKOFF_MS = 100  # RequestSendThread's reconnect backoff
START_MS = 1_700_000_000_000
DATA = Path("/simulated")  # the nodes' log dirs: paths in their MemoryStorage, never on disk
KINDS = {
    LeaderAndIsrRequest: "LeaderAndIsr",
    UpdateMetadataRequest: "UpdateMetadata",
    StopReplicaRequest: "StopReplica",
}


@dataclass
class Link:
    cut: int = 0  # how many active faults cut it
    delay_ms: int = 0  # added by slowing faults
    last_ms: int = 0  # FIFO: no delivery before the previous one on this link


@dataclass
class Channel:
    """One controller → broker connection and its queue (RequestSendThread)."""

    broker: BrokerInfo
    queue: deque[BrokerRequest] = field(default_factory=deque)
    busy: bool = False
    open: bool = True


class World:
    """Clock, heap, network and nodes of one simulated run (module docstring)."""

    def __init__(self, seed: int, broker_ids: tuple[int, ...], props: dict[str, str]) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = START_MS
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0
        self.session_timeout_ms = int(props["zookeeper.session.timeout.ms"])
        self.zk = SimZooKeeper(lambda: self.now, self.session_timeout_ms)
        self.links: dict[str, Link] = {}
        self.nodes = {b: SimNode(b, props, DATA / f"node-{b}", self) for b in broker_ids}
        self.channels: dict[tuple[int, int], Channel] = {}
        self.journals: dict[int, list[ReceivedRequest]] = {b: [] for b in broker_ids}
        #: every controller request a broker handled, whole: (time, sender, broker, version, request,
        #: response), and every ControlledShutdown answer (version -1) — what the differential mode
        #: compares (the journals keep only what the checkers read)
        self.exchanges: list[tuple[int, int, int, int, object, object]] = []
        self._timers: dict[tuple[int, str], int] = {}
        self._kicked: set[int] = set()
        self._correlation = 0
        self._parts: dict[tuple[str, int, int | None, int | None, int | None], RequestPartition] = {}
        self.disconnected_since: dict[int, int] = {}
        self.expired: set[int] = set()  # nodes whose session the server expired while cut off

    # ---- clock ----------------------------------------------------------------------------------
    def now_ms(self) -> int:
        return self.now

    def at(self, delay_ms: int, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self.now + max(0, delay_ms), self._seq, action))

    def run_until(self, end_ms: int, stop: Callable[[], bool] | None = None) -> None:
        heap, pop, zk = self._heap, heapq.heappop, self.zk
        while heap and heap[0][0] <= end_ms:
            when, _, action = pop(heap)
            self.now = max(self.now, when)
            action()
            if zk.watch_events_pending:  # the common case: no session has a watch event waiting
                self.pump_watches()
            if stop is not None and stop():
                return
        self.now = max(self.now, end_ms)

    def pending(self) -> int:
        return len(self._heap)

    # ---- links ----------------------------------------------------------------------------------
    def link(self, name: str) -> Link:
        link = self.links.get(name)
        if link is None:  # made on first use only (a hot path: no Link built to be thrown away)
            link = self.links[name] = Link()
        return link

    def deliver_at(self, name: str) -> int | None:
        """When a message sent now on ``name`` arrives (FIFO), or None: the link is cut."""
        link = self.link(name)
        if link.cut:
            return None
        when = max(self.now + 1 + self.rng.randrange(3) + link.delay_ms, link.last_ms)
        link.last_ms = when
        return when

    def zk_connected(self, node: SimNode) -> bool:
        return node.running and not node.paused and not self.link(f"ZK_{node.broker_id}").cut

    # ---- nodes (the Host protocol) ------------------------------------------------------------------
    def new_session(self) -> MemoryZkClient:
        return self.zk.client()

    def kick(self, node: SimNode) -> None:
        if node.broker_id in self._kicked or not node.queue or not self.zk_connected(node):
            return
        self._kicked.add(node.broker_id)
        life = node.incarnation

        def run() -> None:
            self._kicked.discard(node.broker_id)
            if node.incarnation == life and self.zk_connected(node):
                node.process_next()
            self.kick(node)  # the next event, or the first of a new life

        self.at(1, run)

    def set_timer(self, node: SimNode, key: str, delay_ms: int, event: ControllerEvent) -> None:
        self._seq += 1
        token = self._seq
        self._timers[(node.broker_id, key)] = token
        life = node.incarnation

        def fire() -> None:
            if self._timers.get((node.broker_id, key)) == token and node.incarnation == life and node.running:
                del self._timers[(node.broker_id, key)]
                node.put(event)

        self.at(delay_ms, fire)

    def cancel_timer(self, node: SimNode, key: str | None) -> None:
        for k in [k for k in self._timers if k[0] == node.broker_id and (key is None or k[1] == key)]:
            del self._timers[k]

    # ---- ZooKeeper watches and sessions -------------------------------------------------------------
    def pump_watches(self) -> None:
        self._pump_watches()
        # events left (a node cut off from ZooKeeper) are pumped again after every action
        self.zk.watch_events_pending = any(n.zk is not None and n.zk.events for n in self.nodes.values())

    def _pump_watches(self) -> None:
        for node in self.nodes.values():
            if node.zk is None or not node.zk.events or not self.zk_connected(node):
                continue
            for event in node.zk.drain_events():
                when = self.deliver_at(f"ZK_{node.broker_id}")
                if when is None:
                    return
                self._put_at(node, when, event)
            self.kick(node)

    def _put_at(self, node: SimNode, when: int, event: ControllerEvent) -> None:
        life = node.incarnation

        def put() -> None:
            if node.incarnation == life and node.running:
                node.put(event)

        self.at(when - self.now, put)

    def lose_zookeeper(self, node: SimNode) -> None:
        """The node stops talking to ZooKeeper (cut, paused, killed): the session expires on the
        server after the session timeout unless the node is back by then."""
        bid = node.broker_id
        if bid in self.disconnected_since or node.zk is None:
            return
        since = self.disconnected_since[bid] = self.now
        client, session = node.zk, node.zk.session

        def expire() -> None:
            if client.session != session or session not in self.zk.sessions:
                return
            if node.zk is client and self.disconnected_since.get(bid) != since:
                return  # back in time (a later disconnection has its own timer)
            self.zk.server_expire(client)
            if node.zk is client:
                self.expired.add(bid)

        self.at(self.session_timeout_ms, expire)

    def regain_zookeeper(self, node: SimNode, *, link_broke: bool = False) -> None:
        """The node talks to ZooKeeper again: a new session after an expiry (LOST, CONNECTED and a
        registration), else kazoo's reconnect (watches lost, `ZkReconnected`). ``link_broke``: the
        connection itself was cut, so the watch notifications the server sent meanwhile went down
        with it (the reconnect's re-reads stand for them); a paused process reads them from its
        socket when it resumes, before the reconnect (kazoo reads the old socket first), so the
        reconnect's re-runs see what they already told it."""
        bid = node.broker_id
        if bid not in self.disconnected_since or not self.zk_connected(node):
            return
        del self.disconnected_since[bid]
        if node.zk is None:
            return
        if bid in self.expired:
            self.expired.discard(bid)
            self.zk.reconnect_expired(node.zk)
            self.register_when_possible(node)
        else:
            held = node.zk.drain_events()
            if not link_broke:  # a resumed node reads what its socket holds before it reconnects
                for event in held:
                    node.put(event)
            node.zk.drop_watches()
        self.kick(node)

    def register_when_possible(self, node: SimNode, first: bool = False) -> None:
        """Register (again) once an earlier session's znode is gone, retrying every 100 ms."""
        life = node.incarnation

        def attempt() -> None:
            if node.incarnation != life or not node.running or node.registered:
                return
            if not self.zk_connected(node):
                self.at(BACKOFF_MS, attempt)
                return
            done = node.try_register() if first else node.reregister()
            if not done:
                self.at(BACKOFF_MS, attempt)

        self.at(0, attempt)

    # ---- controller channels -------------------------------------------------------------------------
    def open_channel(self, node: SimNode, broker: BrokerInfo) -> None:
        old = self.channels.get((node.broker_id, broker.broker_id))
        if old is not None:
            old.open = False
        self.channels[(node.broker_id, broker.broker_id)] = Channel(broker)

    def close_channel(self, node: SimNode, broker_id: int | None) -> None:
        for key in [k for k in self.channels if k[0] == node.broker_id and broker_id in (None, k[1])]:
            self.channels.pop(key).open = False

    def send(self, node: SimNode, request: BrokerRequest) -> None:
        channel = self.channels.get((node.broker_id, request.broker_id))
        if channel is None:
            return  # Kafka logs "not in the set of live brokers" and drops it
        channel.queue.append(request)
        self._pump_channel(node, channel)

    def _pump_channel(self, node: SimNode, channel: Channel) -> None:
        if channel.busy or not channel.queue or not channel.open:
            return
        channel.busy = True
        self._attempt(node, channel, channel.queue[0])

    def _attempt(self, node: SimNode, channel: Channel, request: BrokerRequest) -> None:
        name = f"CTRL_{node.broker_id}_{request.broker_id}"
        when = self.deliver_at(name)
        broker = self.nodes.get(request.broker_id)
        if when is None or broker is None:
            self.at(BACKOFF_MS, lambda: self._retry(node, channel, request))
            return
        self.at(when - self.now, lambda: self._arrive(node, channel, request, broker))

    def _retry(self, node: SimNode, channel: Channel, request: BrokerRequest) -> None:
        if channel.open and node.running:
            self._attempt(node, channel, request)

    def _arrive(self, node: SimNode, channel: Channel, request: BrokerRequest, broker: SimNode) -> None:
        if not channel.open:
            return
        if not broker.running or broker.paused or self.link(f"CTRL_{node.broker_id}_{request.broker_id}").cut:
            self.at(BACKOFF_MS, lambda: self._retry(node, channel, request))  # connection refused / lost
            return
        sent_ms = self.now
        self._correlation += 1
        version = request_version(node.config, request)
        response = broker.handle(
            wire.api_key_of(request), version, self._correlation, wire.to_kio(request, version)
        )
        entry = self._journal(broker.broker_id, request, response, sent_ms)
        self.exchanges.append((sent_ms, node.broker_id, broker.broker_id, version, request, response))
        back = self.deliver_at(f"CTRL_{node.broker_id}_{request.broker_id}")
        if back is None:  # the answer is lost with the connection: resent after reconnecting
            self.at(BACKOFF_MS, lambda: self._retry(node, channel, request))
            return
        self.at(back - self.now, lambda: self._answered(node, channel, request, response, entry))

    def _answered(
        self, node: SimNode, channel: Channel, request: BrokerRequest, response: object, entry: int
    ) -> None:
        if not channel.open or not node.running:
            return
        if node.paused:  # a paused controller reads its socket once it runs again
            self.at(BACKOFF_MS, lambda: self._answered(node, channel, request, response, entry))
            return
        channel.queue.popleft()
        channel.busy = False
        event = wire.response_event(request, response)
        if event is not None:
            node.put(event)
        self._pump_channel(node, channel)

    def _journal(self, broker_id: int, request: BrokerRequest, response: object, sent_ms: int) -> int:
        journal = self.journals[broker_id]
        errors = {
            (str(e.topic_name), int(e.partition_index)): int(e.error_code)
            for e in getattr(response, "partition_errors", ())
        }
        part = self._request_partition
        parts: tuple[RequestPartition, ...]
        if isinstance(request, StopReplicaRequest):
            parts = tuple(
                part(tp.topic, tp.partition, None, None, errors.get((tp.topic, tp.partition)))
                for tp in request.partitions
            )
        elif isinstance(request, LeaderAndIsrRequest):
            parts = tuple(
                part(s.topic, s.partition, s.leader, s.leader_epoch, errors.get((s.topic, s.partition)))
                for s in request.partition_states
            )
        else:
            parts = tuple(
                part(s.topic, s.partition, s.leader, s.leader_epoch, None) for s in request.partition_states
            )
        journal.append(
            ReceivedRequest(
                seq=len(journal),
                source=request.controller_id,
                kind=KINDS[type(request)],
                controller_epoch=request.controller_epoch,
                broker_epoch=request.broker_epoch,
                error_code=int(getattr(response, "error_code", 0)),
                partitions=parts,
                delete_partitions=request.delete_partitions
                if isinstance(request, StopReplicaRequest)
                else None,
                # the transaction log's clock (time_ms), as a real run's journals share the host's
                sent_s=sent_ms / 1000,
                answered_s=sent_ms / 1000,  # a simulated broker answers at once
            )
        )
        return len(journal) - 1

    def _request_partition(
        self, topic: str, partition: int, leader: int | None, epoch: int | None, error: int | None
    ) -> RequestPartition:
        """One journalled partition; equal ones are one (immutable) object, as every broker is sent
        the same states over and over."""
        key = (topic, partition, leader, epoch, error)
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = RequestPartition(topic, partition, leader, epoch, error)
        return found
