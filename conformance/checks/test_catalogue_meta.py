"""Meta-check: every catalogue ID has a check, every check names known IDs (conformance ring)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import catalogue

pytestmark = pytest.mark.unit

CHECKS_DIR = Path(__file__).resolve().parent


def _checks() -> list[tuple[str, list[str], bool]]:
    """(check, IDs it names, whether it is ``combined_only``) for every check, read from source."""
    out: list[tuple[str, list[str], bool]] = []
    for path in sorted(CHECKS_DIR.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            ids: list[str] = []
            combined = False
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute):
                    if dec.func.attr == "behaviour":
                        ids += [
                            a.value
                            for a in dec.args
                            if isinstance(a, ast.Constant) and isinstance(a.value, str)
                        ]
                    combined |= dec.func.attr == "combined_only"
            if ids:
                out.append((f"{path.name}::{node.name}", ids, combined))
    return out


def _named_ids() -> dict[str, list[str]]:
    """ID → checks naming it, read from ``@pytest.mark.behaviour(...)`` in every check module.

    Read from source so that the meta-check sees all checks even when ``--areas`` deselects some.
    """
    named: dict[str, list[str]] = {}
    for path in sorted(CHECKS_DIR.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "behaviour"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        named.setdefault(arg.value, []).append(path.name)
    return named


def test_catalogue_matches_the_spec() -> None:
    """Every ``behaviours*.md`` of the spec against the catalogue: the same IDs with the same
    *(unit)* marks (the gate prints the comparison; an absent spec is said, not passed)."""
    result = catalogue.compare_with_spec()
    if result.status == "absent":
        pytest.skip(result.describe())
    assert result.status == "equal", result.describe()


def test_every_behaviour_has_a_check() -> None:
    named = _named_ids()
    missing = [b.id for b in catalogue.CATALOGUE if b.id not in named]
    assert not missing, f"behaviour IDs without a check: {missing}"


def test_every_check_names_known_ids() -> None:
    known = {b.id for b in catalogue.CATALOGUE}
    unknown = {i: files for i, files in _named_ids().items() if i not in known}
    assert not unknown, f"checks name unknown behaviour IDs: {unknown}"


def test_every_check_is_marked_and_only_checks_are() -> None:
    """A check without a ``behaviour`` marker would run whatever ``--ids`` selects (and count for
    no ID); a marker on a helper marks nothing. The meta-checks of this module are the exception."""
    unmarked: list[str] = []
    misplaced: list[str] = []
    for path in sorted(CHECKS_DIR.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            marked = any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "behaviour"
                for d in node.decorator_list
            )
            where = f"{path.name}::{node.name}"
            if node.name.startswith("test_") and not marked and path.name != Path(__file__).name:
                unmarked.append(where)
            if marked and not node.name.startswith("test_"):
                misplaced.append(where)
    assert not unmarked, f"checks without @pytest.mark.behaviour(...): {unmarked}"
    assert not misplaced, f"@pytest.mark.behaviour on functions that are not checks: {misplaced}"


def test_split_topology_declarations_match_the_checks() -> None:
    """An ID is not applicable to a split topology iff none of its checks runs there for it: every
    check naming it is ``combined_only`` or runs only for another, applicable ID it also names."""
    checks = _checks()
    declared = set(catalogue.not_applicable("split"))
    named = {i for _, ids, _ in checks for i in ids}
    all_combined = {b for b in named if all(c for _, ids, c in checks if b in ids)}
    missing = sorted(all_combined - declared)
    wrong = sorted(
        b
        for b in declared
        for name, ids, combined in checks
        if b in ids and not combined and not set(ids) - declared
    )
    assert not missing, (
        f"every check of {missing} is combined_only: list them in catalogue/topology.toml [split]"
    )
    assert not wrong, f"topology.toml [split] lists {wrong}, but a check runs for them on a split topology"
