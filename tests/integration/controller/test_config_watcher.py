"""`ConfigWatcher` (ELECT-5, spec §6.11) on a real ZooKeeper, and through real nodes (ring: tests).

Notifications are written the way `kafka-configs --zookeeper` does (AdminZkClient.changeTopicConfig
@2.5.1): set `/config/topics/<t>`, then create the persistent sequential
`/config/changes/config_change_` with `{"version":2,"entity_path":"topics/<t>"}`. As Kafka's
ZkNodeChangeNotificationListener (`lastExecutedChange = -1`, `init()` queues a first pass), the
notifications present at start-up are processed too, and every notification only once.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from harness.zookeeper import ZooKeeperServer
from reference_controller import zkdata
from reference_controller.controller.driver.config_watcher import ConfigWatcher
from reference_controller.controller.events import ControllerEvent, TopicUncleanLeaderElectionEnable
from tests.node.helpers import NodeFactory, NodeProcess
from tests.polling import wait_for

pytestmark = pytest.mark.integration
UNCLEAN = "unclean.leader.election.enable"
LOGGER = "kafka.common.ZkNodeChangeNotificationListener"


class Recorder:
    def __init__(self) -> None:
        self.events: list[ControllerEvent] = []
        self.active = True
        self._lock = threading.Lock()

    def enqueue(self, event: ControllerEvent) -> None:
        with self._lock:
            self.events.append(event)

    def topics(self) -> list[str]:
        with self._lock:
            return [e.topic for e in self.events if isinstance(e, TopicUncleanLeaderElectionEnable)]


def set_topic_config(zk: KazooClient, topic: str, config: dict[str, Any]) -> None:
    data = json.dumps({"version": 1, "config": config}).encode()
    try:
        zk.set(zkdata.config_topic_path(topic), data)
    except NoNodeError:
        zk.create(zkdata.config_topic_path(topic), data, makepath=True)


def notify(zk: KazooClient, payload: dict[str, Any] | bytes | None) -> str:
    data = payload if payload is None or isinstance(payload, bytes) else json.dumps(payload).encode()
    path: str = zk.create(f"{zkdata.CONFIG_CHANGES}/config_change_", data, sequence=True, makepath=True)
    return path


def v2(topic: str) -> dict[str, Any]:
    return {"version": 2, "entity_path": f"topics/{topic}"}


def v1(topic: str) -> dict[str, Any]:
    return {"version": 1, "entity_type": "topics", "entity_name": topic}


def change_topic_config(zk: KazooClient, topic: str, config: dict[str, Any]) -> str:
    """AdminZkClient.changeTopicConfig: the config znode first, then a v2 notification."""
    set_topic_config(zk, topic, config)
    return notify(zk, v2(topic))


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def start_watcher(recorder: Recorder) -> Iterator[Callable[[KazooClient], ConfigWatcher]]:
    made: list[ConfigWatcher] = []

    def start(zk: KazooClient) -> ConfigWatcher:
        zk.ensure_path(zkdata.CONFIG_CHANGES)
        watcher = ConfigWatcher(zk, recorder.enqueue, lambda: recorder.active)
        watcher.start()
        made.append(watcher)
        return watcher

    yield start
    for watcher in made:
        watcher.shutdown()


def settle(recorder: Recorder, zk: KazooClient, topic: str = "sentinel") -> list[str]:
    """Write a sentinel notification and wait for it: everything before it has been processed."""
    change_topic_config(zk, topic, {UNCLEAN: "true"})
    wait_for(lambda: topic in recorder.topics(), 10, f"the {topic} notification")
    return [t for t in recorder.topics() if t != topic]


# ---- notifications --------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [v1, v2], ids=["v1", "v2"])
def test_a_notification_enabling_unclean_election_enqueues_the_event(
    zk_client: KazooClient,
    recorder: Recorder,
    start_watcher: Callable[[KazooClient], ConfigWatcher],
    make: Callable[[str], dict[str, Any]],
) -> None:
    start_watcher(zk_client)
    set_topic_config(zk_client, "t", {UNCLEAN: "true", "retention.ms": "1000"})
    notify(zk_client, make("t"))
    wait_for(lambda: recorder.topics() == ["t"], 10, "TopicUncleanLeaderElectionEnable(t)")
    assert recorder.events == [TopicUncleanLeaderElectionEnable("t")]


def test_changes_that_do_not_enable_unclean_election_enqueue_nothing(
    zk_client: KazooClient, recorder: Recorder, start_watcher: Callable[[KazooClient], ConfigWatcher]
) -> None:
    start_watcher(zk_client)
    change_topic_config(zk_client, "off", {UNCLEAN: "false"})
    change_topic_config(zk_client, "other", {"retention.ms": "1000"})
    change_topic_config(zk_client, "blank", {UNCLEAN: " true"})  # Scala's toBoolean: no trimming
    change_topic_config(zk_client, "typed", {UNCLEAN: True})  # ConfigEntityZNode.decode: strings only
    notify(zk_client, v2("no-config"))  # no /config/topics/no-config
    notify(zk_client, {"version": 2, "entity_path": "clients/c1"})
    notify(zk_client, {"version": 1, "entity_type": "clients", "entity_name": "off"})
    set_topic_config(zk_client, "unnotified", {UNCLEAN: "true"})  # no notification: nothing
    change_topic_config(zk_client, "upper", {UNCLEAN: "TRUE"})  # toBoolean ignores case
    assert settle(recorder, zk_client) == ["upper"]


def test_malformed_notifications_are_logged_and_skipped(
    zk_client: KazooClient,
    recorder: Recorder,
    start_watcher: Callable[[KazooClient], ConfigWatcher],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    start_watcher(zk_client)
    set_topic_config(zk_client, "t", {UNCLEAN: "true"})
    bad = [
        notify(zk_client, b"{not json"),
        notify(zk_client, b"[1,2]"),
        notify(zk_client, {"version": 3, "entity_path": "topics/t"}),
        notify(zk_client, {"version": "2", "entity_path": "topics/t"}),
        notify(zk_client, {"entity_type": "topics", "entity_name": "t"}),  # no version
        notify(zk_client, {"version": 2, "entity_path": "topics-t"}),
        notify(zk_client, {"version": 1, "entity_type": "topics"}),
    ]
    null = notify(zk_client, None)
    assert settle(recorder, zk_client) == []
    text = caplog.text
    for path in bad:
        assert f"from {path}:" in text, (path, text)
    assert f"read null data from {null}" in text


def test_notifications_present_at_start_up_are_processed_once_like_kafka(
    zk_client: KazooClient, recorder: Recorder, start_watcher: Callable[[KazooClient], ConfigWatcher]
) -> None:
    """ZkNodeChangeNotificationListener.init() processes the existing children (lastExecutedChange
    starts at -1); later passes only take children with a greater sequence number."""
    change_topic_config(zk_client, "early", {UNCLEAN: "true"})
    start_watcher(zk_client)
    wait_for(lambda: recorder.topics() == ["early"], 10, "the notification present at start-up")
    change_topic_config(zk_client, "late", {UNCLEAN: "true"})
    wait_for(lambda: "late" in recorder.topics(), 10, "the new notification")
    assert settle(recorder, zk_client) == ["early", "late"]


def test_only_the_active_controller_enqueues_and_notifications_are_not_replayed(
    zk_client: KazooClient, recorder: Recorder, start_watcher: Callable[[KazooClient], ConfigWatcher]
) -> None:
    """KafkaController.enableTopicUncleanLeaderElection: `if (isActive) eventManager.put(...)`."""
    recorder.active = False
    start_watcher(zk_client)
    change_topic_config(zk_client, "inactive", {UNCLEAN: "true"})
    time.sleep(0.5)
    assert recorder.topics() == []
    recorder.active = True
    assert settle(recorder, zk_client) == []  # the notification was consumed while inactive


def test_the_watch_is_rearmed_after_the_server_restarts(
    zk_server_isolated: ZooKeeperServer,
    recorder: Recorder,
    start_watcher: Callable[[KazooClient], ConfigWatcher],
) -> None:
    zk = KazooClient(hosts=zk_server_isolated.connect_string, timeout=10.0)
    zk.start(timeout=15.0)
    try:
        start_watcher(zk)
        change_topic_config(zk, "before", {UNCLEAN: "true"})
        wait_for(lambda: recorder.topics() == ["before"], 10, "the first notification")
        zk_server_isolated.restart()  # every server-side watch is gone; kazoo sends no SetWatches
        wait_for(lambda: zk.connected, 20, "the reconnection")
        change_topic_config(zk, "after", {UNCLEAN: "true"})
        wait_for(lambda: recorder.topics() == ["before", "after"], 15, "the notification after restart")
    finally:
        zk.stop()
        zk.close()


# ---- through real nodes ---------------------------------------------------------------------------
def partition_state(zk: KazooClient, topic: str) -> dict[str, Any] | None:
    try:
        data, _ = zk.get(zkdata.partition_state_path(topic, 0))
    except NoNodeError:
        return None
    state: dict[str, Any] = json.loads(data)
    return state


def controller_is(zk: KazooClient, broker_id: int) -> bool:
    try:
        return zkdata.decode_controller(zk.get(zkdata.CONTROLLER)[0]) == broker_id
    except NoNodeError:
        return False


def test_enabling_unclean_election_on_an_offline_partition_elects_the_live_replica(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient
) -> None:
    """ELECT-1/ELECT-5: u-0 = [1, 2] goes offline with ISR [1] (2 stopped first, then 1); 2 comes
    back, a live replica outside the ISR, and stays offline (unclean election disabled). Enabling
    `unclean.leader.election.enable` for u as `kafka-configs --zookeeper` does makes the controller
    (broker 3) elect 2 with ISR [2] at leader epoch + 1."""
    factory = NodeFactory(tmp_path, zk_connect)
    zk = zk_client
    overrides = {"auto.leader.rebalance.enable": "false"}
    try:
        nodes: dict[int, NodeProcess] = {3: factory.start(3, overrides)}
        wait_for(partial(controller_is, zk, 3), 20, "broker 3 as the controller")
        nodes |= {b: factory.start(b, overrides) for b in (1, 2)}
        for b in (1, 2):
            wait_for(partial(zk.exists, zkdata.broker_path(b)), 20, f"/brokers/ids/{b}")
        zk.create(zkdata.config_topic_path("u"), zkdata.encode_topic_config({}))
        zk.create(zkdata.topic_path("u"), zkdata.encode_topic({0: zkdata.ReplicaAssignment((1, 2))}))
        wait_for(lambda: (s := partition_state(zk, "u")) and s["isr"] == [1, 2], 15, "u-0 online")

        def stop(b: int) -> None:
            nodes[b].signal(signal.SIGTERM)  # controlled shutdown, then the session closes
            nodes[b].wait(30)
            wait_for(lambda: not zk.exists(zkdata.broker_path(b)), 20, f"/brokers/ids/{b} gone")

        stop(2)
        wait_for(lambda: (s := partition_state(zk, "u")) and s["isr"] == [1], 15, "ISR [1]")
        stop(1)
        offline = wait_for(
            lambda: (s := partition_state(zk, "u")) and s["leader"] == -1 and s, 15, "u-0 offline"
        )
        assert offline["isr"] == [1]
        nodes[2] = factory.start(2, overrides)
        wait_for(partial(zk.exists, zkdata.broker_path(2)), 20, "/brokers/ids/2 again")
        time.sleep(1.0)  # the controller has processed the broker change: no clean leader
        assert partition_state(zk, "u") == offline

        change_topic_config(zk, "u", {UNCLEAN: "true"})
        elected = wait_for(
            lambda: (s := partition_state(zk, "u")) and s["leader"] == 2 and s, 15, "unclean election of 2"
        )
        assert elected["isr"] == [2]
        assert elected["leader_epoch"] == offline["leader_epoch"] + 1
        assert elected["controller_epoch"] == offline["controller_epoch"]
    finally:
        factory.close()


# ---- purging (ZkNodeChangeNotificationListener.purgeObsoleteNotifications) -------------------------
EXPIRY_MS = 15 * 60 * 1000


def ctime_ms(zk: KazooClient, path: str) -> int:
    return int(zk.get(path)[1].ctime)


def later_notification(zk: KazooClient, first: str) -> str:
    """A notification created at least 1 ms (server clock) after `first`."""
    while True:
        path = change_topic_config(zk, "second", {UNCLEAN: "true"})
        if ctime_ms(zk, path) > ctime_ms(zk, first):
            return path
        zk.delete(path)
        time.sleep(0.002)


def test_notifications_older_than_15_minutes_are_purged_after_processing(
    zk_client: KazooClient, recorder: Recorder
) -> None:
    """`now` is read before processing; a child goes when its data is not null and
    now - ctime > 15 min (strictly): with now = ctime(second) + 15 min, `first` (older) is purged
    and `second` (exactly 15 min) is kept; the null-data child is never purged."""
    zk = zk_client
    first = change_topic_config(zk, "first", {UNCLEAN: "true"})
    null = notify(zk, None)
    second = later_notification(zk, first)
    now_ms = ctime_ms(zk, second) + EXPIRY_MS
    watcher = ConfigWatcher(zk, recorder.enqueue, lambda: True, clock_ms=lambda: now_ms)
    watcher.start()
    try:
        wait_for(lambda: not zk.exists(first), 10, f"{first} purged")
        assert recorder.topics() == ["first", "second"]  # processed before being purged
        assert zk.exists(second) is not None  # now - ctime == 15 min: not older
        assert zk.exists(null) is not None  # null data: Kafka's `data.isDefined` is false
    finally:
        watcher.shutdown()


def test_recent_notifications_are_kept(
    zk_client: KazooClient, recorder: Recorder, start_watcher: Callable[[KazooClient], ConfigWatcher]
) -> None:
    first = change_topic_config(zk_client, "recent", {UNCLEAN: "true"})
    start_watcher(zk_client)
    settle(recorder, zk_client)  # two full passes (start-up and the sentinel's) have run
    assert zk_client.exists(first) is not None


def test_a_late_pass_purges_what_an_earlier_pass_kept(zk_client: KazooClient, recorder: Recorder) -> None:
    """Every pass purges: a notification kept at first goes once a later pass finds it expired."""
    zk = zk_client
    first = change_topic_config(zk, "first", {UNCLEAN: "true"})
    clock = {"now_ms": float(ctime_ms(zk, first))}
    watcher = ConfigWatcher(zk, recorder.enqueue, lambda: True, clock_ms=lambda: clock["now_ms"])
    watcher.start()
    try:
        wait_for(lambda: recorder.topics() == ["first"], 10, "the first pass")
        assert zk.exists(first) is not None
        clock["now_ms"] += EXPIRY_MS + 1
        change_topic_config(zk, "trigger", {UNCLEAN: "true"})
        wait_for(lambda: not zk.exists(first), 10, f"{first} purged by the next pass")
        assert recorder.topics() == ["first", "trigger"]
    finally:
        watcher.shutdown()
