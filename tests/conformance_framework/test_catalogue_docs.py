"""The catalogue's texts, its generated Markdown, its Kafka citations and its comparison with the spec."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import catalogue
from catalogue.docs import render_markdown

CITATION = re.compile(
    r"^(?P<path>(core|clients)/\S+\.(scala|json)) L(?P<a>\d+)(-(?P<b>\d+))? \((?P<symbol>\w+)\)$"
)


def citations(b: catalogue.Behaviour) -> list[re.Match[str]]:
    items = [item.strip() for item in b.kafka_source.split(";")]
    matches = [CITATION.match(item) for item in items]
    assert all(matches), f"{b.id}: a kafka_source item is not '<path> L<a>-<b> (<symbol>)': {items}"
    return [m for m in matches if m]


@pytest.mark.unit
def test_every_entry_has_a_statement_the_channels_and_kafka_sources() -> None:
    for b in catalogue.CATALOGUE:
        assert len(b.statement) > 40, b.id
        assert b.statement != b.title, b.id
        assert b.observed, b.id
        for m in citations(b):
            a, end = int(m["a"]), int(m["b"] or m["a"])
            assert 0 < a <= end, (b.id, m.group(0))


@pytest.mark.unit
def test_catalogue_md_is_what_the_catalogue_renders() -> None:
    committed = (Path(catalogue.__file__).parent / "CATALOGUE.md").read_text(encoding="utf-8")
    assert committed == render_markdown(), (
        "catalogue/CATALOGUE.md is stale: run python -m catalogue --markdown > catalogue/CATALOGUE.md"
    )


@pytest.mark.integration
def test_every_citation_names_its_symbol_at_its_first_line_in_kafka_2_5_1() -> None:
    """Against a real apache/kafka clone: ``$KZK_KAFKA_GIT`` (its git dir, with tag 2.5.1)."""
    git_dir = os.environ.get("KZK_KAFKA_GIT")
    if not git_dir:
        pytest.skip("set KZK_KAFKA_GIT to an apache/kafka clone (tag 2.5.1) to check the citations")
    files: dict[str, list[str]] = {}
    wrong = []
    for b in catalogue.CATALOGUE:
        for m in citations(b):
            if m["path"] not in files:
                show = ["git", "--git-dir", git_dir, "show", f"2.5.1:{m['path']}"]
                shown = subprocess.run(show, capture_output=True, text=True, check=True)
                files[m["path"]] = shown.stdout.splitlines()
            lines = files[m["path"]]
            first, last = int(m["a"]), int(m["b"] or m["a"])
            if last > len(lines) or m["symbol"] not in lines[first - 1]:
                wrong.append(f"{b.id}: {m.group(0)}")
    assert not wrong, "citations whose first line does not name the symbol:\n" + "\n".join(wrong)


def _spec(folder: Path, files: dict[str, list[str]]) -> Path:
    folder.mkdir()
    for name, lines in files.items():
        (folder / name).write_text("\n".join(f"- {line}" for line in lines) + "\n", encoding="utf-8")
    return folder


def _kit_lines() -> list[str]:
    return [f"{b.id} {'*(unit)* ' if b.unit != 'none' else ''}{b.title}" for b in catalogue.CATALOGUE]


@pytest.mark.unit
def test_an_absent_spec_is_said_not_silently_passed(tmp_path: Path) -> None:
    result = catalogue.compare_with_spec(tmp_path / "nothing-here")
    assert result.status == "absent"
    assert result.describe().startswith("NOT compared with the spec")


@pytest.mark.unit
def test_any_other_difference_fails(tmp_path: Path) -> None:
    lines = _kit_lines()
    folder = _spec(tmp_path / "spec", {"behaviours.md": [*lines[1:], "EPOCH-99 x"]})
    problems = catalogue.compare_with_spec(folder).problems
    assert f"{catalogue.CATALOGUE[0].id}: in the catalogue, not in the spec" in problems
    assert "EPOCH-99: in the spec, missing from the catalogue" in problems


@pytest.mark.unit
def test_the_real_spec_and_the_catalogue_have_the_same_ids() -> None:
    result = catalogue.compare_with_spec()
    if result.status == "absent":
        pytest.skip(result.describe())
    assert result.status == "equal", result.describe()
    assert result.spec_ids == len(catalogue.CATALOGUE) == 107
