"""The behaviour catalogue (pure data: TOML files in ``catalogue/areas/`` + a cross-checking loader).

Every behaviour ID of the kit (one ``<AREA>.toml`` per area, in the order of ``index.toml``)
with a short title, its area, the spec/seed reference, the profiles (Kafka versions) it applies
to, and whether it carries the *(unit)* mark (no outside observation beyond the state-change log;
the suite checks every reachable case).
Tests, run records, the conformance matrix and certificates all use these IDs.

:func:`cross_check` compares this table with ``behaviours.md`` when that file is present (its
folder is ``$KZK_SPEC_DIR``, else ``<repo root>/../shared/spec``): an ID missing on either side
or filed under another area is a discrepancy, so the catalogue cannot drift from the spec.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "AREAS",
    "CATALOGUE",
    "DEFAULT_PROFILE",
    "Behaviour",
    "CatalogueError",
    "by_id",
    "cross_check",
    "digest",
    "ids_in_areas",
    "parse_spec_ids",
    "spec_dir",
]

DEFAULT_PROFILE = "2.5"
UnitMark = Literal["none", "partly", "only"]
_UNIT_MARKS: dict[str, UnitMark] = {"none": "none", "partly": "partly", "only": "only"}


@dataclass(frozen=True)
class Behaviour:
    """One catalogue line."""

    id: str
    title: str
    area: str
    ref: str
    profiles: tuple[str, ...] = (DEFAULT_PROFILE,)
    unit: UnitMark = "none"


AREAS_DIR = Path(__file__).resolve().parent / "areas"


class CatalogueError(Exception):
    """A catalogue file is missing, unreadable or malformed; the message names the file and key."""


def _load_area(area: str) -> list[Behaviour]:
    path = AREAS_DIR / f"{area}.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{path}: {exc}") from exc
    out = []
    for i, entry in enumerate(data.get("behaviour", [])):
        try:
            bid, title = str(entry["id"]), str(entry["title"])
        except KeyError as exc:
            raise CatalogueError(f"{path}: behaviour #{i + 1} has no {exc.args[0]!r}") from exc
        if bid.rsplit("-", 1)[0] != area:
            raise CatalogueError(f"{path}: {bid} is filed under area {area}")
        unit = _UNIT_MARKS.get(str(entry.get("unit", "none")))
        if unit is None:
            raise CatalogueError(f"{path}: {bid}: unit must be one of {', '.join(_UNIT_MARKS)}")
        profiles = tuple(str(p) for p in entry.get("profiles", [DEFAULT_PROFILE]))
        out.append(Behaviour(bid, title, area, str(entry.get("ref", data.get("ref", ""))), profiles, unit))
    return out


def _load() -> tuple[tuple[str, ...], tuple[Behaviour, ...]]:
    try:
        index = tomllib.loads((AREAS_DIR / "index.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{AREAS_DIR / 'index.toml'}: {exc}") from exc
    areas = tuple(str(a) for a in index["areas"])
    return areas, tuple(b for area in areas for b in _load_area(area))


AREAS, CATALOGUE = _load()


def digest() -> str:
    """SHA-256 of the catalogue as shipped (``index.toml`` and every area file, in index order):
    a certificate pins it, so a certificate from another catalogue is told apart."""
    h = hashlib.sha256()
    for name in ("index.toml", *(f"{area}.toml" for area in AREAS)):
        h.update(name.encode() + b"\0" + (AREAS_DIR / name).read_bytes() + b"\0")
    return h.hexdigest()


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
