"""The behaviour catalogue in code (conformance ring: data + a cross-checking loader).

Every ID of ``../shared/spec/behaviours.md`` with a short title, its area, the spec/seed
reference, the profiles (Kafka versions) it applies to, and whether it carries the *(unit)* mark
(no outside observation beyond the state-change log; the suite checks every reachable case).
Tests, run records, the conformance matrix and certificates all use these IDs.

:func:`cross_check` compares this table with ``behaviours.md`` when that file is present (its
folder is ``$KZK_SPEC_DIR``, else ``<repo root>/../shared/spec``): an ID missing on either side
or filed under another area is a discrepancy, so the catalogue cannot drift from the spec.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "AREAS",
    "CATALOGUE",
    "DEFAULT_PROFILE",
    "Behaviour",
    "by_id",
    "cross_check",
    "ids_in_areas",
    "parse_spec_ids",
    "spec_dir",
]

DEFAULT_PROFILE = "2.5"
UnitMark = Literal["none", "partly", "only"]
_UNIT_MARKS: dict[str, UnitMark] = {"none": "none", "partly": "partly", "only": "only"}

AREAS: tuple[str, ...] = (
    "EPOCH",
    "FENCE",
    "LISTEN",
    "FAILOVER",
    "RSM",
    "PSM",
    "ELECT",
    "TOPIC",
    "LOGDIR",
    "MIDCREATE",
    "BROKER",
    "ISR",
    "PREFERRED",
    "REBALANCE",
    "REASSIGN",
    "DELETE",
    "SHUTDOWN",
    "REQ",
    "BADINPUT",
)

_AREA_SPEC: dict[str, str] = {
    "EPOCH": "§2.1",
    "FENCE": "§2.1, §7.3, §7.4",
    "LISTEN": "§2.2, §2.3",
    "FAILOVER": "§2.2",
    "RSM": "§3.1, §3.5",
    "PSM": "§3.2",
    "ELECT": "§3.2",
    "TOPIC": "§5.1, §5.2",
    "LOGDIR": "§5.4",
    "MIDCREATE": "§5.3",
    "BROKER": "§6.1–§6.3",
    "ISR": "§6.5",
    "PREFERRED": "§6.6",
    "REBALANCE": "§6.7",
    "REASSIGN": "§4, §11; seed 000",
    "DELETE": "§6.9",
    "SHUTDOWN": "§6.10",
    "REQ": "§7",
    "BADINPUT": "§1.3, §4.2, ecosystem §4",
}


@dataclass(frozen=True)
class Behaviour:
    """One catalogue line."""

    id: str
    title: str
    area: str
    ref: str
    profiles: tuple[str, ...] = (DEFAULT_PROFILE,)
    unit: UnitMark = "none"


_T: list[tuple[str, ...]] = [
    ("EPOCH-1", "Fresh cluster: first epoch 1 at dataVersion 1, ephemeral /controller"),
    ("EPOCH-2", "Election is one multi; exactly one contender wins"),
    ("EPOCH-3", "Every controller move increments the epoch by exactly 1"),
    ("EPOCH-4", "The epoch persists when all brokers are down"),
    ("EPOCH-5", "Non-controllers watch /controller and re-elect when it disappears"),
    ("EPOCH-6", "Controller session expiry: resign, re-register, re-elect"),
    ("FENCE-1", "Every controller write is fenced by a /controller_epoch check; stale writes fail"),
    ("FENCE-2", "Brokers reject requests with an older controller epoch (11)"),
    ("FENCE-3", "Brokers reject requests with an older broker epoch (77)"),
    ("FENCE-4", "A state znode of a newer controller epoch is never overwritten by an older controller"),
    ("LISTEN-1", "Child listeners on the five documented paths"),
    ("LISTEN-2", "Exists/data watches of the controller session: exactly the documented set"),
    ("LISTEN-3", "Only creation of the admin reassign/preferred znodes triggers work"),
    ("LISTEN-4", "A never-controller broker watches only /controller"),
    ("LISTEN-5", "Every listener reacts with the documented action"),
    ("FAILOVER-1", "onControllerFailover order of effects (writes; per-broker requests)"),
    ("FAILOVER-2", "Replica state machine startup: live Online, dead Offline (KAFKA-3143)"),
    ("FAILOVER-3", "Partition state machine startup and offline election"),
    ("FAILOVER-4", "Controller placement does not change outcomes (seed 002)", "§2.2, §8, §11; seed 002"),
    ("RSM-1", "Seven replica states with the documented valid previous states"),
    ("RSM-2", "Invalid replica transitions change nothing and are logged (ERROR)", "§3.5", "only"),
    ("RSM-3", "→NewReplica sends LeaderAndIsr(isNew=true) when leadership exists"),
    ("RSM-4", "→OnlineReplica: nothing from New, LeaderAndIsr otherwise"),
    ("RSM-5", "→OfflineReplica: StopReplica(delete=false) and one ISR-shrink write"),
    ("RSM-6", "→ReplicaDeletionStarted sends StopReplica(delete=true)"),
    ("RSM-7", "Per-broker batches in order LeaderAndIsr, UpdateMetadata, StopReplica"),
    ("PSM-1", "Four partition states; valid transitions as TRACE lines", "§3.2, §3.5", "partly"),
    ("PSM-2", "New→Online: first live replica leads, ISR = live replicas, epoch 0"),
    ("PSM-3", "New→Online with no live replica stays NewPartition"),
    ("PSM-4", "Online/Offline→Online elects with leader_epoch+1 or fails cleanly"),
    ("ELECT-1", "Offline election strategy (clean, then unclean if enabled)"),
    ("ELECT-2", "Reassign election strategy: first live in-ISR target replica"),
    ("ELECT-3", "Preferred election strategy: first assigned replica iff live and in ISR"),
    ("ELECT-4", "Controlled-shutdown election strategy"),
    ("ELECT-5", "Enabling unclean election on a topic elects its offline partitions", "§3.2, §6.11"),
    ("ELECT-6", "Defaults hold with keys absent; topic unclean config honoured after failover", "§11, §12"),
    ("TOPIC-1", "CreateTopics writes /config/topics then /brokers/topics v2, nothing else"),
    ("TOPIC-2", "The controller creates partitions, partition and state znodes, fenced, in order"),
    ("TOPIC-3", "A hand-written topic znode is created as if the admin API wrote it", "§5.2; seed 003"),
    ("TOPIC-4", "CreateTopics through a Kafka client: same znodes and documented errors"),
    ("TOPIC-5", "Adding partitions creates only the new ones; restored during deletion"),
    ("TOPIC-6", "Replica assignment has Kafka's rack-unaware structure"),
    ("TOPIC-7", "A topic znode deleted by hand is only forgotten", "§5.2; seed 003"),
    ("TOPIC-8", "CreateTopics with -1 uses num.partitions / default.replication.factor", "§5.1; seed 003"),
    ("LOGDIR-1", "Replica brokers (only) create the partition directory with its files"),
    ("LOGDIR-2", "A leader writes its epoch start offset to leader-epoch-checkpoint"),
    ("LOGDIR-3", "Several log.dirs: least-loaded chosen; per-dir checkpoint files"),
    ("LOGDIR-4", "StopReplica(delete=true) renames to -delete then removes after the delay"),
    ("LOGDIR-5", "A log-dir failure notification moves the reported partitions offline", "§5.4, §6.4"),
    ("MIDCREATE-1", "Controller lost before any state znode: next controller completes creation"),
    ("MIDCREATE-2", "Controller lost after some state znodes: only the missing ones are created"),
    ("MIDCREATE-3", "Only /config/topics/<t> written: nothing created, invisible to clients"),
    ("BROKER-1", "Broker registration: ephemeral, one multi, v4 JSON, epoch = czxid", "§1.3"),
    ("BROKER-2", "Broker startup: UpdateMetadata, OnlineReplica, elections, resumes"),
    ("BROKER-3", "Leader failure: one new leader from the ISR, leader_epoch +1 (+2 if controller)"),
    ("BROKER-4", "Last ISR member failure: leader -1, ISR kept, leader_epoch +1"),
    ("BROKER-5", "Bounce (new czxid) handled as failure then startup"),
    ("BROKER-6", "Endpoint change of a live broker → UpdateMetadata to all"),
    ("ISR-1", "A leader writes its ISR change and an isr_change notification"),
    ("ISR-2", "The controller consumes ISR notifications and sends UpdateMetadata"),
    ("PREFERRED-1", "Preferred replica election via /admin/preferred_replica_election"),
    ("PREFERRED-2", "Unknown partitions and topics queued for deletion are skipped"),
    ("REBALANCE-1", "Auto leader rebalance above the imbalance ratio, never during a reassignment"),
    ("REASSIGN-1", "U1: topic znode RS = TRS + ORS with adding/removing"),
    ("REASSIGN-2", "A1: leader epoch +1 and LeaderAndIsr to every replica in RS"),
    ("REASSIGN-3", "A2: adding replicas → NewReplica, LeaderAndIsr(isNew=true)"),
    ("REASSIGN-4", "Completion waits for TRS ⊆ ISR, driven by the state data watch"),
    ("REASSIGN-5", "B1: adding replicas → OnlineReplica (no request)"),
    ("REASSIGN-6", "B2: RS = TRS in memory, seen in B3's LeaderAndIsr"),
    ("REASSIGN-7", "B3: leader elected from TRS or epoch bumped; LeaderAndIsr with RS = TRS"),
    ("REASSIGN-8", "B4: removed replicas → OfflineReplica, one ISR write each"),
    ("REASSIGN-9", "B5: removed replicas → NonExistentReplica, StopReplica(delete=true)"),
    ("REASSIGN-10", "B6: topic znode RS = TRS is the last topic-znode write"),
    ("REASSIGN-11", "B7: partition removed from /admin/reassign_partitions"),
    ("REASSIGN-12", "B8: UpdateMetadata for the partition to every live broker"),
    ("REASSIGN-13", "Seed 000 milestones in order; final leader_epoch per §11"),
    ("REASSIGN-14", "Reassignment edge cases"),
    ("REASSIGN-15", "Failover mid-reassignment resumes and completes"),
    ("DELETE-1", "Topic deletion: state transitions, UpdateMetadata leader -2, StopReplicas"),
    ("DELETE-2", "Deletion completion removes exactly the three znodes and the log dirs"),
    ("DELETE-3", "A dead replica makes deletion wait until its broker returns"),
    ("DELETE-4", "delete.topic.enable=false: marker removed, nothing else changes"),
    ("SHUTDOWN-1", "ControlledShutdown moves leaderships and answers remaining partitions"),
    ("SHUTDOWN-2", "Graceful stop leaves no partition leaderless that had a live ISR member"),
    ("SHUTDOWN-3", "After ControlledShutdown no fetcher is added: one epoch change per partition", "§12"),
    ("REQ-1", "Request versions for IBP 2.5 and their fields"),
    ("REQ-2", "UpdateMetadata carries all live brokers; deleted topics leader -2", "§6.8, §7"),
    ("BADINPUT-1", "Malformed admin JSON is logged and ignored", "§1.3, §4.2"),
    ("BADINPUT-2", "Undecodable topic or broker znodes are logged and skipped", "§1.3"),
    ("BADINPUT-3", "Malformed Kafka frames get a protocol error or a closed connection", "§7; ecosystem §4"),
]


def _build() -> tuple[Behaviour, ...]:
    out: list[Behaviour] = []
    for row in _T:
        bid, title, *rest = row
        area = bid.rsplit("-", 1)[0]
        ref = rest[0] if rest else _AREA_SPEC[area]
        unit = _UNIT_MARKS[rest[1]] if len(rest) > 1 else "none"
        out.append(Behaviour(bid, title, area, ref, (DEFAULT_PROFILE,), unit))
    return tuple(out)


CATALOGUE: tuple[Behaviour, ...] = _build()
_BY_ID = {b.id: b for b in CATALOGUE}


def by_id(behaviour_id: str) -> Behaviour:
    """The catalogue entry of ``behaviour_id``; ``KeyError`` for an unknown ID."""
    return _BY_ID[behaviour_id]


def ids_in_areas(areas: list[str] | None, profile: str = DEFAULT_PROFILE) -> list[str]:
    """IDs of the given areas (all when ``None``) that apply to ``profile``, in catalogue order."""
    wanted = {a.upper() for a in areas} if areas else set(AREAS)
    return [b.id for b in CATALOGUE if b.area in wanted and profile in b.profiles]


def spec_dir() -> Path:
    """Folder of ``behaviours.md``: ``$KZK_SPEC_DIR`` or ``<repo root>/../shared/spec``."""
    env = os.environ.get("KZK_SPEC_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "spec"


_SPEC_LINE = re.compile(r"^- ([A-Z]+)-(\d+) ")


def parse_spec_ids(text: str) -> dict[str, bool]:
    """IDs listed in ``behaviours.md`` text → whether the line carries the *(unit)* mark."""
    out: dict[str, bool] = {}
    for line in text.splitlines():
        m = _SPEC_LINE.match(line)
        if m:
            out[f"{m.group(1)}-{m.group(2)}"] = "*(unit)*" in line
    return out


def cross_check(path: Path | None = None) -> list[str] | None:
    """Discrepancies between this catalogue and ``behaviours.md``; ``None`` if the file is absent."""
    md = path if path is not None else spec_dir() / "behaviours.md"
    if not md.is_file():
        return None
    spec = parse_spec_ids(md.read_text(encoding="utf-8"))
    problems = [f"{i}: in behaviours.md, missing from the catalogue" for i in spec if i not in _BY_ID]
    problems += [f"{i}: in the catalogue, not in behaviours.md" for i in _BY_ID if i not in spec]
    for i, marked in spec.items():
        if i in _BY_ID and marked != (_BY_ID[i].unit != "none"):
            problems.append(f"{i}: *(unit)* mark differs (spec {marked}, catalogue {_BY_ID[i].unit})")
    return problems
