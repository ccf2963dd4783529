"""How long a node took to come up, from what it left behind (conformance ring, observation only).

A node start has three instants, each observed, never estimated: the harness spawned the process
(its own clock), the node wrote the first line of this start to its server log (Kafka's log4j
layout starts every line with ``[yyyy-MM-dd HH:mm:ss,SSS]``, local time: the interpreter or JVM
is up and the node's own start-up has begun), and ZooKeeper created ``/brokers/ids/<id>`` (the
znode's ``ctime``). The first gap is the process start (interpreter or JVM, imports, config);
the second the node's own start-up (ZooKeeper session, log dirs, listeners, registration). The
suite benchmark reports both; a target without a server log has the total only.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

__all__ = ["first_line_time", "log_size"]

_STAMP = re.compile(rb"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def log_size(path: Path | None) -> int:
    """The log's size now: where the next start's first line will begin."""
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def first_line_time(path: Path | None, offset: int) -> float | None:
    """Epoch seconds of the first stamped line at or after ``offset`` (``None`` if there is none)."""
    if path is None:
        return None
    try:
        with path.open("rb") as f:
            f.seek(offset)
            head = f.read(4096)
    except OSError:
        return None
    match = _STAMP.search(head)
    if match is None:
        return None
    stamp = datetime.strptime(match.group(1).decode(), "%Y-%m-%d %H:%M:%S,%f")
    return stamp.timestamp()
