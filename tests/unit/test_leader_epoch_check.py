"""The broker's LeaderAndIsr leader-epoch check, case by case (ring: unit tests of a decision)."""

from __future__ import annotations

import pytest

from reference_controller.node.leader_epoch import EpochCheck, leader_epoch_check

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("request_epoch", "current_epoch", "is_replica", "expected"),
    [
        (1, 0, True, EpochCheck.ACCEPT),
        (0, -1, True, EpochCheck.ACCEPT),  # a new partition's placeholder has epoch -1
        (1, 0, False, EpochCheck.NOT_A_REPLICA),
        (0, 1, True, EpochCheck.OLDER),
        (0, 1, False, EpochCheck.OLDER),
        (3, 3, True, EpochCheck.SAME),
        (3, 3, False, EpochCheck.SAME),
    ],
)
def test_only_a_newer_leader_epoch_for_a_local_replica_is_applied(
    request_epoch: int, current_epoch: int, is_replica: bool, expected: EpochCheck
) -> None:
    assert leader_epoch_check(request_epoch, current_epoch, is_replica) is expected
