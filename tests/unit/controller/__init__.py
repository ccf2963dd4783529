"""Unit tests of the controller (decisions, core, in-memory ZooKeeper)."""
