"""`ApiError`: an error code with its message, as Kafka's `ApiError` carries it (ring: wire — data).

Kafka's admin APIs answer per partition or per resource with a code *and* a message
(`org.apache.kafka.common.requests.ApiError@2.5.1` L35-60): `ApiError.NONE` has a null message,
`ApiError.of(code)` (Kafka's `new ApiError(error)`) the error's default message from `Errors.java`,
and `ApiError(code, message)` the message given (None included). Shared by the controller, which
builds the results, and the node, which puts them on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkawire.errors import Errors

# The default messages of `Errors.java@2.5.1` for the codes the admin APIs answer with.
DEFAULT_MESSAGES: dict[int, str] = {
    Errors.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    Errors.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    Errors.REQUEST_TIMED_OUT: "The request timed out.",
    Errors.INVALID_TOPIC_EXCEPTION: "The request attempted to perform an operation on an invalid topic.",
    Errors.INVALID_REPLICA_ASSIGNMENT: "Replica assignment is invalid.",
    Errors.INVALID_CONFIG: "Configuration is invalid.",
    Errors.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    Errors.INVALID_REQUEST: (
        "This most likely occurs because of a request being malformed by the client library or the "
        "message was sent to an incompatible broker. See the broker logs for more details."
    ),
    Errors.REASSIGNMENT_IN_PROGRESS: "A partition reassignment is in progress.",
    Errors.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available",
    Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available",
    Errors.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition",
    Errors.NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
}


@dataclass(frozen=True)
class ApiError:
    error: int
    message: str | None = None

    @staticmethod
    def of(error: int) -> ApiError:
        """Kafka's `new ApiError(error)`: the error with its default message."""
        return ApiError(error, DEFAULT_MESSAGES.get(error))

    @staticmethod
    def from_exception(error: int, message: str | None) -> ApiError:
        """Kafka's `ApiError.fromThrowable`: the exception's message, unless it is the default one."""
        return ApiError(error, None if message == DEFAULT_MESSAGES.get(error) else message)

    @property
    def is_success(self) -> bool:
        return self.error == Errors.NONE


NONE = ApiError(Errors.NONE, None)
