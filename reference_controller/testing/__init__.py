"""Test doubles shipped with the reference (ring: test support, as kazoo ships `kazoo.testing`).

`memory_zk` is an in-memory ZooKeeper implementing the core's `ZkPort` and the node's `NodeZkPort`
(kept honest by the agreement tests against real ZooKeeper); `clock.ManualClock` is a clock tests
set by hand. The product never imports this package (a wall in `tests/architecture/test_walls.py`).
"""
