"""``python -m chaos sim --diff-tree PATH``: the simulator as a differential oracle (ring: drivers).

The checkers judge a run by invariants: a bug that keeps the cluster consistent while doing
something other than Kafka (a wrong error code, an election that picks another live replica, a
request with the wrong epoch that nobody refuses) passes them. The simulator is deterministic —
one seed, one run, byte for byte — so the same schedule played by this kit's reference and by a
modified copy of the kit (``PATH``: a vendor's or a developer's change to the controller or the
broker side) must show the same thing from outside, item for item, unless the change changed
behaviour. Three streams are compared: ``zk`` (the transaction log: every write and its result),
``requests`` (every controller request a broker handled, whole: sender, version, every field, with
its answer) and ``history`` (what the clients' operations returned). The first item that differs
in each stream is reported, and the first differing stream's item is shown from both sides around
the first character that differs; the seed replays on each side with ``python -m chaos sim
--replay``.

Both sides play in their own processes (``PYTHONPATH`` set to their tree, ``PYTHONHASHSEED=0``),
side by side: ``-n P`` gives each side max(1, P // 2) processes over interleaved schedules;
``--stop-at-first`` ends the campaign at the first schedule that differs. A
schedule whose process died on either side is ``unknown``, never "same". Exit 0 when every
schedule was played on both sides and none differed, 1 when one differed, 3 when none differed but
one could not be compared, 2 for bad input (no such tree, not a copy of this kit's simulator,
options that make no sense with it). Differences are not shrunk yet: the sim's shrinker judges one
side's verdict, not a comparison of two.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = ["DiffTreeError", "check_tree", "run_diff_tree"]

REPO = Path(__file__).resolve().parents[2]

#: what each side's worker runs (with its own tree first on sys.path): the schedules of its part
#: of the campaign, one JSON line each; with "detail", the named stream's items around an index.
_WORKER = r"""
import hashlib, json, logging, sys
logging.disable(logging.CRITICAL)
from chaos.generator import generate
from chaos.sim.cli import simulable_scenarios
from chaos.sim.run import simulate
from chaos.sim.version import token
job = json.loads(sys.argv[1])
chosen = simulable_scenarios(job["scenario"], job["faults"], job["density"])
for i in job["indexes"]:
    schedule = generate(chosen[i % len(chosen)], job["seed"] + i)
    r = simulate(schedule, None)
    observed = getattr(r, "observed", None)
    if not observed:
        print(json.dumps({"i": i, "error": "this tree's simulator does not record what a run observed"}))
        sys.exit(4)
    line = {"i": i, "token": token(schedule), "verdict": r.verdict, "reason": r.reason}
    if job.get("detail"):
        stream, at = job["detail"]
        items = list(observed.get(stream, ()))
        line["items"] = {str(k): repr(items[k]) for k in range(max(0, at - 1), min(len(items), at + 2))}
        line["length"] = len(items)
    else:
        line["streams"] = {
            k: [hashlib.blake2b(repr(x).encode(), digest_size=6).hexdigest() for x in v]
            for k, v in observed.items()
        }
    print(json.dumps(line), flush=True)
"""

#: the streams in the order a difference is explained (the controller's writes first)
_ORDER = ("zk", "requests", "history")


class DiffTreeError(ValueError):
    """``--diff-tree`` cannot run as asked: printed, exit 2."""


def check_tree(path: Path) -> Path:
    """``path`` resolved, or :class:`DiffTreeError` saying why it is not a kit tree to compare."""
    tree = path.expanduser().resolve()
    if not tree.is_dir():
        raise DiffTreeError(f"--diff-tree {path}: no such directory; give a modified copy of this kit")
    if not (tree / "chaos" / "sim" / "run.py").is_file() or not (tree / "reference_controller").is_dir():
        raise DiffTreeError(
            f"--diff-tree {path}: not a copy of this kit (no chaos/sim/run.py or reference_controller/"
            " in it); copy the kit, change its controller or broker code, and give that copy"
        )
    return tree


@dataclass
class _Side:
    name: str
    tree: Path
    lines: dict[int, dict[str, Any]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[str]] = field(default_factory=list)


def _spawn(side: _Side, job: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(side.tree), "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", _WORKER, json.dumps(job)],
        cwd=side.tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read(side: _Side, proc: subprocess.Popen[str], lock: threading.Lock) -> None:
    out: IO[str] = proc.stdout  # type: ignore[assignment]
    for raw in out:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        with lock:
            if "error" in line:
                side.failures.append(str(line["error"]))
            else:
                side.lines[int(line["i"])] = line
    rc = proc.wait()
    if rc != 0:
        tail = (proc.stderr.read() if proc.stderr else "").strip().splitlines()[-1:] or [f"exit {rc}"]
        with lock:
            side.failures.append(f"a {side.name} worker exited with {rc}: {tail[0][:300]}")


def _first_differences(ref: dict[str, list[str]], tgt: dict[str, list[str]]) -> list[tuple[str, int]]:
    """(stream, index of its first differing item), for each stream that differs, in _ORDER."""
    out = []
    for name in sorted(set(ref) | set(tgt), key=lambda n: (_ORDER.index(n.split("-")[0]), n)):
        a, b = ref.get(name, []), tgt.get(name, [])
        if a == b:
            continue
        k = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        out.append((name, k))
    return out


def _detail(sides: tuple[_Side, _Side], job: dict[str, Any], i: int, stream: str, at: int) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for side in sides:
        proc = _spawn(side, {**job, "indexes": [i], "detail": [stream, at]})
        try:
            out, _ = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out = ""
        line: dict[str, Any] = next((json.loads(x) for x in out.splitlines() if x.startswith("{")), {})
        shown[side.name] = {"items": line.get("items", {}), "length": line.get("length")}
    return shown


def run_diff_tree(args: argparse.Namespace, tree: Path, say: Callable[[str], None] | None = None) -> int:
    """Play ``args.runs`` schedules on this kit and on ``tree``; compare; the exit status. Lines go
    to stderr, as the sim command's other lines."""
    say = say or functools.partial(print, file=sys.stderr, flush=True)
    sides = (_Side("reference", REPO), _Side("target", tree))
    parts = max(1, int(args.parallel) // 2)
    job = {
        "scenario": args.scenario,
        "faults": args.faults,
        "density": args.density,
        "seed": args.seed,
    }
    lock = threading.Lock()
    readers = []
    began = time.monotonic()
    try:
        for side in sides:
            for k in range(parts):
                proc = _spawn(side, {**job, "indexes": list(range(k, args.runs, parts))})
                side.procs.append(proc)
                t = threading.Thread(target=_read, args=(side, proc, lock), daemon=True)
                t.start()
                readers.append(t)
        report = _compare_as_they_come(sides, job, args, (readers, lock), say)
    finally:
        for side in sides:
            for proc in side.procs:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
    wall = time.monotonic() - began
    report["wall_s"] = round(wall, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "sim-diff-report.json"
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    c = report["counts"]
    played = c["same"] + c["differ"] + c["unknown"]
    say(
        f"{played} schedules on both sides: {c['same']} the same, {c['differ']} differ, {c['unknown']}"
        f" could not be compared — {wall:.0f} s, {played / max(wall, 1e-6) * 3600:.0f} schedules/hour"
        f" per side; report: {path}"
    )
    if c["differ"]:
        return 1
    return 0 if c["same"] == args.runs else 3


def _compare_as_they_come(
    sides: tuple[_Side, _Side],
    job: dict[str, Any],
    args: argparse.Namespace,
    reading: tuple[list[threading.Thread], threading.Lock],
    say: Callable[[str], None],
) -> dict[str, Any]:
    ref, tgt = sides
    readers, lock = reading
    done: set[int] = set()
    same = 0
    differ: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    while len(done) < args.runs:
        alive = any(t.is_alive() for t in readers)
        with lock:
            ready = sorted(i for i in ref.lines if i in tgt.lines and i not in done)
            pairs = {i: (ref.lines.pop(i), tgt.lines.pop(i)) for i in ready}
        for i in ready:
            done.add(i)
            a, b = pairs[i]
            diffs = _first_differences(a["streams"], b["streams"])
            if not diffs and a["verdict"] == b["verdict"]:
                same += 1
                continue
            entry: dict[str, Any] = {
                "index": i,
                "reference": {"replay": a["token"], "verdict": a["verdict"], "reason": a["reason"]},
                "target": {"replay": b["token"], "verdict": b["verdict"], "reason": b["reason"]},
                "first_differences": [{"stream": s, "item": k} for s, k in diffs],
            }
            if diffs and len(differ) < 5:
                stream, at = diffs[0]
                entry["shown"] = _detail(sides, job, i, stream, at)
            differ.append(entry)
            _say_difference(entry, say, args)
            if args.stop_at_first:
                break
        if differ and args.stop_at_first:
            break
        if not alive and not ready:
            break
        if not ready:
            time.sleep(0.2)
    with lock:
        failures = ref.failures + tgt.failures
    for i in range(args.runs):
        if i not in done and not (differ and args.stop_at_first):
            unknown.append({"index": i, "reason": "; ".join(failures) or "a side did not play it"})
    if unknown:
        say(f"{len(unknown)} schedule(s) could not be compared: {unknown[0]['reason']}")
    return {
        "format": "kzk-sim-diff/1",
        "reference": str(REPO),
        "target": str(tgt.tree),
        "seed": args.seed,
        "runs": args.runs,
        "scenario": args.scenario or "default mix",
        "counts": {"same": same, "differ": len(differ), "unknown": len(unknown)},
        "differences": differ,
        "unknown": unknown,
    }


def _say_difference(entry: dict[str, Any], say: Callable[[str], None], args: argparse.Namespace) -> None:
    ref, tgt = entry["reference"], entry["target"]
    where = ", ".join(f"{d['stream']} item {d['item']}" for d in entry["first_differences"]) or "verdict"
    say(f"DIFFERS  run {entry['index']} (seed {args.seed + entry['index']}): first at {where}")
    say(f"  reference: {ref['verdict']}; replay: python -m chaos sim --replay {ref['replay']}")
    say(f"  target:    {tgt['verdict']}; replay (in the tree): python -m chaos sim --replay {tgt['replay']}")
    if tgt["verdict"] != "valid" and tgt["reason"]:
        say(f"  target's checkers: {tgt['reason'][:300]}")
    shown = entry.get("shown")
    if shown:
        first = entry["first_differences"][0]
        at = str(first["item"])
        items = {
            name: shown[name]["items"].get(at, f"(none: the stream has {shown[name]['length']} items)")
            for name in ("reference", "target")
        }
        for name, text in _around_first_difference(items["reference"], items["target"]).items():
            say(f"  {name:9} {first['stream']}[{at}]: {text}")


def _around_first_difference(a: str, b: str, width: int = 160) -> dict[str, str]:
    """Both texts cut to a window around the first character where they differ."""
    p = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, p - width)

    def cut(text: str) -> str:
        end = min(len(text), p + width // 2)
        return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")

    return {"reference": cut(a), "target": cut(b)}
