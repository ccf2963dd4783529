"""A deterministic test cluster: reference controllers on one in-memory ZooKeeper (test helper).

Each `Node` is a broker: a ZooKeeper session with a registered `/brokers/ids/<id>` and a
`KafkaController`. `Cluster.run()` delivers fired watches and self-enqueued events (zero-delay
`ScheduleEvent`s) to every live node until nothing is pending, like the real event threads would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_controller import zkdata as zd
from reference_controller.config import KafkaConfig
from reference_controller.controller.core import KafkaController
from reference_controller.controller.effects import (
    Effect,
    LeaderAndIsrRequest,
    ScheduleEvent,
    SendRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from reference_controller.controller.events import (
    ControllerEvent,
    Expire,
    RegisterBrokerAndReelect,
    Startup,
    TopicDeletionStopReplicaResponseReceived,
)
from reference_controller.controller.ports import CreateOp, SetDataOp
from reference_controller.testing.clock import ManualClock
from reference_controller.testing.memory_zk import MemoryZkClient, MemoryZooKeeper
from reference_controller.zkdata import BrokerInfo, EndPoint, LeaderAndIsr


def make_config(broker_id: int, **overrides: str) -> KafkaConfig:
    props = {
        "broker.id": str(broker_id),
        "zookeeper.connect": "localhost:2181",
        "log.dirs": f"/tmp/kafka-{broker_id}",
        "listeners": f"PLAINTEXT://127.0.0.1:{9090 + broker_id}",
    }
    props.update(overrides)
    return KafkaConfig.from_properties(props)


def broker_info(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + broker_id),), timestamp_ms=1)


def register_broker(client: MemoryZkClient, broker_id: int) -> int:
    """Kafka's `registerBroker`: multi[create ephemeral (null), setData @0]; returns czxid."""
    path = zd.broker_path(broker_id)
    results = client.multi(
        [CreateOp(path, None, ephemeral=True), SetDataOp(path, zd.encode_broker(broker_info(broker_id)), 0)]
    )
    assert all(r.ok for r in results), results
    found = client.server.get(path)
    assert found is not None
    return found[1].czxid


@dataclass
class Node:
    broker_id: int
    client: MemoryZkClient
    controller: KafkaController
    alive: bool = True
    queue: list[ControllerEvent] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    timers: dict[str, ScheduleEvent] = field(default_factory=dict)

    def requests(self) -> list[SendRequest]:
        return [e for e in self.effects if isinstance(e, SendRequest)]


class Cluster:
    def __init__(self, auto_delete_responses: bool = False, **config_overrides: str) -> None:
        self.auto_delete_responses = auto_delete_responses
        self.zk = MemoryZooKeeper()
        self.admin = self.zk.client()
        self.clock = ManualClock()
        self.config_overrides = config_overrides
        self.nodes: dict[int, Node] = {}
        for path in zd.PERSISTENT_PATHS:
            self.admin.create_recursive(path, None)

    # ---- brokers --------------------------------------------------------------------------
    def start(self, *broker_ids: int, run: bool = True) -> None:
        for broker_id in broker_ids:
            old = self.nodes.get(broker_id)
            client = old.client if old is not None and not old.alive else self.zk.client()
            epoch = register_broker(client, broker_id)
            config = make_config(broker_id, **self.config_overrides)
            node = Node(broker_id, client, KafkaController(config, client, self.clock, epoch))
            self.nodes[broker_id] = node
            node.queue.append(Startup())
        if run:
            self.run()

    def kill(self, broker_id: int, run: bool = True) -> None:
        """Hard kill: the node stops processing; its session expires (ephemerals go)."""
        node = self.nodes[broker_id]
        node.alive = False
        node.queue.clear()
        self.zk.expire_session(node.client)
        node.client.drain_events()
        if run:
            self.run()

    def controller(self) -> Node:
        active = [n for n in self.nodes.values() if n.alive and n.controller.is_active]
        assert len(active) == 1, [n.broker_id for n in active]
        return active[0]

    # ---- event loop -----------------------------------------------------------------------
    def process(self, node: Node, event: ControllerEvent) -> list[Effect]:
        effects = node.controller.process(event)
        node.effects.extend(effects)
        for effect in effects:
            if isinstance(effect, ScheduleEvent):
                if effect.key.startswith("enqueue:"):
                    node.queue.append(effect.event)
                else:
                    node.timers[effect.key] = effect
            elif self.auto_delete_responses and isinstance(effect, SendRequest):
                self._respond_to_stop_replica(node, effect)
        node.queue.extend(node.client.drain_events())
        return effects

    def _respond_to_stop_replica(self, node: Node, effect: SendRequest) -> None:
        request = effect.request
        if isinstance(request, StopReplicaRequest) and request.delete_partitions:
            target = self.nodes.get(request.broker_id)
            if target is not None and target.alive:
                errors = tuple((tp, 0) for tp in request.partitions)
                node.queue.append(TopicDeletionStopReplicaResponseReceived(request.broker_id, 0, errors))

    def expire(self, broker_id: int, run: bool = True) -> None:
        """Session expiry of a live node: Expire, re-register (new czxid), RegisterBrokerAndReelect."""
        node = self.nodes[broker_id]
        node.queue.clear()
        self.zk.expire_session(node.client)
        node.client.drain_events()
        self.process(node, Expire())
        epoch = register_broker(node.client, broker_id)
        node.queue.append(RegisterBrokerAndReelect(epoch))
        if run:
            self.run()

    def run(self, max_steps: int = 10_000) -> None:
        for _ in range(max_steps):
            for node in self.nodes.values():
                if node.alive:
                    node.queue.extend(node.client.drain_events())
            pending = [n for n in self.nodes.values() if n.alive and n.queue]
            if not pending:
                return
            for node in pending:
                self.process(node, node.queue.pop(0))
        raise AssertionError("cluster did not quiesce")

    # ---- admin ----------------------------------------------------------------------------
    def create_topic(self, topic: str, assignment: dict[int, list[int]], run: bool = True) -> None:
        self.admin.create_recursive(zd.config_topic_path(topic), zd.encode_topic_config({}))
        partitions = {p: zd.ReplicaAssignment(tuple(r)) for p, r in assignment.items()}
        self.admin.create_recursive(zd.topic_path(topic), zd.encode_topic(partitions))
        if run:
            self.run()

    def state(self, topic: str, partition: int) -> tuple[LeaderAndIsr, int]:
        found = self.zk.get(zd.partition_state_path(topic, partition))
        assert found is not None, f"no state znode for {topic}-{partition}"
        decoded = zd.decode_partition_state(found[0], found[1].version, "state")
        return decoded.leader_and_isr, decoded.controller_epoch

    def expand_isr(self, topic: str, partition: int, isr: list[int], run: bool = True) -> None:
        """What a partition leader does: conditional setData of the state znode (same leader_epoch)."""
        lai, controller_epoch = self.state(topic, partition)
        new = LeaderAndIsr(lai.leader, lai.leader_epoch, tuple(isr), lai.zk_version)
        result = self.admin.set_data(
            zd.partition_state_path(topic, partition),
            zd.encode_partition_state(new, controller_epoch),
            lai.zk_version,
        )
        assert result.ok, result
        if run:
            self.run()

    def topic_assignment(self, topic: str) -> dict[int, zd.ReplicaAssignment]:
        found = self.zk.get(zd.topic_path(topic))
        assert found is not None
        return dict(zd.decode_topic(topic, found[0]).partitions)


def leader_and_isr_requests(effects: list[Effect]) -> list[LeaderAndIsrRequest]:
    return [
        e.request
        for e in effects
        if isinstance(e, SendRequest) and isinstance(e.request, LeaderAndIsrRequest)
    ]


def update_metadata_requests(effects: list[Effect]) -> list[UpdateMetadataRequest]:
    return [
        e.request
        for e in effects
        if isinstance(e, SendRequest) and isinstance(e.request, UpdateMetadataRequest)
    ]


def stop_replica_requests(effects: list[Effect]) -> list[StopReplicaRequest]:
    return [
        e.request for e in effects if isinstance(e, SendRequest) and isinstance(e.request, StopReplicaRequest)
    ]
