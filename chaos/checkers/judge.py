"""Checkers as values, and the one place where quirks are subtracted (decisions ring, pure).

A :class:`Checker` wraps a naive property (``RunInputs -> Finding``). :func:`judge_all` runs
each one and then, for every quirk of :data:`chaos.checkers.quirks.QUIRKS` that applies to it,
removes the violations and gaps whose items the quirk's recogniser explains; the verdict carries
them in ``excused`` (quirk name → items). A recogniser is computed at most once per run, and
only for a checker that found something to explain. A recogniser that *cannot tell* for an
item (its data is missing) turns that item's violation into a gap: unknown, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from chaos.checkers.final_state import FinalState
from chaos.checkers.findings import Finding, Gap, RunInputs, Violation
from chaos.checkers.quirks.registry import QUIRKS, Quirk, Recognition
from chaos.checkers.timeline import Timeline
from chaos.checkers.verdict import Verdict
from chaos.history import Op
from probes.txnrecords import TxnRecord

__all__ = ["Checker", "checker", "judge_all"]

CheckerKind = Literal["safety", "liveness"]


@dataclass(frozen=True)
class Checker:
    """A named property of a run; calling it judges one run with the quirks applied."""

    name: str
    kind: CheckerKind
    naive: Callable[[RunInputs], Finding]
    doc: str = ""

    def __call__(
        self,
        history: Iterable[Op],
        txn_records: Iterable[TxnRecord] | Timeline | None,
        final_state: FinalState | None,
    ) -> Verdict:
        return judge_all((self,), RunInputs.of(history, txn_records, final_state))[0]


def checker(kind: CheckerKind) -> Callable[[Callable[[RunInputs], Finding]], Checker]:
    """Make a naive property function a :class:`Checker` named after it."""

    def wrap(naive: Callable[[RunInputs], Finding]) -> Checker:
        return Checker(naive.__name__, kind, naive, naive.__doc__ or "")

    return wrap


class _Recognitions:
    """Each quirk's recognition of one run, computed on first use."""

    def __init__(self, run: RunInputs) -> None:
        self.run = run
        self.done: dict[str, Recognition | Exception] = {}

    def of(self, quirk: Quirk) -> Recognition:
        if quirk.name not in self.done:
            try:
                self.done[quirk.name] = quirk.recognise(self.run)
            except Exception as exc:  # reported as the checker's unknown, never a crash of the run
                self.done[quirk.name] = exc
        found = self.done[quirk.name]
        if isinstance(found, Exception):
            raise found
        return found


def judge_all(checkers: Sequence[Checker], run: RunInputs) -> list[Verdict]:
    """Every checker's verdict over ``run``, in order; a checker or recogniser that raises makes
    that checker ``unknown`` with the error (a bug to fix) and never hides the others."""
    recognitions = _Recognitions(run)
    return [_judge(c, run, recognitions) for c in checkers]


def _judge(c: Checker, run: RunInputs, recognitions: _Recognitions) -> Verdict:
    try:
        finding = c.naive(run)
    except Exception as exc:
        return Verdict.unknown(c.name, f"checker failed: {type(exc).__name__}: {exc}")
    if finding.unknown is not None:
        return Verdict.unknown(c.name, finding.unknown)
    violations, gaps = list(finding.violations), list(finding.gaps)
    excused: dict[str, tuple[str, ...]] = {}
    for quirk in (q for q in QUIRKS if c.name in q.checkers):
        if not violations and not gaps:
            break
        try:
            recognised = recognitions.of(quirk)
        except Exception as exc:
            return Verdict.unknown(c.name, f"quirk {quirk.name} failed: {type(exc).__name__}: {exc}")
        violations, gaps, items = _subtract(quirk, recognised, violations, gaps)
        if items:
            excused[quirk.name] = items
    if violations:
        problems = [v.problem for v in violations]
        return Verdict.invalid(c.name, problems, [e for v in violations for e in v.evidence], excused)
    if gaps:
        return Verdict.unknown(c.name, "; ".join(g.reason for g in gaps[:5]), excused)
    return Verdict.valid(c.name, finding.ok + _excused_note(excused), excused)


def _subtract(
    quirk: Quirk, recognised: Recognition, violations: list[Violation], gaps: list[Gap]
) -> tuple[list[Violation], list[Gap], tuple[str, ...]]:
    """What is left once ``quirk`` explained its items, and those items (as text, sorted)."""
    covers = (lambda _item: True) if recognised.every_item else recognised.items.__contains__
    explained = {v.item for v in violations if covers(v.item)}
    explained |= {g.item for g in gaps if covers(g.item)}
    undecided = [v for v in violations if v.item in recognised.undecided and v.item not in explained]
    left = [v for v in violations if v.item not in explained and v not in undecided]
    gaps = [g for g in gaps if g.item not in explained]
    gaps += [Gap(v.item, f"{v.problem}: {recognised.why_undecided}") for v in undecided]
    return left, gaps, tuple(sorted(str(i) for i in explained))


def _excused_note(excused: dict[str, tuple[str, ...]]) -> str:
    if not excused:
        return ""
    shown = "; ".join(f"{quirk}: {', '.join(items)}" for quirk, items in excused.items())
    return f" — excused as Kafka 2.5.1 behaviour: {shown}"
