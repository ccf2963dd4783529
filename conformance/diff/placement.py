"""Kafka's rack-unaware replica placement (conformance ring, pure).

``AdminUtils.assignReplicasToBrokersRackUnaware`` at 2.5.1 over the sorted broker ids: partition
``p``'s first replica is broker ``(p + start) % n``; the followers come at a shift that starts at
``shift`` and grows by one each time ``p`` passes a multiple of ``n``. CreateTopics draws ``start``
and ``shift`` at random (the differential mode checks its placement against every choice);
CreatePartitions fixes both at the index of the first broker whose id is at least partition 0's
first replica (AdminZkClient.addPartitions) and numbers the new partitions from the current count.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["rack_unaware"]


def rack_unaware(
    brokers: Sequence[int], count: int, rf: int, *, start: int, shift: int, first_id: int = 0
) -> dict[int, tuple[int, ...]]:
    n, out = len(brokers), {}
    for pid in range(first_id, first_id + count):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        replicas = [brokers[first]]
        for j in range(rf - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        out[pid] = tuple(replicas)
    return out
