"""CreateTopics, DeleteTopics and CreatePartitions as KafkaApis + AdminManager@2.5.1 (ring: drivers).

Only the active controller's node serves them (else NOT_CONTROLLER, 41, per topic). Writes go to
ZooKeeper through `admin.py` (the node's ZooKeeper port, run in a worker thread); then the request waits,
like AdminManager's DelayedCreatePartitions/DelayedDeleteTopics, until the metadata cache (fed
by the controller's UpdateMetadata) shows every new partition with a leader, or the topic gone,
or the request's timeout passes (REQUEST_TIMED_OUT, 7). Timeout ≤ 0 answers 7 at once for the
topics that were written; validate_only writes nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from kio.index import load_response_schema

from kafkawire.errors import Errors
from kafkawire.framing import build
from reference_controller import zkdata
from reference_controller.node import admin
from reference_controller.node.admin import AdminError
from reference_controller.node.context import NodeContext
from reference_controller.node.placement import (
    PlacementError,
    add_partitions_start_index,
    assign_replicas_to_brokers,
)
from reference_controller.node.protocol import RequestContext
from reference_controller.node.wire import ms, nested
from reference_controller.node.zk_port import NodeZkPort
from reference_controller.zkdata import ReplicaAssignment

REQUEST_TIMED_OUT, NOT_CONTROLLER, INVALID_REQUEST, TOPIC_DELETION_DISABLED = 7, 41, 42, 73
Outcome = tuple[int, str | None]
POLL_S = 0.02


MAX_STRING_BYTES = 32767  # int16 length prefix of a Kafka STRING


def fit_message(message: str | None) -> str | None:
    """An error message cut to what a Kafka STRING can hold (e.g. Topic.validate's message quotes a
    32,767-character name whole): the response is sent rather than failing to encode (a departure:
    Kafka 2.5 cannot serialise it and drops the response)."""
    if message is None or len(message.encode("utf-8")) <= MAX_STRING_BYTES:
        return message
    return message.encode("utf-8")[: MAX_STRING_BYTES - 3].decode("utf-8", "ignore") + "..."


# ZooKeeper's default jute.maxbuffer: no znode (here `/brokers/topics/<t>`) can be larger. Every
# partition of a topic costs at least 7 bytes in it (`"0":[1],`), so a partition count above
# MAX_PARTITIONS can never be written; it is refused before any placement work (a departure:
# Kafka 2.5 would compute the whole assignment first, billions of entries for a count of 2^31-1).
JUTE_MAX_BUFFER_BYTES = 0xFFFFF
MAX_PARTITIONS = JUTE_MAX_BUFFER_BYTES // 7


def check_partition_count(count: int) -> None:
    if count > MAX_PARTITIONS:
        raise AdminError(
            Errors.INVALID_PARTITIONS,
            f"Number of partitions {count} cannot fit in a topic znode: ZooKeeper's jute.maxbuffer "
            f"({JUTE_MAX_BUFFER_BYTES} bytes) holds at most {MAX_PARTITIONS} partitions.",
        )


def invalid_topic_name(name: str) -> bool:
    try:
        admin.validate_topic_name(name)
    except AdminError:
        return True
    return False


async def wait_until(done: Callable[[], bool], timeout_ms: int) -> bool:
    deadline = time.monotonic() + timeout_ms / 1000
    while not done():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL_S)
    return True


class _AdminApi:
    def __init__(self, node: NodeContext) -> None:
        self.node = node

    async def _await_metadata(
        self, outcomes: dict[str, Outcome], written: dict[str, list[int]], timeout_ms: int, deleting: bool
    ) -> None:
        """DelayedCreatePartitions / DelayedDeleteTopics: fill REQUEST_TIMED_OUT for what is missing."""
        cache = self.node.metadata_cache

        def complete(topic: str) -> bool:
            return not cache.contains(topic) if deleting else cache.has_leaders(topic, written[topic])

        if timeout_ms > 0:
            await wait_until(lambda: all(complete(t) for t in written), timeout_ms)
        for topic in written:
            if timeout_ms <= 0 or not complete(topic):
                outcomes[topic] = (REQUEST_TIMED_OUT, None)


class CreateTopics(_AdminApi):
    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        names = [str(t.name) for t in request.topics]
        outcomes: dict[str, Outcome] = {}
        sizes: dict[str, tuple[int, int]] = {}
        if not self.node.controller_is_active():
            outcomes = dict.fromkeys(names, (NOT_CONTROLLER, None))
        else:
            dupes = sorted({n for n in names if names.count(n) > 1})
            for n in dupes:
                outcomes[n] = (
                    INVALID_REQUEST,
                    f"Create topics request from client `{ctx.client_id}` contains multiple entries for the "
                    f"following topics: {', '.join(dupes)}",
                )
            validate_only = bool(getattr(request, "validate_only", False))
            written: dict[str, list[int]] = {}
            for topic in request.topics:
                if str(topic.name) in outcomes:
                    continue
                outcome, assignment = await self._create_one(topic, validate_only)
                outcomes[str(topic.name)] = outcome
                if outcome[0] == 0 and assignment:
                    sizes[str(topic.name)] = (len(assignment), len(next(iter(assignment.values()))))
                    if not validate_only:
                        written[str(topic.name)] = sorted(assignment)
            await self._await_metadata(outcomes, written, ms(request.timeout), deleting=False)
        result_cls = nested(schema, "CreatableTopicResult")
        results = tuple(
            build(
                result_cls,
                name=n,
                error_code=outcomes[n][0],
                error_message=fit_message(outcomes[n][1]),
                topic_config_error_code=0,
                num_partitions=sizes.get(n, (-1, -1))[0],
                replication_factor=sizes.get(n, (-1, -1))[1],
                configs=(),
            )
            for n in dict.fromkeys(names)
        )
        return build(schema, throttle_time=0, topics=results)

    async def _create_one(self, topic: Any, validate_only: bool) -> tuple[Outcome, dict[int, list[int]]]:
        name = str(topic.name)
        asked = {int(a.partition_index): [int(b) for b in a.broker_ids] for a in topic.assignments}
        refused, assignment = plan_creation(
            self.node, name, int(topic.num_partitions), int(topic.replication_factor), asked
        )
        if refused is not None:
            return refused, {}
        configs = {str(c.name): str(c.value) for c in topic.configs}
        try:
            if validate_only:
                await asyncio.to_thread(admin.validate_topic_create, self.node.zk, name, assignment)
            else:
                await asyncio.to_thread(
                    admin.create_topic_with_assignment, self.node.zk, name, configs, assignment
                )
        except (AdminError, PlacementError) as exc:
            return (exc.error_code, str(exc)), {}
        return (0, None), assignment


def plan_creation(
    node: NodeContext, name: str, num: int, rf: int, asked: dict[int, list[int]]
) -> tuple[Outcome | None, dict[int, list[int]]]:
    """What AdminManager.createTopics decides for one topic before it writes: the
    refusal (topic known to the metadata cache, counts and an assignment both given, a partition
    count or replication factor placement cannot meet), or the assignment to write — ``asked`` as
    given, else placed over the metadata cache's live brokers, where -1 is the broker's
    ``num.partitions`` / ``default.replication.factor`` (KIP-464). Synchronous and free of
    ZooKeeper: the simulator plays CreateTopics with it."""
    if node.metadata_cache.contains(name):
        return (36, f"Topic '{name}' already exists."), {}
    if (num != -1 or rf != -1) and asked:
        return (
            INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.",
        ), {}
    num = node.config.num_partitions if num == -1 else num
    rf = node.config.default_replication_factor if rf == -1 else rf
    try:
        check_partition_count(num)
        if asked:
            return None, asked
        brokers = sorted(node.metadata_cache.live_brokers)
        return None, assign_replicas_to_brokers(brokers, num, rf, node.rng)
    except (AdminError, PlacementError) as exc:
        return (exc.error_code, str(exc)), {}


class DeleteTopics(_AdminApi):
    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        names = [str(n) for n in request.topic_names]
        outcomes: dict[str, Outcome] = {}
        written: dict[str, list[int]] = {}
        for name in dict.fromkeys(names):
            if not self.node.controller_is_active():
                outcomes[name] = (NOT_CONTROLLER, None)
            elif not self.node.config.delete_topic_enable:
                outcomes[name] = (INVALID_REQUEST if ctx.api_version < 3 else TOPIC_DELETION_DISABLED, None)
            elif not self.node.metadata_cache.contains(name):
                outcomes[name] = (3, None)
            else:
                try:
                    await asyncio.to_thread(admin.delete_topic, self.node.zk, name)
                    outcomes[name], written[name] = (0, None), []
                except AdminError as exc:
                    outcomes[name] = (exc.error_code, None)
        if written:
            await self._await_metadata(outcomes, written, ms(request.timeout), deleting=True)
        result_cls = nested(schema, "DeletableTopicResult")
        results = tuple(build(result_cls, name=n, error_code=outcomes[n][0]) for n in outcomes)
        return build(schema, throttle_time=0, responses=results)


class CreatePartitions(_AdminApi):
    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        names = [str(t.name) for t in request.topics]
        outcomes: dict[str, Outcome] = {}
        written: dict[str, list[int]] = {}
        validate_only = bool(request.validate_only)
        for topic in request.topics:
            name = str(topic.name)
            if not self.node.controller_is_active():
                outcomes[name] = (NOT_CONTROLLER, None)
            elif names.count(name) > 1:
                outcomes[name] = (INVALID_REQUEST, "Duplicate topic in request.")
            else:
                try:
                    new = await asyncio.to_thread(self._add_partitions, self.node.zk, topic, validate_only)
                    outcomes[name] = (0, None)
                    if not validate_only:
                        written[name] = new
                except (AdminError, PlacementError) as exc:
                    outcomes[name] = (exc.error_code, str(exc))
        await self._await_metadata(outcomes, written, ms(request.timeout), deleting=False)
        result_cls = nested(schema, "CreatePartitionsTopicResult")
        results = tuple(
            build(result_cls, name=n, error_code=outcomes[n][0], error_message=fit_message(outcomes[n][1]))
            for n in outcomes
        )
        return build(schema, throttle_time=0, results=results)

    def _add_partitions(self, zk: NodeZkPort, topic: Any, validate_only: bool) -> list[int]:
        """AdminManager.createPartitions + AdminZkClient.addPartitions; returns the new partition ids."""
        name, count = str(topic.name), int(topic.count)
        check_partition_count(count)
        if zk.exists(zkdata.delete_topic_path(name)):
            raise AdminError(Errors.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
        existing, _ = admin.read_assignment(zk, name)
        if any(a.is_being_reassigned for a in existing.values()):
            raise AdminError(
                Errors.REASSIGNMENT_IN_PROGRESS,
                f"A partition reassignment is in progress for the topic '{name}'.",
            )
        old = len(existing)
        if count < old:
            raise AdminError(
                Errors.INVALID_PARTITIONS,
                f"Topic currently has {old} partitions, which is higher than the requested {count}.",
            )
        if count == old:
            raise AdminError(Errors.INVALID_PARTITIONS, f"Topic already has {old} partitions.")
        brokers = sorted(int(b) for b in admin.require_children(zk, zkdata.BROKER_IDS))
        rf = len(existing[0].replicas) if 0 in existing else 0
        if topic.assignments is not None:
            proposed = {old + i: [int(b) for b in a.broker_ids] for i, a in enumerate(topic.assignments)}
            _validate_new_assignment(proposed, count - old, rf, brokers)
        else:
            start = add_partitions_start_index(brokers, existing[0].replicas[0])
            proposed = assign_replicas_to_brokers(
                brokers, count - old, rf, self.node.rng, fixed_start_index=start, start_partition_id=old
            )
        if not validate_only:
            full = dict(existing)
            full.update({p: ReplicaAssignment(tuple(r)) for p, r in proposed.items()})
            admin.write_assignment(zk, name, full)
        return sorted(proposed)


def _validate_new_assignment(
    proposed: dict[int, list[int]], increment: int, rf: int, brokers: list[int]
) -> None:
    unknown = sorted({b for r in proposed.values() for b in r} - set(brokers))
    if unknown:
        raise AdminError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
        )
    if len(proposed) != increment:
        raise AdminError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            f"Increasing the number of partitions by {increment} but {len(proposed)} assignments provided.",
        )
    for p, replicas in proposed.items():
        if len(replicas) != len(set(replicas)):
            raise AdminError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} "
                f"for partition id {p}.",
            )
        if len(replicas) != rf:
            raise AdminError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Inconsistent replication factor between partitions, partition 0 has {rf} while partitions "
                f"[{p}] have replication factors [{len(replicas)}], respectively.",
            )
