"""A step kind of the vocabulary and the ``<topic>-<partition>`` notation (conformance ring, pure).

Shared by :mod:`conformance.diff.steps` (the vocabulary) and :mod:`conformance.diff.adminsteps`
(its admin-API part).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.diff.model import Model

__all__ = ["StepKind", "split_tp"]

Params = Mapping[str, Any]
_TP = re.compile(r"^([A-Za-z0-9._-]{1,60})-(\d{1,4})$")


def split_tp(tp: str) -> tuple[str, int]:
    m = _TP.match(tp)
    if m is None:
        raise ValueError(f"{tp!r} is not <topic>-<partition>")
    return m.group(1), int(m.group(2))


@dataclass(frozen=True)
class StepKind:
    """One operation: its parameters and their types, its precondition on the cluster model
    (checked when a scenario loads), how it changes the model, and the behaviour IDs it exercises."""

    op: str
    doc: str
    params: Mapping[str, str]
    ids: tuple[str, ...]
    check: Callable[[Model, Params], str | None]
    apply: Callable[[Model, Params], None]
