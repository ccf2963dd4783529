"""The broker's LeaderAndIsr leader-epoch check (ring: decisions — pure, no I/O).

`ReplicaManager.becomeLeaderOrFollower@2.5.1`, per partition: a state with a newer leader epoch
than the partition's is applied iff this broker is one of its replicas; an older or an equal one is
refused (STALE_CONTROLLER_EPOCH, logged as a warning or, for an equal epoch, at debug).

| request epoch vs current | a replica here | verdict        |
|--------------------------|----------------|----------------|
| greater                  | yes            | ACCEPT         |
| greater                  | no             | NOT_A_REPLICA  |
| smaller                  | either         | OLDER          |
| equal                    | either         | SAME           |
"""

from __future__ import annotations

from enum import Enum


class EpochCheck(Enum):
    ACCEPT = "accept"
    NOT_A_REPLICA = "not a replica"
    OLDER = "older leader epoch"
    SAME = "same leader epoch"


def leader_epoch_check(request_epoch: int, current_epoch: int, is_replica: bool) -> EpochCheck:
    """`becomeLeaderOrFollower`'s per-partition epoch check (pure): a newer leader epoch is
    accepted iff this broker is among the replicas; an older or equal one is refused."""
    if request_epoch > current_epoch:
        return EpochCheck.ACCEPT if is_replica else EpochCheck.NOT_A_REPLICA
    return EpochCheck.OLDER if request_epoch < current_epoch else EpochCheck.SAME
