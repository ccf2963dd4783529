"""Kafka-shaped logging for the reference node (ring: shared).

Kafka 2.5's `config/log4j.properties` writes `server.log` and `state-change.log` with the layout
`[%d] %p %m (%c)%n`, `%d` as `yyyy-MM-dd HH:mm:ss,SSS`, and sets `state.change.logger` to TRACE.
Python has no TRACE level, so it is registered here (5, below DEBUG).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

TRACE = 5
logging.addLevelName(TRACE, "TRACE")
logging.addLevelName(logging.WARNING, "WARN")  # log4j's name for the level
logging.addLevelName(logging.CRITICAL, "FATAL")  # log4j has FATAL, not CRITICAL

STATE_CHANGE_LOGGER = "state.change.logger"


class KafkaLayout(logging.Formatter):
    """`[2020-05-11 12:00:00,123] TRACE message (logger.name)` with the exception on the next lines."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
        line = f"[{stamp},{int(record.msecs):03d}] {record.levelname} {record.getMessage()} ({record.name})"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + record.stack_info
        return line


def configure_node_logging(log_dir: Path, *, console: bool = False) -> None:
    """Route `state.change.logger` to `state-change.log` (TRACE) and everything to `server.log`."""
    log_dir.mkdir(parents=True, exist_ok=True)
    layout = KafkaLayout()
    server = logging.FileHandler(log_dir / "server.log", encoding="utf-8")
    server.setFormatter(layout)
    server.setLevel(logging.INFO)
    state_change = logging.FileHandler(log_dir / "state-change.log", encoding="utf-8")
    state_change.setFormatter(layout)
    state_change.setLevel(TRACE)
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(server)
    if console:
        stream = logging.StreamHandler()
        stream.setFormatter(layout)
        stream.setLevel(logging.WARNING)
        root.addHandler(stream)
    sc = logging.getLogger(STATE_CHANGE_LOGGER)
    sc.setLevel(TRACE)
    sc.addHandler(state_change)
    sc.propagate = False  # log4j.additivity.state.change.logger=false in Kafka 2.5


def trace(logger: logging.Logger, message: str) -> None:
    if logger.isEnabledFor(TRACE):
        logger.log(TRACE, message)
