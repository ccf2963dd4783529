"""Entity config writes and reads as AdminZkClient / KafkaZkClient@2.5.1 make them (ring: drivers
logic over the node's ZooKeeper port; blocking, run in a worker thread).

`change_entity_config` (AdminZkClient.changeEntityConfig, L379-385; spec §13.4.2), in order:
`setData /config/<type>/<name>` at any version (NONODE ⇒ create with its parents), then a create of
`/config/changes` with null data whose NODEEXISTS is ignored, then the persistent sequential
`/config/changes/config_change_<10 digits>` = `{"version":2,"entity_path":"<type>/<name>"}`. Nothing
is fenced: any broker writes it. `fetch_entity_config` is `fetchEntityConfig` with
ConfigEntityZNode.decode (non-JSON or no `config` object ⇒ empty; a non-string value fails).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from reference_controller import zkdata
from reference_controller.controller.driver.dynamic_broker_config import decode_entity_config
from reference_controller.controller.ports import CreateOp, SetDataOp, ZkCode
from reference_controller.node.zk_port import NodeZkPort, create_recursive, expect

CONFIG_CHANGE_PREFIX = f"{zkdata.CONFIG_CHANGES}/config_change_"


def entity_path(entity_type: str, name: str) -> str:
    return f"/config/{entity_type}/{name}"


def fetch_entity_config(zk: NodeZkPort, entity_type: str, name: str) -> dict[str, str]:
    found = zk.get(entity_path(entity_type, name))
    if found.stat is None:
        return {}
    return decode_entity_config(found.data)


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    return zkdata.encode_topic_config(config)  # ConfigEntityZNode: {"version":1,"config":{…}}


def encode_change_notification(entity_type: str, name: str) -> bytes:
    body = {"version": 2, "entity_path": f"{entity_type}/{name}"}  # Map2: this key order
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def change_entity_config(zk: NodeZkPort, entity_type: str, name: str, config: Mapping[str, str]) -> None:
    path, data = entity_path(entity_type, name), encode_entity_config(config)
    if expect(zk.set(SetDataOp(path, data)), ZkCode.NONODE).code == ZkCode.NONODE:
        created = expect(create_recursive(zk, path, data), ZkCode.NODEEXISTS)
        if created.code == ZkCode.NODEEXISTS:
            expect(zk.set(SetDataOp(path, data)))
    expect(zk.create(CreateOp(zkdata.CONFIG_CHANGES, None)), ZkCode.NODEEXISTS)
    notification = encode_change_notification(entity_type, name)
    expect(zk.create(CreateOp(CONFIG_CHANGE_PREFIX, notification, sequential=True)))


def topic_exists(zk: NodeZkPort, topic: str) -> bool:
    return zk.exists(zkdata.topic_path(topic)) is not None
