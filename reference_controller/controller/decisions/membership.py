"""Broker membership choices (ring: decisions — pure).

`processBrokerChange` (KafkaController.scala@2.5.1, KIP-380): the registered brokers and their
epochs (the czxid of `/brokers/ids/<id>`) against those the controller knows:

| registered now | known | epoch now vs cached | change |
|---|---|---|---|
| yes | no | — | new |
| no | yes | — | dead |
| yes | yes | greater | bounced (failure, then startup) |
| yes | yes | not greater | none |

A broker the controller knows without a cached epoch counts as cached -1.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class BrokerChanges:
    new: tuple[int, ...]  # each sorted
    dead: tuple[int, ...]
    bounced: tuple[int, ...]

    @property
    def any(self) -> bool:
        return bool(self.new or self.dead or self.bounced)


def broker_changes(
    registered_epochs: Mapping[int, int], known: Collection[int], cached_epochs: Mapping[int, int]
) -> BrokerChanges:
    registered, known_set = set(registered_epochs), set(known)
    return BrokerChanges(
        new=tuple(sorted(registered - known_set)),
        dead=tuple(sorted(known_set - registered)),
        bounced=tuple(
            sorted(b for b in registered & known_set if registered_epochs[b] > cached_epochs.get(b, -1))
        ),
    )
