"""The one classifier of Kafka 2.5 znode paths the checkers read (decisions ring, pure).

Every path of a run's chroot (chroot-relative) falls into one :class:`Kind` through the single
table :data:`PATTERNS`; the timeline (:mod:`chaos.checkers.timeline`) classifies each op's path
once, and no checker or quirk matches a path itself.

==========================================  ===========================  =====================
path                                        kind                         names
==========================================  ===========================  =====================
``/controller``                             ``controller``
``/controller_epoch``                       ``controller_epoch``
``/brokers/ids/<id>``                       ``broker``                   broker
``/brokers/topics/<t>``                     ``topic``                    topic
``/brokers/topics/<t>/partitions``          ``partitions``               topic
``/brokers/topics/<t>/partitions/<p>``      ``partition``                topic, partition
``…/partitions/<p>/state``                  ``partition_state``          topic, partition
``/config/topics/<t>``                      ``topic_config``             topic
``/config/brokers/<entity>``                ``broker_config``            (entity: the last part)
``/admin/reassign_partitions``              ``reassign_partitions``
``/admin/preferred_replica_election``       ``preferred_replica_election``
``/admin/delete_topics/<t>``                ``delete_topic_request``     topic
``/isr_change_notification/<n>``            ``isr_change_notification``
``/log_dir_event_notification/<n>``         ``log_dir_event_notification``
anything else                               ``other``
==========================================  ===========================  =====================

Which writes only a controller makes is data too (:data:`CONTROLLER_ONLY`): a delete of a
topic, its config, an admin znode or a notification; a setData of ``/admin/reassign_partitions``;
any create, delete or setData under ``/brokers/topics/<t>/partitions`` — except a leader's own
ISR write (a setData of a state keeping leader and leader epoch), which the timeline tells apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

__all__ = ["CONTROLLER_ONLY", "PATTERNS", "Kind", "ZPath", "classify"]


class Kind(StrEnum):
    CONTROLLER = "controller"
    CONTROLLER_EPOCH = "controller_epoch"
    BROKER = "broker"
    TOPIC = "topic"
    PARTITIONS = "partitions"
    PARTITION = "partition"
    PARTITION_STATE = "partition_state"
    TOPIC_CONFIG = "topic_config"
    BROKER_CONFIG = "broker_config"
    REASSIGN_PARTITIONS = "reassign_partitions"
    PREFERRED_REPLICA_ELECTION = "preferred_replica_election"
    DELETE_TOPIC_REQUEST = "delete_topic_request"
    ISR_CHANGE_NOTIFICATION = "isr_change_notification"
    LOG_DIR_EVENT_NOTIFICATION = "log_dir_event_notification"
    OTHER = "other"


_TOPIC = r"(?P<topic>[^/]+)"

#: The one table: a path's kind is the first pattern that matches it in full.
PATTERNS: tuple[tuple[Kind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(f"^{pattern}$"))
    for kind, pattern in (
        (Kind.CONTROLLER, "/controller"),
        (Kind.CONTROLLER_EPOCH, "/controller_epoch"),
        (Kind.BROKER, r"/brokers/ids/(?P<broker>-?\d+)"),
        (Kind.TOPIC, f"/brokers/topics/{_TOPIC}"),
        (Kind.PARTITIONS, f"/brokers/topics/{_TOPIC}/partitions"),
        (Kind.PARTITION, rf"/brokers/topics/{_TOPIC}/partitions/(?P<partition>\d+)"),
        (Kind.PARTITION_STATE, rf"/brokers/topics/{_TOPIC}/partitions/(?P<partition>\d+)/state"),
        (Kind.TOPIC_CONFIG, f"/config/topics/{_TOPIC}"),
        (Kind.BROKER_CONFIG, "/config/brokers/[^/]+"),
        (Kind.REASSIGN_PARTITIONS, "/admin/reassign_partitions"),
        (Kind.PREFERRED_REPLICA_ELECTION, "/admin/preferred_replica_election"),
        (Kind.DELETE_TOPIC_REQUEST, f"/admin/delete_topics/{_TOPIC}"),
        (Kind.ISR_CHANGE_NOTIFICATION, "/isr_change_notification/[^/]+"),
        (Kind.LOG_DIR_EVENT_NOTIFICATION, "/log_dir_event_notification/[^/]+"),
    )
)

#: Kind → the op kinds on it that only a controller performs (see the module text).
CONTROLLER_ONLY: dict[Kind, frozenset[str]] = {
    **dict.fromkeys(
        (
            Kind.TOPIC,
            Kind.TOPIC_CONFIG,
            Kind.PREFERRED_REPLICA_ELECTION,
            Kind.DELETE_TOPIC_REQUEST,
            Kind.ISR_CHANGE_NOTIFICATION,
            Kind.LOG_DIR_EVENT_NOTIFICATION,
        ),
        frozenset({"delete"}),
    ),
    Kind.REASSIGN_PARTITIONS: frozenset({"delete", "setData"}),
    **dict.fromkeys(
        (Kind.PARTITIONS, Kind.PARTITION, Kind.PARTITION_STATE),
        frozenset(
            {"create", "create2", "createContainer", "createTTL", "delete", "deleteContainer", "setData"}
        ),
    ),
}


@dataclass(frozen=True)
class ZPath:
    """A classified path: its kind and the topic, partition or broker it names."""

    kind: Kind
    path: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None


@lru_cache(maxsize=4096)
def classify(path: str) -> ZPath:
    """The :class:`ZPath` of a chroot-relative ``path`` (``other`` when no pattern matches)."""
    for kind, pattern in PATTERNS:
        if m := pattern.match(path):
            names = m.groupdict()
            return ZPath(
                kind,
                path,
                names.get("topic"),
                None if names.get("partition") is None else int(names["partition"]),
                None if names.get("broker") is None else int(names["broker"]),
            )
    return ZPath(Kind.OTHER, path)
