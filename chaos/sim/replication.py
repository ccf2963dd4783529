"""Followers fetching from leaders, and the leaders' ISR tasks, on the virtual clock (ring:
drivers — a simulated one).

The reference node runs these as asyncio tasks and worker threads (`IsrManager`); here the same
steps run synchronously from the world's heap, through the reference's own pieces:
`ReplicaManager.record_follower_fetch` tells a caught-up fetch, the node's own `IsrManager`
decides (`shrunk_isr`, `expanded_isr`), says what to write (`isr_write`) and what follows the write
(`isr_written`: the new ISR and zkVersion taken, the change recorded) and when to propagate
(`isr_changes_due`, `isr_changes_propagated`); `isr.conditional_update` and
`isr.propagate_isr_changes` do the ZooKeeper I/O. Only the threads and the asyncio tasks of
`maybe_shrink_isr` / `maybe_expand_isr` / `_update_isr` are left out, so a bug in any of those
decisions is a bug of the simulated node too.

A follower fetches every ``FETCH_MS`` over its ``FROM_<follower>_<leader>`` link; with empty logs
every fetch is caught up, so a follower that can reach its leader joins the ISR, and one that
cannot for ``replica.lag.time.max.ms`` leaves it.
"""

from __future__ import annotations

from chaos.sim.node import SimNode
from chaos.sim.world import World
from kafkawire.states import TopicPartition
from reference_controller.node.isr import (
    ISR_CHANGE_PROPAGATION_CHECK_MS,
    conditional_update,
    propagate_isr_changes,
)
from reference_controller.node.partition import Partition
from reference_controller.node.zk_port import NodeZkError

__all__ = ["FETCH_MS", "Replication"]

FETCH_MS = 200
LAG_MS = 2000


class _Disconnected(Exception):
    """A write lost its connection: given up here, tried again by the next tick."""


def _no_resend() -> None:
    raise _Disconnected


class Replication:
    """The periodic fetch, ISR-expiration and ISR-propagation ticks of every node."""

    def __init__(self, world: World) -> None:
        self.world = world
        world.at(FETCH_MS, self._fetch_tick)
        world.at(LAG_MS // 2, self._shrink_tick)
        world.at(ISR_CHANGE_PROPAGATION_CHECK_MS, self._propagate_tick)

    def _up(self, node: SimNode) -> bool:
        return node.running and not node.paused and node.context is not None

    def _fetch_tick(self) -> None:
        nodes = self.world.nodes
        up = {b: self._up(n) for b, n in nodes.items()}  # a fetch changes no node's liveness
        for follower in nodes.values():
            if not up[follower.broker_id]:
                continue
            assert follower.context is not None
            for tp, p in sorted(follower.context.replica_manager.partitions.items()):
                if p.leader < 0 or p.is_leader:
                    continue
                leader = nodes.get(p.leader)
                if (
                    leader is None
                    or not up[p.leader]
                    or self.world.link(f"FROM_{follower.broker_id}_{p.leader}").cut
                ):
                    continue
                assert leader.context is not None
                if leader.context.replica_manager.record_follower_fetch(tp, follower.broker_id, 0):
                    self._expand(leader, tp, follower.broker_id)
        self.world.at(FETCH_MS, self._fetch_tick)

    def _shrink_tick(self) -> None:
        for leader in self.world.nodes.values():
            if not self._up(leader):
                continue
            assert leader.context is not None
            isr = leader.context.isr_manager
            for p in sorted(leader.context.replica_manager.leader_partitions(), key=lambda q: q.tp):
                new_isr = isr.shrunk_isr(p)
                if new_isr is not None:
                    self._update_isr(leader, p, new_isr)
        self.world.at(LAG_MS // 2, self._shrink_tick)

    def _expand(self, leader: SimNode, tp: TopicPartition, follower: int) -> None:
        assert leader.context is not None
        expanded = leader.context.isr_manager.expanded_isr(tp, follower)
        if expanded is not None:
            self._update_isr(leader, *expanded)

    def _update_isr(self, leader: SimNode, p: Partition, new_isr: tuple[int, ...]) -> None:
        if not self.world.zk_connected(leader) or leader.zk is None or leader.context is None:
            return  # kazoo would hold the write until reconnected; the next tick tries again
        isr = leader.context.isr_manager
        state, controller_epoch = isr.isr_write(p, new_isr)
        try:
            version = conditional_update(leader.zk, p.tp, state, controller_epoch, _no_resend)
        except (_Disconnected, NodeZkError):
            return
        isr.isr_written(p, new_isr, version, p.leader_epoch)  # nothing can move it meanwhile here

    def _propagate_tick(self) -> None:
        for node in self.world.nodes.values():
            if not self._up(node) or node.zk is None or not self.world.zk_connected(node):
                continue
            assert node.context is not None
            isr = node.context.isr_manager
            now = float(self.world.now)
            changes = isr.isr_changes_due(now)
            if changes is None:
                continue
            try:
                propagate_isr_changes(node.zk, changes, _no_resend)
            except (_Disconnected, NodeZkError):
                continue
            isr.isr_changes_propagated(changes, now)
        self.world.at(ISR_CHANGE_PROPAGATION_CHECK_MS, self._propagate_tick)
