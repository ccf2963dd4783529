"""Chaos port pools of two processes never hand out the same port, even one nobody has bound yet
(a node down between a kill and its restart); released ports become available to others; a
runner worker's pool takes from its own slot of the ``chaos-link`` ports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chaos.links import PortPool
from harness.ports import CHAOS_LINK, NoFreePorts, Role

pytestmark = pytest.mark.unit

SMALL = range(9760, 9770)  # ten ports outside every role of the port plan: no run claims them


def _role(cooldown: int) -> Role:
    return Role(f"chaos-link-test-{cooldown}", SMALL, cooldown=cooldown)


def _child_taking(count: int) -> subprocess.Popen[str]:
    """A process whose pool over ``SMALL`` takes ``count`` ports, prints them, and holds them
    (without binding any) until a line arrives on its stdin; then releases them and prints ``released``."""
    code = (
        "import sys; from chaos.links import PortPool; from harness.ports import Role; "
        f"pool = PortPool(Role('chaos-link-test', range({SMALL.start}, {SMALL.stop})), (0, 1)); "
        f"ports = pool.take({count}); "
        "print(' '.join(map(str, ports)), flush=True); sys.stdin.readline(); "
        "pool.release(ports); print('released', flush=True); sys.stdin.read()"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def test_a_port_another_process_took_is_never_handed_out_until_it_is_released() -> None:
    child = _child_taking(7)
    try:
        assert child.stdout is not None
        assert child.stdin is not None
        theirs = set(map(int, child.stdout.readline().split()))
        assert len(theirs) == 7
        assert theirs <= set(SMALL)
        pool = PortPool(_role(0), (0, 1))
        mine = pool.take(3)
        assert set(mine) == set(SMALL) - theirs, "only the three ports the other pool does not hold"
        with pytest.raises(NoFreePorts, match="no 1 free ports left"):
            pool.take(1)
        pool.release(mine)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "released"
        assert set(pool.take(10)) == set(SMALL), "every port again once the other pool let go"
        pool.close()
    finally:
        child.kill()
        child.wait(10)


def test_a_port_taken_and_released_in_one_pool_waits_out_its_cooldown() -> None:
    pool = PortPool(_role(10), (0, 1))
    first = pool.take(10)
    pool.release(first[:4])
    with pytest.raises(NoFreePorts):
        pool.take(1)  # the four are cooling down, the other six still held
    pool.release(first[4:])
    again = pool.take(5)  # at most half a slice cools down: the five released first are usable
    assert set(again) == set(first[:5])
    pool.close()


def test_runner_slots_take_disjoint_slices_of_the_chaos_link_ports() -> None:
    pools = [PortPool.for_slot(slot, 3) for slot in range(3)]
    slices = [set(pool.ports) for pool in pools]
    assert all(len(s) == len(CHAOS_LINK.ports) // 3 for s in slices)
    assert len(slices[0] | slices[1] | slices[2]) == 3 * len(slices[0]), "two slots share ports"
    taken = [pool.take(5) for pool in pools]
    assert all(set(t) <= s for t, s in zip(taken, slices, strict=True))
    for pool in pools:
        pool.close()
