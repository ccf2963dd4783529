"""Broker registration in ZooKeeper (ring: drivers, blocking kazoo).

BROKER-1, as KafkaZkClient.registerBroker@2.5.1 / CheckedEphemeral: ONE multi of
`create(/brokers/ids/<id>, null, EPHEMERAL)` + `setData(/brokers/ids/<id>, <v4 JSON>, version 0)`,
so the znode's dataVersion is 1 and its czxid is the broker epoch. kazoo's `transaction().create`
refuses `None`, so the create op is built with b"" and its data replaced by None before commit:
kazoo's serialiser writes None as length -1, i.e. real null data on the wire.
If the znode already exists and is owned by this session the registration stands (Kafka's
CheckedEphemeral does the same); owned by another session is an error naming both sessions.
"""

from __future__ import annotations

import logging
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from reference_controller import zkdata
from reference_controller.errors import ReferenceControllerError
from reference_controller.zkdata import BrokerInfo

log = logging.getLogger("kafka.zk.KafkaZkClient")


class RegistrationError(ReferenceControllerError):
    """The broker znode exists and belongs to another session."""


def register_broker(zk: KazooClient, info: BrokerInfo) -> int:
    """Create `/brokers/ids/<id>`; returns the broker epoch (czxid)."""
    path = zkdata.broker_path(info.broker_id)
    txn = zk.transaction()
    txn.create(path, b"", ephemeral=True)
    txn.operations[-1] = txn.operations[-1]._replace(data=None)  # null data, as Kafka writes it
    txn.set_data(path, zkdata.encode_broker(info), version=0)
    results = txn.commit()
    failure = next((r for r in results if isinstance(r, Exception)), None)
    if failure is None:
        czxid = int(results[1].czxid)
    elif isinstance(results[0], NodeExistsError):
        stat = zk.exists(path)
        session = zk.client_id[0] if zk.client_id else None
        if stat is None or stat.ephemeralOwner != session:
            owner = stat.ephemeralOwner if stat else "none"
            raise RegistrationError(
                f"Error while creating ephemeral at {path}, node already exists and owner '{owner}' does not "
                f"match current session '{session}'"
            )
        czxid = int(stat.czxid)
    else:
        raise RegistrationError(f"Error while registering broker at {path}: {failure!r}")
    endpoints = ",".join(ep.connection_string() for ep in info.endpoints)
    log.info(
        f"Registered broker {info.broker_id} at path {path} with addresses: {endpoints}, czxid "
        f"(broker epoch): {czxid}"
    )
    return czxid


def register_with_retry(zk: KazooClient, info: BrokerInfo, deadline_s: float) -> int:
    """Re-registration after session expiry: the old session's znode may linger briefly."""
    while True:
        try:
            return register_broker(zk, info)
        except RegistrationError:
            if time.monotonic() >= deadline_s:
                raise
            time.sleep(0.2)
