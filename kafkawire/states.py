"""The partition state and live leader of a LeaderAndIsr request, version-free (ring: wire — data).

One definition for both ends: the controller builds them (`request_batch`) and encodes them at
the version `inter.broker.protocol.version` selects; the broker decodes any version 0-4 into them
(`reference_controller.node.partition.leader_and_isr_states`). Field names follow Kafka's
`LeaderAndIsrPartitionState` message (`zk_version` is kio's `partition_epoch`); `str()` is Kafka's
`toString`, as its state-change logs print it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """Kafka's `TopicPartition`: the one definition for the reference, the probes and the checkers.

    A NamedTuple rather than a frozen dataclass: it is a tuple, so it hashes and compares equal to
    the plain `(topic, partition)` tuple, orders field by field, unpacks as `topic, partition =
    tp`, and hashes and compares in C on the controller's hot paths (a failover touches every
    partition many times). `repr` (and so `str`) is the plain tuple's, `('t', 0)`: the reference
    printed partitions that way in its logs and events before this type existed, and its logs
    stay byte-identical; Kafka's `t-0` form is spelt out where a log has it (`tp_str`)."""

    topic: str
    partition: int

    def __repr__(self) -> str:
        return tuple.__repr__(self)


@dataclass(frozen=True)
class LeaderAndIsrPartitionState:
    topic: str
    partition: int
    controller_epoch: int  # the epoch stored with the leadership decision
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __str__(self) -> str:
        return (
            f"LeaderAndIsrPartitionState(topicName='{self.topic}', partitionIndex={self.partition}, "
            f"controllerEpoch={self.controller_epoch}, leader={self.leader}, "
            f"leaderEpoch={self.leader_epoch}, isr={_ints(self.isr)}, zkVersion={self.zk_version}, "
            f"replicas={_ints(self.replicas)}, addingReplicas={_ints(self.adding_replicas)}, "
            f"removingReplicas={_ints(self.removing_replicas)}, isNew={str(self.is_new).lower()})"
        )


@dataclass(frozen=True)
class LiveLeader:
    broker_id: int
    host: str
    port: int


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"
