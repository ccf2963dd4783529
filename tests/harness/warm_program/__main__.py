"""What the warm-start tests run: ``python -m tests.harness.warm_program ACTION [ARG]``.

``report PATH``: write how it was started (argv, cwd, environment, pid, parent, group, session,
which process imported :mod:`~tests.harness.warm_program.preloaded`) to PATH as JSON, write a line
to stdout and one to stderr, exit 0. ``exit N``: exit with N. ``raise``: an uncaught exception.
``atexit``: an atexit handler prints, then exit 5. ``sleep``: run until SIGTERM, print
``terminated`` and exit 0.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import time


def warm_up() -> None:
    import tests.harness.warm_program.preloaded  # noqa: F401, PLC0415


def main(argv: list[str]) -> int:
    action = argv[0]
    if action == "report":
        from tests.harness.warm_program import preloaded  # noqa: PLC0415

        report = {
            "argv": sys.argv[1:],
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "pgid": os.getpgid(0),
            "sid": os.getsid(0),
            "preloaded_in": preloaded.IMPORTED_IN,
            "name": __name__,
        }
        with open(argv[1], "w", encoding="utf-8") as out:
            json.dump(report, out)
        print("to stdout")
        print("to stderr", file=sys.stderr)
        return 0
    if action == "exit":
        return int(argv[1])
    if action == "raise":
        raise RuntimeError("the program failed")
    if action == "atexit":
        atexit.register(lambda: print("atexit ran", flush=True))
        return 5
    if action == "sleep":
        signal.signal(signal.SIGTERM, lambda *_: (print("terminated", flush=True), sys.exit(0)))
        print("sleeping", flush=True)
        while True:
            time.sleep(0.05)
    print(f"unknown action {action!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
