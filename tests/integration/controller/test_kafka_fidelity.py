"""Kafka 2.5.1 stories ported from ControllerIntegrationTest / LeaderElectionTest, black-box (ring: tests).

Real ZooKeeper, real node processes; observed through the znodes, ZooKeeper's transaction log
(every write of `t-0`'s state, so "never a third epoch" is a fact, not a sampled value), the
nodes' request journals and `state-change.log`.

- SHUTDOWN-3 (spec §12): a graceful stop of the preferred leader bumps the leader epoch once; the
  stopped broker adds no fetcher for what it is told to follow (Kafka's TRACE line), so its
  session ending changes nothing; restart, ISR rejoin, preferred election (admin znode or
  auto-rebalance) → epoch 2, never 3.
- ELECT-6 (spec §12): the controller reads topic configs when it elects for a partition with no
  live ISR member, so `unclean.leader.election.enable=true` written on a topic before a controller
  failover (no notification) is honoured by the next controller; without it the partition stays
  leaderless with its ISR kept.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from harness.zookeeper import ZooKeeperServer
from kafkawire.states import TopicPartition
from probes import ChrootView, TxnLogCursor, TxnRecord
from reference_controller import zkdata
from tests.node.helpers import NodeFactory, NodeProcess
from tests.polling import wait_for

pytestmark = [
    pytest.mark.integration,
]

STATE = zkdata.partition_state_path("t", 0)
UNCLEAN = "unclean.leader.election.enable"


@dataclass
class Story:
    """One test's cluster and observation channels; `report()` is printed with every failure."""

    zk: KazooClient
    chroot: str
    cursor: TxnLogCursor
    factory: NodeFactory
    nodes: dict[int, NodeProcess] = field(default_factory=dict)
    records: list[TxnRecord] = field(default_factory=list)

    def start(self, broker_id: int, overrides: dict[str, str]) -> NodeProcess:
        node = self.factory.start(broker_id, overrides)
        self.nodes[broker_id] = node
        self.wait(partial(self.zk.exists, zkdata.broker_path(broker_id)), 30, f"/brokers/ids/{broker_id}")
        return node

    def stop(self, broker_id: int) -> None:
        """SIGTERM: controlled shutdown, then exit 0 and the session closes."""
        node = self.nodes[broker_id]
        node.signal(signal.SIGTERM)
        code = node.wait(60)
        assert code == 0, f"broker {broker_id} exited {code}\n{self.report()}"
        self.wait(
            lambda: not self.zk.exists(zkdata.broker_path(broker_id)), 30, f"/brokers/ids/{broker_id} gone"
        )

    def state(self, path: str = STATE) -> dict[str, Any] | None:
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return None
        return {**json.loads(data), "zk_version": stat.version}

    def state_is(
        self, leader: int, leader_epoch: int, isr: list[int], path: str = STATE
    ) -> dict[str, Any] | None:
        s = self.state(path)
        return s if s and (s["leader"], s["leader_epoch"], s["isr"]) == (leader, leader_epoch, isr) else None

    def state_writes(self, path: str = STATE) -> list[dict[str, Any]]:
        """Every successful create/setData of `path` in the transaction log, decoded, in order."""
        self.records += ChrootView(self.chroot).filter(self.cursor.read())
        out = []
        for r in self.records:
            if r.failed:
                continue
            ops = r.ops if r.op == "multi" else (r.txn,)
            out += [
                json.loads(o.data or b"{}") for o in ops if o.path == path and o.op in ("create", "setData")
            ]
        return out

    def epochs(self, path: str = STATE) -> list[int]:
        return [w["leader_epoch"] for w in self.state_writes(path)]

    def wait(self, check: Any, timeout_s: float, what: str) -> Any:
        try:
            return wait_for(check, timeout_s, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.report()}") from None

    def report(self) -> str:
        lines = [f"{STATE}: {self.state()}", f"writes of {STATE}: {self.state_writes()}"]
        for bid, node in sorted(self.nodes.items()):
            lines.append(f"--- journal of broker {bid} (last 10) ---")
            lines += [json.dumps(e, separators=(",", ":")) for e in node.journal()[-10:]]
            if err := node.stderr().strip():
                lines.append(f"stderr of broker {bid}: {err[-600:]}")
        return "\n".join(lines)


@pytest.fixture
def story(
    tmp_path: Path, zk_connect: str, zk_server: ZooKeeperServer, zk_chroot: str, zk_client: KazooClient
) -> Iterator[Story]:
    factory = NodeFactory(tmp_path, zk_connect)
    try:
        yield Story(zk_client, zk_chroot, TxnLogCursor.at_end(zk_server.txn_log_dir), factory)
    finally:
        factory.close()


def controller_is(zk: KazooClient, broker_id: int) -> bool:
    try:
        return zkdata.decode_controller(zk.get(zkdata.CONTROLLER)[0]) == broker_id
    except NoNodeError:
        return False


def create_topic(zk: KazooClient, topic: str, replicas: tuple[int, ...], config: dict[str, str]) -> None:
    """AdminZkClient.createTopicWithAssignment: the config znode, then the topic znode."""
    zk.create(zkdata.config_topic_path(topic), zkdata.encode_topic_config(config), makepath=True)
    zk.create(zkdata.topic_path(topic), zkdata.encode_topic({0: zkdata.ReplicaAssignment(replicas)}))


def update_metadata_with_live(node: NodeProcess, after: int, live: list[int]) -> bool:
    """An UpdateMetadata naming exactly `live` among the node's journal lines from index `after`."""
    return any(
        e["api"] == "UpdateMetadata" and sorted(b["id"] for b in e["live_brokers"]) == live
        for e in node.journal()[after:]
    )


# ---- SHUTDOWN-3 ------------------------------------------------------------------------------------
def graceful_stop_of_the_preferred_leader(story: Story, overrides: dict[str, str]) -> None:
    """ControllerIntegrationTest: 2 brokers, controller 0, t assigned [1, 0]; stop 1 gracefully."""
    zk = story.zk
    story.start(0, overrides)
    story.wait(partial(controller_is, zk, 0), 30, "broker 0 as the controller")
    story.start(1, overrides)
    create_topic(zk, "t", (1, 0), {})
    story.wait(partial(story.state_is, 1, 0, [1, 0]), 30, "t-0 online: leader 1, epoch 0, ISR [1, 0]")

    seen = len(story.nodes[0].journal())
    story.stop(1)
    stopped = story.state()
    assert stopped is not None
    assert (stopped["leader"], stopped["leader_epoch"], stopped["isr"]) == (0, 1, [0]), story.report()
    assert stopped["controller_epoch"] == 1, story.report()
    # Evidence the controller handled broker 1's session end: UpdateMetadata with live brokers [0].
    story.wait(partial(update_metadata_with_live, story.nodes[0], seen, [0]), 30, "UpdateMetadata([0])")
    gone = story.state()
    assert gone == stopped, f"broker 1's session end changed t-0: {stopped} -> {gone}\n{story.report()}"
    assert story.epochs() == [0, 1], f"leader epochs written: {story.epochs()}\n{story.report()}"

    # Broker 1 is told to follow 0 at epoch 1 (recipients include shutting-down brokers); whether
    # that request arrives before it stops processing requests races with the ControlledShutdown
    # response, in Kafka too. When it arrived, the node added no fetcher and logged Kafka's TRACE.
    # (test_node_shutdown.py pins the line deterministically with a held ControlledShutdown.)
    told = [
        e["correlation_id"]
        for e in story.nodes[1].journal()
        if e["api"] == "LeaderAndIsr"
        and any((p["topic"], p["leader"], p["leader_epoch"]) == ("t", 0, 1) for p in e["partitions"])
    ]
    text = story.nodes[1].read("state-change.log")
    for cid in told:
        skipped = (
            f" TRACE [Broker id=1] Skipped the adding-fetcher step of the become-follower state change with "
            f"correlation id {cid} from controller 0 epoch 1 for partition t-0 with leader 0 since it is "
            f"shutting down (state.change.logger)"
        )
        assert skipped in text, text[-3000:]
    assert "Started fetcher to new leader" not in text, text[-3000:]


def restart_and_rejoin(story: Story, overrides: dict[str, str]) -> None:
    story.start(1, overrides)
    story.wait(partial(story.state_is, 0, 1, [0, 1]), 30, "broker 1 back in t-0's ISR at epoch 1")


def test_graceful_stop_restart_and_preferred_election_bump_the_leader_epoch_twice(story: Story) -> None:
    overrides = {"auto.leader.rebalance.enable": "false"}
    graceful_stop_of_the_preferred_leader(story, overrides)
    restart_and_rejoin(story, overrides)
    story.zk.create(
        zkdata.PREFERRED_REPLICA_ELECTION, zkdata.encode_preferred_election([TopicPartition("t", 0)])
    )
    story.wait(lambda: not story.zk.exists(zkdata.PREFERRED_REPLICA_ELECTION), 30, "the election handled")
    elected = story.wait(partial(story.state_is, 1, 2, [0, 1]), 30, "t-0: leader 1, epoch 2, ISR [0, 1]")
    assert elected["controller_epoch"] == 1, story.report()
    assert leader_epoch_changes(story.epochs()) == [0, 1, 2], f"epochs: {story.epochs()}\n{story.report()}"
    assert story.epochs()[-1] == 2, story.report()


def test_graceful_stop_restart_and_auto_rebalance_bump_the_leader_epoch_twice(story: Story) -> None:
    overrides = {"auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "1"}
    graceful_stop_of_the_preferred_leader(story, overrides)
    restart_and_rejoin(story, overrides)
    story.wait(partial(story.state_is, 1, 2, [0, 1]), 30, "t-0 rebalanced: leader 1, epoch 2, ISR [0, 1]")
    # Evidence of later controller work (events are handled in order, rebalance ticks included):
    # a topic created afterwards comes online; t-0's epoch history is still 0 -> 1 -> 2.
    create_topic(story.zk, "later", (0, 1), {})
    later = zkdata.partition_state_path("later", 0)
    story.wait(partial(story.state_is, 0, 0, [0, 1], later), 30, "topic 'later' online")
    assert leader_epoch_changes(story.epochs()) == [0, 1, 2], f"epochs: {story.epochs()}\n{story.report()}"
    assert story.state_is(1, 2, [0, 1]), story.report()


def leader_epoch_changes(epochs: list[int]) -> list[int]:
    """The leader epochs in write order without repeats (ISR-only writes keep the epoch)."""
    return [e for i, e in enumerate(epochs) if i == 0 or e != epochs[i - 1]]


# ---- ELECT-6 ---------------------------------------------------------------------------------------
U = zkdata.partition_state_path("u", 0)


def write_history(story: Story, path: str) -> list[tuple[int, int, list[int]]]:
    """(leader, leader_epoch, isr) of every write of `path`, consecutive repeats dropped."""
    out: list[tuple[int, int, list[int]]] = []
    for w in story.state_writes(path):
        item = (w["leader"], w["leader_epoch"], w["isr"])
        if not out or out[-1] != item:
            out.append(item)
    return out


@pytest.mark.parametrize("override", [{UNCLEAN: "true"}, None], ids=["topic-override-true", "default-false"])
def test_a_topic_config_written_before_a_controller_failover_governs_the_next_election(
    story: Story, override: dict[str, str] | None
) -> None:
    """u-0 = [2, 3]. 3 stops (ISR [2]); the config is written (no notification); controller 1 is
    killed and 4 takes over (2 and 3 run broker-only, so the successor is known); 2, the last ISR
    member, is killed (u-0 leaderless, ISR [2]); 3 comes back. With the override 4 elects 3 (ISR
    [3]); with Kafka's default (false) u-0 stays leaderless with ISR [2]."""
    zk = story.zk
    controller_capable = {"auto.leader.rebalance.enable": "false"}
    broker_only = {**controller_capable, "reference.controller.enable": "false"}
    story.start(1, controller_capable)
    story.wait(partial(controller_is, zk, 1), 30, "broker 1 as the controller")
    story.start(4, controller_capable)
    story.start(2, broker_only)
    story.start(3, broker_only)
    create_topic(zk, "u", (2, 3), {})
    story.wait(partial(story.state_is, 2, 0, [2, 3], U), 30, "u-0 online: leader 2, ISR [2, 3]")
    story.stop(3)
    story.wait(partial(story.state_is, 2, 1, [2], U), 30, "u-0: ISR [2] at epoch 1")
    if override is not None:
        zk.set(zkdata.config_topic_path("u"), zkdata.encode_topic_config(override))

    story.nodes[1].kill()
    story.wait(partial(controller_is, zk, 4), 60, "broker 4 as the controller")
    story.nodes[2].kill()
    offline = story.wait(partial(story.state_is, -1, 2, [2], U), 60, "u-0 leaderless, ISR [2] kept")
    assert offline["controller_epoch"] == 2, story.report()

    story.start(3, broker_only)
    if override is not None:
        elected = story.wait(partial(story.state_is, 3, 3, [3], U), 30, "the unclean election of 3")
        assert elected["controller_epoch"] == 2, story.report()
        expected = [(2, 0, [2, 3]), (2, 1, [2]), (-1, 2, [2]), (3, 3, [3])]
    else:
        # Evidence the controller handled 3's registration (events are processed in order): a topic
        # created afterwards on broker 3 comes online.
        create_topic(zk, "later", (3,), {})
        later = zkdata.partition_state_path("later", 0)
        story.wait(partial(story.state_is, 3, 0, [3], later), 30, "topic 'later' online on broker 3")
        assert story.state_is(-1, 2, [2], U), story.report()
        expected = [(2, 0, [2, 3]), (2, 1, [2]), (-1, 2, [2])]
    assert write_history(story, U) == expected, story.report()
