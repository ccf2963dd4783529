"""Two CreateTopics for one new topic race on its config znode (KAFKA-7082; ring: integration).

Kafka 2.5.1 writes ``/config/topics/<t>`` with ``KafkaZkClient.setOrCreateEntityConfigs``: setData,
on NONODE create, and on NODEEXISTS (a concurrent creation won) setData again; only the topic znode
decides which request gets TOPIC_ALREADY_EXISTS. The race is made exact on a real ZooKeeper: the
admin client's setData fails with NONODE, and before it creates the znode a second real client
creates it, as the other request's broker would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from reference_controller import zkdata
from reference_controller.node.admin import AdminError, create_topic_with_assignment
from reference_controller.node.zk_driver import KazooNodeZk

pytestmark = pytest.mark.integration


class _LosesTheRace(KazooClient):  # type: ignore[misc]  # kazoo is untyped
    """A real client whose first setData on a missing config znode is overtaken by ``rival``."""

    rival: KazooClient

    def set(self, path: str, value: bytes, version: int = -1) -> Any:
        try:
            return super().set(path, value, version)
        except NoNodeError:
            if path.startswith("/config/topics/") and not self.rival.exists(path):
                self.rival.create(
                    path, json.dumps({"version": 1, "config": {"rival": "1"}}).encode(), makepath=True
                )
            raise


@pytest.fixture
def racing(zk_connect: str) -> Iterator[tuple[KazooClient, KazooClient]]:
    admin, rival = _LosesTheRace(hosts=zk_connect), KazooClient(hosts=zk_connect)
    admin.rival = rival
    for client in (admin, rival):
        client.start(timeout=15)
    yield admin, rival
    for client in (admin, rival):
        client.stop()
        client.close()


def test_a_config_znode_created_first_by_a_concurrent_request_is_overwritten(
    racing: tuple[KazooClient, KazooClient],
) -> None:
    admin, rival = racing
    admin.ensure_path(zkdata.BROKER_TOPICS)
    create_topic_with_assignment(KazooNodeZk(admin), "race", {"min.insync.replicas": "2"}, {0: [1, 2]})
    config = json.loads(rival.get("/config/topics/race")[0])
    assert config["config"] == {"min.insync.replicas": "2"}, "the last writer wins, as in Kafka"
    assert rival.exists(zkdata.topic_path("race")) is not None


def test_the_loser_of_the_topic_znode_gets_topic_already_exists(
    racing: tuple[KazooClient, KazooClient],
) -> None:
    admin, _rival = racing
    admin.ensure_path(zkdata.BROKER_TOPICS)
    create_topic_with_assignment(KazooNodeZk(admin), "race", {}, {0: [1]})
    with pytest.raises(AdminError) as err:
        create_topic_with_assignment(KazooNodeZk(admin), "race", {}, {0: [1]})
    assert "already exists" in str(err.value)
