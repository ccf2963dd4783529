"""What a conformance run certifies: areas, IDs, profile and topology → behaviour IDs (conformance ring).

:func:`resolve_selection` turns the ``--areas`` / ``--ids`` / ``--profile`` strings and the
target's topology into a :class:`Selection`, refusing bad input with a :class:`SelectionError`
that names every bad value and the valid ones. An option given with an empty value (``--areas ''``,
as an unset CI variable expands) is refused like an unknown area, never read as "everything".
IDs that do not apply to the topology (``catalogue/topology.toml``) leave the selection and are
listed with their reasons.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

import catalogue
from cluster.targets import IBP_BY_PROFILE

__all__ = ["Selection", "SelectionError", "resolve_selection", "split_list", "valid_profiles"]


class SelectionError(ValueError):
    """An unknown area, behaviour ID or profile was asked for; the message lists the valid ones."""


@dataclass(frozen=True)
class Selection:
    """What a run certifies: the asked areas and IDs (normalised) and the IDs they resolve to."""

    areas: tuple[str, ...]
    ids: tuple[str, ...]
    profile: str
    behaviour_ids: tuple[str, ...]
    topology: str = "combined"
    #: (ID, why) for asked IDs that do not apply to the topology; not in ``behaviour_ids``
    not_applicable: tuple[tuple[str, str], ...] = ()

    @property
    def everything(self) -> bool:
        return not self.areas and not self.ids


def split_list(raw: str) -> list[str]:
    """``"a, b,,c"`` → ``["A", "B", "C"]``: comma list, upper-cased, blanks dropped, order kept."""
    out: list[str] = []
    for part in raw.split(","):
        name = part.strip().upper()
        if name and name not in out:
            out.append(name)
    return out


def _unknown(kind: str, asked: Iterable[str], valid: list[str]) -> str | None:
    bad = [a for a in asked if a not in valid]
    if not bad:
        return None
    hints = []
    for b in bad:
        close = difflib.get_close_matches(b, valid, n=3)
        hints.append(f"{b!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    return f"unknown {kind} {', '.join(hints)}; valid {kind}s: {', '.join(valid)}"


def valid_profiles() -> list[str]:
    """Profiles that both the catalogue and the target machinery know."""
    in_catalogue = {p for b in catalogue.CATALOGUE for p in b.profiles}
    return sorted(in_catalogue & set(IBP_BY_PROFILE))


def _asked(option: str, raw: str | None, what: str) -> list[str]:
    """The names of a comma-list option; ``None`` = not given; given but empty is an error."""
    if raw is None:
        return []
    names = split_list(raw)
    if not names:
        raise SelectionError(
            f"{option} is empty ({raw!r}): give a comma list of {what},"
            f" or leave {option} out to select every behaviour ID"
        )
    return names


def resolve_selection(
    areas: str | None, ids: str | None, profile: str, topology: str = "combined"
) -> Selection:
    """The run's selection from the ``--areas`` / ``--ids`` / ``--profile`` strings.

    Areas and IDs are case-insensitive comma lists (``None``: not given); the selection is the
    union of the areas' IDs and the given IDs, all IDs of ``profile`` when neither is given,
    minus the IDs that do not apply to ``topology``. Raises :class:`SelectionError` naming every
    unknown area, ID or profile together with the valid ones, and for an option given empty.
    """
    if profile not in valid_profiles():
        raise SelectionError(f"unknown profile {profile!r}; valid profiles: {', '.join(valid_profiles())}")
    all_ids = [b.id for b in catalogue.CATALOGUE]
    asked_areas = _asked("--areas", areas, f"areas ({', '.join(catalogue.AREAS)})")
    asked_ids = _asked("--ids", ids, "behaviour IDs (e.g. EPOCH-1,REASSIGN-13)")
    problems = [
        p
        for p in (
            _unknown("area", asked_areas, list(catalogue.AREAS)),
            _unknown("behaviour ID", asked_ids, all_ids),
        )
        if p
    ]
    if problems:
        raise SelectionError("; ".join(problems))
    other = [i for i in asked_ids if profile not in catalogue.by_id(i).profiles]
    if other:
        raise SelectionError(f"behaviour IDs {', '.join(other)} do not apply to profile {profile}")
    wanted = set(catalogue.ids_in_areas(asked_areas, profile) if asked_areas else []) | set(asked_ids)
    if not asked_areas and not asked_ids:
        wanted = set(catalogue.ids_in_areas(None, profile))
    skip = catalogue.not_applicable(topology)
    in_order = tuple(i for i in all_ids if i in wanted and i not in skip)
    na = tuple((i, skip[i]) for i in all_ids if i in wanted and i in skip)
    return Selection(tuple(asked_areas), tuple(asked_ids), profile, in_order, topology, na)
