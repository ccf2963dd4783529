"""Broker registration in ZooKeeper (ring: drivers logic over the node's ZooKeeper port).

BROKER-1, as KafkaZkClient.registerBroker@2.5.1 / CheckedEphemeral: ONE multi of
`create(/brokers/ids/<id>, null, EPHEMERAL)` + `setData(/brokers/ids/<id>, <v4 JSON>, version 0)`,
so the znode's dataVersion is 1 and its czxid is the broker epoch (the null data of the create
stays null on the wire: `NodeZkPort.multi`).
If the znode already exists and is owned by this session the registration stands (Kafka's
CheckedEphemeral does the same); owned by another session is an error naming both sessions. A
multi that failed as a whole (connection loss, closed session) raises `NodeZkError`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from reference_controller import zkdata
from reference_controller.controller.ports import CreateOp, SetDataOp, ZkCode
from reference_controller.errors import ReferenceControllerError
from reference_controller.node.zk_port import NodeZkError, NodeZkPort
from reference_controller.zkdata import BrokerInfo

log = logging.getLogger("kafka.zk.KafkaZkClient")
REREGISTER_BACKOFF_S = 0.2


class RegistrationError(ReferenceControllerError):
    """The broker znode exists and belongs to another session."""


def register_broker(zk: NodeZkPort, info: BrokerInfo) -> int:
    """Create `/brokers/ids/<id>`; returns the broker epoch (czxid)."""
    path = zkdata.broker_path(info.broker_id)
    created, written = zk.multi(
        [CreateOp(path, None, ephemeral=True), SetDataOp(path, zkdata.encode_broker(info), version=0)]
    )
    if created.code == written.code != ZkCode.OK:  # the request failed as a whole
        raise NodeZkError(path, created.code)
    if created.ok and written.ok and written.stat is not None:
        czxid = written.stat.czxid
    elif created.code == ZkCode.NODEEXISTS:
        stat = zk.exists(path)
        session = zk.session_id() or None
        if stat is None or stat.ephemeral_owner != session:
            owner = stat.ephemeral_owner if stat else "none"
            raise RegistrationError(
                f"Error while creating ephemeral at {path}, node already exists and owner '{owner}' does not "
                f"match current session '{session}'"
            )
        czxid = stat.czxid
    else:
        failure = next(
            r for r in (created, written) if r.code not in (ZkCode.OK, ZkCode.RUNTIME_INCONSISTENCY)
        )
        raise RegistrationError(f"Error while registering broker at {path}: {failure.code.name}")
    endpoints = ",".join(ep.connection_string() for ep in info.endpoints)
    log.info(
        f"Registered broker {info.broker_id} at path {path} with addresses: {endpoints}, czxid "
        f"(broker epoch): {czxid}"
    )
    return czxid


def register_with_retry(
    zk: NodeZkPort,
    info: BrokerInfo,
    deadline_s: float,
    now_s: Callable[[], float],
    sleep_s: Callable[[float], None],
) -> int:
    """Re-registration after session expiry: the old session's znode may linger briefly."""
    while True:
        try:
            return register_broker(zk, info)
        except RegistrationError:
            if now_s() >= deadline_s:
                raise
            sleep_s(REREGISTER_BACKOFF_S)
