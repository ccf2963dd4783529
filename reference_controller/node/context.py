"""What the API handlers of a node share (ring: drivers)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient

from reference_controller.config import KafkaConfig
from reference_controller.node.isr import IsrManager
from reference_controller.node.journal import ControllerRequestJournal
from reference_controller.node.metadata_cache import MetadataCache
from reference_controller.node.replica_manager import ReplicaManager


@dataclass
class NodeContext:
    config: KafkaConfig
    zk: KazooClient
    cluster_id: str
    replica_manager: ReplicaManager
    metadata_cache: MetadataCache
    isr_manager: IsrManager
    journal: ControllerRequestJournal
    controller: Any = None  # ControllerService when running, else None (broker-only mode)
    rng: random.Random = field(default_factory=random.Random)

    def controller_is_active(self) -> bool:
        return self.controller is not None and bool(self.controller.is_active())
