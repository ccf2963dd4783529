"""Kafka's rack-unaware replica placement, `AdminUtils.assignReplicasToBrokers` (ring: decisions, pure).

Steps (AdminUtils.scala@2.5.1 L103-148):
1. validate: partitions > 0 (INVALID_PARTITIONS), replication factor > 0 and ≤ live brokers
   (INVALID_REPLICATION_FACTOR);
2. `startIndex` and `nextReplicaShift` are random in [0, #brokers) unless a fixed start index is
   given (CreatePartitions passes the index of the first broker ≥ partition 0's first replica);
3. for each partition p (from `startPartitionId`): when p > 0 and p % #brokers == 0 the shift
   grows by one; the first replica is `brokers[(p + startIndex) % n]`; replica j+1 is at
   `(first + 1 + (shift + j) % (n - 1)) % n`.

Worked table, brokers [1,2,3], RF 2, startIndex 0, shift 0:

| p | first index | shift | replicas |
|---|---|---|---|
| 0 | 0 | 0 | [1, 2] |
| 1 | 1 | 0 | [2, 3] |
| 2 | 2 | 0 | [3, 1] |
| 3 | 0 | 1 | [1, 3] |
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kafkawire.errors import Errors


class PlacementError(Exception):
    """An invalid placement request; carries Kafka's error code and message."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (n - 1)
    return (first_replica_index + shift) % n


def assign_replicas_to_brokers(
    broker_ids: Sequence[int],
    n_partitions: int,
    replication_factor: int,
    rng: random.Random,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
) -> dict[int, list[int]]:
    """Partition id → replicas, exactly as Kafka's rack-unaware assignment (brokers sorted by id)."""
    if n_partitions <= 0:
        raise PlacementError(Errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise PlacementError(Errors.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(broker_ids):
        raise PlacementError(
            Errors.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {len(broker_ids)}.",
        )
    brokers = sorted(broker_ids)
    n = len(brokers)
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    current = max(0, start_partition_id)
    result: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            next_replica_shift += 1
        first = (current + start_index) % n
        replicas = [brokers[first]]
        replicas += [
            brokers[_replica_index(first, next_replica_shift, j, n)] for j in range(replication_factor - 1)
        ]
        result[current] = replicas
        current += 1
    return result


def add_partitions_start_index(broker_ids: Sequence[int], partition0_first_replica: int) -> int:
    """`AdminZkClient.addPartitions`: index of the first broker with id ≥ partition 0's first replica."""
    brokers = sorted(broker_ids)
    return next((i for i, b in enumerate(brokers) if b >= partition0_first_replica), 0)
