"""Integration tests of the controller drivers and the controller on real ZooKeeper."""
