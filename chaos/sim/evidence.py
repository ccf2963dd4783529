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

__all__ = ["FinalStateReader", "build_final_state"]

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


def _reachable(world: World, broker_id: int) -> bool:
    node = world.nodes.get(broker_id)
    return node is not None and node.running and not node.paused and not world.link(f"CLIENT_{broker_id}").cut


def _metadata(world: World, broker_id: int) -> BrokerMetadata | None:
    if not _reachable(world, broker_id):
        return None
    response = world.nodes[broker_id].handle(METADATA, 1, 0, MetadataRequest(topics=None))
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
    return FinalStateReader(world).read(quiesced=quiesced)


class FinalStateReader:
    """:func:`build_final_state` for a world read again and again (the final phase's polls): the
    ZooKeeper fields are read again only when the transaction log has grown (every change of the
    tree is logged), a broker's Metadata answer only when the broker has handled a request since
    (its metadata cache is filled only by UpdateMetadata), was restarted, or became reachable or
    unreachable. What it returns is what a fresh read returns."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._zk: tuple[tuple[int, int], dict[str, Any]] | None = None
        self._metadata: dict[int, tuple[tuple[bool, int, int], BrokerMetadata | None]] = {}

    def _zk_key(self) -> tuple[int, int]:
        return self.world.zk.zxid, len(self.world.zk.log)

    def _broker_key(self, broker_id: int) -> tuple[bool, int, int]:
        node = self.world.nodes.get(broker_id)
        if node is None:
            return False, 0, 0
        return _reachable(self.world, broker_id), node.incarnation, node.handled

    def key(self) -> tuple[object, ...]:
        """Changes whenever what :meth:`read` returns may have changed."""
        return (
            self._zk_key(),
            tuple(self._broker_key(b) for b in sorted(self.world.nodes)),
            tuple(len(rs) for _, rs in sorted(self.world.journals.items())),
        )

    def _zk_fields(self) -> dict[str, Any]:
        key = self._zk_key()
        if self._zk is None or self._zk[0] != key:
            self._zk = key, read_zookeeper_state(_TreeReader(self.world))
        return self._zk[1]

    def _broker_metadata(self, broker_id: int) -> BrokerMetadata | None:
        cached = self._metadata.get(broker_id)
        if cached is not None and cached[0] == self._broker_key(broker_id):
            return cached[1]
        metadata = _metadata(self.world, broker_id)  # itself a request: the key is taken after it
        self._metadata[broker_id] = self._broker_key(broker_id), metadata
        return metadata

    def read(self, *, quiesced: bool) -> FinalState:
        fields = self._zk_fields()
        return FinalState(
            **fields,
            metadata={b: self._broker_metadata(b) for b in sorted(fields["live_brokers"])},
            journals={b: tuple(rs) for b, rs in sorted(self.world.journals.items())},
            quiesced=quiesced,
        )
