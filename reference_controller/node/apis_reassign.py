"""AlterPartitionReassignments (45), ListPartitionReassignments (46) and ElectLeaders (43) as
KafkaApis + ReplicaManager@2.5.1 (ring: drivers).

The receiving broker hands each request to **its own** controller component (spec §13.0), which
answers NOT_CONTROLLER unless it is the active controller; nothing is forwarded. A broker-only
node (no controller component) answers NOT_CONTROLLER itself. The answer is sent when the
controller's event thread calls back — in 2.5.1 some requests are never answered (a queued
reassignment event dropped by a session expiry, an event that fails): such a request stays
unanswered and its connection open, as a Kafka broker's muted channel does, until the client
gives up.

- 45: per partition a target or, for `Replicas` null, a cancellation; a partition named twice
  counts once (the last entry); `TimeoutMs` is not read. The response groups the results by topic.
- 46: `Topics` null lists every reassignment; the controller's in-memory view.
- 43 (KafkaApis.handleElectReplicaLeader L2667-2736, ReplicaManager.electLeaders L1715-1755,
  DelayedElectLeader): `TopicPartitions` null means every partition in this broker's metadata
  cache, and then ELECTION_NOT_NEEDED results are left out; v0 is always PREFERRED. An elected
  partition is answered 0 once this broker's metadata cache shows its new leader, or
  REQUEST_TIMED_OUT (7) at `TimeoutMs` after the request arrived; errors are answered at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kio.index import load_response_schema

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from kafkawire.framing import build
from kafkawire.states import TopicPartition
from reference_controller.controller.events import ElectionResults, ElectionType
from reference_controller.node.apis_admin import fit_message, wait_until
from reference_controller.node.context import NodeContext
from reference_controller.node.protocol import RequestContext
from reference_controller.node.wire import ms, nested
from reference_controller.zkdata import ReplicaAssignment

T = TypeVar("T")
NOT_CONTROLLER = ApiError.of(Errors.NOT_CONTROLLER)


async def ask_controller(submit: Callable[[Callable[[T], None]], None]) -> T:
    """Hand a callback to the controller's event thread and wait for it (forever, if it never
    comes: the connection then stays unanswered, like a muted Kafka channel)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T) -> None:
        if not future.done():
            future.set_result(result)

    def reply(result: T) -> None:  # called on the controller's event thread
        with contextlib.suppress(RuntimeError):  # the node's loop has closed: nobody to answer
            loop.call_soon_threadsafe(settle, result)

    submit(reply)
    return await future


async def never_answered() -> Any:
    """Kafka 2.5.1 sends no response at all here; the request waits until the client gives up."""
    await asyncio.Event().wait()


def by_topic(partitions: list[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return grouped


class ControllerApis:
    def __init__(self, node: NodeContext) -> None:
        self.node = node

    # ---- 45 ----------------------------------------------------------------------------------
    async def alter_partition_reassignments(self, ctx: RequestContext, request: Any) -> Any:
        reassignments: dict[TopicPartition, tuple[int, ...] | None] = {}
        for topic in request.topics:
            for p in topic.partitions:
                tp = TopicPartition(str(topic.name), int(p.partition_index))
                reassignments.pop(tp, None)  # Scala's toMap: the last entry wins (and comes last)
                reassignments[tp] = None if p.replicas is None else tuple(int(r) for r in p.replicas)
        controller = self.node.controller
        result: dict[TopicPartition, ApiError] | ApiError
        if controller is None:
            result = NOT_CONTROLLER
        else:
            result = await ask_controller(
                lambda reply: controller.alter_partition_reassignments(reassignments, reply)
            )
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        if isinstance(result, ApiError):
            return build(
                schema, throttle_time=0, error_code=result.error, error_message=result.message, responses=()
            )
        topic_cls, part_cls = (
            nested(schema, "ReassignableTopicResponse"),
            nested(schema, "ReassignablePartitionResponse"),
        )
        ordered = [tp for tp in reassignments if tp in result]
        responses = tuple(
            build(
                topic_cls,
                name=topic,
                partitions=tuple(
                    build(
                        part_cls,
                        partition_index=p,
                        error_code=result[TopicPartition(topic, p)].error,
                        error_message=fit_message(result[TopicPartition(topic, p)].message),
                    )
                    for p in partitions
                ),
            )
            for topic, partitions in by_topic(ordered).items()
        )
        return build(schema, throttle_time=0, error_code=0, error_message=None, responses=responses)

    # ---- 46 ----------------------------------------------------------------------------------
    async def list_partition_reassignments(self, ctx: RequestContext, request: Any) -> Any:
        partitions: frozenset[TopicPartition] | None = None
        if request.topics is not None:
            partitions = frozenset(
                TopicPartition(str(t.name), int(p))
                for t in request.topics
                for p in (t.partition_indexes or ())
            )
        controller = self.node.controller
        result: dict[TopicPartition, ReplicaAssignment] | ApiError
        if controller is None:
            result = NOT_CONTROLLER
        else:
            result = await ask_controller(
                lambda reply: controller.list_partition_reassignments(partitions, reply)
            )
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        if isinstance(result, ApiError):
            return build(
                schema, throttle_time=0, error_code=result.error, error_message=result.message, topics=()
            )
        topic_cls, part_cls = (
            nested(schema, "OngoingTopicReassignment"),
            nested(schema, "OngoingPartitionReassignment"),
        )
        topics = tuple(
            build(
                topic_cls,
                name=topic,
                partitions=tuple(
                    build(
                        part_cls,
                        partition_index=p,
                        replicas=result[TopicPartition(topic, p)].replicas,
                        adding_replicas=result[TopicPartition(topic, p)].adding,
                        removing_replicas=result[TopicPartition(topic, p)].removing,
                    )
                    for p in parts
                ),
            )
            for topic, parts in by_topic(sorted(result)).items()
        )
        return build(schema, throttle_time=0, error_code=0, error_message=None, topics=topics)

    # ---- 43 ----------------------------------------------------------------------------------
    async def elect_leaders(self, ctx: RequestContext, request: Any) -> Any:
        deadline = time.monotonic() + ms(request.timeout) / 1000
        every = request.topic_partitions is None
        try:
            kind = election_type(ctx.api_version, request)
        except ValueError as exc:
            if every:
                return await never_answered()  # Kafka's error response itself fails on a null list
            named = sorted(
                {TopicPartition(str(t.topic), int(p)) for t in request.topic_partitions for p in t.partitions}
            )
            error = ApiError(Errors.UNKNOWN_SERVER_ERROR, str(exc))
            return self._elect_response(ctx, dict.fromkeys(named, error), error.error)
        if every:
            cache = self.node.metadata_cache
            partitions = frozenset(
                TopicPartition(t, p) for t, parts in cache.partitions.items() for p in parts
            )
        else:
            partitions = frozenset(
                TopicPartition(str(t.topic), int(p)) for t in request.topic_partitions for p in t.partitions
            )
        controller = self.node.controller
        results: ElectionResults
        if controller is None:
            results = dict.fromkeys(partitions, ApiError(Errors.NOT_CONTROLLER, None))
        else:
            results = await ask_controller(lambda reply: controller.elect_leaders(partitions, kind, reply))
        answers = await self._await_leaders(results, deadline)
        if every:
            answers = {tp: e for tp, e in answers.items() if e.error != Errors.ELECTION_NOT_NEEDED}
        return self._elect_response(ctx, answers, Errors.NONE)

    async def _await_leaders(
        self, results: ElectionResults, deadline: float
    ) -> dict[TopicPartition, ApiError]:
        """DelayedElectLeader: partitions with an expected leader wait for this broker's metadata
        cache to show it, until the deadline; then REQUEST_TIMED_OUT with a null message."""
        answers = {tp: r for tp, r in results.items() if isinstance(r, ApiError)}
        expected = {tp: r for tp, r in results.items() if not isinstance(r, ApiError)}
        if not expected:
            return answers
        cache = self.node.metadata_cache

        def shown(tp: TopicPartition) -> bool:
            state = cache.partition_state(tp)
            return state is not None and state.leader == expected[tp]

        remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
        await wait_until(lambda: all(shown(tp) for tp in expected), remaining_ms)
        for tp in expected:
            answers[tp] = (
                ApiError(Errors.NONE, None) if shown(tp) else ApiError(Errors.REQUEST_TIMED_OUT, None)
            )
        return answers

    def _elect_response(self, ctx: RequestContext, answers: dict[TopicPartition, ApiError], top: int) -> Any:
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        result_cls, part_cls = nested(schema, "ReplicaElectionResult"), nested(schema, "PartitionResult")
        results = tuple(
            build(
                result_cls,
                topic=topic,
                partition_result=tuple(
                    build(
                        part_cls,
                        partition_id=p,
                        error_code=answers[TopicPartition(topic, p)].error,
                        error_message=fit_message(answers[TopicPartition(topic, p)].message),
                    )
                    for p in parts
                ),
            )
            for topic, parts in by_topic(sorted(answers)).items()
        )
        return build(schema, throttle_time=0, error_code=top, replica_election_results=results)


def election_type(version: int, request: Any) -> ElectionType:
    """`ElectLeadersRequestOps.electionType`: v0 is PREFERRED; else 0 PREFERRED, 1 UNCLEAN."""
    if version == 0:
        return ElectionType.PREFERRED
    value = int(request.election_type)
    if value == 0:
        return ElectionType.PREFERRED
    if value == 1:
        return ElectionType.UNCLEAN
    raise ValueError(f"Value {value} must be one of [PREFERRED, UNCLEAN]")
