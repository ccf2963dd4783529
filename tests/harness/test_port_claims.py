"""Host-wide port claims: what one holder claimed, no other process is handed until it lets go;
a ZooKeeper ensemble keeps its members' ports claimed while a member is down."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.port_claims import ENSEMBLE_PORTS, claim_port, claim_ports
from harness.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.integration


def _claimable_in_child(ports: list[int]) -> list[bool]:
    """Whether a fresh process can claim each port (its claims end with it)."""
    code = (
        "import sys; from harness.port_claims import claim_port; "
        "print(' '.join(str(int(claim_port(int(p)) is not None)) for p in sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, ports)], capture_output=True, text=True, check=True
    )
    return [flag == "1" for flag in done.stdout.split()]


def test_claimed_ports_are_distinct_below_the_ephemeral_range_and_nobody_elses_until_closed() -> None:
    claimed = claim_ports(9)
    ports = [port for port, _ in claimed]
    assert len(set(ports)) == 9
    assert all(port in ENSEMBLE_PORTS for port in ports)
    assert all(port < 32768 for port in ports)
    assert _claimable_in_child(ports) == [False] * 9
    assert all(claim_port(port) is None for port in ports), "not even by the claiming process"
    for _, claim in claimed:
        claim.close()
    assert _claimable_in_child(ports) == [True] * 9


def test_too_few_ports_left_is_an_error_that_keeps_nothing_claimed() -> None:
    small = range(ENSEMBLE_PORTS.start, ENSEMBLE_PORTS.start + 3)
    held = [claim_port(port) for port in small]
    free = [port for port, claim in zip(small, held, strict=True) if claim is not None]
    try:
        with pytest.raises(RuntimeError, match="unclaimed free ports left"):
            claim_ports(len(small) + 1, small)
    finally:
        for claim in held:
            if claim is not None:
                claim.close()
    assert _claimable_in_child(free) == [True] * len(free)


def test_an_ensemble_keeps_a_killed_members_ports_claimed_until_it_closes() -> None:
    ensemble = ZooKeeperEnsemble(3, name="port-claims-ens")
    with ensemble:
        member = ensemble.members[2]
        assert member.quorum is not None
        mine = [member.port, *next((p, e) for i, p, e in member.quorum.peers if i == 3)]
        ensemble.kill_member(2)
        assert _claimable_in_child(mine) == [False] * 3
        ensemble.start_member(2)
        ensemble.wait_for_quorum(30.0, members=[0, 1, 2])
    assert _claimable_in_child(mine) == [True] * 3
