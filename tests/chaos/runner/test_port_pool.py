"""Chaos port pools of two processes never hand out the same port, even one nobody has bound yet
(a node down between a kill and its restart); released ports become available to others."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chaos.links import PortPool

pytestmark = pytest.mark.unit

SMALL = range(19950, 19960)  # ten ports of the chaos range, none bound by anyone


def _child_taking(count: int) -> subprocess.Popen[str]:
    """A process whose pool over ``SMALL`` takes ``count`` ports, prints them, and holds them
    (without binding any) until a line arrives on its stdin; then releases them and prints ``released``."""
    code = (
        "import sys; from chaos.links import PortPool; "
        f"pool = PortPool(range({SMALL.start}, {SMALL.stop})); ports = pool.take({count}); "
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
        pool = PortPool(SMALL, cooldown=0)
        mine = pool.take(3)
        assert set(mine) == set(SMALL) - theirs, "only the three ports the other pool does not hold"
        with pytest.raises(RuntimeError, match="no 1 free ports left"):
            pool.take(1)
        pool.release(mine)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "released"
        assert set(pool.take(10)) == set(SMALL), "every port again once the other pool let go"
    finally:
        child.kill()
        child.wait(10)


def test_a_port_taken_and_released_in_one_pool_waits_out_its_cooldown() -> None:
    pool = PortPool(SMALL, cooldown=10)
    first = pool.take(10)
    pool.release(first[:4])
    with pytest.raises(RuntimeError):
        pool.take(1)  # the four are cooling down, the other six still held
    pool.release(first[4:])
