"""The harness: starts and stops the servers a run needs (ZooKeeper, nodes, containers) and owns
the host's port claims; also the pytest plugin that hands them to tests (ring: drivers)."""
