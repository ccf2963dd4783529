"""The state-change logger with Kafka's exact messages (ring: core — logging only).

Logger `state.change.logger`, every line prefixed `[Controller id=N epoch=E] `
(StateChangeLogger.scala@2.5.1). Failures are logged at ERROR with the header line as the message
and the cause as the record's exception, rendered by the node's layout as Kafka's log4j does:
`java.lang.IllegalStateException: Replica [Topic=foo,Partition=0,Replica=2] should be in …`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from reference_controller.controller.ports import ZkCode
from reference_controller.logutil import STATE_CHANGE_LOGGER, TRACE


class IllegalStateException(Exception):
    """Rendered as `java.lang.IllegalStateException: <message>`; never raised."""


IllegalStateException.__module__ = "java.lang"


class StateChangeFailedException(Exception):
    """Rendered as `kafka.common.StateChangeFailedException: <message>`; used as a value, never raised."""


StateChangeFailedException.__module__ = "kafka.common"


class KeeperException(Exception):
    """Rendered as `org.apache.zookeeper.KeeperException: <code>`; used as a value."""


KeeperException.__module__ = "org.apache.zookeeper"

# KeeperException.create(code) (ZooKeeper 3.5): the subclass name and `KeeperErrorCode = <msg>`
# (no path), as Kafka's `logFailedStateChange(partition, curr, target, code: Code)` logs it.
_KEEPER_EXCEPTIONS: dict[ZkCode, tuple[str, str]] = {
    ZkCode.SYSTEM_ERROR: ("SystemErrorException", "SystemError"),
    ZkCode.RUNTIME_INCONSISTENCY: ("RuntimeInconsistencyException", "RuntimeInconsistency"),
    ZkCode.CONNECTION_LOSS: ("ConnectionLossException", "ConnectionLoss"),
    ZkCode.NONODE: ("NoNodeException", "NoNode"),
    ZkCode.NOAUTH: ("NoAuthException", "Not authenticated"),
    ZkCode.BADVERSION: ("BadVersionException", "BadVersion"),
    ZkCode.NOCHILDRENFOREPHEMERALS: ("NoChildrenForEphemeralsException", "NoChildrenForEphemerals"),
    ZkCode.NODEEXISTS: ("NodeExistsException", "NodeExists"),
    ZkCode.NOTEMPTY: ("NotEmptyException", "Directory not empty"),
    ZkCode.SESSIONEXPIRED: ("SessionExpiredException", "Session expired"),
}


def keeper_exception(code: ZkCode) -> KeeperException:
    """`KeeperException.create(code)`, rendered `org.apache.zookeeper.KeeperException$<Name>: …`."""
    name, message = _KEEPER_EXCEPTIONS.get(code, ("", code.name))
    if not name:
        return KeeperException(f"KeeperErrorCode = {message}")
    cls: type[KeeperException] = type(name, (KeeperException,), {"__module__": "org.apache.zookeeper"})
    cls.__qualname__ = f"KeeperException${name}"
    return cls(f"KeeperErrorCode = {message}")


class StateChangeLogger:
    def __init__(self, controller_id: int, epoch: Callable[[], int]) -> None:
        self.controller_id = controller_id
        self._epoch = epoch
        self.logger = logging.getLogger(STATE_CHANGE_LOGGER)

    @property
    def prefix(self) -> str:
        return f"[Controller id={self.controller_id} epoch={self._epoch()}] "

    @property
    def trace_enabled(self) -> bool:
        """Whether TRACE lines are written: callers skip formatting them when not."""
        return self.logger.isEnabledFor(TRACE)

    def trace(self, message: str) -> None:
        if self.logger.isEnabledFor(TRACE):
            self.logger.log(TRACE, self.prefix + message)

    def info(self, message: str) -> None:
        self.logger.info(self.prefix + message)

    def warn(self, message: str) -> None:
        self.logger.warning(self.prefix + message)

    def error(self, message: str, cause: BaseException | None = None) -> None:
        if cause is None:
            self.logger.error(self.prefix + message)
        else:
            self.logger.error(self.prefix + message, exc_info=(type(cause), cause, None))


def controller_logger(broker_id: int) -> logging.LoggerAdapter[logging.Logger]:
    """`kafka.controller.KafkaController` with logIdent `[Controller id=N] `."""
    return _Prefixed(logging.getLogger("kafka.controller.KafkaController"), f"[Controller id={broker_id}] ")


class _Prefixed(logging.LoggerAdapter[logging.Logger]):
    def __init__(self, logger: logging.Logger, prefix: str) -> None:
        super().__init__(logger, {})
        self.prefix = prefix

    def process(self, msg: object, kwargs: object) -> tuple[object, object]:  # type: ignore[override]
        return f"{self.prefix}{msg}", kwargs
