"""`$LOG_DIR/controller-requests.jsonl`: one JSON line per controller request received (ring: drivers).

Schema of a line (keys always present unless marked):
  ts_wall_ms (int, epoch ms), ts_monotonic_s (float), listener (str), api ("LeaderAndIsr" |
  "UpdateMetadata" | "StopReplica"), api_key, version, correlation_id, controller_id,
  controller_epoch, broker_epoch (-1 when the version has none), error_code (top-level),
  partitions: list of {topic, partition, ...}:
    LeaderAndIsr:   controller_epoch, leader, leader_epoch, isr, zk_version, replicas, adding,
                    removing, is_new, error_code (the per-partition error returned)
    UpdateMetadata: controller_epoch, leader, leader_epoch, isr, zk_version, replicas,
                    offline_replicas
    StopReplica:    delete_partition (the request's DeletePartitions), error_code
  live_brokers (UpdateMetadata only): list of {id, endpoints: [{listener, host, port,
                  security_protocol}], rack (null when none)}, in request order; `listener`
                  is the v3+ listener name, else the security protocol's name (v1-v2) or
                  "PLAINTEXT" (v0), as the metadata cache names it
  live_leaders (LeaderAndIsr only): list of {id, host, port}
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def journal_brokers(request: Any) -> list[dict[str, Any]]:
    """The `live_brokers` field of an UpdateMetadata line (any version 0-6)."""
    result: list[dict[str, Any]] = []
    for b in request.live_brokers:
        if hasattr(b, "v0_host"):  # v0: one PLAINTEXT host/port per broker
            raw = [("PLAINTEXT", "PLAINTEXT", b.v0_host, b.v0_port)]
        else:
            raw = []
            for ep in b.endpoints:
                protocol = _PROTOCOL_NAMES.get(int(ep.security_protocol), str(int(ep.security_protocol)))
                raw.append((getattr(ep, "listener", None) or protocol, protocol, ep.host, ep.port))
        endpoints = [
            {"listener": str(name), "host": str(host), "port": int(port), "security_protocol": protocol}
            for name, protocol, host, port in raw
        ]
        rack = getattr(b, "rack", None)
        result.append({"id": int(b.id_), "endpoints": endpoints, "rack": None if rack is None else str(rack)})
    return result


class ControllerRequestJournal:
    """Appends journal lines; thread-safe, flushed per line so probes see them at once."""

    records = True  # a journal that keeps no line says so: the handlers then build none

    def __init__(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.path = log_dir / "controller-requests.jsonl"
        self._lock = threading.Lock()
        self._file = self.path.open("a", encoding="utf-8")

    def record(self, entry: dict[str, Any]) -> None:
        line = {"ts_wall_ms": int(time.time() * 1000), "ts_monotonic_s": round(time.monotonic(), 6), **entry}
        text = json.dumps(line, separators=(",", ":"), sort_keys=False)
        with self._lock:
            if self._file.closed:
                return
            self._file.write(text + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
