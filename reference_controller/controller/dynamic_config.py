"""The port through which the core reads the broker's dynamic configs (ring: core boundary — types).

Kafka's controller reads `config.uncleanLeaderElectionEnable` from the broker's `KafkaConfig`,
which `DynamicBrokerConfig` updates in place when `/config/brokers/<default>` or
`/config/brokers/<own id>` changes (DynamicBrokerConfig.scala@2.5.1 L287-307, L516-531; spec
§13.4.4). The driver that processes `/config/changes` implements this port; without one the core
uses `server.properties`.
"""

from __future__ import annotations

from typing import Protocol


class DynamicBrokerConfigView(Protocol):
    def unclean_leader_election_enable(self) -> bool:
        """The effective default: this broker's dynamic override, else the cluster-wide dynamic
        default, else the static config."""
        ...
