"""What ``python -m chaos.sim.reality`` prints and writes: one block per schedule, the counts, the
disagreements with their evidence directories, and ``comparison.json`` (ring: drivers — output).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaos.sim.agreement import Pair, Side

__all__ = ["counts", "print_pair", "print_summary", "to_json"]

ON_TIME_S = 0.5  # a real step this close to its simulated start counts as on the simulated time
_LABEL = {
    "agree": "agree",
    "disagree": "DISAGREE",
    "real-unknown": "real-unknown",
    "schedule-differs": "SCHEDULE",
}


def _verdict(side: Side) -> str:
    if side.verdict == "valid":
        return "valid"
    failing = f" ({', '.join(side.failing)})" if side.failing else ""
    why = (
        f" — {(side.reason or '').splitlines()[0][:240]}" if side.verdict == "unknown" and side.reason else ""
    )
    return f"{side.verdict}{failing}{why}"


def print_pair(pair: Pair, total: int) -> None:
    number = f"[{pair.index + 1:>{len(str(total))}}/{total}]"
    head = f"{number} {_LABEL[pair.outcome]:12} {pair.scenario:10} seed {pair.seed}"
    print(f"{head}  real: {_verdict(pair.real)}  sim: {_verdict(pair.sim)}", flush=True)
    pad = " " * 8
    if pair.outcome == "schedule-differs":
        print(f"{pad}the real run's stored schedule is not the simulated one: not compared")
    if pair.differing:
        print(f"{pad}differ: " + "; ".join(f"{c} real={r} sim={s}" for c, r, s in pair.differing))
    if pair.outcome != "agree":
        print(f"{pad}real evidence: {pair.real.run_dir or '(none)'}")
        print(f"{pad}sim evidence:  {pair.sim.run_dir or '(none)'}")
    for note in pair.notes:
        print(f"{pad}not modelled exactly: {note}")
    if pair.real.controllers != pair.sim.controllers and pair.outcome in ("agree", "disagree"):
        print(f"{pad}controllers elected: real {_chain(pair.real)}, sim {_chain(pair.sim)}")
    if pair.drift is not None:
        d = pair.drift
        print(
            f"{pad}timing: over {d.steps} steps, real start minus simulated start at most "
            f"{d.max_lag_s:+.2f} s ({d.at})"
        )
        if d.targets:
            print(
                f"{pad}controller-aimed faults hit another broker ({len(d.targets)}): {'; '.join(d.targets)}"
            )
        if d.outcomes:
            shown = "; ".join(d.outcomes[:4]) + (
                f"; … {len(d.outcomes) - 4} more" if len(d.outcomes) > 4 else ""
            )
            print(f"{pad}op outcomes differ ({len(d.outcomes)}): {shown}")


def _chain(side: Side) -> str:
    return " → ".join("?" if b is None else str(b) for b in side.controllers) or "none"


def counts(pairs: Sequence[Pair]) -> Counter[str]:
    return Counter(p.outcome for p in pairs)


def _kind(note: str) -> str:
    if "admin-API" in note:
        return "admin-API ops"
    if note.startswith("create_topic_admin"):
        return "create_topic_admin"
    if note.startswith("node (re)starts"):
        return "node starts"
    return note.split(" ", maxsplit=1)[0]


def print_summary(pairs: Sequence[Pair], root: Path) -> None:
    c = counts(pairs)
    print(
        f"{len(pairs)} schedules: {c['agree']} agree, {c['disagree']} disagree, "
        f"{c['real-unknown']} real unknown (not compared), "
        f"{c['schedule-differs']} with a different real schedule"
    )
    real, sim = Counter(p.real.verdict for p in pairs), Counter(p.sim.verdict for p in pairs)
    print(f"real verdicts: {dict(sorted(real.items()))}; simulated: {dict(sorted(sim.items()))}")
    judged = [p for p in pairs if p.outcome in ("agree", "disagree")]
    kinds = Counter(k for p in judged for k in dict.fromkeys(_kind(n) for n in p.notes))
    if kinds:
        listed = ", ".join(f"{k} {n}" for k, n in kinds.most_common())
        print(f"judged pairs with elements the simulator models differently (pairs per element): {listed}")
    drifts = [(p, p.drift) for p in judged if p.drift is not None]
    if drifts:
        worst_pair, worst = max(drifts, key=lambda d: abs(d[1].max_lag_s))
        on_time = sum(abs(d.max_lag_s) <= ON_TIME_S for _, d in drifts)
        print(
            f"timing: {on_time} of {len(drifts)} judged pairs had every step within {ON_TIME_S} s of "
            f"its simulated start; the largest drift {worst.max_lag_s:+.2f} s ({worst_pair.scenario} "
            f"seed {worst_pair.seed}, {worst.at}); {sum(bool(d.outcomes) for _, d in drifts)} pairs "
            f"had op outcomes that differ, {sum(bool(d.targets) for _, d in drifts)} a controller-aimed "
            "fault that hit another broker"
        )
    if judged:
        first = [Counter(c for p in judged for c in side(p).controllers[:1]) for side in (_real, _sim)]
        other = sum(p.real.controllers != p.sim.controllers for p in judged)
        moves = [sum(max(0, len(side(p).controllers) - 1) for p in judged) for side in (_real, _sim)]
        print(
            f"controllers: {other} of {len(judged)} judged pairs elected other brokers, or another number of "
            f"times; the first controller was broker {_tally(first[0])} in reality, {_tally(first[1])} in "
            f"the simulation; {moves[0]} controller moves in reality, {moves[1]} in the simulation"
        )
    _list("disagreements", [p for p in pairs if p.outcome in ("disagree", "schedule-differs")])
    _list("real unknown (not compared)", [p for p in pairs if p.outcome == "real-unknown"])
    print(f"comparison: {root / 'comparison.json'}")


def _real(pair: Pair) -> Side:
    return pair.real


def _sim(pair: Pair) -> Side:
    return pair.sim


def _tally(counter: Counter[int | None]) -> str:
    return ", ".join(
        f"{'?' if b is None else b} ×{n}" for b, n in sorted(counter.items(), key=lambda i: str(i[0]))
    )


def _list(title: str, pairs: Sequence[Pair]) -> None:
    if not pairs:
        return
    print(f"{title}:")
    for p in pairs:
        what = "; ".join(f"{c} real={r} sim={s}" for c, r, s in p.differing) or _verdict(p.real)
        print(f"  {p.scenario} seed {p.seed}: {what}")
        print(f"    real: {p.real.run_dir or '(none)'}")
        print(f"    sim:  {p.sim.run_dir or '(none)'}")


def _side(side: Side) -> dict[str, Any]:
    return {
        "verdict": side.verdict,
        "failing": list(side.failing),
        "checkers": dict(side.checkers),
        "reason": side.reason,
        "run_dir": side.run_dir,
        "controllers": list(side.controllers),
    }


def to_json(pairs: Sequence[Pair], command: str, started_at: str, status: int) -> dict[str, Any]:
    """``comparison.json``: the command, its counts and exit status, and every pair."""
    return {
        "command": command,
        "started_at": started_at,
        "exit_status": status,
        "counts": dict(counts(pairs)),
        "pairs": [
            {
                "index": p.index,
                "scenario": p.scenario,
                "seed": p.seed,
                "outcome": p.outcome,
                "real": _side(p.real),
                "sim": _side(p.sim),
                "differing": [{"checker": c, "real": r, "sim": s} for c, r, s in p.differing],
                "not_modelled_exactly": list(p.notes),
                "drift": None
                if p.drift is None
                else {
                    "max_lag_s": p.drift.max_lag_s,
                    "at": p.drift.at,
                    "steps": p.drift.steps,
                    "outcomes": list(p.drift.outcomes),
                    "targets": list(p.drift.targets),
                },
            }
            for p in pairs
        ],
    }
