"""The deterministic simulator of chaos runs (ring: drivers — a simulated cluster).

The whole cluster in one process, one thread, one seeded RNG and a virtual clock: the reference
node's broker side and controller core (:mod:`chaos.sim.node`) over the in-memory ZooKeeper
logging transactions as the real server does (:mod:`chaos.sim.zk`), a simulated network
(:mod:`chaos.sim.world`), replication ticks (:mod:`chaos.sim.replication`), the chaos
generator's workload and faults (:mod:`chaos.sim.actions`), one run judged by the chaos
checkers with its evidence written as a real run's (:mod:`chaos.sim.run`), shrinking
(:mod:`chaos.sim.shrink`), the command (:mod:`chaos.sim.cli`) and its benchmark
(:mod:`chaos.sim.bench`).
"""
