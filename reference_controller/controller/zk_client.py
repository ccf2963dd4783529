"""Kafka's `KafkaZkClient` operations the controller uses, over the `ZkPort` (ring: core).

Reads decode with `zkdata` and skip (with a log line naming the path) what they cannot decode;
every controller write goes through `ZkPort.fenced` (one `multi[check /controller_epoch, op]` per
op, Kafka's `wrapRequestWithControllerEpochCheck`), in the batches Kafka pipelines, so that a
batching driver has something to batch. Unexpected result codes raise `ZkOperationError`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller.ports import (
    ControllerMovedError,
    CreateOp,
    DataResult,
    DeleteOp,
    OpResult,
    SetDataOp,
    ZkCode,
    ZkOp,
    ZkPort,
)
from reference_controller.errors import MalformedZnodeError, ReferenceControllerError
from reference_controller.zkdata import (
    BrokerInfo,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
)

log = logging.getLogger("kafka.zk.KafkaZkClient")


class ZkOperationError(ReferenceControllerError):
    """A ZooKeeper operation returned a code the controller does not handle (KeeperException)."""

    def __init__(self, path: str, code: ZkCode) -> None:
        super().__init__(f"KeeperErrorCode = {code.name} for {path}")
        self.path = path
        self.code = code


def _first_failure(results: Sequence[OpResult]) -> OpResult:
    for r in results:
        if not r.ok and r.code != ZkCode.RUNTIME_INCONSISTENCY:
            return r
    return next(r for r in results if not r.ok)


def _op_path(op: ZkOp) -> str:
    return op.path


# ---- controller election ------------------------------------------------------------------
def get_controller_id(zk: ZkPort) -> int:
    """`getControllerId`: -1 when `/controller` is missing or cannot be decoded."""
    result = zk.get_data([zd.CONTROLLER])[0]
    if result.stat is None:
        return -1
    try:
        return zd.decode_controller(result.data)
    except MalformedZnodeError as exc:
        log.warning("%s", exc)
        return -1


def read_controller_epoch(zk: ZkPort) -> tuple[int, int] | None:
    result = zk.get_data([zd.CONTROLLER_EPOCH])[0]
    if result.stat is None:
        return None
    return zd.decode_controller_epoch(result.data), result.stat.version


def register_controller_and_increment_controller_epoch(
    zk: ZkPort, broker_id: int, timestamp_ms: int
) -> tuple[int, int]:
    """`registerControllerAndIncrementControllerEpoch` (KafkaZkClient.scala@2.5.1 L106-168).

    a. read `/controller_epoch`; if missing create it with "0" (NODEEXISTS ⇒ re-read);
    b. one multi: create ephemeral `/controller` + setData `/controller_epoch` = old+1 @ version;
    c. NODEEXISTS/BADVERSION ⇒ `checkControllerAndEpoch` (covers a retried multi), else
       ControllerMovedError.
    """
    current = read_controller_epoch(zk)
    if current is None:
        created = zk.create(
            CreateOp(zd.CONTROLLER_EPOCH, zd.encode_controller_epoch(zd.INITIAL_CONTROLLER_EPOCH))
        )
        if created.code == ZkCode.OK:
            current = (zd.INITIAL_CONTROLLER_EPOCH, zd.INITIAL_CONTROLLER_EPOCH_ZK_VERSION)
        elif created.code == ZkCode.NODEEXISTS:
            current = read_controller_epoch(zk)
            if current is None:
                raise ZkOperationError(zd.CONTROLLER_EPOCH, ZkCode.NONODE)
        else:
            raise ZkOperationError(zd.CONTROLLER_EPOCH, created.code)
    cur_epoch, cur_version = current
    new_epoch = cur_epoch + 1
    log.info(
        "Try to create %s and increment controller epoch to %d with expected controller epoch zkVersion %d",
        zd.CONTROLLER,
        new_epoch,
        cur_version,
    )
    results = zk.multi(
        [
            CreateOp(zd.CONTROLLER, zd.encode_controller(broker_id, timestamp_ms), ephemeral=True),
            SetDataOp(zd.CONTROLLER_EPOCH, zd.encode_controller_epoch(new_epoch), cur_version),
        ]
    )
    if all(r.ok for r in results):
        stat = results[1].stat
        return new_epoch, (stat.version if stat is not None else cur_version + 1)
    failure = _first_failure(results)
    if failure.code in (ZkCode.NODEEXISTS, ZkCode.BADVERSION):
        return _check_controller_and_epoch(zk, broker_id, new_epoch)
    raise ZkOperationError(_op_path(failure.op), failure.code)


def _check_controller_and_epoch(zk: ZkPort, broker_id: int, new_epoch: int) -> tuple[int, int]:
    cur_controller = get_controller_id(zk)
    if cur_controller != broker_id:
        raise ControllerMovedError(
            f"Controller moved to another broker. Current controller id is {cur_controller}"
        )
    epoch = read_controller_epoch(zk)
    if epoch is None or epoch[0] != new_epoch:
        raise ControllerMovedError("Controller epoch zkVersion check fails")
    return epoch


def delete_controller(zk: ZkPort, epoch_zk_version: int) -> None:
    zk.fenced([DeleteOp(zd.CONTROLLER)], epoch_zk_version)


# ---- brokers and topics -------------------------------------------------------------------
def get_sorted_children(zk: ZkPort, path: str) -> list[str]:
    return sorted(zk.get_children(path) or [])


def get_all_broker_and_epochs(zk: ZkPort) -> dict[int, tuple[BrokerInfo, int]]:
    """`getAllBrokerAndEpochsInCluster`: broker id → (BrokerInfo, czxid). Undecodable znodes skipped."""
    ids = sorted(int(c) for c in zk.get_children(zd.BROKER_IDS) or [] if c.lstrip("-").isdigit())
    result: dict[int, tuple[BrokerInfo, int]] = {}
    for broker_id, data in zip(ids, zk.get_data([zd.broker_path(b) for b in ids]), strict=True):
        info = _decode_broker(broker_id, data)
        if info is not None and data.stat is not None:
            result[broker_id] = (info, data.stat.czxid)
    return result


def _decode_broker(broker_id: int, data: DataResult) -> BrokerInfo | None:
    if data.stat is None:
        return None
    try:
        return zd.decode_broker(broker_id, data.data, data.path)
    except MalformedZnodeError as exc:
        log.error(  # noqa: TRY400 - a value, not a crash
            "Skipping broker %d: %s", broker_id, exc
        )
        return None


def get_broker(zk: ZkPort, broker_id: int) -> BrokerInfo | None:
    return _decode_broker(broker_id, zk.get_data([zd.broker_path(broker_id)])[0])


def get_all_topics(zk: ZkPort) -> set[str]:
    return set(zk.get_children(zd.BROKER_TOPICS) or [])


def get_full_replica_assignment_for_topics(
    zk: ZkPort, topics: Iterable[str]
) -> dict[TopicPartition, ReplicaAssignment]:
    """`getFullReplicaAssignmentForTopics` (getData each topic znode; arms the data watches)."""
    ordered = sorted(topics)
    result: dict[TopicPartition, ReplicaAssignment] = {}
    for topic, data in zip(ordered, zk.get_data([zd.topic_path(t) for t in ordered]), strict=True):
        if data.stat is None:
            continue
        try:
            decoded = zd.decode_topic(topic, data.data, data.path)
        except MalformedZnodeError as exc:
            log.error(  # noqa: TRY400 - a value, not a crash
                "Skipping topic %s: %s", topic, exc
            )
            continue
        for partition in sorted(decoded.partitions):
            result[TopicPartition(topic, partition)] = decoded.partitions[partition]
    return result


def set_topic_assignment_raw(
    zk: ZkPort, topic: str, assignment: Mapping[int, ReplicaAssignment], epoch_zk_version: int
) -> OpResult:
    return zk.fenced([SetDataOp(zd.topic_path(topic), zd.encode_topic(assignment))], epoch_zk_version)[0]


# ---- partition state ----------------------------------------------------------------------
def get_topic_partition_states_raw(zk: ZkPort, partitions: Sequence[TopicPartition]) -> list[DataResult]:
    return zk.get_data([zd.partition_state_path(t, p) for t, p in partitions])


def decode_state(data: DataResult) -> LeaderIsrAndControllerEpoch | None:
    """Decoded state znode, or None when missing or undecodable (logged)."""
    if data.stat is None:
        return None
    try:
        return zd.decode_partition_state(data.data, data.stat.version, data.path)
    except MalformedZnodeError as exc:
        log.error(  # noqa: TRY400 - a value, not a crash
            "%s", exc
        )
        return None


def get_topic_partition_states(
    zk: ZkPort, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
    result: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    for tp, data in zip(partitions, get_topic_partition_states_raw(zk, partitions), strict=True):
        decoded = decode_state(data)
        if decoded is not None:
            result[tp] = decoded
    return result


def update_leader_and_isr(
    zk: ZkPort,
    leader_and_isrs: Mapping[TopicPartition, LeaderAndIsr],
    controller_epoch: int,
    epoch_zk_version: int,
) -> tuple[dict[TopicPartition, LeaderAndIsr | Exception], list[TopicPartition]]:
    """`updateLeaderAndIsr`: conditional setData of each state znode (one pipelined batch).

    Returns (finished: new LeaderAndIsr with the new zkVersion or an exception, to-retry on BADVERSION).
    """
    partitions = list(leader_and_isrs)
    ops = [
        SetDataOp(
            zd.partition_state_path(*tp),
            zd.encode_partition_state(leader_and_isrs[tp], controller_epoch),
            leader_and_isrs[tp].zk_version,
        )
        for tp in partitions
    ]
    finished: dict[TopicPartition, LeaderAndIsr | Exception] = {}
    retry: list[TopicPartition] = []
    for tp, result in zip(partitions, zk.fenced(ops, epoch_zk_version) if ops else [], strict=True):
        if result.ok and result.stat is not None:
            lai = leader_and_isrs[tp]
            finished[tp] = LeaderAndIsr(lai.leader, lai.leader_epoch, lai.isr, result.stat.version)
        elif result.code == ZkCode.BADVERSION:
            retry.append(tp)
        else:
            finished[tp] = ZkOperationError(result.op.path, result.code)
    return finished, retry


def create_topic_partition_states_raw(
    zk: ZkPort, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
) -> list[tuple[TopicPartition, OpResult]]:
    """`createTopicPartitionStatesRaw`: three fenced batches — `partitions` per topic,
    `partitions/<p>` per partition (NODEEXISTS ignored), then the `state` znodes."""
    partitions = list(states)
    topics = list(dict.fromkeys(t for t, _ in partitions))
    _create_ignoring_existing(zk, [zd.topic_partitions_path(t) for t in topics], epoch_zk_version)
    _create_ignoring_existing(zk, [zd.partition_path(t, p) for t, p in partitions], epoch_zk_version)
    ops: list[ZkOp] = [
        CreateOp(
            zd.partition_state_path(*tp),
            zd.encode_partition_state(states[tp].leader_and_isr, states[tp].controller_epoch),
        )
        for tp in partitions
    ]
    return list(zip(partitions, zk.fenced(ops, epoch_zk_version), strict=True))


def _create_ignoring_existing(zk: ZkPort, paths: Sequence[str], epoch_zk_version: int) -> None:
    """`createTopicPartitions` / `createTopicPartition`: Kafka ignores every result code of these
    creates (a failure shows up as the `state` create's own error, logged per partition)."""
    if paths:
        zk.fenced([CreateOp(p, None) for p in paths], epoch_zk_version)


# ---- admin znodes -------------------------------------------------------------------------
def get_partition_reassignment(zk: ZkPort) -> dict[TopicPartition, list[int]]:
    """`getPartitionReassignment`: invalid JSON ⇒ warn and empty."""
    data = zk.get_data([zd.REASSIGN_PARTITIONS])[0]
    if data.stat is None:
        return {}
    try:
        return zd.decode_reassignment(data.data)
    except MalformedZnodeError as exc:
        log.warning("Ignoring partition reassignment due to invalid json: %s", exc)
        return {}


def set_or_create_partition_reassignment(
    zk: ZkPort, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
) -> None:
    data = zd.encode_reassignment(reassignment)
    result = zk.fenced([SetDataOp(zd.REASSIGN_PARTITIONS, data)], epoch_zk_version)[0]
    if result.code == ZkCode.NONODE:
        result = zk.fenced([CreateOp(zd.REASSIGN_PARTITIONS, data)], epoch_zk_version)[0]
    if not result.ok:
        raise ZkOperationError(zd.REASSIGN_PARTITIONS, result.code)


def get_preferred_replica_election(zk: ZkPort) -> list[TopicPartition]:
    data = zk.get_data([zd.PREFERRED_REPLICA_ELECTION])[0]
    if data.stat is None:
        return []
    try:
        return list(dict.fromkeys(zd.decode_preferred_election(data.data)))
    except MalformedZnodeError as exc:
        log.warning("Ignoring preferred replica election due to invalid json: %s", exc)
        return []


def delete_recursive(zk: ZkPort, path: str, epoch_zk_version: int) -> None:
    """`deleteRecursive`: children first, each delete fenced; a missing znode is left alone."""
    children = zk.get_children(path)
    if children is None:
        return
    for child in sorted(children):
        delete_recursive(zk, f"{path}/{child}", epoch_zk_version)
    result = zk.fenced([DeleteOp(path)], epoch_zk_version)[0]
    if not result.ok and result.code != ZkCode.NONODE:
        raise ZkOperationError(path, result.code)


def delete_paths(zk: ZkPort, paths: Sequence[str], epoch_zk_version: int) -> None:
    """One pipelined batch of fenced deletes (any version); NONODE ignored."""
    if not paths:
        return
    for result in zk.fenced([DeleteOp(p) for p in paths], epoch_zk_version):
        if not result.ok and result.code != ZkCode.NONODE:
            raise ZkOperationError(result.op.path, result.code)


def get_topic_deletions(zk: ZkPort) -> list[str]:
    return get_sorted_children(zk, zd.DELETE_TOPICS)


def get_topic_config(zk: ZkPort, topic: str) -> dict[str, str]:
    """The topic's config overrides, as `getLogConfigs` reads them (KafkaZkClient.scala@2.5.1
    L294-320 with ConfigEntityZNode.decode, ZkData.scala@2.5.1 L329-338): empty when
    `/config/topics/<t>` is missing, holds null data, is not JSON (`Json.parseBytes` ⇒ None) or has
    no `config` object; a config value that is not a JSON string fails (`v.to[String]`) with
    `MalformedZnodeError`."""
    data = zk.get_data([zd.config_topic_path(topic)])[0]
    if data.stat is None or data.data is None:
        return {}
    try:
        obj = json.loads(data.data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    config = obj.get("config") if isinstance(obj, dict) else None
    if not isinstance(config, dict):
        return {}
    for key, value in config.items():
        if not isinstance(value, str):
            raise MalformedZnodeError(
                data.path, data.data, f"config value of {key} is not a string: {value!r}"
            )
    return dict(config)


def read_notifications(zk: ZkPort, parent: str, names: Sequence[str]) -> list[DataResult]:
    return zk.get_data([f"{parent}/{n}" for n in names])
