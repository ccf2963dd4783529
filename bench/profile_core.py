"""cProfile of the controller core on the in-memory ZooKeeper (a script, not a test).

Usage: python -m bench.profile_core [PARTITIONS] [failover|broker-failure] [TOP]

Brokers 1-4; topics of 100 partitions, replicas [4, 1, 2] and [1, 3, 2] alternately (half led by
broker 4, half by broker 1); controller 1. `failover` kills broker 1 (the controller: failover of
broker 2 plus the failure of broker 1), `broker-failure` kills broker 4. Prints the wall time of
that step and the profile by own time. The in-memory ZooKeeper's own cost is in the profile
(`testing/memory_zk.py`); everything else is the core's.
"""

from __future__ import annotations

import cProfile
import logging
import pstats
import sys
import time

from tests.unit.controller.harness import Cluster

SCENARIOS = ("failover", "broker-failure")


def main(argv: list[str]) -> int:
    partitions = int(argv[0]) if argv and argv[0].isdigit() else 10_000
    scenario = argv[1] if len(argv) > 1 else "failover"
    top = int(argv[2]) if len(argv) > 2 and argv[2].isdigit() else 25
    if scenario not in SCENARIOS:
        print(f"unknown scenario {scenario!r}; valid: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    logging.disable(logging.INFO)
    cluster = Cluster()
    cluster.start(1, 2, 3, 4)
    for t in range(max(1, partitions // 100)):
        replicas = [4, 1, 2] if t % 2 == 0 else [1, 3, 2]
        cluster.create_topic(f"t{t}", dict.fromkeys(range(100), replicas), run=False)
    cluster.run()
    victim = cluster.controller().broker_id if scenario == "failover" else 4
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(cluster.kill, victim)
    print(f"{scenario} with {partitions} partitions (broker {victim} killed): "
          f"{time.perf_counter() - start:.2f} s under cProfile")  # fmt: skip
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
