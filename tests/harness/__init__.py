"""Tests of the harness: launchers, ZooKeeper servers and ensembles, port claims, the reaper."""
