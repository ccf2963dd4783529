"""Drivers of the reference controller (ring: drivers — threads, sockets, kazoo).

Everything between the deterministic core (`reference_controller.controller.core`) and the outside
world lives here:

- `zk_driver.KazooZkPort` — the core's `ZkPort` on kazoo: pipelined reads, fenced multis, one-shot
  watches that only enqueue events, and the connection-state gate (SUSPENDED pauses, reconnect ⇒
  `ZkReconnected`, LOST ⇒ `Expire`).
- `event_manager.ControllerEventManager` — one queue, one thread; runs the core and executes its
  effects.
- `channel.ControllerChannelManager` — one send thread and TCP connection per broker (kio 0.5.0).
- `scheduler.ControllerScheduler` — timers that enqueue events.
- `config_watcher.ConfigWatcher` — `/config/changes` ⇒ `TopicUncleanLeaderElectionEnable`.
"""

from __future__ import annotations

from reference_controller.errors import ReferenceControllerError


class DriverError(ReferenceControllerError):
    """Root of the exceptions raised by the controller's drivers."""


class ZkSessionLostError(DriverError):
    """The ZooKeeper session was lost (or the client closed) while a port call was in progress.

    The core does not handle this: the event thread logs "Error processing event" and moves on to
    the `Expire` that the connection listener has already put at the head of the queue."""


class ZkUnexpectedError(DriverError):
    """ZooKeeper answered with a code the port contract has no value for (e.g. NONODE on the fencing
    check): Kafka's `KeeperException.create(code)`; the event fails, the controller stays up."""
