"""What a checker finds before any quirk is applied, and the run it looks at (decisions ring, pure).

A checker computes its property naively over :class:`RunInputs` and returns a :class:`Finding`:
violations (invalid) and gaps (cannot judge: unknown), each about one :class:`Item`. The quirk
registry (:mod:`chaos.checkers.quirks`) then subtracts, in one place, the items a Kafka 2.5.1
behaviour explains; what is left decides the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from chaos.checkers.final_state import FinalState
from chaos.checkers.timeline import Timeline
from chaos.history import Op
from probes.txnrecords import TxnRecord
from probes.znode_types import TopicPartition

__all__ = [
    "DELETED_TOPIC_SHOWN",
    "DELETION_NOT_DONE",
    "DELETION_REQUEST_LEFT",
    "FINAL_ISR_OUTSIDE_REPLICAS",
    "LEADERLESS",
    "LEADER_EPOCH_NOT_NEWER",
    "PARTITION_SHOWN_DIFFERENTLY",
    "REASSIGNING",
    "REASSIGN_ENTRY_LEFT",
    "REASSIGN_ENTRY_UNREACHABLE",
    "TARGET_NOT_REACHED",
    "Finding",
    "Findings",
    "Gap",
    "Item",
    "RunInputs",
    "Violation",
    "partition_view_item",
    "shown_item",
    "stale_item",
    "tp_name",
]

_T = TypeVar("_T")


@dataclass(frozen=True, order=True)
class Item:
    """What a violation or gap is about: a ``kind`` (e.g. ``partition still reassigning``) and a
    ``name`` (``t0-1``, a topic, ``broker 2: t``). A quirk explains items, kind and name alike."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def tp_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


# ---- the item kinds a quirk can explain: checkers make them, recognisers name them ----------

#: A final state's ISR not within the topic znode's replicas (name: ``t-p``).
FINAL_ISR_OUTSIDE_REPLICAS = "final ISR outside the replicas"
#: A partition with a live ISR member among its replicas and no live leader (``t-p``).
LEADERLESS = "leaderless partition"
#: A partition still mid-reassignment in its topic znode after heal (``t-p``).
REASSIGNING = "partition still reassigning"
#: An acknowledged reassignment whose partition ends elsewhere (``t-p``).
TARGET_NOT_REACHED = "reassignment target not reached"
#: An acknowledged deletion whose topic still exists (topic).
DELETION_NOT_DONE = "acknowledged deletion not done"
#: A child of ``/admin/delete_topics`` left after heal (topic).
DELETION_REQUEST_LEFT = "deletion request left"
#: An entry of ``/admin/reassign_partitions`` left after heal (``t-p``).
REASSIGN_ENTRY_LEFT = "reassignment entry left"
#: Such an entry whose target includes a broker not live after heal (``t-p``).
REASSIGN_ENTRY_UNREACHABLE = "reassignment entry left, a target not live"
#: A topic ZooKeeper does not have, shown by a broker's Metadata (``broker b: t``).
DELETED_TOPIC_SHOWN = "topic shown but not in ZooKeeper"
#: A LeaderAndIsr entry applied with a leader epoch not newer than an earlier one.
LEADER_EPOCH_NOT_NEWER = "leader epoch not newer"
#: A partition a broker's Metadata omits or shows unlike ZooKeeper (``broker b: t-p``).
PARTITION_SHOWN_DIFFERENTLY = "partition shown differently"


def stuck_reassignment_items(f: FinalState, tp: TopicPartition, *, entry_kept: bool = True) -> set[Item]:
    """What a reassignment Kafka leaves stuck is reported as: the partition still reassigning, its
    target not reached and (``entry_kept``, and the entry still in ``/admin/reassign_partitions``)
    its entry left, under both entry kinds."""
    name = tp_name(tp)
    items = {Item(REASSIGNING, name), Item(TARGET_NOT_REACHED, name)}
    if entry_kept and f.reassign_partitions is not None and tp in f.reassign_partitions:
        items |= {Item(REASSIGN_ENTRY_LEFT, name), Item(REASSIGN_ENTRY_UNREACHABLE, name)}
    return items


def stale_item(broker: int, seq: int, topic: str, partition: int) -> Item:
    return Item(LEADER_EPOCH_NOT_NEWER, f"broker {broker} request #{seq} {topic}-{partition}")


def partition_view_item(broker: int, tp: TopicPartition) -> Item:
    return Item(PARTITION_SHOWN_DIFFERENTLY, f"broker {broker}: {tp_name(tp)}")


def shown_item(broker: int, topic: str) -> Item:
    return Item(DELETED_TOPIC_SHOWN, f"broker {broker}: {topic}")


@dataclass(frozen=True)
class Violation:
    item: Item
    problem: str
    evidence: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class Gap:
    """An item the checker cannot judge (the verdict is unknown unless something is invalid)."""

    item: Item
    reason: str


@dataclass(frozen=True)
class Finding:
    """A checker's naive answer: ``unknown`` set when it lacks its data altogether, else its
    violations and gaps, and ``ok``, the message when nothing is left of them."""

    violations: tuple[Violation, ...] = ()
    gaps: tuple[Gap, ...] = ()
    ok: str = ""
    unknown: str | None = None


@dataclass
class Findings:
    """A builder of a :class:`Finding`."""

    violations: list[Violation] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)

    def violation(self, item: Item, problem: str, *evidence: Mapping[str, Any]) -> None:
        self.violations.append(Violation(item, problem, evidence))

    def gap(self, item: Item, reason: str) -> None:
        self.gaps.append(Gap(item, reason))

    def done(self, ok: str) -> Finding:
        return Finding(tuple(self.violations), tuple(self.gaps), ok)


@dataclass(frozen=True)
class RunInputs:
    """What a run hands its checkers: the history, the timeline of its chroot's transaction log
    (None: the log could not be read) and the final state (None: the cluster never healed)."""

    history: tuple[Op, ...]
    timeline: Timeline | None
    final_state: FinalState | None
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        history: Iterable[Op],
        txn_records: Iterable[TxnRecord] | Timeline | None,
        final_state: FinalState | None,
    ) -> RunInputs:
        """``txn_records`` may be a replayed :class:`Timeline` (reused as is) or the records."""
        if txn_records is None or isinstance(txn_records, Timeline):
            timeline = txn_records
        else:
            timeline = Timeline.of(txn_records)
        return cls(tuple(history), timeline, final_state)

    def memo(self, key: str, compute: Callable[[], _T]) -> _T:
        """``compute()`` once per run (analyses shared by several quirks)."""
        if key not in self._memo:
            self._memo[key] = compute()
        value: _T = self._memo[key]
        return value

    @property
    def registered_brokers(self) -> frozenset[int]:
        """Brokers live at the end or registered at any point of the log."""
        live = set() if self.final_state is None else set(self.final_state.live_brokers)
        logged = set() if self.timeline is None else self.timeline.registered_brokers
        return frozenset(live | logged)
