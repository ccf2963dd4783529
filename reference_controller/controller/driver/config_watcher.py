"""`ConfigWatcher`: topic config changes ⇒ `TopicUncleanLeaderElectionEnable`, broker config
changes ⇒ the dynamic unclean default and `UncleanLeaderElectionEnable` (ring: drivers).

Every Kafka broker watches the children of `/config/changes` (DynamicConfigManager +
ZkNodeChangeNotificationListener, spec §2.3 and §6.11). For each notification
`config_change_<seq>` newer than the last one processed — `{"version":2,"entity_path":"topics/<t>"}`
or v1 `{"version":1,"entity_type":"topics","entity_name":"<t>"}` — it re-reads `/config/topics/<t>`;
TopicConfigHandler (ConfigHandler.scala@2.5.1 L88-90) then calls
`kafkaController.enableTopicUncleanLeaderElection(t)` when `unclean.leader.election.enable` is
"true", which enqueues `TopicUncleanLeaderElectionEnable(t)` only on the active controller.
As in Kafka, the notifications present at start-up are processed too (`lastExecutedChange` starts
at -1 and `init()` queues a first `processNotifications`, ZkNodeChangeNotificationListener.scala@2.5.1
L56-69, L86-104), each notification once. Parsing follows ConfigChangedNotificationHandler
(DynamicConfigManager.scala@2.5.1 L95-150): `version` 1 or 2 only; bad input is logged with the
notification's path and skipped, and processing goes on with the next one.

Broker entities (`brokers/<default>`, `brokers/<id>`; BrokerConfigHandler, ConfigHandler.scala@2.5.1
L193-200, spec §13.4.4): with a `DynamicBrokerConfig`, the `<default>` or this broker's own id
re-reads `/config/brokers/<name>` and replaces that layer; when the effective
`unclean.leader.election.enable` turns from false to true, `UncleanLeaderElectionEnable` is
enqueued (processed only by the active controller). Another broker's id changes nothing.

Purging (ZkNodeChangeNotificationListener.scala@2.5.1 L79-95, L125-136): each pass that finds
children logs "Processing notification(s) to /config/changes", takes `now` (wall clock, ms) before
processing, and afterwards, for every child in name order, reads its data and stat and deletes it
when its data is not null and `now - ctime > 15 min` (`changeExpirationMs`, strictly greater). A
child that vanished or holds null data is left alone. Every broker runs this listener, so every
broker purges (deletes of an already deleted child are ignored, as `deletePath` does).

Threads: kazoo's watch callback and the reconnect listener only *signal* a worker thread owned by
this class, which does the ZooKeeper reads (never from a listener). After any reconnection the
worker re-reads the children, re-arming the one-shot child watch kazoo dropped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from reference_controller.controller.driver.dynamic_broker_config import (
    DEFAULT_ENTITY,
    DynamicBrokerConfig,
    MalformedEntityConfig,
    decode_entity_config,
)
from reference_controller.controller.events import (
    ControllerEvent,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from reference_controller.zkdata import CONFIG_CHANGES, config_topic_path

log = logging.getLogger("kafka.common.ZkNodeChangeNotificationListener")

CHANGE_PREFIX = "config_change_"
BROKER_CONFIGS = "/config/brokers"
CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # ZkNodeChangeNotificationListener's default changeExpirationMs
UNCLEAN_KEY = "unclean.leader.election.enable"


class BadNotification(ValueError):
    """A notification Kafka's ConfigChangedNotificationHandler rejects (it logs it and goes on)."""


ENTITY_TYPES = ("topics", "clients", "users", "brokers")  # DynamicConfigManager's configHandlers


def notified_entity(data: bytes | None) -> tuple[str, str]:
    """(entity type, entity name) a config-change notification names.

    Raises `BadNotification` where Kafka's handler fails: not JSON (Kafka's `Json.parseBytes` gives
    None: nothing is processed), not an object, a `version` other than 1 or 2, a v1 without
    `entity_type` clients/topics or `entity_name`, a v2 without `entity_path` "<type>/<name>" of a
    known type (topics, clients, users, brokers)."""
    try:
        obj = json.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadNotification(f"invalid json: {exc}") from None
    if not isinstance(obj, dict):
        raise BadNotification("Config change notification has an unexpected value")
    version = obj.get("version")
    if version == 1 and not isinstance(version, bool):
        entity_type, name = obj.get("entity_type"), obj.get("entity_name")
        if entity_type not in ("topics", "clients"):
            raise BadNotification("Version 1 config change notification must have 'entity_type' set to "
                                  "'clients' or 'topics'")  # fmt: skip
        if not isinstance(name, str):
            raise BadNotification("Version 1 config change notification does not specify 'entity_name'")
        return str(entity_type), name
    if version == 2 and not isinstance(version, bool):
        path = obj.get("entity_path")
        if not isinstance(path, str):
            raise BadNotification("Version 2 config change notification must specify 'entity_path'")
        entity_type, slash, name = path.partition("/")
        if not slash or entity_type not in ENTITY_TYPES:
            raise BadNotification("Version 2 config change notification must have 'entity_path' starting "
                                  "with one of " + ", ".join(f"'{t}'/" for t in ENTITY_TYPES))  # fmt: skip
        return entity_type, name
    raise BadNotification(f"Config change notification has unsupported version '{version}', "
                          "supported versions are 1 and 2.")  # fmt: skip


def notified_topic(data: bytes | None) -> str | None:
    """The topic a config-change notification names; None for another entity type."""
    entity_type, name = notified_entity(data)
    return name if entity_type == "topics" else None


def unclean_enabled(data: bytes | None) -> bool:
    """TopicConfigHandler (ConfigHandler.scala@2.5.1 L88): `Try(prop.toBoolean).getOrElse(false)` on
    the properties ConfigEntityZNode.decode (ZkData.scala@2.5.1 L329-336) reads: every config value
    must be a JSON string (else decoding fails: nothing happens), and Scala's `toBoolean` accepts
    "true" in any case but no surrounding blanks."""
    try:
        obj = json.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False  # Json.parseBytes ⇒ None ⇒ empty properties
    config = obj.get("config") if isinstance(obj, dict) else None
    if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
        return False
    value = config.get(UNCLEAN_KEY)
    return isinstance(value, str) and value.lower() == "true"


def sequence_of(name: str) -> int:
    try:
        return int(name.removeprefix(CHANGE_PREFIX))
    except ValueError:
        return -1


class ConfigWatcher:
    def __init__(
        self,
        zk: Any,
        enqueue: Callable[[ControllerEvent], None],
        is_active: Callable[[], bool],
        *,
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
        clock_ms: Callable[[], float] = lambda: time.time() * 1000,
        dynamic_config: DynamicBrokerConfig | None = None,
    ) -> None:
        self._zk = zk
        self._dynamic_config = dynamic_config
        self._enqueue = enqueue
        self._is_active = is_active
        self._change_expiration_ms = change_expiration_ms
        self._clock_ms = clock_ms
        self._last_executed = -1
        self._wake = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="config-change-listener", daemon=True)

    def start(self) -> None:
        self._zk.add_listener(self._on_state)
        self._wake.set()
        self._thread.start()

    def shutdown(self) -> None:
        self._stopped = True
        self._zk.remove_listener(self._on_state)
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    # ---- kazoo threads: signal only ---------------------------------------------------------------
    def _on_state(self, state: str) -> bool:
        if state == KazooState.CONNECTED:
            self._wake.set()
        return False

    def _on_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self._wake.set()

    def process_once(self) -> None:
        """One pass of the worker on the caller's thread: the deterministic simulator drives the
        listener so, from its own watch events, with no thread started."""
        self._process_notifications()

    # ---- worker ------------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopped:
                return
            try:
                self._process_notifications()
            except KazooException as exc:  # connection trouble: the next CONNECTED wakes us again
                log.info("Reading %s failed (%r); retrying after reconnection", CONFIG_CHANGES, exc)
            except Exception:
                log.exception("Error processing config change notifications")

    def _process_notifications(self) -> None:
        try:
            children = self._zk.get_children(CONFIG_CHANGES, watch=self._on_watch)
        except NoNodeError:
            return
        if not children:
            return
        log.info("Processing notification(s) to %s", CONFIG_CHANGES)
        now_ms = self._clock_ms()
        self._process_fresh(children)
        self._purge_obsolete_notifications(now_ms, children)

    def _process_fresh(self, children: list[str]) -> None:
        fresh = sorted((c for c in children if sequence_of(c) > self._last_executed), key=sequence_of)
        for name in fresh:
            if self._stopped:
                return
            path = f"{CONFIG_CHANGES}/{name}"
            try:
                data, _ = self._zk.get(path)
            except NoNodeError:
                data = None
            if data is None:
                log.warning("read null data from %s", path)
            else:
                try:
                    self._process_entity(*notified_entity(data))
                except (BadNotification, MalformedEntityConfig) as exc:
                    log.error(  # noqa: TRY400 -- Kafka's error(msg, e); our own exception, no trace
                        "error processing change notification %s from %s: %s",
                        data.decode("utf-8", "replace"), path, exc,
                    )  # fmt: skip
            self._last_executed = sequence_of(name)

    def _purge_obsolete_notifications(self, now_ms: float, children: list[str]) -> None:
        for name in sorted(children):
            if self._stopped:
                return
            path = f"{CONFIG_CHANGES}/{name}"
            try:
                data, stat = self._zk.get(path)
            except NoNodeError:
                continue
            if data is not None and now_ms - stat.ctime > self._change_expiration_ms:
                log.debug("Purging change notification %s", path)
                with contextlib.suppress(NoNodeError):
                    self._zk.delete(path, recursive=True)

    def _process_entity(self, entity_type: str, name: str) -> None:
        if entity_type == "topics":
            self._process_topic(name)
        elif entity_type == "brokers" and self._dynamic_config is not None:
            self._process_broker(name)

    def _process_broker(self, name: str) -> None:
        """BrokerConfigHandler: `<default>` or this broker's id; another id changes nothing here, a
        name that is neither fails like Kafka's `brokerId.trim.toInt` (logged, skipped)."""
        dynamic = self._dynamic_config
        assert dynamic is not None
        if name != DEFAULT_ENTITY:
            try:
                broker_id = int(name.strip())
            except ValueError:
                raise BadNotification(f'For input string: "{name}"') from None
            if broker_id != dynamic.broker_id:
                return
        props = load_broker_entity_config(self._zk, name)
        log.info("Processing override for entityPath: brokers/%s with config: %s", name, props)
        turned_on = dynamic.update_default(props) if name == DEFAULT_ENTITY else dynamic.update_broker(props)
        if turned_on:
            self._enqueue(UncleanLeaderElectionEnable())

    def _process_topic(self, topic: str) -> None:
        try:
            data, _ = self._zk.get(config_topic_path(topic))
        except NoNodeError:
            return
        if unclean_enabled(data) and self._is_active():
            log.info("Unclean leader election enabled for topic %s", topic)
            self._enqueue(TopicUncleanLeaderElectionEnable(topic))


def load_broker_entity_config(zk: Any, name: str) -> dict[str, str]:
    """`fetchEntityConfig("brokers", name)`: `/config/brokers/<name>`, empty when missing."""
    try:
        data, _ = zk.get(f"{BROKER_CONFIGS}/{name}")
    except NoNodeError:
        return {}
    return decode_entity_config(data)


def initialize_dynamic_config(zk: Any, dynamic: DynamicBrokerConfig) -> None:
    """`DynamicBrokerConfig.initialize` at start-up: the cluster default, then this broker's own
    configs, before the controller starts. A config znode that cannot be decoded is logged and
    skipped (Kafka would fail to start)."""
    layers = ((DEFAULT_ENTITY, dynamic.update_default), (str(dynamic.broker_id), dynamic.update_broker))
    for name, update in layers:
        try:
            update(load_broker_entity_config(zk, name))
        except MalformedEntityConfig as exc:
            log.error("Dynamic configs of brokers/%s could not be applied: %s", name, exc)  # noqa: TRY400
