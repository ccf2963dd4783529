"""Exception root of the reference controller and broker node (ring: shared).

Expected outcomes are values; exceptions are for configuration errors at start-up, malformed
external input that a caller must skip, and loss of controllership (caught at the dispatch boundary).
"""

from __future__ import annotations


class ReferenceControllerError(Exception):
    """Root of every exception raised on purpose by `reference_controller`."""


class ConfigError(ReferenceControllerError):
    """A configuration key has an invalid value. The message names the key and what is allowed."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"Invalid value for configuration key '{key}': {message}")
        self.key = key


class MalformedZnodeError(ReferenceControllerError):
    """A znode's data could not be decoded; names the path and the bytes."""

    def __init__(self, path: str, data: bytes | None, reason: str) -> None:
        shown = repr(data[:512]) if data is not None else "null"
        super().__init__(f"Malformed data in znode {path}: {reason}; data={shown}")
        self.path = path
        self.data = data
        self.reason = reason
