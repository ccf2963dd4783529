"""The final state of a simulated run, read as a real run reads its cluster (ring: drivers —
a simulated one).

ZooKeeper is read through the same readers as a real run (:func:`chaos.final_state.read_zookeeper_state`
over a kazoo-shaped view of the simulated tree); each live broker's Metadata view is its own
answer to a Metadata v1 request (``KafkaApis.handle``, as ``fetch_broker_metadata`` asks a real
broker); the journals are what the simulated channels recorded at the brokers.
"""

from __future__ import annotations

from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat
from kio.schema.metadata.v1.request import MetadataRequest

from chaos.checkers.final_state import BrokerMetadata, FinalState, MetadataPartition
from chaos.final_state import read_zookeeper_state
from chaos.sim.world import World

__all__ = ["build_final_state"]

METADATA = 3


class _TreeReader:
    """``get`` / ``get_children`` of the simulated tree, answering as kazoo does."""

    def __init__(self, world: World) -> None:
        self.world = world

    def get(self, path: str) -> tuple[bytes | None, Any]:
        found = self.world.zk.get(path)
        if found is None:
            raise NoNodeError(path)
        data, s = found
        stat = ZnodeStat(
            s.czxid,
            s.mzxid,
            0,
            0,
            s.version,
            s.cversion,
            0,
            s.ephemeral_owner,
            s.data_length,
            s.num_children,
            0,
        )
        return data, stat

    def get_children(self, path: str) -> list[str]:
        children = self.world.zk.children(path)
        if children is None:
            raise NoNodeError(path)
        return children


def _metadata(world: World, broker_id: int) -> BrokerMetadata | None:
    node = world.nodes.get(broker_id)
    if node is None or not node.running or node.paused or world.link(f"CLIENT_{broker_id}").cut:
        return None
    response = node.handle(METADATA, 1, 0, MetadataRequest(topics=None))
    return {
        str(topic.name): {
            int(p.partition_index): MetadataPartition(
                int(p.leader_id),
                tuple(int(r) for r in p.replica_nodes),
                tuple(int(r) for r in p.isr_nodes),
                None if int(p.error_code) == 0 else str(int(p.error_code)),
            )
            for p in topic.partitions
        }
        for topic in response.topics
    }


def build_final_state(world: World, *, quiesced: bool) -> FinalState:
    fields = read_zookeeper_state(_TreeReader(world))
    return FinalState(
        **fields,
        metadata={b: _metadata(world, b) for b in sorted(fields["live_brokers"])},
        journals={b: tuple(rs) for b, rs in sorted(world.journals.items())},
        quiesced=quiesced,
    )
