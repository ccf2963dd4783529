"""Log lines like upstream's zerolog output: one JSON object per line on stdout (ring: drivers).

``LOG_LEVEL`` (trace, debug, info, warn, error, fatal, panic, disabled) filters, as upstream.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

_LEVELS = {"trace": -1, "debug": 0, "info": 1, "warn": 2, "error": 3, "fatal": 4, "panic": 5, "disabled": 7}


def _threshold() -> int:
    return _LEVELS.get(os.environ.get("LOG_LEVEL", "info").strip().lower(), _LEVELS["info"])


_THRESHOLD = _threshold()


def emit(level: str, message: str, **fields: Any) -> None:
    if _LEVELS[level] < _THRESHOLD:
        return
    time = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    record = {"level": level, **fields, "time": time, "message": message}
    try:
        sys.stdout.write(json.dumps(record, default=str, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):  # stdout closed or a broken pipe: logging must not kill the server
        pass


def debug(message: str, **fields: Any) -> None:
    emit("debug", message, **fields)


def info(message: str, **fields: Any) -> None:
    emit("info", message, **fields)


def warn(message: str, **fields: Any) -> None:
    emit("warn", message, **fields)


def error(message: str, **fields: Any) -> None:
    emit("error", message, **fields)
