"""Meta-check: every catalogue ID has a check, every check names known IDs (conformance ring)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import catalogue

pytestmark = pytest.mark.unit

CHECKS_DIR = Path(__file__).resolve().parent


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
    """Every ``behaviours*.md`` of the spec against the catalogue; a pending spec file none of
    whose IDs the kit has yet is a known gap (the gate prints it), anything else must be equal."""
    result = catalogue.compare_with_spec()
    if result.status == "absent":
        pytest.skip(result.describe())
    assert result.status != "differs", result.describe()


def test_every_behaviour_has_a_check() -> None:
    named = _named_ids()
    missing = [b.id for b in catalogue.CATALOGUE if b.id not in named]
    assert not missing, f"behaviour IDs without a check: {missing}"


def test_every_check_names_known_ids() -> None:
    known = {b.id for b in catalogue.CATALOGUE}
    unknown = {i: files for i, files in _named_ids().items() if i not in known}
    assert not unknown, f"checks name unknown behaviour IDs: {unknown}"
