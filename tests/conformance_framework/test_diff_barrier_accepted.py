"""What the barrier takes a broker to follow: the last LeaderAndIsr it accepted for a partition (pure)."""

from __future__ import annotations

import pytest

from conformance.diff.barrier import _accepted
from probes.request_proxy import ControllerRequest, PartitionEntry

pytestmark = pytest.mark.unit

TP = ("t", 0)
_seq = iter(range(1000))


def _request(
    api: str, leader: int, epoch: int, *, error: int | None, partition_error: int = 0
) -> ControllerRequest:
    entry = PartitionEntry("t", 0, leader=leader, leader_epoch=epoch, isr=(1, 3), replicas=(1, 3))
    errors = {} if error is None else {TP: partition_error}
    key = {"LeaderAndIsr": 4, "StopReplica": 5}[api]
    return ControllerRequest(next(_seq), 1, 3, 0.0, key, 4, 0, api, partitions=(entry,), error_code=error,
                             partition_errors=errors)  # fmt: skip


def test_an_accepted_leader_and_isr_is_followed() -> None:
    assert _accepted([_request("LeaderAndIsr", 1, 4, error=0)], 3, TP) == (1, 4)


def test_an_unanswered_request_then_an_11_at_the_same_epoch_means_it_was_taken() -> None:
    # the departing controller's request got through but its answer was never recorded; the
    # successor's request at the same leader epoch is answered 11 for the partition
    lost = _request("LeaderAndIsr", 1, 4, error=None)
    stale = _request("LeaderAndIsr", 1, 4, error=0, partition_error=11)
    assert _accepted([_request("LeaderAndIsr", 1, 3, error=0), lost, stale], 3, TP) == (1, 4)


def test_an_11_never_moves_back_and_tells_nothing_after_a_stop_replica() -> None:
    newer = _request("LeaderAndIsr", 1, 5, error=0)
    older = _request("LeaderAndIsr", 1, 4, error=0, partition_error=11)
    assert _accepted([newer, older], 3, TP) == (1, 5)
    stop = _request("StopReplica", 1, 5, error=0)
    assert (
        _accepted([newer, stop, _request("LeaderAndIsr", 1, 5, error=0, partition_error=11)], 3, TP) is None
    )


def test_after_a_stop_replica_an_11_counts_when_that_epoch_was_sent_since() -> None:
    """s1-250 of seed 1: broker 2 stopped its replica (a controlled shutdown), was paused, and was
    sent leader epoch 2 by a controller that then moved; on resuming it read that request (its
    answer never recorded) and answered the new controller's same epoch 11 — it follows epoch 2."""
    stop = _request("StopReplica", 1, 1, error=0)
    departed = _request("LeaderAndIsr", 1, 2, error=None)
    successor = _request("LeaderAndIsr", 1, 2, error=0, partition_error=11)
    before = _request("LeaderAndIsr", 1, 1, error=0)
    assert _accepted([before, stop, departed, successor], 3, TP) == (1, 2)
    assert _accepted([before, stop, successor], 3, TP) is None, "nothing sent since the stop"
    sent_before_the_stop = _request("LeaderAndIsr", 1, 2, error=None)
    assert _accepted([before, sent_before_the_stop, stop, successor], 3, TP) is None


def test_a_refused_request_is_not_followed() -> None:
    refused = _request("LeaderAndIsr", 1, 4, error=11)  # stale controller epoch: the whole request
    assert _accepted([refused], 3, TP) is None
    assert _accepted([_request("LeaderAndIsr", 1, 4, error=0, partition_error=3)], 3, TP) is None


def test_a_controller_re_elected_on_its_node_is_a_new_incarnation() -> None:
    from conformance.diff.runner import incarnations  # noqa: PLC0415

    def sent(seq: int, source: int, cepoch: int) -> ControllerRequest:
        return ControllerRequest(seq, source, 3, 0.0, 6, 6, 0, "UpdateMetadata", controller_epoch=cepoch)

    # segments: 0 = setup (controller 2, epoch 1), 1 = pause 3, 2 = /controller moved back to 2
    # (epoch 2), 3 = resume 3
    requests = [sent(0, 2, 1), sent(1, 2, 1), sent(2, 2, 2), sent(3, 2, 2)]
    bounds = [0, 1, 2, 3, 4]
    assert incarnations(requests, bounds, [2, 2, 2, 2]) == {0: 1, 1: 1, 2: 2, 3: 2}
    assert incarnations(requests, bounds, [2, 2, 1, 1]) == {0: 1, 1: 1}, "node 1 sent nothing"
