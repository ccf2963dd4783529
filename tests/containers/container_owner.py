"""A real owner process for the cleanup tests (ring: test tooling).

``python -m tests.containers.container_owner <dir> <exit|wait>``: start one container through the
docker launcher (a ``sleep`` in the ZooKeeper image), print its name, then either exit normally
(the atexit hook must remove it) or wait to be killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from harness.containers.launcher import DockerHandle, DockerLauncher
from harness.launcher import LaunchSpec


def main() -> None:
    run_dir, mode = Path(sys.argv[1]), sys.argv[2]
    handle = DockerLauncher().spawn(
        LaunchSpec(
            role="zookeeper",
            name="owner-test",
            argv=["sleep", "600"],
            cwd=run_dir,
            log_path=run_dir / "out.log",
        )
    )
    assert isinstance(handle, DockerHandle)
    print(handle.name, flush=True)
    if mode == "wait":
        time.sleep(600)


if __name__ == "__main__":
    main()
