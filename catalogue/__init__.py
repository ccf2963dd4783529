"""The behaviour catalogue (pure data: TOML files in ``catalogue/areas/`` + a cross-checking loader).

Every behaviour ID of the kit (one ``<AREA>.toml`` per area, in the order of ``index.toml``)
with a short title, the testable statement, the observation channels that show it, the Kafka
2.5.1 source it comes from, its area, the spec/seed reference, the profiles (Kafka versions) it
applies to, and whether it carries the *(unit)* mark (no outside observation beyond the
state-change log; the suite checks every reachable case). ``topology.toml`` lists the IDs that do
not apply to a split topology and why. Tests, run records, the conformance matrix and
certificates all use these IDs; ``python -m catalogue --markdown`` renders ``CATALOGUE.md``.

:func:`compare_with_spec` compares this table with every ``behaviours*.md`` of the spec folder
(``$KZK_SPEC_DIR``, else ``<repo root>/../shared/spec``) when it is there: an ID missing on either
side or with another *(unit)* mark is a discrepancy, so the catalogue cannot drift from the spec.
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
    "SpecComparison",
    "by_id",
    "compare_with_spec",
    "cross_check",
    "digest",
    "ids_in_areas",
    "not_applicable",
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
    statement: str = ""  # the testable statement, in the kit's words
    observed: str = ""  # the observation channels that show it
    kafka_source: str = ""  # Kafka 2.5.1 source files and line ranges it comes from


AREAS_DIR = Path(__file__).resolve().parent / "areas"
#: Every entry carries these texts (the loader refuses an entry without one).
TEXT_KEYS = ("statement", "observed", "kafka_source")


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
        texts = {k: " ".join(str(entry.get(k, "")).split()) for k in TEXT_KEYS}
        missing = [k for k, v in texts.items() if not v]
        if missing:
            raise CatalogueError(f"{path}: {bid} has no {', '.join(missing)}")
        ref = str(entry.get("ref", data.get("ref", "")))
        out.append(Behaviour(bid, title, area, ref, profiles, unit, **texts))
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


TOPOLOGY_FILE = Path(__file__).resolve().parent / "topology.toml"
TOPOLOGIES = ("combined", "split")


def _load_topology() -> dict[str, dict[str, str]]:
    """``topology.toml``: per topology, the IDs that do not apply to it and why."""
    try:
        data = tomllib.loads(TOPOLOGY_FILE.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{TOPOLOGY_FILE}: {exc}") from exc
    out: dict[str, dict[str, str]] = {t: {} for t in TOPOLOGIES}
    for topology, entries in data.items():
        if topology not in TOPOLOGIES or not isinstance(entries, dict):
            raise CatalogueError(f"{TOPOLOGY_FILE}: [{topology}] is not a topology ({', '.join(TOPOLOGIES)})")
        for bid, why in entries.items():
            if bid not in _BY_ID or not isinstance(why, str) or not why.strip():
                raise CatalogueError(f"{TOPOLOGY_FILE}: [{topology}] {bid}: unknown ID or empty reason")
            out[topology][bid] = why.strip()
    return out


_NOT_APPLICABLE = _load_topology()


def not_applicable(topology: str) -> dict[str, str]:
    """IDs that do not apply to ``topology`` (``combined``: none; ``split``: a controller apart
    from the brokers), each with the reason."""
    if topology not in TOPOLOGIES:
        raise KeyError(f"unknown topology {topology!r}; known: {', '.join(TOPOLOGIES)}")
    return dict(_NOT_APPLICABLE[topology])


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


SpecStatus = Literal["absent", "equal", "differs"]


@dataclass(frozen=True)
class SpecComparison:
    """The catalogue against every ``behaviours*.md`` of the spec folder."""

    spec_dir: Path
    files: tuple[str, ...]
    status: SpecStatus
    spec_ids: int = 0
    problems: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the console and the certificate."""
        if self.status == "absent":
            return (
                f"NOT compared with the spec: no behaviours*.md under {self.spec_dir}"
                " (set KZK_SPEC_DIR to the spec folder)"
            )
        read = f"{self.spec_ids} IDs in {', '.join(self.files)} vs {len(CATALOGUE)} in the kit"
        if self.status == "equal":
            return f"matches the spec: {read}"
        return f"DIFFERS from the spec: {read}: " + "; ".join(self.problems)


def compare_with_spec(folder: Path | None = None) -> SpecComparison:
    """This catalogue against every ``behaviours*.md`` in ``folder`` (default :func:`spec_dir`)."""
    folder = folder if folder is not None else spec_dir()
    files = sorted(folder.glob("behaviours*.md")) if folder.is_dir() else []
    if not files:
        return SpecComparison(folder, (), "absent")
    per_file = {f.name: parse_spec_ids(f.read_text(encoding="utf-8")) for f in files}
    spec: dict[str, bool] = {i: m for ids in per_file.values() for i, m in ids.items()}
    problems = [f"{i}: in the spec, missing from the catalogue" for i in spec if i not in _BY_ID]
    problems += [f"{i}: in the catalogue, not in the spec" for i in _BY_ID if i not in spec]
    problems += [
        f"{i}: *(unit)* mark differs (spec {marked}, catalogue {_BY_ID[i].unit})"
        for i, marked in spec.items()
        if i in _BY_ID and marked != (_BY_ID[i].unit != "none")
    ]
    status: SpecStatus = "differs" if problems else "equal"
    return SpecComparison(folder, tuple(per_file), status, len(spec), tuple(problems))


def cross_check(path: Path | None = None) -> list[str] | None:
    """Discrepancies between this catalogue and the spec's catalogue files; ``None`` if absent.

    ``path`` names one file; by default every ``behaviours*.md`` of :func:`spec_dir` is read
    (``behaviours.md`` and the parts added later, e.g. ``behaviours-admin-api.md``)."""
    files = [path] if path is not None else sorted(spec_dir().glob("behaviours*.md"))
    files = [f for f in files if f.is_file()]
    if not files:
        return None
    spec: dict[str, bool] = {}
    found_in: dict[str, str] = {}
    for md in files:
        ids = parse_spec_ids(md.read_text(encoding="utf-8"))
        spec.update(ids)
        found_in.update(dict.fromkeys(ids, md.name))
    names = " or ".join(f.name for f in files)
    problems = [f"{i}: in {found_in[i]}, missing from the catalogue" for i in spec if i not in _BY_ID]
    problems += [f"{i}: in the catalogue, not in {names}" for i in _BY_ID if i not in spec]
    for i, marked in spec.items():
        if i in _BY_ID and marked != (_BY_ID[i].unit != "none"):
            problems.append(f"{i}: *(unit)* mark differs (spec {marked}, catalogue {_BY_ID[i].unit})")
    return problems
