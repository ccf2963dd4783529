"""The dynamic `unclean.leader.election.enable` of `/config/brokers/...` (ELECT-9, spec §13.4.4) through
`ConfigWatcher` on a real ZooKeeper, including malformed notifications and config znodes, which
are logged and skipped like Kafka's (ring: tests)."""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from reference_controller import zkdata
from reference_controller.controller.driver.config_watcher import ConfigWatcher, initialize_dynamic_config
from reference_controller.controller.driver.dynamic_broker_config import DynamicBrokerConfig
from reference_controller.controller.events import (
    ControllerEvent,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from tests.polling import wait_for

pytestmark = pytest.mark.integration
UNCLEAN = "unclean.leader.election.enable"
BROKER_ID = 1


class Recorder:
    def __init__(self) -> None:
        self.events: list[ControllerEvent] = []
        self._lock = threading.Lock()

    def enqueue(self, event: ControllerEvent) -> None:
        with self._lock:
            self.events.append(event)

    def snapshot(self) -> list[ControllerEvent]:
        with self._lock:
            return list(self.events)


def set_config(zk: KazooClient, entity: str, data: bytes) -> None:
    path = f"/config/{entity}"
    try:
        zk.set(path, data)
    except NoNodeError:
        zk.create(path, data, makepath=True)


def change(zk: KazooClient, entity: str, config: dict[str, Any] | bytes) -> None:
    """AdminZkClient.changeEntityConfig: the config znode, then a v2 notification."""
    data = config if isinstance(config, bytes) else json.dumps({"version": 1, "config": config}).encode()
    set_config(zk, entity, data)
    notify(zk, {"version": 2, "entity_path": entity})


def notify(zk: KazooClient, payload: dict[str, Any] | bytes) -> str:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    path: str = zk.create(f"{zkdata.CONFIG_CHANGES}/config_change_", data, sequence=True, makepath=True)
    return path


@pytest.fixture
def watch(zk_client: KazooClient) -> Iterator[Callable[[DynamicBrokerConfig], Recorder]]:
    made: list[ConfigWatcher] = []

    def start(dynamic: DynamicBrokerConfig) -> Recorder:
        zk_client.ensure_path(zkdata.CONFIG_CHANGES)
        recorder = Recorder()
        watcher = ConfigWatcher(zk_client, recorder.enqueue, lambda: True, dynamic_config=dynamic)
        watcher.start()
        made.append(watcher)
        return recorder

    yield start
    for watcher in made:
        watcher.shutdown()


_sentinels = itertools.count()


def settle(zk: KazooClient, recorder: Recorder) -> list[ControllerEvent]:
    """A new sentinel topic's notification: once it is seen, everything before it was processed."""
    sentinel = TopicUncleanLeaderElectionEnable(f"sentinel-{next(_sentinels)}")
    change(zk, f"topics/{sentinel.topic}", {UNCLEAN: "true"})
    wait_for(lambda: sentinel in recorder.snapshot(), 10, f"the notification of {sentinel.topic}")
    return [e for e in recorder.snapshot() if not isinstance(e, TopicUncleanLeaderElectionEnable)]


def test_the_default_turning_true_enqueues_once_and_the_controller_reads_it(
    zk_client: KazooClient, watch: Callable[[DynamicBrokerConfig], Recorder]
) -> None:
    dynamic = DynamicBrokerConfig(BROKER_ID, False)
    recorder = watch(dynamic)
    change(zk_client, "brokers/<default>", {UNCLEAN: "true", "log.retention.bytes": "1"})
    wait_for(
        lambda: recorder.snapshot() == [UncleanLeaderElectionEnable()], 10, "UncleanLeaderElectionEnable"
    )
    assert dynamic.unclean_leader_election_enable()
    change(zk_client, "brokers/<default>", {UNCLEAN: "TRUE "})  # still true (BOOLEAN: trimmed, any case)
    change(zk_client, f"brokers/{BROKER_ID}", {UNCLEAN: "false"})  # the broker's own override wins
    assert settle(zk_client, recorder) == [UncleanLeaderElectionEnable()]
    assert not dynamic.unclean_leader_election_enable()
    change(zk_client, f"brokers/{BROKER_ID}", {})  # back to the default: true again
    assert settle(zk_client, recorder) == [UncleanLeaderElectionEnable()] * 2


def test_another_brokers_id_changes_nothing(
    zk_client: KazooClient, watch: Callable[[DynamicBrokerConfig], Recorder]
) -> None:
    dynamic = DynamicBrokerConfig(BROKER_ID, False)
    recorder = watch(dynamic)
    change(zk_client, "brokers/2", {UNCLEAN: "true"})
    assert settle(zk_client, recorder) == []
    assert not dynamic.unclean_leader_election_enable()


def test_malformed_broker_notifications_and_configs_are_logged_and_skipped(
    zk_client: KazooClient,
    watch: Callable[[DynamicBrokerConfig], Recorder],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    dynamic = DynamicBrokerConfig(BROKER_ID, False)
    recorder = watch(dynamic)
    bad = [
        notify(zk_client, {"version": 2, "entity_path": "brokers/not-a-number"}),  # Kafka: toInt fails
        notify(zk_client, {"version": 2, "entity_path": "nope/x"}),  # no handler for the type
    ]
    change(zk_client, "brokers/<default>", b'{"version":1,"config":{"unclean.leader.election.enable":true}}')
    bad.append(sorted(zk_client.get_children(zkdata.CONFIG_CHANGES))[-1])
    # Kafka reads the entity's config znode when it processes the notification, not when it was
    # written: wait until this one is processed before the same znode is overwritten below
    wait_for(lambda: bad[-1] in caplog.text, 10, f"{bad[-1]} processed (an error naming it)")
    change(zk_client, f"brokers/{BROKER_ID}", {UNCLEAN: "maybe"})  # an invalid value: dropped, logged
    change(zk_client, "brokers/<default>", b"{not json")  # not JSON: an empty config
    assert settle(zk_client, recorder) == []
    assert not dynamic.unclean_leader_election_enable()
    text = caplog.text
    for path in bad:
        assert path.rsplit("/", 1)[-1] in text, (path, text)
    assert "Dynamic broker config contains invalid values" in text
    change(zk_client, "brokers/<default>", {UNCLEAN: "true"})  # still serving
    wait_for(
        lambda: UncleanLeaderElectionEnable() in recorder.snapshot(), 10, "a valid change after the bad ones"
    )


def test_initialize_loads_the_default_then_the_own_id(zk_client: KazooClient) -> None:
    set_config(
        zk_client, "brokers/<default>", json.dumps({"version": 1, "config": {UNCLEAN: "true"}}).encode()
    )
    dynamic = DynamicBrokerConfig(BROKER_ID, False)
    initialize_dynamic_config(zk_client, dynamic)
    assert dynamic.unclean_leader_election_enable()
    set_config(zk_client, f"brokers/{BROKER_ID}", b'{"version":1,"config":{"x":1}}')  # undecodable: skipped
    again = DynamicBrokerConfig(BROKER_ID, False)
    initialize_dynamic_config(zk_client, again)
    assert again.unclean_leader_election_enable()
