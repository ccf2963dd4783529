"""AlterConfigs (33) and IncrementalAlterConfigs (44) as KafkaApis + AdminManager@2.5.1 (ring:
drivers).

Served by **any** broker, which validates and writes ZooKeeper itself (spec §13.4.1-13.4.4; the
controller only reacts to the notification). Per resource (AdminManager.scala@2.5.1 L411-560):

- TOPIC: the new config set — AlterConfigs: exactly the request's entries; Incremental: the
  stored set with SET/DELETE/APPEND/SUBTRACT applied — is checked (`Topic.validate`, the topic
  znode exists, `LogConfig.validate`) and, unless ValidateOnly, written by `change_entity_config`;
- BROKER: a non-empty name must be this broker's id; the empty name is the cluster default
  (`/config/brokers/<default>`); `broker_config.validate` then the same write;
- BROKER_LOGGER (Incremental only): Python loggers of this node stand for log4j's.

Outcomes: an `ApiException` keeps its code and message; a ConfigException (bad value) is
INVALID_REQUEST "Invalid config value for resource ConfigResource(type=…, name='…'): …"; any other
failure UNKNOWN_SERVER_ERROR (e.g. a topic missing from ZooKeeper: `Topic "<t>" does not exist.`,
KAFKA-10033 changed that in 2.7). A resource type Kafka rejects in the request handler fails every
resource of the request with INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.index import load_response_schema

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from kafkawire.framing import build
from reference_controller.broker_config_keys import KAFKA_CONFIG_TYPES
from reference_controller.controller.driver.dynamic_broker_config import DEFAULT_ENTITY, MalformedEntityConfig
from reference_controller.logutil import TRACE
from reference_controller.node import admin, broker_config, config_admin, log_config
from reference_controller.node.admin import AdminError
from reference_controller.node.apis_admin import fit_message
from reference_controller.node.config_def import ConfigException
from reference_controller.node.context import NodeContext
from reference_controller.node.protocol import RequestContext
from reference_controller.node.wire import nested
from reference_controller.node.zk_port import NodeZkPort

log = logging.getLogger("kafka.server.AdminManager")

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
RESOURCE_TYPES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")  # LogLevelConfig.VALID_LOG_LEVELS
PYTHON_LEVELS = {
    "OFF": logging.CRITICAL + 10, "FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
    "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": TRACE,
}  # fmt: skip
Resource = tuple[int, str]


class ApiException(Exception):
    """An exception Kafka answers with its own code and message (`ApiError.fromThrowable`)."""

    def __init__(self, error: int, message: str | None) -> None:
        super().__init__(message)
        self.error = error


def resource_str(resource: Resource) -> str:
    kind = RESOURCE_TYPES.get(resource[0], "UNKNOWN")
    return f"ConfigResource(type={kind}, name='{resource[1]}')"


def outcome(resource: Resource, action: Callable[[], None]) -> ApiError:
    """AdminManager's per-resource try/catch."""
    try:
        action()
    except (ConfigException, ValueError) as exc:
        if isinstance(exc, log_config.InvalidConfigurationException):
            return ApiError.from_exception(Errors.INVALID_CONFIG, str(exc))
        message = f"Invalid config value for resource {resource_str(resource)}: {exc}"
        log.info(message)
        return ApiError(Errors.INVALID_REQUEST, message)
    except ApiException as exc:
        return ApiError.from_exception(exc.error, str(exc) if exc.args[0] is not None else None)
    except AdminError as exc:
        return ApiError.from_exception(exc.error_code, str(exc))
    except Exception as exc:
        log.exception("Error processing alter configs request for resource %s", resource_str(resource))
        return ApiError.from_exception(Errors.UNKNOWN_SERVER_ERROR, _java_message(exc))
    return ApiError(Errors.NONE, None)


def _java_message(exc: Exception) -> str | None:
    """What `getMessage` would say for the Java exception Kafka meets at the same spot."""
    if isinstance(exc, KeyError):
        return f"key not found: {exc.args[0]}"
    return str(exc) or None


@dataclass(frozen=True)
class Change:
    """One config entry of a request: (name, value, operation; SET for AlterConfigs)."""

    name: str
    value: str | None
    op: int = SET


class ConfigWriter:
    """The validation and writes shared by both APIs (AdminManager.alterTopicConfigs /
    alterBrokerConfigs); blocking (the node's ZooKeeper port), run in a worker thread."""

    def __init__(self, node: NodeContext) -> None:
        self.node = node

    @property
    def zk(self) -> NodeZkPort:
        return self.node.zk

    def broker_id_of(self, name: str) -> int | None:
        """`getBrokerId`: None for the cluster default (empty name)."""
        if not name:
            return None
        try:
            broker_id = int(name)
        except ValueError:
            raise ApiException(
                Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
            ) from None
        if broker_id != self.node.config.broker_id:
            raise ApiException(
                Errors.INVALID_REQUEST,
                f"Unexpected broker id, expected {self.node.config.broker_id}, but received {name}",
            )
        return broker_id

    def alter_topic(self, topic: str, props: Mapping[str, str], validate_only: bool) -> None:
        self._validate_topic(topic, props)
        if not validate_only:
            log.info(f"Updating topic {topic} with new configuration {dict(props)}")
            self._validate_topic(topic, props)  # changeTopicConfig validates again
            config_admin.change_entity_config(self.zk, "topics", topic, props)

    def _validate_topic(self, topic: str, props: Mapping[str, str]) -> None:
        """AdminZkClient.validateTopicConfig (L323-329)."""
        admin.validate_topic_name(topic)
        if not config_admin.topic_exists(self.zk, topic):
            raise AdminError(Errors.UNKNOWN_SERVER_ERROR, f'Topic "{topic}" does not exist.')
        log_config.validate(props)

    def alter_broker(self, name: str, props: Mapping[str, str], validate_only: bool) -> None:
        broker_id = self.broker_id_of(name)
        per_broker = broker_id is not None
        broker_config.validate(props, per_broker=per_broker)
        if not validate_only:
            persistent = broker_config.to_persistent_props(props, per_broker=per_broker)
            entity = str(broker_id) if per_broker else DEFAULT_ENTITY
            config_admin.change_entity_config(self.zk, "brokers", entity, persistent)

    def stored_topic(self, topic: str) -> dict[str, str]:
        return self._fetch("topics", topic)

    def stored_broker(self, name: str) -> dict[str, str]:
        broker_id = self.broker_id_of(name)
        entity = DEFAULT_ENTITY if broker_id is None else str(broker_id)
        return broker_config.from_persistent_props(
            self._fetch("brokers", entity), per_broker=broker_id is not None
        )

    def _fetch(self, entity_type: str, name: str) -> dict[str, str]:
        try:
            return config_admin.fetch_entity_config(self.zk, entity_type, name)
        except MalformedEntityConfig as exc:
            raise RuntimeError(str(exc)) from exc


def apply_changes(props: dict[str, str], changes: list[Change], list_type: Callable[[str], bool]) -> None:
    """AdminManager.prepareIncrementalConfigs (L589-620), with its failures: APPEND/SUBTRACT of an
    unknown key fails as a Scala Map lookup, of a non-list key INVALID_REQUEST, of an unset key as
    a NullPointerException (KAFKA-9644, fixed in 2.6); SET of a null value as a NullPointerException."""
    for change in changes:
        match change.op:
            case 0:
                if change.value is None:
                    raise RuntimeError("")  # Properties.setProperty(k, null): NullPointerException
                props[change.name] = change.value
            case 1:
                props.pop(change.name, None)
            case 2 | 3:
                verb = "append" if change.op == APPEND else "subtract"
                if not list_type(change.name):
                    raise ApiException(
                        Errors.INVALID_REQUEST,
                        f"Config value {verb} is not allowed for config key: {change.name}",
                    )
                old = props.get(change.name)
                if old is None or change.value is None:
                    raise RuntimeError("")  # getProperty(k).split: NullPointerException
                items, given = old.split(","), change.value.split(",")
                merged = [*items, *given] if change.op == APPEND else _scala_diff(items, given)
                props[change.name] = ",".join(merged)
            case _:
                raise RuntimeError("null")  # OpType.forId(unknown) is null: scala.MatchError: null


def _scala_diff(items: list[str], remove: list[str]) -> list[str]:
    """Scala's `List.diff`: each element of `remove` cancels one occurrence."""
    left = list(items)
    for r in remove:
        if r in left:
            left.remove(r)
    return left


def topic_list_type(name: str) -> bool:
    key = log_config.LOG_CONFIG_KEYS[name]  # KeyError: "key not found: <name>"
    return key.type == "LIST"


def broker_list_type(name: str) -> bool:
    return KAFKA_CONFIG_TYPES[name] == "LIST"  # KeyError for a custom key, as Kafka's Map lookup


class _ConfigsApi:
    def __init__(self, node: NodeContext) -> None:
        self.node = node
        self.writer = ConfigWriter(node)

    def _response(self, ctx: RequestContext, results: dict[Resource, ApiError]) -> Any:
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        item = nested(schema, "AlterConfigsResourceResponse")
        return build(
            schema,
            throttle_time=0,
            responses=tuple(
                build(
                    item,
                    error_code=e.error,
                    error_message=fit_message(e.message),
                    resource_type=r[0],
                    resource_name=r[1],
                )
                for r, e in results.items()
            ),
        )


def _check_types(resources: list[Resource], allowed: tuple[int, ...], api: str) -> ApiError | None:
    """KafkaApis' authorization pass: a resource type it does not handle fails the whole request."""
    for kind, _ in resources:
        if kind == BROKER_LOGGER and BROKER_LOGGER not in allowed:
            return ApiError(
                Errors.INVALID_REQUEST,
                f"{api} is deprecated and does not support the resource type BROKER_LOGGER",
            )
        if kind not in allowed:
            return ApiError(
                Errors.INVALID_REQUEST, f"Unexpected resource type {RESOURCE_TYPES.get(kind, 'UNKNOWN')}"
            )
    return None


class AlterConfigs(_ConfigsApi):
    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        entries: dict[Resource, list[Change]] = {}
        for res in request.resources:
            entries[(int(res.resource_type), str(res.resource_name))] = [
                Change(str(c.name), None if c.value is None else str(c.value)) for c in res.configs
            ]
        failed = _check_types(list(entries), (TOPIC, BROKER), "AlterConfigs")
        if failed is not None:
            return self._response(ctx, dict.fromkeys(entries, failed))
        validate_only = bool(request.validate_only)
        results = {}
        for resource, changes in entries.items():
            results[resource] = await asyncio.to_thread(self._alter, resource, changes, validate_only)
        return self._response(ctx, results)

    def _alter(self, resource: Resource, changes: list[Change], validate_only: bool) -> ApiError:
        def action() -> None:
            props: dict[str, str] = {}
            apply_changes(props, changes, topic_list_type)  # SET only: exactly the request's entries
            if resource[0] == TOPIC:
                self.writer.alter_topic(resource[1], props, validate_only)
            else:
                self.writer.alter_broker(resource[1], props, validate_only)

        return outcome(resource, action)


class IncrementalAlterConfigs(_ConfigsApi):
    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        entries: dict[Resource, list[Change]] = {}
        for res in request.resources:
            entries[(int(res.resource_type), str(res.resource_name))] = [
                Change(str(c.name), None if c.value is None else str(c.value), int(c.config_operation))
                for c in res.configs
            ]
        failed = _check_types(list(entries), (TOPIC, BROKER, BROKER_LOGGER), "IncrementalAlterConfigs")
        if failed is not None:
            return self._response(ctx, dict.fromkeys(entries, failed))
        validate_only = bool(request.validate_only)
        results = {}
        for resource, changes in entries.items():
            results[resource] = await asyncio.to_thread(self.alter_resource, resource, changes, validate_only)
        return self._response(ctx, results)

    def alter_resource(self, resource: Resource, changes: list[Change], validate_only: bool) -> ApiError:
        """One resource's changes (blocking: ZooKeeper reads and writes), as AdminManager applies them."""
        kind, name = resource

        def action() -> None:
            names = [c.name for c in changes]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ApiException(
                    Errors.INVALID_REQUEST, f"Error due to duplicate config keys : {','.join(dupes)}"
                )
            if kind == TOPIC:
                props = self.writer.stored_topic(name)
                apply_changes(props, changes, topic_list_type)
                self.writer.alter_topic(name, props, validate_only)
            elif kind == BROKER:
                props = self.writer.stored_broker(name)
                apply_changes(props, changes, broker_list_type)
                self.writer.alter_broker(name, props, validate_only)
            else:
                self.writer.broker_id_of(name)
                alter_log_levels(changes, validate_only)

        return outcome(resource, action)


def alter_log_levels(changes: list[Change], validate_only: bool) -> None:
    """BROKER_LOGGER (AdminManager.validateLogLevelConfigs / alterLogLevelConfigs, L562-600): a
    logger of this node's Python logging stands for a log4j logger; "root" is the root logger."""
    known = set(logging.Logger.manager.loggerDict) | {"root"}
    for change in changes:
        if change.op in (APPEND, SUBTRACT):
            verb = "APPEND" if change.op == APPEND else "SUBTRACT"
            raise ApiException(
                Errors.INVALID_REQUEST, f"{verb} operation is not allowed for the BROKER_LOGGER resource"
            )
        if change.name not in known:
            raise ConfigException(f"Logger {change.name} does not exist!")
        if change.op == SET and change.value not in LOG_LEVELS:
            raise ConfigException(
                f"Cannot set the log level of {change.name} to {change.value} as it is not a supported log "
                f"level. Valid log levels are {', '.join(LOG_LEVELS)}"
            )
        if change.op == DELETE and change.name == "root":
            raise ApiException(
                Errors.INVALID_REQUEST, "Removing the log level of the root logger is not allowed"
            )
    if validate_only:
        return
    for change in changes:
        logger = logging.getLogger() if change.name == "root" else logging.getLogger(change.name)
        logger.setLevel(PYTHON_LEVELS[change.value or ""] if change.op == SET else logging.NOTSET)
