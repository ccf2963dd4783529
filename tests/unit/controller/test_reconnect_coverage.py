"""Every event a ZooKeeper watch can enqueue is re-run (or deliberately covered) on a reconnect.

kazoo drops server-side watches on a reconnect, so the core re-runs what each lost watch would have
told it (`election.RECONNECT_STEPS`). A handler added to the table without a reconnect step would
silently miss every change made while the session was disconnected: these tests fail instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import common, election
from reference_controller.controller.events import (
    BrokerChange,
    BrokerModifications,
    ControllerEvent,
    ElectionTrigger,
    ElectionType,
    IsrChangeNotification,
    LogDirEventNotification,
    PartitionModifications,
    ReplicaLeaderElection,
    TopicChange,
    ZkPartitionReassignment,
)
from reference_controller.controller.ports import ChildHandler, CreateOp, NodeHandler
from tests.unit.controller.harness import Cluster

pytestmark = pytest.mark.unit

SAMPLE_ARGS: dict[str, object] = {"topic": "foo", "broker_id": 1, "tp": ("foo", 0)}


def _handler_events(handler: NodeHandler | ChildHandler) -> list[ControllerEvent]:
    if isinstance(handler, ChildHandler):
        return [handler.on_child_change]
    return [e for e in (handler.on_create, handler.on_delete, handler.on_data_change) if e is not None]


def _handler_factories() -> list[Callable[..., Any]]:
    return [
        fn
        for name, fn in vars(common).items()
        if name.endswith("_handler") and inspect.isfunction(fn) and fn.__module__ == common.__name__
    ]


def watched_event_kinds() -> set[type]:
    """The event types of every handler in the table: its constants and its per-path factories."""
    handlers: list[NodeHandler | ChildHandler] = [
        h for h in vars(common).values() if isinstance(h, NodeHandler | ChildHandler)
    ]
    for factory in _handler_factories():
        kwargs = {p: SAMPLE_ARGS[p] for p in inspect.signature(factory).parameters}
        handlers.append(factory(**kwargs))
    return {type(e) for h in handlers for e in _handler_events(h)}


def test_the_handler_table_is_read_whole() -> None:
    """The scan finds the constants and all three per-path factories (a scan of nothing passes)."""
    assert len(_handler_factories()) == 3
    assert len(watched_event_kinds()) >= 12


def test_every_watched_event_kind_has_a_reconnect_step() -> None:
    missing = watched_event_kinds() - set(election.RECONNECT_STEPS)
    assert not missing, f"watched events a reconnect never re-runs: {sorted(t.__name__ for t in missing)}"


def test_a_live_controllers_registered_handlers_are_all_covered() -> None:
    """The handlers a real failover registers (per broker, topic, reassigning partition) too."""
    cluster = Cluster()
    cluster.start(0, 1)
    cluster.create_topic("foo", {0: [0]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 0): [0, 1]}))
    )
    cluster.run()
    ctl = cluster.controller().controller
    registered: list[NodeHandler | ChildHandler] = [*ctl.node_handlers.values(), *ctl.child_handlers.values()]
    kinds = {type(e) for h in registered for e in _handler_events(h)}
    assert kinds - set(election.RECONNECT_STEPS) == set()


def test_a_reconnect_re_runs_each_lost_watch_in_the_table_order() -> None:
    """Two brokers, one topic, nothing pending: the reconnect re-runs the child watches, each
    broker's and topic's data watch, and the creation-only watches whose znode was absent; not
    TopicDeletion (its children equal the queue) nor any reassignment ISR watch (none pending)."""
    cluster = Cluster()
    cluster.start(0, 1)
    cluster.create_topic("foo", {0: [0]})
    ctl = cluster.controller().controller
    assert list(election.events_to_rerun_after_reconnect(ctl)) == [
        BrokerChange(),
        BrokerModifications(0),
        BrokerModifications(1),
        TopicChange(),
        PartitionModifications("foo"),
        IsrChangeNotification(),
        LogDirEventNotification(),
        ZkPartitionReassignment(),
        ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED),
    ]


def test_a_non_controller_re_runs_nothing() -> None:
    cluster = Cluster()
    cluster.start(0, 1)
    follower = next(n for n in cluster.nodes.values() if n is not cluster.controller())
    assert list(election.events_to_rerun_after_reconnect(follower.controller)) == []
