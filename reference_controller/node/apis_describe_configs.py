"""DescribeConfigs (32, v0-2) as KafkaApis + AdminManager.describeConfigs@2.5.1 (ring: drivers).

Any broker answers from what it knows (AdminManager.scala@2.5.1 L345-409, spec §13.4.5):

- TOPIC: a legal name (`Topic.validate`) that this broker's metadata cache holds (else
  UNKNOWN_TOPIC_OR_PARTITION with a null message and no entries); every topic config with its
  value — the override read from `/config/topics/<t>` **at request time**, else the broker's
  default — and its source: TOPIC_CONFIG (1) for an override, else the first broker synonym set
  dynamically for this broker (2), as the dynamic default (3), in server.properties (4), else
  DEFAULT_CONFIG (5). v0 says `is_default` instead (source DEFAULT_CONFIG);
- BROKER: the empty name lists the dynamic cluster defaults (`/config/brokers/<default>`); this
  broker's id its own configs — here the keys of server.properties and its dynamic configs (a
  Kafka broker lists every KafkaConfig key with its default: the reference knows the defaults
  of the keys it uses only); another id is INVALID_REQUEST;
- BROKER_LOGGER: this broker's id only; Python loggers stand for log4j's.

A stored override that no longer parses makes the resource UNKNOWN_SERVER_ERROR (Kafka's
ConfigException is not an ApiException). A resource type Kafka does not serve fails every
resource of the request with INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.index import load_response_schema

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from kafkawire.framing import build
from reference_controller.broker_config_keys import DYNAMIC_CONFIGS, KAFKA_CONFIG_TYPES
from reference_controller.controller.driver.dynamic_broker_config import DEFAULT_ENTITY
from reference_controller.node import admin, broker_config, config_admin, log_config
from reference_controller.node.apis_admin import fit_message
from reference_controller.node.apis_configs import (
    BROKER,
    RESOURCE_TYPES,
    TOPIC,
    ApiException,
    Resource,
)
from reference_controller.node.config_def import ConfigException, convert_to_string, parse_type
from reference_controller.node.context import NodeContext
from reference_controller.node.protocol import RequestContext
from reference_controller.node.wire import has_field, nested

log = logging.getLogger("kafka.server.AdminManager")

TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC_BROKER, DEFAULT_CONFIG, DYNAMIC_LOGGER = (
    1,
    2,
    3,
    4,
    5,
    6,
)


@dataclass(frozen=True)
class Entry:
    name: str
    value: str | None
    source: int
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, int], ...] = ()


class BrokerLayers:
    """The config layers of this broker, highest precedence first (DynamicBrokerConfig)."""

    def __init__(self, node: NodeContext) -> None:
        self.node = node
        own = str(node.config.broker_id)
        self.dynamic_broker = broker_config.from_persistent_props(
            config_admin.fetch_entity_config(node.zk, "brokers", own), per_broker=True
        )
        self.dynamic_default = broker_config.from_persistent_props(
            config_admin.fetch_entity_config(node.zk, "brokers", DEFAULT_ENTITY), per_broker=False
        )
        self.static = dict(node.config.originals)

    def layers(self) -> tuple[tuple[Mapping[str, str], int], ...]:
        return (
            (self.dynamic_broker, DYNAMIC_BROKER),
            (self.dynamic_default, DYNAMIC_DEFAULT),
            (self.static, STATIC_BROKER),
        )

    def merged(self) -> dict[str, str]:
        out = dict(self.static)
        out.update(self.dynamic_default)
        out.update(self.dynamic_broker)
        return out

    def synonyms(self, names: tuple[str, ...], sensitive: bool) -> list[tuple[str, str | None, int]]:
        """`configSynonyms`: every (name, value, source) set, by layer then name order."""
        return [
            (name, None if sensitive else layer[name], source)
            for layer, source in self.layers()
            for name in names
            if name in layer
        ]


def describe_topic(node: NodeContext, topic: str, keys: set[str] | None) -> list[Entry]:
    admin.validate_topic_name(topic)
    if not node.metadata_cache.contains(topic):
        raise ApiException(Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
    overrides = config_admin.fetch_entity_config(node.zk, "topics", topic)
    layers = BrokerLayers(node)
    merged = layers.merged()
    entries: list[Entry] = []
    for key, synonym in log_config.LOG_CONFIGS:
        if keys is not None and key.name not in keys:
            continue
        if key.name in overrides:
            value: Any = parse_type(key.name, overrides[key.name], key.type)
        else:
            value = log_config.broker_default(key.name, merged)
        text = None if key.type == "PASSWORD" else convert_to_string(value, key.type)
        names = log_config.BROKER_SYNONYMS.get(synonym or "", (synonym,) if synonym else ())
        synonyms = layers.synonyms(names, False)
        if key.name in overrides:
            synonyms.insert(0, (key.name, text, TOPIC_CONFIG))
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        entries.append(Entry(key.name, text, source, synonyms=tuple(synonyms)))
    for name, value in overrides.items():  # overrides Kafka does not know (written by hand)
        if name not in log_config.LOG_CONFIG_KEYS and (keys is None or name in keys):
            entries.append(Entry(name, value, TOPIC_CONFIG, synonyms=((name, value, TOPIC_CONFIG),)))
    return entries


def describe_broker(node: NodeContext, name: str, keys: set[str] | None) -> list[Entry]:
    layers = BrokerLayers(node)
    if not name:
        configs, per_broker = layers.dynamic_default, False
    else:
        try:
            broker_id = int(name)
        except ValueError:
            raise ApiException(
                Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
            ) from None
        if broker_id != node.config.broker_id:
            expected = node.config.broker_id
            raise ApiException(
                Errors.INVALID_REQUEST,
                f"Unexpected broker id, expected {expected} or empty string, but received {name}",
            )
        configs, per_broker = layers.merged(), True
    entries = []
    for key in sorted(configs):
        if keys is not None and key not in keys:
            continue
        sensitive = KAFKA_CONFIG_TYPES.get(key) == "PASSWORD"
        synonyms = [s for s in layers.synonyms((key,), sensitive) if per_broker or s[2] == DYNAMIC_DEFAULT]
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        value = None if sensitive else configs[key]
        entries.append(Entry(key, value, source, key not in DYNAMIC_CONFIGS, sensitive, tuple(synonyms)))
    return entries


def describe_logger(node: NodeContext, name: str, keys: set[str] | None) -> list[Entry]:
    if not name:
        raise ApiException(Errors.INVALID_REQUEST, "Broker id must not be empty")
    try:
        broker_id = int(name)
    except ValueError:
        raise ApiException(
            Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        ) from None
    if broker_id != node.config.broker_id:
        raise ApiException(
            Errors.INVALID_REQUEST,
            f"Unexpected broker id, expected {node.config.broker_id} but received {name}",
        )
    loggers = {"root": logging.getLogger()}
    loggers.update({n: logging.getLogger(n) for n in sorted(logging.Logger.manager.loggerDict)})
    return [
        Entry(n, logging.getLevelName(lg.getEffectiveLevel()), DYNAMIC_LOGGER)
        for n, lg in loggers.items()
        if keys is None or n in keys
    ]


class DescribeConfigs:
    def __init__(self, node: NodeContext) -> None:
        self.node = node

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        wanted: dict[Resource, set[str] | None] = {}
        for res in request.resources:
            keys = None if res.configuration_keys is None else {str(k) for k in res.configuration_keys}
            wanted[(int(res.resource_type), str(res.resource_name))] = keys
        bad = next((r for r in wanted if r[0] not in RESOURCE_TYPES), None)
        if bad is not None:
            error = ApiError(
                Errors.INVALID_REQUEST, f"Unexpected resource type UNKNOWN for resource {bad[1]}"
            )
            return self._response(ctx, request, {r: (error, []) for r in wanted})
        results = {}
        for resource, keys in wanted.items():
            results[resource] = await asyncio.to_thread(self._describe, resource, keys)
        return self._response(ctx, request, results)

    def _describe(self, resource: Resource, keys: set[str] | None) -> tuple[ApiError, list[Entry]]:
        kind, name = resource
        try:
            if kind == TOPIC:
                entries = describe_topic(self.node, name, keys)
            elif kind == BROKER:
                entries = describe_broker(self.node, name, keys)
            else:
                entries = describe_logger(self.node, name, keys)
        except ApiException as exc:
            return ApiError.from_exception(exc.error, exc.args[0]), []
        except admin.AdminError as exc:
            return ApiError.from_exception(exc.error_code, str(exc)), []
        except (ConfigException, Exception) as exc:
            log.exception("Error processing describe configs request for resource %s", resource)
            return ApiError.from_exception(Errors.UNKNOWN_SERVER_ERROR, str(exc) or None), []
        return ApiError(Errors.NONE, None), entries

    def _response(
        self, ctx: RequestContext, request: Any, results: dict[Resource, tuple[ApiError, list[Entry]]]
    ) -> Any:
        schema = load_response_schema(ctx.api_key, ctx.api_version)
        result_cls, entry_cls = (
            nested(schema, "DescribeConfigsResult"),
            nested(schema, "DescribeConfigsResourceResult"),
        )
        synonyms_wanted = bool(getattr(request, "include_synonyms", False))
        synonym_cls = nested(schema, "DescribeConfigsSynonym") if has_field(entry_cls, "synonyms") else None

        def entry(e: Entry) -> Any:
            synonyms = (
                tuple(build(synonym_cls, name=n, value=v, source=s) for n, v, s in e.synonyms)
                if synonym_cls is not None and synonyms_wanted
                else ()
            )
            return build(
                entry_cls,
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                is_default=e.source == DEFAULT_CONFIG,
                config_source=e.source,
                is_sensitive=e.sensitive,
                synonyms=synonyms,
            )

        return build(
            schema,
            throttle_time=0,
            results=tuple(
                build(
                    result_cls,
                    error_code=err.error,
                    error_message=fit_message(err.message),
                    resource_type=r[0],
                    resource_name=r[1],
                    configs=tuple(entry(e) for e in entries),
                )
                for r, (err, entries) in results.items()
            ),
        )
