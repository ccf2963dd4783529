"""Toxiproxy's API errors: message + HTTP status, as upstream's ``ApiError`` (ring: decisions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class ApiError(Exception):
    """A Toxiproxy API error: the message and the HTTP status, as upstream's ``ApiError``."""

    message: str
    status: int

    def __str__(self) -> str:
        return self.message

    def joined(self, detail: str) -> ApiError:
        """Upstream's ``joinError``: ``"<message>: <detail>"`` with the same status."""
        return ApiError(f"{self.message}: {detail}", self.status)


BAD_REQUEST_BODY: Final = ApiError("bad request body", 400)
MISSING_FIELD: Final = ApiError("missing required field", 400)
PROXY_NOT_FOUND: Final = ApiError("proxy not found", 404)
PROXY_ALREADY_EXISTS: Final = ApiError("proxy already exists", 409)
INVALID_STREAM: Final = ApiError("stream was invalid, can be either upstream or downstream", 400)
INVALID_TOXIC_TYPE: Final = ApiError("invalid toxic type", 400)
TOXIC_ALREADY_EXISTS: Final = ApiError("toxic already exists", 409)
TOXIC_NOT_FOUND: Final = ApiError("toxic not found", 404)
