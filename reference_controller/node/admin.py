"""Topic administration writes as AdminZkClient@2.5.1 makes them (ring: drivers logic over the node's
ZooKeeper port; blocking, run in a worker thread).

`create_topic_with_assignment`: validate, then `/config/topics/<t>` (setData; on NONODE create)
and `/brokers/topics/<t>` (create; NODEEXISTS ⇒ TOPIC_ALREADY_EXISTS). Nothing else — the
controller does the rest. `delete_topic` creates `/admin/delete_topics/<t>` with null data.
`add_partitions` rewrites `/brokers/topics/<t>` with the extra partitions. Every function raises
`AdminError(error_code, message)` for an invalid request, with Kafka's messages; a ZooKeeper
failure they have no answer to raises `NodeZkError`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

from kafkawire.errors import Errors
from reference_controller import zkdata
from reference_controller.controller.ports import SetDataOp, ZkCode
from reference_controller.node.zk_port import NodeZkError, NodeZkPort, create_recursive, expect
from reference_controller.zkdata import ReplicaAssignment

log = logging.getLogger("kafka.zk.AdminZkClient")


MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


class AdminError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def validate_topic_name(topic: str) -> None:
    """`Topic.validate`@2.5.1."""
    if not topic:
        raise AdminError(Errors.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise AdminError(Errors.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(topic) > MAX_NAME_LENGTH:
        raise AdminError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic "
            f"name: {topic}",
        )
    if not _LEGAL.match(topic):
        raise AdminError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{topic}" is illegal, it contains a character other than ASCII alphanumerics, '
            "'.', '_' and '-'",
        )


def topic_name_error(topic: str) -> str | None:
    """Why `topic` is not a legal topic name (`Topic.validate`), or None when it is."""
    try:
        validate_topic_name(topic)
    except AdminError as exc:
        return str(exc)
    return None


def _collides(a: str, b: str) -> bool:
    return a.replace(".", "_") == b.replace(".", "_")


def validate_topic_create(zk: NodeZkPort, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
    """`AdminZkClient.validateTopicCreate`@2.5.1 (LogConfig validation aside)."""
    validate_topic_name(topic)
    if zk.exists(zkdata.topic_path(topic)):
        raise AdminError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.")
    if "." in topic or "_" in topic:
        all_topics = require_children(zk, zkdata.BROKER_TOPICS)
        if topic in all_topics:
            raise AdminError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.")
        colliding = [t for t in all_topics if _collides(topic, t)]
        if colliding:
            raise AdminError(
                Errors.INVALID_TOPIC_EXCEPTION,
                f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}",
            )
    if len({len(r) for r in assignment.values()}) != 1:
        raise AdminError(
            Errors.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas"
        )
    for replicas in assignment.values():
        if len(replicas) != len(set(replicas)):
            raise AdminError(
                Errors.INVALID_REPLICA_ASSIGNMENT, f"Duplicate replica assignment found: {dict(assignment)}"
            )
    n = len(assignment)
    if sum(p for p in assignment if p >= 0) != n * (n - 1) // 2 or any(p < 0 for p in assignment):
        raise AdminError(
            Errors.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
        )


def require_children(zk: NodeZkPort, path: str) -> list[str]:
    children = zk.get_children(path)
    if children is None:
        raise NodeZkError(path, ZkCode.NONODE)
    return children


def create_topic_with_assignment(
    zk: NodeZkPort, topic: str, config: Mapping[str, str], assignment: Mapping[int, Sequence[int]]
) -> None:
    validate_topic_create(zk, topic, assignment)
    log.info(
        f"Creating topic {topic} with configuration {dict(config)} and initial partition assignment "
        f"{ {p: list(r) for p, r in sorted(assignment.items())} }"
    )
    config_path, config_data = zkdata.config_topic_path(topic), zkdata.encode_topic_config(config)
    if expect(zk.set(SetDataOp(config_path, config_data)), ZkCode.NONODE).code == ZkCode.NONODE:
        expect(create_recursive(zk, config_path, config_data))
    data = zkdata.encode_topic({p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()})
    if (
        expect(create_recursive(zk, zkdata.topic_path(topic), data), ZkCode.NODEEXISTS).code
        == ZkCode.NODEEXISTS
    ):
        raise AdminError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.")


def delete_topic(zk: NodeZkPort, topic: str) -> None:
    """`AdminZkClient.deleteTopic`; already marked for deletion counts as success (AdminManager)."""
    if not zk.exists(zkdata.topic_path(topic)):
        raise AdminError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic `{topic}` to delete does not exist")
    marked = expect(create_recursive(zk, zkdata.delete_topic_path(topic), None), ZkCode.NODEEXISTS)
    if marked.code == ZkCode.NODEEXISTS:
        log.info(f"topic {topic} is already marked for deletion")


def read_assignment(zk: NodeZkPort, topic: str) -> tuple[dict[int, ReplicaAssignment], int]:
    found = zk.get(zkdata.topic_path(topic))
    if found.stat is None:
        raise AdminError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")
    return dict(zkdata.decode_topic(topic, found.data).partitions), found.stat.version


def write_assignment(zk: NodeZkPort, topic: str, assignment: Mapping[int, ReplicaAssignment]) -> None:
    expect(zk.set(SetDataOp(zkdata.topic_path(topic), zkdata.encode_topic(assignment))))
