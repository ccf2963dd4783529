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
options that make no sense with it).

After the campaign the first ``SHRINK_AT_MOST`` differences are shrunk (unless ``--no-shrink``;
each within ``--shrink-budget-s``): the schedule, sent whole to one long-lived process per side,
must first differ again in the same stream (else the difference is reported as not reproducible
and left unshrunk); then :func:`chaos.sim.shrink.reduce` keeps every smaller schedule on which the
two sides still differ first in that stream. The smallest is played once more on both sides to
show its first differing item, and by this kit into ``<out>/shrunk-<run>/`` (its ``sim.json``
replays it on either tree with ``python -m chaos sim --replay``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from chaos.generator import Schedule

__all__ = ["SHRINK_AT_MOST", "DiffTreeError", "check_tree", "replay_diff_tree", "run_diff_tree"]

REPO = Path(__file__).resolve().parents[2]

#: how many of a campaign's differences are shrunk (each within --shrink-budget-s)
SHRINK_AT_MOST = 3
#: how long one schedule may take on one side while shrinking before the shrink gives up
_PLAY_TIMEOUT_S = 300.0

#: what each side's worker runs (with its own tree first on sys.path): the schedules of its part
#: of the campaign, one JSON line each; or, serving, the schedules (or run indexes) sent on stdin,
#: with "detail": the named stream's items around an index.
_WORKER = r"""
import hashlib, json, logging, sys
logging.disable(logging.CRITICAL)
from chaos.generator import Schedule, generate
from chaos.sim.cli import simulable_scenarios
from chaos.sim.run import simulate
from chaos.sim.version import token
job = json.loads(sys.argv[1])

def play(i, schedule, detail):
    r = simulate(schedule, None)
    observed = getattr(r, "observed", None)
    if not observed:
        print(json.dumps({"i": i, "error": "this tree's simulator does not record what a run observed"}))
        sys.exit(4)
    line = {"i": i, "token": token(schedule), "verdict": r.verdict, "reason": r.reason}
    if detail:
        stream, at = detail
        items = list(observed.get(stream, ()))
        line["items"] = {str(k): repr(items[k]) for k in range(max(0, at - 1), min(len(items), at + 2))}
        line["length"] = len(items)
    else:
        line["streams"] = {
            k: [hashlib.blake2b(repr(x).encode(), digest_size=6).hexdigest() for x in v]
            for k, v in observed.items()
        }
    print(json.dumps(line), flush=True)

def drawn(job, i):
    chosen = simulable_scenarios(job["scenario"], job["faults"], job["density"])
    return generate(chosen[i % len(chosen)], job["seed"] + i)

if job.get("serve"):  # one request per stdin line until stdin closes: a schedule, or a run index
    for raw in sys.stdin:
        asked = json.loads(raw)
        if "schedule" in asked:
            schedule = Schedule.from_json(asked["schedule"])
        else:
            schedule = drawn(asked["campaign"], asked["index"])
        play(asked["i"], schedule, asked.get("detail"))
else:
    for i in job["indexes"]:
        play(i, drawn(job, i), None)
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
        stdin=subprocess.PIPE if job.get("serve") else subprocess.DEVNULL,
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
    """Run ``i``'s items of ``stream`` around ``at`` on both sides, each drawing the run with its own
    generator as in the campaign (empty where a side could not play it)."""
    servers = (_Server(sides[0]), _Server(sides[1]))
    try:
        return _shown(servers, {"campaign": job, "index": i}, stream, at)
    except _Unplayable:
        return {side.name: {"items": {}, "length": None} for side in sides}
    finally:
        for server in servers:
            server.close()


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
    wall = time.monotonic() - began  # the campaign's: shrinking is timed on its own
    report["wall_s"] = round(wall, 1)
    if not args.no_shrink:
        for entry in report["differences"][:SHRINK_AT_MOST]:
            entry["shrunk"] = _shrink_entry(sides, job, entry, args, say)
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
    say(f"  both:      python -m chaos sim --diff-tree {args.diff_tree} --replay {ref['replay']}")
    if tgt["verdict"] != "valid" and tgt["reason"]:
        say(f"  target's checkers: {tgt['reason'][:300]}")
    shown = entry.get("shown")
    if shown:
        first = entry["first_differences"][0]
        _say_items(shown, first["stream"], int(first["item"]), say, "  ")


def _around_first_difference(a: str, b: str, width: int = 160) -> dict[str, str]:
    """Both texts cut to a window around the first character where they differ."""
    p = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, p - width)

    def cut(text: str) -> str:
        end = min(len(text), p + width // 2)
        return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")

    return {"reference": cut(a), "target": cut(b)}


#: what a side is asked to play: a schedule, or ``{"campaign": job, "index": i}`` — a campaign's
#: run, drawn by that side's own generator
Asked: TypeAlias = "Schedule | dict[str, Any]"


class _Unplayable(RuntimeError):
    """A side could not play a schedule sent to it while shrinking (died, hung, said why)."""


class _Server:
    """One side's long-lived worker in serve mode: a schedule in, its observed streams out."""

    def __init__(self, side: _Side) -> None:
        self.side = side
        self.proc = _spawn(side, {"serve": True})
        self.stdin: IO[str] = self.proc.stdin  # type: ignore[assignment]
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for raw in self.proc.stdout or ():
            self.lines.put(raw)
        self.lines.put(None)

    def send(self, asked: Asked, detail: tuple[str, int] | None = None) -> None:
        request = {"schedule": asked.to_json()} if not isinstance(asked, dict) else asked
        try:
            self.stdin.write(json.dumps({"i": 0, **request, "detail": detail}) + "\n")
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _Unplayable(self._why("its worker is gone")) from None

    def receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + _PLAY_TIMEOUT_S
        while True:
            try:
                raw = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise _Unplayable(
                    f"the {self.side.name} side played one schedule for over {_PLAY_TIMEOUT_S:.0f} s"
                ) from None
            if raw is None:
                raise _Unplayable(self._why("its worker exited"))
            try:
                line: dict[str, Any] = json.loads(raw)
            except ValueError:
                continue
            if "error" in line:
                raise _Unplayable(f"the {self.side.name} side: {line['error']}")
            return line

    def _why(self, what: str) -> str:
        self.proc.wait(timeout=10)
        tail = (self.proc.stderr.read() if self.proc.stderr else "").strip().splitlines()[-1:]
        return (
            f"the {self.side.name} side: {what} ({tail[0][:300] if tail else f'exit {self.proc.returncode}'})"
        )

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _play_both(
    servers: tuple[_Server, _Server], asked: Asked, detail: tuple[str, int] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    for server in servers:  # both sides play at once
        server.send(asked, detail)
    return servers[0].receive(), servers[1].receive()


def _signature(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """The stream the two sides' runs first differ in ("verdict" when only the verdicts do);
    None when they show the same."""
    diffs = _first_differences(a["streams"], b["streams"])
    if diffs:
        return diffs[0][0]
    return "verdict" if a["verdict"] != b["verdict"] else None


def _campaign_schedule(job: dict[str, Any], i: int) -> Schedule:
    """Run ``i``'s schedule, as this kit's generator draws it for the campaign ``job``."""
    from chaos.generator import generate  # noqa: PLC0415 - the simulator's modules, only when needed
    from chaos.sim.cli import simulable_scenarios  # noqa: PLC0415

    chosen = simulable_scenarios(job["scenario"], job["faults"], job["density"])
    return generate(chosen[i % len(chosen)], job["seed"] + i)


def _shown(servers: tuple[_Server, _Server], asked: Asked, stream: str, at: int) -> dict[str, Any]:
    a, b = _play_both(servers, asked, (stream, at))
    return {
        name: {"items": x.get("items", {}), "length": x.get("length")}
        for name, x in (("reference", a), ("target", b))
    }


def _say_items(shown: dict[str, Any], stream: str, at: int, say: Callable[[str], None], indent: str) -> None:
    items = {
        name: shown[name]["items"].get(str(at), f"(none: the stream has {shown[name]['length']} items)")
        for name in ("reference", "target")
    }
    for name, text in _around_first_difference(items["reference"], items["target"]).items():
        say(f"{indent}{name:9} {stream}[{at}]: {text}")


def _shrink(
    servers: tuple[_Server, _Server],
    schedule: Schedule,
    wanted: str,
    label: str,
    *,
    args: argparse.Namespace,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The difference ``schedule`` shows first in ``wanted`` shrunk (module docstring): what the
    report and the lines say. Raises :class:`_Unplayable` when a side cannot play a candidate."""
    from chaos.sim.run import simulate  # noqa: PLC0415 - the simulator's modules, only when shrinking
    from chaos.sim.shrink import reduce  # noqa: PLC0415

    reduced = reduce(
        schedule, lambda c: _signature(*_play_both(servers, c)) == wanted, float(args.shrink_budget_s)
    )
    a, b = _play_both(servers, reduced.schedule)
    diffs = _first_differences(a["streams"], b["streams"])
    shown = _shown(servers, reduced.schedule, *diffs[0]) if diffs else {}
    played = simulate(reduced.schedule, args.out / f"shrunk-{label}")
    sim_json = played.run_dir / "sim.json" if played.run_dir else None
    where = ", ".join(f"{st} item {k}" for st, k in diffs) or "verdict"
    say(
        f"  shrunk in {reduced.seconds:.1f} s ({reduced.tries} tries): {len(schedule.steps)} → "
        f"{len(reduced.schedule.steps)} steps, still differs first at {where}; play it on both trees: "
        f"python -m chaos sim --diff-tree {args.diff_tree} --replay {sim_json}"
    )
    say("    " + reduced.schedule.describe().replace("\n", "\n    "))
    if shown:
        _say_items(shown, *diffs[0], say, "    ")
    return {
        "shrunk": True,
        "steps": [len(schedule.steps), len(reduced.schedule.steps)],
        "tries": reduced.tries,
        "seconds": reduced.seconds,
        "first_differences": [{"stream": st, "item": k} for st, k in diffs],
        "verdicts": {"reference": a["verdict"], "target": b["verdict"]},
        "sim_json": str(sim_json),
        "schedule": reduced.schedule.describe(),
        "shown": shown,
    }


def _shrink_entry(
    sides: tuple[_Side, _Side],
    job: dict[str, Any],
    entry: dict[str, Any],
    args: argparse.Namespace,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """A campaign's difference ``entry`` shrunk, after its whole schedule, sent to a long-lived
    process per side, differed first in the same stream again."""
    i = int(entry["index"])
    schedule = _campaign_schedule(job, i)
    wanted = entry["first_differences"][0]["stream"] if entry["first_differences"] else "verdict"
    servers = (_Server(sides[0]), _Server(sides[1]))
    try:
        if _signature(*_play_both(servers, schedule)) != wanted:
            say(f"  not shrunk: run {i}, sent whole to both sides again, did not differ first in {wanted}")
            return {"shrunk": False, "reason": f"the whole schedule did not differ first in {wanted} again"}
        return _shrink(servers, schedule, wanted, str(i), args=args, say=say)
    except _Unplayable as exc:
        say(f"  not shrunk: run {i}: {exc}")
        return {"shrunk": False, "reason": str(exc)}
    finally:
        for server in servers:
            server.close()


def replay_diff_tree(
    args: argparse.Namespace, tree: Path, schedule: Schedule, say: Callable[[str], None] | None = None
) -> int:
    """``--diff-tree PATH --replay X``: one schedule (a seed token or a ``sim.json``, a shrunk one
    included) played on this kit and on ``tree``, compared as a campaign's; shrunk when it differs
    (unless ``--no-shrink``). Exit 0 the same, 1 differs, 3 a side could not play it."""
    say = say or functools.partial(print, file=sys.stderr, flush=True)
    sides = (_Side("reference", REPO), _Side("target", tree))
    servers = (_Server(sides[0]), _Server(sides[1]))
    report: dict[str, Any] = {
        "format": "kzk-sim-diff/1",
        "reference": str(REPO),
        "target": str(tree),
        "replay": args.replay,
        "runs": 1,
    }
    try:
        a, b = _play_both(servers, schedule)
        wanted = _signature(a, b)
        diffs = _first_differences(a["streams"], b["streams"])
        report["counts"] = {"same": int(wanted is None), "differ": int(wanted is not None), "unknown": 0}
        entry: dict[str, Any] = {
            "index": 0,
            "reference": {"replay": a["token"], "verdict": a["verdict"], "reason": a["reason"]},
            "target": {"replay": b["token"], "verdict": b["verdict"], "reason": b["reason"]},
            "first_differences": [{"stream": st, "item": k} for st, k in diffs],
        }
        report["differences"] = [entry] if wanted else []
        if wanted is None:
            say(f"the same on both sides: {args.replay} ({len(schedule.steps)} steps)")
        else:
            where = ", ".join(f"{st} item {k}" for st, k in diffs) or "verdict"
            say(f"DIFFERS  {args.replay}: first at {where}")
            say(f"  reference: {a['verdict']}; target: {b['verdict']}")
            if diffs:
                entry["shown"] = _shown(servers, schedule, *diffs[0])
                _say_items(entry["shown"], *diffs[0], say, "  ")
            if not args.no_shrink:
                entry["shrunk"] = _shrink(servers, schedule, wanted, "replay", args=args, say=say)
    except _Unplayable as exc:
        say(f"could not be compared: {exc}")
        report["counts"] = {"same": 0, "differ": 0, "unknown": 1}
        report["unknown"] = [{"index": 0, "reason": str(exc)}]
    finally:
        for server in servers:
            server.close()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sim-diff-report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    c = report["counts"]
    return 1 if c["differ"] else (3 if c["unknown"] else 0)
