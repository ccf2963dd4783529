"""What a quirk's recogniser returns (decisions ring, pure data)."""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checkers.findings import Item

__all__ = ["Recognition"]


@dataclass(frozen=True)
class Recognition:
    """The items a quirk explains in one run; ``undecided``: items it cannot tell about (its data
    is missing), which then count as gaps, ``why_undecided`` saying why; ``every_item``: the quirk
    explains whatever its checkers find in this run (a cluster Kafka leaves without a working
    controller)."""

    items: frozenset[Item] = frozenset()
    undecided: frozenset[Item] = frozenset()
    why_undecided: str = ""
    every_item: bool = False
