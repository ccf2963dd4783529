"""Helper process for the reaper tests: own one ZooKeeperServer, report it as JSON, then sleep.

Usage: ``python -m tests.harness.zk_owner <die_with_owner 0|1>``. The test then kills or signals
this process and checks what happens to the JVM.
"""

from __future__ import annotations

import faulthandler
import json
import signal
import sys
import time

from harness.process import live_jvms, owner_session
from harness.zookeeper import ZooKeeperServer


def main() -> None:
    # An owner is a program a user stops with Ctrl-C. Started from a non-interactive shell's
    # background job (a CI script's `cmd &`), this process would inherit SIGINT ignored, and the
    # SIGINT test would wait for an exit that never comes: give it Python's default handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # SIGUSR1 prints every thread's stack to stderr: what the test shows if this owner hangs.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    server = ZooKeeperServer(name="owner-helper", die_with_owner=sys.argv[1:] == ["1"])
    server.start()
    jvm = live_jvms()[0]
    info = {
        "pid": jvm.pid,
        "start_time": jvm.start_time,
        "port": server.port,
        "run_dir": str(server.run_dir),
        "run_root": str(owner_session().run_root),
        "record": str(jvm.record_path),
    }
    print(json.dumps(info), flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
