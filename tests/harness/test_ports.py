"""The port plan: one table of roles, host-wide claims that no other process is handed while their
owner lives (bound or not), freed when the owner dies (even by SIGKILL), per-worker slices."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from harness import ports
from harness.ports import FIXED_ROLES, NoFreePorts, Role, claim, claim_port
from harness.zookeeper import ZooKeeperEnsemble

#: Ten ports per test, outside every role's range (no run of the kit claims them meanwhile) and
#: different per test (xdist runs tests of this module side by side).
HELD = Role("test-held", range(9700, 9710))
SMALL = Role("test-small", range(9710, 9720))
BOUND = Role("test-bound", range(9720, 9730))
COOLING = Role("test-cooling", range(9730, 9740), cooldown=4)


def _claimable_in_child(port_list: list[int]) -> list[bool]:
    """Whether a fresh process can claim each port (its claims end with it)."""
    code = (
        "import sys; from harness.ports import claim_port; "
        "print(' '.join(str(int(claim_port(int(p)) is not None)) for p in sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, port_list)], capture_output=True, text=True, check=True
    )
    return [flag == "1" for flag in done.stdout.split()]


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[str]]:
    """A process that claims 6 ports of ``HELD``, binds none, prints them and waits."""
    code = (
        "import sys; from harness.ports import Role, claim; "
        f"held = claim(Role('test-held', range({HELD.ports.start}, {HELD.ports.stop})), 6, slot=(0, 1)); "
        "print(' '.join(map(str, held.ports)), flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    yield child
    child.kill()
    child.wait(10)


# --- the table ------------------------------------------------------------------------------------


@pytest.mark.unit
def test_fixed_roles_are_disjoint_and_below_this_hosts_ephemeral_range() -> None:
    ephemeral = ports.ephemeral_range()
    seen: set[int] = set()
    for role in FIXED_ROLES:
        assert role.ports.stop <= ephemeral.start, f"{role.name} reaches into the ephemeral range {ephemeral}"
        assert role.ports.start >= 1024, f"{role.name} needs privileges"
        assert not seen & set(role.ports), f"{role.name} overlaps another role"
        seen |= set(role.ports)


@pytest.mark.unit
def test_the_ranges_the_kit_has_always_used() -> None:
    assert ports.CHAOS_LINK.ports == range(10000, 20000)
    assert ports.INTERPOSED.ports == range(20000, 32000)
    assert ports.ZOOKEEPER.ports == range(32000, 32768)


@pytest.mark.unit
def test_xdist_workers_get_disjoint_slices_and_a_serial_run_the_whole_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slices = []
    for i in range(3):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{i}")
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
        slices.append(set(ports.slice_of(ports.INTERPOSED.ports, ports.worker_slot())))
    assert [len(s) for s in slices] == [4000, 4000, 4000]
    assert len(set().union(*slices)) == 12000, "two workers share ports"
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    with claim(ports.INTERPOSED, 5) as mine:
        assert set(mine.ports) <= set(range(26000, 32000)), "not from worker gw1's slice"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert ports.slice_of(ports.INTERPOSED.ports, ports.worker_slot()) == ports.INTERPOSED.ports


# --- claims ---------------------------------------------------------------------------------------


@pytest.mark.unit
def test_two_processes_never_get_the_same_port_of_a_role(holder: subprocess.Popen[str]) -> None:
    assert holder.stdout is not None
    theirs = set(map(int, holder.stdout.readline().split()))
    assert len(theirs) == 6
    with claim(HELD, 4, slot=(0, 1)) as mine:
        assert set(mine.ports) == set(HELD.ports) - theirs
        with pytest.raises(NoFreePorts, match="no 1 free ports left in test-held"):
            claim(HELD, 1, slot=(0, 1))


@pytest.mark.unit
def test_a_claimed_port_nothing_listens_on_is_never_handed_out_while_its_owner_lives() -> None:
    with claim(SMALL, 3, slot=(0, 1)) as held:
        assert all(ports.bindable(port) for port in held.ports), "nothing is bound: only the claim"
        assert _claimable_in_child(held.ports) == [False] * 3
        assert all(claim_port(port) is None for port in held.ports), "not even by the claiming process"
    assert _claimable_in_child(held.ports) == [True] * 3, "closing gives them up"


@pytest.mark.unit
def test_a_dead_owners_claims_are_free_again_even_after_sigkill(holder: subprocess.Popen[str]) -> None:
    assert holder.stdout is not None
    theirs = list(map(int, holder.stdout.readline().split()))
    assert _claimable_in_child(theirs) == [False] * 6
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    assert _claimable_in_child(theirs) == [True] * 6


@pytest.mark.unit
def test_a_bound_port_is_skipped_and_too_few_ports_is_an_error_that_keeps_nothing() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", BOUND.ports.start))
        squatter.listen()
        with claim(BOUND, 9, slot=(0, 1)) as nine:
            assert BOUND.ports.start not in nine.ports
        with pytest.raises(NoFreePorts):
            claim(BOUND, 10, slot=(0, 1))
    assert _claimable_in_child(list(BOUND.ports)) == [True] * 10


@pytest.mark.unit
def test_released_ports_of_a_role_with_a_cooldown_are_not_handed_back_at_once() -> None:
    with claim(COOLING, 3, slot=(0, 1)) as first:
        pass
    assert _claimable_in_child(first.ports) == [True] * 3, "released host-wide at once"
    with claim(COOLING, 7, slot=(0, 1)) as rest:
        assert set(rest.ports) == set(COOLING.ports) - set(first.ports), "this process waits them out"


# --- a fault keeps its ports --------------------------------------------------------------------


@pytest.mark.integration
def test_an_ensemble_keeps_a_killed_members_ports_claimed_until_it_closes() -> None:
    ensemble = ZooKeeperEnsemble(3, name="ports-ens")
    with ensemble:
        member = ensemble.members[2]
        assert member.quorum is not None
        mine = [member.port, *next((p, e) for i, p, e in member.quorum.peers if i == 3)]
        assert all(port in ports.ZOOKEEPER.ports for port in mine)
        ensemble.kill_member(2)
        assert _claimable_in_child(mine) == [False] * 3
        ensemble.start_member(2)
        ensemble.wait_for_quorum(30.0, members=[0, 1, 2])
    assert _claimable_in_child(mine) == [True] * 3
