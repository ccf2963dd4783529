"""The quirk registry is the one source of the quirks: its entries, the README's table, the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaos.checkers import ALL_CHECKERS
from chaos.checkers.quirks import QUIRKS, markdown_table

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "chaos" / "README.md"
BEGIN, END = "<!-- quirks:begin", "<!-- quirks:end -->"


def readme_table() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(BEGIN)
    return text[text.index("\n", start) + 1 : text.index(END)]


def test_the_readme_table_is_the_registrys() -> None:
    assert readme_table() == markdown_table(), (
        "chaos/README.md's quirk table differs from the registry: paste the output of "
        "`python -m chaos quirks --markdown` between the quirks markers"
    )
    assert readme_table().count("\n| `") == len(QUIRKS)


def test_every_quirk_is_complete_and_applies_to_real_checkers() -> None:
    names = [q.name for q in QUIRKS]
    assert len(set(names)) == len(names)
    checkers = {c.name for c in ALL_CHECKERS}
    for q in QUIRKS:
        assert q.behaviour, q.name
        assert q.kafka_source, q.name
        assert all("@2.5.1" in ref or ref.startswith("L") for ref in q.kafka_source), q.name
        assert "seed" in q.seen_in, q.name
        assert q.checkers, q.name
        assert set(q.checkers) <= checkers, q.name


def test_every_quirk_has_a_test_that_sees_it_excuse_something() -> None:
    """Each quirk's name appears in an assertion on ``excused`` in the checker tests."""
    sources = "\n".join(
        p.read_text() for p in Path(__file__).parent.glob("test_*.py") if p.name != Path(__file__).name
    )
    missing = [q.name for q in QUIRKS if q.name not in sources]
    assert missing == []


def test_the_quirks_command_prints_the_registry() -> None:
    def chaos(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "chaos", "quirks", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert chaos("--markdown") == markdown_table()
    listing = chaos()
    assert listing.startswith(f"{len(QUIRKS)} Kafka 2.5.1 behaviours the checkers excuse:")
    for q in QUIRKS:
        assert q.name in listing
