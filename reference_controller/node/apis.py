"""Request handlers of the node, one per API, as KafkaApis@2.5.1 (ring: drivers).

Advertised versions are exactly Kafka 2.5's for the APIs implemented: ApiVersions 0-3, Metadata
0-9, CreateTopics 0-5, DeleteTopics 0-4, CreatePartitions 0-2, Fetch 0-11, LeaderAndIsr 0-4,
UpdateMetadata 0-6, StopReplica 0-2, ControlledShutdown 0-3, DescribeConfigs 0-2, AlterConfigs 0-1,
ElectLeaders 0-2, IncrementalAlterConfigs 0-1, AlterPartitionReassignments 0,
ListPartitionReassignments 0 (spec §13.0). Controller-facing handlers apply broker-epoch fencing
(§7.4) first, then the ReplicaManager (§7.3), and journal every request. The admin APIs live in
`apis_admin.py` (topics), `apis_reassign.py` (the KIP-455 controller APIs and ElectLeaders),
`apis_configs.py` and `apis_describe_configs.py` (configs).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from kio.index import load_response_schema

from kafkawire.errors import Errors
from kafkawire.framing import build
from kafkawire.states import TopicPartition
from reference_controller.node import apis_admin
from reference_controller.node.apis_configs import AlterConfigs, IncrementalAlterConfigs
from reference_controller.node.apis_describe_configs import DescribeConfigs
from reference_controller.node.apis_reassign import ControllerApis
from reference_controller.node.context import NodeContext
from reference_controller.node.journal import journal_brokers
from reference_controller.node.metadata_cache import brokers_from_request, partition_states_from_request
from reference_controller.node.partition import leader_and_isr_states, live_leaders, stop_replica_partitions
from reference_controller.node.protocol import CloseConnection, RequestContext
from reference_controller.node.wire import has_field, ms, nested

log = logging.getLogger("kafka.server.KafkaApis")
# kio resolves the class by name on every call; the answer for a key and version never changes
_response_schema = functools.cache(load_response_schema)

FETCH, METADATA, LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, CONTROLLED_SHUTDOWN = 1, 3, 4, 5, 6, 7
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 18, 19, 20, 37
DESCRIBE_CONFIGS, ALTER_CONFIGS, ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 43, 44
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    FETCH: (0, 11), METADATA: (0, 9), LEADER_AND_ISR: (0, 4), STOP_REPLICA: (0, 2), UPDATE_METADATA: (0, 6),
    CONTROLLED_SHUTDOWN: (0, 3), API_VERSIONS: (0, 3), CREATE_TOPICS: (0, 5), DELETE_TOPICS: (0, 4),
    CREATE_PARTITIONS: (0, 2), DESCRIBE_CONFIGS: (0, 2), ALTER_CONFIGS: (0, 1), ELECT_LEADERS: (0, 2),
    INCREMENTAL_ALTER_CONFIGS: (0, 1), ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    LIST_PARTITION_REASSIGNMENTS: (0, 0),
}  # fmt: skip

MAX_FETCH_WAIT_MS = 5000


def admin_api_handlers(node: NodeContext) -> dict[int, Any]:
    """The admin APIs of spec §13: configs (any broker) and the controller's KIP-455/460 APIs."""
    controller_apis = ControllerApis(node)
    return {
        DESCRIBE_CONFIGS: DescribeConfigs(node).handle,
        ALTER_CONFIGS: AlterConfigs(node).handle,
        INCREMENTAL_ALTER_CONFIGS: IncrementalAlterConfigs(node).handle,
        ELECT_LEADERS: controller_apis.elect_leaders,
        ALTER_PARTITION_REASSIGNMENTS: controller_apis.alter_partition_reassignments,
        LIST_PARTITION_REASSIGNMENTS: controller_apis.list_partition_reassignments,
    }


class KafkaApis:
    def __init__(self, node: NodeContext) -> None:
        self.node = node
        self.handlers = {
            API_VERSIONS: self.handle_api_versions, METADATA: self.handle_metadata, FETCH: self.handle_fetch,
            LEADER_AND_ISR: self.handle_leader_and_isr, UPDATE_METADATA: self.handle_update_metadata,
            STOP_REPLICA: self.handle_stop_replica, CONTROLLED_SHUTDOWN: self.handle_controlled_shutdown,
            CREATE_TOPICS: apis_admin.CreateTopics(node).handle,
            DELETE_TOPICS: apis_admin.DeleteTopics(node).handle,
            CREATE_PARTITIONS: apis_admin.CreatePartitions(node).handle,
            **admin_api_handlers(node),
        }  # fmt: skip

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        handler = self.handlers.get(ctx.api_key)
        if handler is None:  # pragma: no cover - the protocol layer filters unknown keys
            raise CloseConnection(f"no handler for API key {ctx.api_key}")
        return await handler(ctx, request)

    def _schema(self, ctx: RequestContext) -> type[Any]:
        return _response_schema(ctx.api_key, ctx.api_version)

    # -- client-facing -------------------------------------------------------------------------
    async def handle_api_versions(self, ctx: RequestContext, request: Any) -> Any:
        schema = self._schema(ctx)
        api = nested(schema, "ApiVersion")
        keys = tuple(
            build(api, api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())
        )
        return build(schema, error_code=0, api_keys=keys, throttle_time=0)

    async def handle_metadata(self, ctx: RequestContext, request: Any) -> Any:
        schema = self._schema(ctx)
        cache = self.node.metadata_cache
        broker_cls, topic_cls = (
            nested(schema, "MetadataResponseBroker"),
            nested(schema, "MetadataResponseTopic"),
        )
        brokers = []
        for b in sorted(cache.live_brokers.values(), key=lambda b: b.broker_id):
            ep = b.endpoints.get(ctx.listener)
            if ep is not None:
                brokers.append(build(broker_cls, node_id=b.broker_id, host=ep[0], port=ep[1], rack=b.rack))
        requested = request.topics
        if requested is None or (ctx.api_version == 0 and not requested):
            names = cache.topics()
        else:
            names = [str(t.name) for t in requested]
        topics = [self._topic_metadata(schema, topic_cls, ctx, name) for name in names]
        return build(
            schema,
            throttle_time=0,
            brokers=tuple(brokers),
            cluster_id=self.node.cluster_id,
            controller_id=cache.controller_id,
            topics=tuple(topics),
            cluster_authorized_operations=-2147483648,
        )

    def _topic_metadata(self, schema: type[Any], topic_cls: type[Any], ctx: RequestContext, name: str) -> Any:
        cache = self.node.metadata_cache
        part_cls = nested(schema, "MetadataResponsePartition")
        if not cache.contains(name):
            error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            if apis_admin.invalid_topic_name(name):
                error = Errors.INVALID_TOPIC_EXCEPTION
            return build(topic_cls, error_code=error, name=name, is_internal=False, partitions=())
        partitions = []
        for index, st in sorted(cache.partitions[name].items()):
            leader_alive = cache.endpoint(st.leader, ctx.listener) is not None
            partitions.append(
                build(
                    part_cls,
                    error_code=0 if leader_alive else Errors.LEADER_NOT_AVAILABLE,
                    partition_index=index,
                    leader_id=st.leader if leader_alive else -1,
                    leader_epoch=st.leader_epoch,
                    replica_nodes=st.replicas,
                    isr_nodes=st.isr,
                    offline_replicas=st.offline_replicas,
                )
            )
        return build(
            topic_cls,
            error_code=0,
            name=name,
            is_internal=False,
            partitions=tuple(partitions),
            topic_authorized_operations=-2147483648,
        )

    async def handle_fetch(self, ctx: RequestContext, request: Any) -> Any:
        schema = self._schema(ctx)
        topic_cls, part_cls = nested(schema, "FetchableTopicResponse"), nested(schema, "PartitionData")
        rm = self.node.replica_manager
        replica_id = int(request.replica_id)
        errors_seen = False
        topics = []
        for topic in request.topics:
            parts = []
            for fp in topic.partitions:
                tp = TopicPartition(str(topic.topic), int(fp.partition))
                error = self._fetch_error(tp, int(getattr(fp, "current_leader_epoch", -1)))
                if (
                    error == 0
                    and replica_id >= 0
                    and rm.record_follower_fetch(tp, replica_id, int(fp.fetch_offset))
                ):
                    await self.node.isr_manager.maybe_expand_isr(tp, replica_id)
                errors_seen = errors_seen or error != 0
                parts.append(
                    build(
                        part_cls,
                        partition_index=tp[1],
                        error_code=error,
                        high_watermark=0 if error == 0 else -1,
                        last_stable_offset=0 if error == 0 else -1,
                        log_start_offset=0 if error == 0 else -1,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=b"",
                    )
                )
            topics.append(build(topic_cls, topic=topic.topic, partitions=tuple(parts)))
        if not errors_seen:  # nothing to return: hold the fetch like a DelayedFetch
            await asyncio.sleep(min(ms(request.max_wait), MAX_FETCH_WAIT_MS) / 1000)
        return build(schema, throttle_time=0, error_code=0, session_id=0, responses=tuple(topics))

    def _fetch_error(self, tp: TopicPartition, current_leader_epoch: int) -> int:
        if tp in self.node.replica_manager.offline_partitions:
            return Errors.KAFKA_STORAGE_ERROR
        p = self.node.replica_manager.partitions.get(tp)
        if p is None or tp not in self.node.replica_manager.log_manager.logs:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if not p.is_leader:
            return Errors.NOT_LEADER_FOR_PARTITION
        if current_leader_epoch >= 0 and current_leader_epoch < p.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if current_leader_epoch > p.leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        return 0

    # -- controller-facing ---------------------------------------------------------------------
    def _journal(
        self,
        ctx: RequestContext,
        api: str,
        request: Any,
        error: int,
        partitions: list[Any],
        *,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.node.journal.record(
            {
                "listener": ctx.listener,
                "api": api,
                "api_key": ctx.api_key,
                "version": ctx.api_version,
                "correlation_id": ctx.correlation_id,
                "controller_id": int(request.controller_id),
                "controller_epoch": int(request.controller_epoch),
                "broker_epoch": int(getattr(request, "broker_epoch", -1)),
                "error_code": error,
                "partitions": partitions,
                **(extra or {}),
            }
        )

    def _stale_broker_epoch(self, api: str, request: Any) -> bool:
        epoch = int(getattr(request, "broker_epoch", -1))
        rm = self.node.replica_manager
        if rm.is_stale_broker_epoch(epoch):
            log.info(
                f"Received {api} request with broker epoch {epoch} smaller than the current broker epoch "
                f"{rm.broker_epoch}"
            )
            return True
        return False

    async def handle_leader_and_isr(self, ctx: RequestContext, request: Any) -> Any:
        schema = self._schema(ctx)
        states = leader_and_isr_states(request)
        error: int
        errors: dict[TopicPartition, int]
        await self.node.isr_manager.wait_for_isr_writes(st.tp for st in states)  # no await below
        if self._stale_broker_epoch("LeaderAndIsr", request):
            error, errors = Errors.STALE_BROKER_EPOCH, {st.tp: Errors.STALE_BROKER_EPOCH for st in states}
        else:
            error, errors = self.node.replica_manager.become_leader_or_follower(
                ctx.correlation_id,
                int(request.controller_id),
                int(request.controller_epoch),
                states,
                live_leaders(request),
            )
        if self.node.journal.records:  # the entries are built only for a journal that keeps them
            entries = [
                {
                    "topic": st.topic,
                    "partition": st.partition,
                    "controller_epoch": st.controller_epoch,
                    "leader": st.leader,
                    "leader_epoch": st.leader_epoch,
                    "isr": list(st.isr),
                    "zk_version": st.zk_version,
                    "replicas": list(st.replicas),
                    "adding": list(st.adding_replicas),
                    "removing": list(st.removing_replicas),
                    "is_new": st.is_new,
                    "error_code": errors.get(st.tp, 0),
                }
                for st in states
            ]
            leaders = [{"id": x.broker_id, "host": x.host, "port": x.port} for x in live_leaders(request)]
            self._journal(ctx, "LeaderAndIsr", request, error, entries, extra={"live_leaders": leaders})
        err_cls = nested(schema, "LeaderAndIsrPartitionError")
        return build(
            schema,
            error_code=error,
            partition_errors=tuple(
                build(err_cls, topic_name=tp[0], partition_index=tp[1], error_code=e)
                for tp, e in errors.items()
            ),
        )

    async def handle_update_metadata(self, ctx: RequestContext, request: Any) -> Any:
        states = partition_states_from_request(request)
        error: int
        if self._stale_broker_epoch("UpdateMetadata", request):
            error = Errors.STALE_BROKER_EPOCH
        else:
            error = self.node.replica_manager.maybe_update_metadata_cache(
                ctx.correlation_id,
                int(request.controller_id),
                int(request.controller_epoch),
                brokers_from_request(request),
                states,
            )
        if self.node.journal.records:
            entries = [
                {
                    "topic": tp[0],
                    "partition": tp[1],
                    "controller_epoch": st.controller_epoch,
                    "leader": st.leader,
                    "leader_epoch": st.leader_epoch,
                    "isr": list(st.isr),
                    "zk_version": st.zk_version,
                    "replicas": list(st.replicas),
                    "offline_replicas": list(st.offline_replicas),
                }
                for tp, st in states
            ]
            self._journal(
                ctx,
                "UpdateMetadata",
                request,
                error,
                entries,
                extra={"live_brokers": journal_brokers(request)},
            )
        return build(self._schema(ctx), error_code=error)

    async def handle_stop_replica(self, ctx: RequestContext, request: Any) -> Any:
        schema = self._schema(ctx)
        partitions = stop_replica_partitions(request)
        delete = bool(request.delete_partitions)
        error: int
        errors: dict[TopicPartition, int]
        await self.node.isr_manager.wait_for_isr_writes(partitions)  # no await below
        if self._stale_broker_epoch("StopReplica", request):
            error, errors = Errors.STALE_BROKER_EPOCH, dict.fromkeys(partitions, Errors.STALE_BROKER_EPOCH)
        else:
            error, errors = self.node.replica_manager.stop_replicas(
                int(request.controller_epoch), delete, partitions
            )
        if self.node.journal.records:
            entries = [
                {
                    "topic": tp[0],
                    "partition": tp[1],
                    "delete_partition": delete,
                    "error_code": errors.get(tp, error),
                }
                for tp in partitions
            ]
            self._journal(ctx, "StopReplica", request, error, entries)
        err_cls = nested(schema, "StopReplicaPartitionError")
        return build(
            schema,
            error_code=error,
            partition_errors=tuple(
                build(err_cls, topic_name=tp[0], partition_index=tp[1], error_code=e)
                for tp, e in errors.items()
            ),
        )

    async def handle_controlled_shutdown(self, ctx: RequestContext, request: Any) -> Any:
        schema = self._schema(ctx)
        broker_id = int(request.broker_id)
        broker_epoch = int(request.broker_epoch) if has_field(request, "broker_epoch") else -1
        controller = self.node.controller
        remaining: tuple[TopicPartition, ...] = ()
        error: int
        if controller is None:
            error = Errors.STALE_CONTROLLER_EPOCH
        else:
            timeout_s = self.node.config.request_timeout_ms / 1000
            result = await asyncio.to_thread(
                controller.controlled_shutdown, broker_id, broker_epoch, timeout_s
            )
            error, remaining = int(result.error_code), tuple(result.remaining_partitions)
        part_cls = nested(schema, "RemainingPartition")
        return build(
            schema,
            error_code=error,
            remaining_partitions=tuple(
                build(part_cls, topic_name=t, partition_index=p) for t, p in remaining
            ),
        )
