"""Mutation testing of the suite: how many deliberate bugs of the reference does it catch?

Conformance ring.

``python -m conformance.mutate [--list] [--only NAME,...] [-n 2] [--timeout-s 900] [--out DIR]``

Each mutant is a small unified diff of the reference in ``conformance/mutants/<name>.patch`` whose
header (``# key: value`` lines before the diff) says which behaviour it breaks (``breaks``), which
areas to run (``areas``) and which IDs should catch it (``ids``). For every mutant, one at a time:

1. copy the working tree (without ``.git``, ``.venv``, caches and results) to a scratch dir
   ``$TMPDIR/kzk-mutate-<pid>-<start>-*`` — the working tree is never touched;
2. ``git apply`` the patch there (a patch that does not apply is reported, not run);
3. check that the copy is what the nodes import: every mutated module, imported with the nodes'
   environment (``PYTHONPATH`` = the copy, cwd = the copy, the reference target's ``cwd``
   ``{repo_root}`` resolving to the copy because ``conformance`` itself is imported from it), must
   resolve to the mutated file in the copy;
4. run ``pytest <copy>/conformance/checks --areas <areas>`` with the copy first on ``PYTHONPATH``,
   in its own process group, killed (and counted as *killed by timeout*) after ``--timeout-s``;
5. read the run records: the mutant is **killed** by every behaviour check that failed or errored,
   **survived** if none did.

The campaign prints the kill table (mutant, areas run, killers or *survived*, wall time) and the
kill rate = (killed + killed by timeout) / mutants run, and writes ``mutation.json`` and
``mutation.md`` to ``--out``. ``--baseline`` first runs the same areas on an unmutated copy: checks
that fail there are flagged, since a kill by a check that fails anyway proves nothing.

Scratch dirs and processes never outlive a run: the pytest child dies with this process
(``PR_SET_PDEATHSIG``; its nodes and ZooKeeper die with it in turn), SIGTERM/SIGINT remove the
scratch dir, and a run removes the scratch dirs of dead runs (pid + start time, never a live run's).
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import catalogue
from cluster.targets import REPO_ROOT
from conformance.diff.coverage import PICKS
from conformance.diff.mutation import diff_summary, diff_text
from conformance.pytest_run import plugin_args, plugin_env
from harness.reaper import is_same_process, proc_start_time
from records.run_record import new_run_id, read_records

__all__ = ["MUTANTS_DIR", "Mutant", "MutantError", "MutantResult", "load_mutants", "main", "parse_mutant"]

MUTANTS_DIR = Path(__file__).resolve().parent / "mutants"
SCRATCH_PREFIX = "kzk-mutate-"
_COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "*.egg-info", "results*"
)
_HEADER = re.compile(r"^#\s*([a-z_]+)\s*:\s*(.*)$")
Status = Literal["killed", "timeout", "survived", "not applied", "not imported", "not run"]


class MutantError(ValueError):
    """A mutant file is malformed (missing header keys, unknown area or ID)."""


@dataclass(frozen=True)
class Mutant:
    """One patch and what its header says about it."""

    name: str
    path: Path
    breaks: str
    areas: tuple[str, ...]
    ids: tuple[str, ...]
    files: tuple[str, ...]
    #: the Kafka JIRAs a mutant re-introduces (its ``kafka:`` header), so ``--only KAFKA-6082`` works
    jira: tuple[str, ...] = ()


@dataclass(frozen=True)
class Killer:
    test: str
    behaviour_ids: tuple[str, ...]
    reason: str | None
    fails_unmutated: bool = False
    #: ``--recheck`` re-runs the check on the mutant: False = it passed there (an environmental or
    #: flaky failure, e.g. a port taken by another run), None = not re-run
    reproduced: bool | None = None

    @property
    def counts(self) -> bool:
        return not self.fails_unmutated and self.reproduced is not False


@dataclass(frozen=True)
class MutantResult:
    name: str
    breaks: str
    areas: tuple[str, ...]
    expected_ids: tuple[str, ...]
    status: Status
    wall_s: float
    pytest_exit_code: int | None = None
    killed_by: tuple[Killer, ...] = ()
    detail: str = ""
    caught_by_expected_id: bool = field(default=False)
    #: ``--mode diff|both``: the differential suite's verdict on the mutant (conformance/diff/mutation.py)
    diff: dict[str, Any] | None = None


def _header(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    key = ""
    for line in text.splitlines():
        if line.startswith(("diff ", "--- ")):
            break
        m = _HEADER.match(line)
        if m:
            key = m.group(1)
            out[key] = m.group(2).strip()
        elif line.startswith("#") and key:  # continuation line of the previous key
            out[key] = (out[key] + " " + line.lstrip("# ").strip()).strip()
    return out


def parse_mutant(path: Path) -> Mutant:
    """A :class:`Mutant` from a patch file; :class:`MutantError` if its header is incomplete."""
    text = path.read_text(encoding="utf-8")
    head = _header(text)
    missing = [k for k in ("breaks", "areas", "ids") if not head.get(k)]
    if missing:
        raise MutantError(f"{path.name}: header lacks {', '.join(missing)} (see conformance/README.md)")
    areas = tuple(a.strip().upper() for a in head["areas"].split(",") if a.strip())
    ids = tuple(i.strip().upper() for i in head["ids"].split(",") if i.strip())
    bad = [a for a in areas if a not in catalogue.AREAS] + [
        i for i in ids if i not in {b.id for b in catalogue.CATALOGUE}
    ]
    if bad:
        raise MutantError(f"{path.name}: unknown areas/IDs {', '.join(bad)}")
    files = tuple(m.group(1) for m in re.finditer(r"^\+\+\+ b/(\S+)", text, re.MULTILINE))
    if not files:
        raise MutantError(f"{path.name}: no '+++ b/<path>' line: not a unified diff")
    jira = tuple(sorted(set(re.findall(r"KAFKA-\d+", head.get("kafka", ""), re.IGNORECASE))))
    return Mutant(path.stem, path, head["breaks"], areas, ids, files, tuple(j.upper() for j in jira))


def load_mutants(directory: Path = MUTANTS_DIR) -> list[Mutant]:
    return [parse_mutant(p) for p in sorted(directory.glob("*.patch"))]


# --- scratch copies -----------------------------------------------------------------------------


def reap_stale_scratch(parent: Path | None = None) -> list[Path]:
    """Remove scratch dirs of mutation runs whose owner (pid + start time) is gone."""
    removed = []
    for path in Path(parent or tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        parts = path.name[len(SCRATCH_PREFIX) :].split("-")
        if len(parts) < 3 or not (parts[0].isdigit() and parts[1].isdigit()):
            continue
        if not is_same_process(int(parts[0]), int(parts[1])):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def scratch_parent() -> Path:
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{pid}-{proc_start_time(pid) or 0}-"))


def copy_tree(dest: Path) -> Path:
    shutil.copytree(REPO_ROOT, dest, ignore=_COPY_IGNORE, symlinks=True)
    return dest


def apply_patch(patch: Path, tree: Path, *, check_only: bool = False) -> str | None:
    """``git apply`` ``patch`` in ``tree``; the error text if it does not apply cleanly."""
    cmd = ["git", "apply", "--whitespace=nowarn", *(["--check"] if check_only else []), str(patch)]
    out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=60, check=False)
    return None if out.returncode == 0 else (out.stderr or out.stdout).strip()


def node_env(tree: Path) -> dict[str, str]:
    """Environment of the checks and (inherited) of every node they spawn: the copy first."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KZK_RUN_ID", "KZK_RUN_STARTED")}
    env["PYTHONPATH"] = str(tree)
    env["KZK_LAUNCHER"] = "process"  # nodes as local processes of the copy (an image has its own code)
    env.setdefault("KZK_SPEC_DIR", str(catalogue.spec_dir()))
    return env


def verify_imports(mutant: Mutant, tree: Path) -> str | None:
    """None iff every mutated module imports from the copy and differs from the working tree."""
    for rel in mutant.files:
        if not rel.endswith(".py"):
            continue
        module = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        code = f"import importlib; print(importlib.import_module({module!r}).__file__)"
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tree,
            env=node_env(tree),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        got = Path(out.stdout.strip() or "/nonexistent").resolve()
        if out.returncode != 0 or got != (tree / rel).resolve():
            return f"{module} imports from {got} (wanted {tree / rel}): {out.stderr.strip()[-500:]}"
        if got.read_bytes() == (REPO_ROOT / rel).read_bytes():
            return f"{rel} in the copy equals the working tree: the patch changed nothing"
    return None


# --- running the checks -------------------------------------------------------------------------


def _die_with_parent() -> None:  # runs in the forked child before exec
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


#: how long the workers of a pytest run that has exited may take to finish their teardown
GROUP_EXIT_GRACE_S = 60.0


def _wait_group_gone(pgid: int, grace_s: float) -> None:
    """Until no process of the group ``pgid`` is left (or ``grace_s`` has passed)."""
    give_up = time.monotonic() + grace_s
    while time.monotonic() < give_up:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def _stop_group(proc: subprocess.Popen[bytes], grace_s: float = 15.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run_checks(
    tree: Path,
    areas: Sequence[str],
    results: Path,
    *,
    workers: str,
    timeout_s: float,
    stop_first: bool,
    keyword: str = "",
    tests: Sequence[str] = (),
) -> tuple[int | None, str]:
    """Run the areas' checks (or the given test node ids) of the copy; (pytest exit code or None on
    timeout, output tail)."""
    where = list(tests) or [str(tree / "conformance" / "checks")]
    cmd = [sys.executable, "-m", "pytest", *where, "-q", "-p", "no:cacheprovider", *plugin_args()]
    cmd += ["--target=reference", f"--results-dir={results}", "-rf"]
    cmd += [f"--areas={','.join(areas)}"] if areas else []
    # the meta-checks test the suite, not the target: a kill is a behaviour check's failure
    cmd += [f"--ignore={tree / 'conformance' / 'checks' / 'test_catalogue_meta.py'}"]
    cmd += ["-k", keyword] if keyword else []
    # a private basetemp: concurrent pytest runs on the machine share /tmp/pytest-of-<user> and
    # delete each other's numbered dirs (tmp_path_retention_policy = none)
    cmd += [f"--basetemp={tree.parent / 'basetemp'}"]
    cmd += (["-n", workers, "--dist", "load"] if workers != "0" else []) + (["-x"] if stop_first else [])
    log = results / "pytest.log"
    results.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=tree,
            env={**node_env(tree), "KZK_RUN_ID": new_run_id(), **plugin_env()},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, before exec
        )
        try:
            rc: int | None = proc.wait(timeout=timeout_s)
            # with -x, xdist's main process exits while a worker is still tearing down the check
            # that failed, and the worker writes that check's run record last: the kill is judged
            # from the records, so they must all be written first (seen: mutants reported as
            # survivors whose killing records appeared a moment later)
            _wait_group_gone(proc.pid, GROUP_EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            _stop_group(proc)
    return rc, log.read_text(encoding="utf-8", errors="replace")[-4000:]


def failing_checks(results: Path, flaky: set[str] | None = None) -> tuple[Killer, ...]:
    """Behaviour checks that failed or errored in the run records under ``results``."""
    records = read_records(sorted(results.glob("runs-*.jsonl")), strict=False)
    return tuple(
        Killer(r["test_id"], tuple(r["behaviour_ids"]), r.get("reason"), r["test_id"] in (flaky or set()))
        for r in records
        if r["behaviour_ids"] and r["outcome"] in ("failed", "error")
    )


def _result(mutant: Mutant, status: Status, began: float, **more: Any) -> MutantResult:
    return MutantResult(
        name=mutant.name,
        breaks=mutant.breaks,
        areas=mutant.areas,
        expected_ids=mutant.ids,
        status=status,
        wall_s=round(time.monotonic() - began, 1),
        **more,
    )


def run_mutant(mutant: Mutant, scratch: Path, args: argparse.Namespace, flaky: set[str]) -> MutantResult:
    """Copy, patch, verify and run one mutant; the scratch copy is removed whatever happens."""
    began = time.monotonic()
    tree = copy_tree(scratch / mutant.name / "repo")
    try:
        problem = apply_patch(mutant.path, tree)
        if problem is not None:
            return _result(mutant, "not applied", began, detail=problem)
        problem = verify_imports(mutant, tree)
        if problem is not None:
            return _result(mutant, "not imported", began, detail=problem)
        result = (
            _checks(mutant, tree, args, flaky, began)
            if args.mode != "diff"
            else _result(mutant, "not run", began)
        )
        if args.mode != "checks":
            result = dataclasses.replace(result, diff=_diff(mutant, tree, args))
        return result
    finally:
        shutil.rmtree(tree.parent, ignore_errors=True)


def _checks(
    mutant: Mutant, tree: Path, args: argparse.Namespace, flaky: set[str], began: float
) -> MutantResult:
    results = args.out / "runs" / mutant.name
    shutil.rmtree(results, ignore_errors=True)
    rc, tail = run_checks(
        tree,
        mutant.areas,
        results,
        workers=args.numprocesses,
        timeout_s=args.timeout_s,
        stop_first=not args.all_checks,
        keyword=args.keyword,
    )
    killers = failing_checks(results, flaky)
    real = [k for k in killers if k.counts]
    status: Status = "timeout" if rc is None else ("killed" if real else "survived")
    return _result(
        mutant,
        status,
        began,
        pytest_exit_code=rc,
        killed_by=killers,
        detail="" if status == "killed" else tail[-1500:],
        caught_by_expected_id=any(set(k.behaviour_ids) & set(mutant.ids) for k in real),
    )


def _diff(mutant: Mutant, tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    from conformance.diff import mutation  # noqa: PLC0415 - only in the differential mode

    verdict = mutation.run_diff(
        mutation.mutant_target(tree, mutant.name),
        args.out / "diff" / mutant.name,
        scenarios=args.diff_scenarios,
        seed=args.diff_seed,
        workers=max(1, int(args.numprocesses)),
        timeout_s=args.diff_timeout_s,
        shrink_budget_s=args.diff_shrink_budget_s,
        pick=args.diff_pick,
    )
    return dataclasses.asdict(verdict)


def baseline_failures(mutants: list[Mutant], scratch: Path, args: argparse.Namespace) -> set[str]:
    """Checks of the mutants' areas that fail on an unmutated copy."""
    tree = copy_tree(scratch / "baseline" / "repo")
    try:
        areas = sorted({a for m in mutants for a in m.areas})
        results = args.out / "runs" / "_baseline"
        shutil.rmtree(results, ignore_errors=True)
        run_checks(
            tree,
            areas,
            results,
            workers=args.numprocesses,
            timeout_s=args.timeout_s * 3,
            stop_first=False,
            keyword=args.keyword,
        )
        return {k.test for k in failing_checks(results)}
    finally:
        shutil.rmtree(tree.parent, ignore_errors=True)


# --- reporting ----------------------------------------------------------------------------------


def summary(results: list[MutantResult]) -> dict[str, Any]:
    ran = [r for r in results if r.status in ("killed", "timeout", "survived")]
    killed = sum(r.status == "killed" for r in ran)
    timeouts = sum(r.status == "timeout" for r in ran)
    return {
        "mutants": len(results),
        "ran": len(ran),
        "killed": killed,
        "killed_by_timeout": timeouts,
        "survived": [r.name for r in ran if r.status == "survived"],
        "not_run": {r.name: r.status for r in results if r not in ran},
        "kill_rate": round((killed + timeouts) / len(ran), 4) if ran else None,
        **diff_summary([(r.name, r.status, r.diff) for r in results]),
    }


def _killers_text(r: MutantResult, limit: int = 4) -> str:
    if r.status == "timeout":
        return "killed by timeout (hang)"
    if r.status != "killed":
        return r.status.upper()
    names = [f"{k.test.split('::')[-1]} [{','.join(k.behaviour_ids)}]{_flag(k)}" for k in r.killed_by]
    more = f" +{len(names) - limit} more" if len(names) > limit else ""
    return "; ".join(names[:limit]) + more


def _flag(k: Killer) -> str:
    if k.fails_unmutated:
        return " (fails unmutated: not counted)"
    if k.reproduced is False:
        return " (did not reproduce: not counted)"
    return " (confirmed)" if k.reproduced else ""


def _diff_text(r: MutantResult) -> str:
    return diff_text(r.diff)


def render_markdown(results: list[MutantResult], totals: dict[str, Any]) -> str:
    diff = any(r.diff is not None for r in results)
    lines = [
        "| mutant | breaks | areas run | killed by | wall s |" + (" differential |" if diff else ""),
        "|---|---|---|---|---|" + ("---|" if diff else ""),
    ]
    for r in results:
        lines.append(
            f"| `{r.name}` | {r.breaks} | {','.join(r.areas)} | {_killers_text(r)} | {r.wall_s:.0f} |"
            + (f" {_diff_text(r)} |" if diff else "")
        )
    rate = totals["kill_rate"]
    lines += [
        "",
        f"Kill rate: **{rate:.0%}** ({totals['killed']} killed by checks + {totals['killed_by_timeout']}"
        f" by timeout, of {totals['ran']} run)"
        if rate is not None
        else "Kill rate: n/a (nothing ran)",
    ]
    if totals["survived"]:
        lines.append(f"Survived: {', '.join(totals['survived'])}")
    if totals["not_run"]:
        lines.append("Not run: " + ", ".join(f"{k} ({v})" for k, v in totals["not_run"].items()))
    if "diff_kill_rate" in totals:
        lines.append(
            f"Differential kill rate: **{totals['diff_kill_rate']:.0%}** ({totals['diff_killed']} of"
            f" {totals['diff_ran']}); survived: {', '.join(totals['diff_survived']) or 'none'}"
        )
        if totals.get("combined_kill_rate") is not None:
            lines.append(
                f"Checks + differential: **{totals['combined_kill_rate']:.0%}**;"
                f" survived both: {', '.join(totals['combined_survived']) or 'none'}"
            )
    return "\n".join(lines) + "\n"


def render_table(results: list[MutantResult]) -> str:
    lines = [f"{'mutant':<40} {'areas':<22} {'wall s':>7}  killed by", "-" * 110]
    for r in results:
        lines.append(f"{r.name:<40} {','.join(r.areas)[:22]:<22} {r.wall_s:>7.0f}  {_killers_text(r)}")
        if r.diff is not None:
            lines.append(f"{'':<40} {'differential':<22} {r.diff['wall_s']:>7.0f}  {_diff_text(r)}")
    return "\n".join(lines)


def write_reports(out: Path, results: list[MutantResult], totals: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = {"summary": totals, "mutants": [asdict(r) for r in results]}
    (out / "mutation.json").write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "mutation.md").write_text(render_markdown(results, totals), encoding="utf-8")


# --- command line -------------------------------------------------------------------------------


def _workers(raw: str) -> str:
    if raw.isdigit():
        return raw
    raise argparse.ArgumentTypeError(f"invalid worker count {raw!r}: give a number >= 0 (0 = serial)")


def _positive(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid timeout {raw!r}: give a positive number of seconds")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m conformance.mutate", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--list", action="store_true", help="list the mutants (name, areas, IDs, what breaks) and exit"
    )
    p.add_argument("--only", default="", help="comma list of mutant names to run (default: all)")
    p.add_argument("--mutants-dir", default=MUTANTS_DIR, type=Path, help="where the *.patch files are")
    p.add_argument(
        "-k", dest="keyword", default="", help="pytest -k expression narrowing every mutant's checks"
    )
    p.add_argument(
        "-n", "--numprocesses", default="2", type=_workers, help="xdist workers per mutant (0 = serial)"
    )
    p.add_argument(
        "--timeout-s", default=900.0, type=_positive, help="per mutant; a hang = killed by timeout"
    )
    p.add_argument("--out", default=Path("results/mutation"), type=Path, help="where mutation.json/.md go")
    p.add_argument(
        "--all-checks",
        action="store_true",
        help="run every check of the areas (default: stop at the first kill)",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="first run the areas unmutated and flag checks that fail there",
    )
    p.add_argument(
        "--check", action="store_true", help="only check that every patch applies to the current tree"
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="merge into <out>/mutation.json: replace the mutants run now, keep the others still in the set",
    )
    p.add_argument(
        "--recheck",
        action="store_true",
        help="re-run the killing checks of <out>/mutation.json unmutated and rewrite the reports",
    )
    p.add_argument(
        "--refresh", action="store_true", help="re-base drifted patches on the current tree (patch --fuzz=3)"
    )
    p.add_argument(
        "--mode",
        choices=("checks", "diff", "both"),
        default="checks",
        help="run each mutant through the checks, the differential suite, or both (default checks)",
    )
    p.add_argument("--diff-scenarios", type=int, default=12, help="differential scenarios per mutant")
    p.add_argument("--diff-seed", type=int, default=1, help="their seed")
    p.add_argument(
        "--diff-pick",
        choices=PICKS,
        default="first",
        help="which N: first (indices 0..N-1) or cover (the N of the first max(4000, 10 N) that reach"
        " the most distinct inputs; python -m conformance diff --pick cover)",
    )
    p.add_argument("--diff-timeout-s", type=_positive, default=1800.0, help="per mutant's differential run")
    p.add_argument(
        "--diff-shrink-budget-s", type=float, default=0.0, help="shrink the killing scenario (0: no)"
    )
    return p.parse_args(argv)


def _select(mutants: list[Mutant], only: str) -> list[Mutant]:
    names = [n.strip() for n in only.split(",") if n.strip()]
    if not names:
        return mutants
    known = [m.name for m in mutants]
    wanted = {n.upper() for n in names}
    unknown = [n for n in names if n not in known and not any(n.upper() in m.jira for m in mutants)]
    if unknown:
        jiras = sorted({j for m in mutants for j in m.jira})
        raise MutantError(
            f"unknown mutants {', '.join(unknown)}; valid mutants: {', '.join(known)}"
            + (f"; Kafka JIRAs: {', '.join(jiras)}" if jiras else "")
        )
    return [m for m in mutants if m.name in names or wanted & set(m.jira)]


def _on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that remove scratch dirs


def check_all_apply(mutants: list[Mutant]) -> dict[str, str]:
    """Mutant name → ``git apply --check`` error, for every patch that no longer applies."""
    scratch = scratch_parent()
    try:
        tree = copy_tree(scratch / "repo")
        problems = {m.name: apply_patch(m.path, tree, check_only=True) for m in mutants}
        return {k: v for k, v in problems.items() if v is not None}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _header_text(patch: Path) -> str:
    lines = patch.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines[: next(i for i, ln in enumerate(lines) if ln.startswith("--- "))])


def refresh(mutant: Mutant) -> str:
    """Re-base a drifted patch: apply it with ``patch --fuzz=3`` to a scratch copy and rewrite it as
    ``diff -u`` of the result against the working tree (header kept). Returns what happened."""
    scratch = scratch_parent()
    try:
        tree = copy_tree(scratch / "repo")
        if apply_patch(mutant.path, tree, check_only=True) is None:
            return "applies"
        fuzzy = subprocess.run(
            ["patch", "-p1", "--fuzz=3", "--no-backup-if-mismatch", "-i", str(mutant.path)],
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if fuzzy.returncode != 0:
            return f"cannot refresh (redo the edit by hand): {fuzzy.stdout.strip()[-300:]}"
        diffs = [
            subprocess.run(
                [
                    "diff",
                    "-u",
                    "--label",
                    f"a/{rel}",
                    "--label",
                    f"b/{rel}",
                    str(REPO_ROOT / rel),
                    str(tree / rel),
                ],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            for rel in mutant.files
        ]
        mutant.path.write_text(_header_text(mutant.path) + "".join(diffs), encoding="utf-8")
        return "refreshed"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _load_results(path: Path) -> list[MutantResult]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for m in data["mutants"]:
        fields = {**m, "areas": tuple(m["areas"]), "expected_ids": tuple(m["expected_ids"])}
        fields.setdefault("diff", None)
        fields["killed_by"] = tuple(
            Killer(
                k["test"], tuple(k["behaviour_ids"]), k["reason"], k["fails_unmutated"], k.get("reproduced")
            )
            for k in m["killed_by"]
        )
        out.append(MutantResult(**fields))
    return out


def _not_passing(results: Path) -> set[str]:
    records = read_records(sorted(results.glob("runs-*.jsonl")), strict=False)
    return {r["test_id"] for r in records if r["outcome"] != "passed"}


def merged(before: Path, now: list[MutantResult], current: list[Mutant]) -> list[MutantResult]:
    """Earlier results of mutants still in the set and not re-run, plus this run's, by name."""
    fresh = {r.name: r for r in now}
    names = {m.name for m in current}
    old = {r.name: r for r in (_load_results(before) if before.is_file() else []) if r.name in names}
    return [v for _, v in sorted({**old, **fresh}.items())]


def collected(tree: Path) -> set[str]:
    """Node ids of every check in ``tree`` (checks are renamed and removed while campaigns run)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance/checks",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tree,
        env=node_env(tree),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return {line.strip() for line in out.stdout.splitlines() if "::" in line}


def _rerun(tree: Path, tests: Sequence[str], runs: Path, args: argparse.Namespace) -> set[str] | None:
    """Tests of ``tests`` that do not pass when re-run in ``tree``; ``None`` if the run said nothing
    (no test ran: usage error, collection error)."""
    shutil.rmtree(runs, ignore_errors=True)
    rc, _ = run_checks(
        tree, (), runs, workers=args.numprocesses, timeout_s=args.timeout_s, stop_first=False, tests=tests
    )
    if rc is None:
        return set(tests)
    records = read_records(sorted(runs.glob("runs-*.jsonl")), strict=False)
    if rc not in (0, 1) or not records:
        return None
    return _not_passing(runs)


def recheck(args: argparse.Namespace) -> list[MutantResult]:
    """Confirm the kills of ``<out>/mutation.json``: every killing check is re-run on an unmutated
    copy (a check that does not pass there proves nothing) and on its mutant again (a failure that
    does not reproduce was environmental or flaky); a mutant left without a confirmed killer survives."""
    results = _load_results(args.out / "mutation.json")
    mutants = {m.name: m for m in load_mutants(args.mutants_dir)}
    scratch = scratch_parent()
    try:
        unmutated = copy_tree(scratch / "unmutated" / "repo")
        exists = collected(unmutated)
        named = {k.test for r in results for k in r.killed_by}
        tests, gone = sorted(named & exists), sorted(named - exists)
        bad = _rerun(unmutated, tests, args.out / "runs" / "_recheck", args) if tests else set()
        if bad is None:
            raise MutantError("recheck: the unmutated re-run ran no test; see runs/_recheck/pytest.log")
        print(
            f"recheck: {len(tests)} killing check(s) re-run unmutated; not passing: {sorted(bad) or 'none'}"
        )
        print(f"recheck: killing checks that no longer exist (not re-run): {gone or 'none'}", flush=True)
        out = []
        for r in results:
            mine = [k.test for k in r.killed_by if k.test not in bad and k.test in exists]
            if r.status != "killed" or not mine or r.name not in mutants:
                out.append(reflag(r, bad, None))
                continue
            tree = copy_tree(scratch / r.name / "repo")
            problem = apply_patch(mutants[r.name].path, tree)
            failing = None if problem else _rerun(tree, mine, args.out / "runs" / f"_recheck-{r.name}", args)
            shutil.rmtree(tree.parent, ignore_errors=True)
            out.append(reflag(r, bad, failing, rerun=set(mine)))
            print(f"recheck {r.name}: reproduced {sorted(failing or ()) or 'nothing'}", flush=True)
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def reflag(
    r: MutantResult, bad: set[str], reproduced: set[str] | None = None, *, rerun: set[str] | None = None
) -> MutantResult:
    """``r`` with its killers flagged: failing unmutated (``bad``), and reproduced on a re-run of the
    mutant (``reproduced``: the checks that failed again, among those re-run (``rerun``, default:
    all); ``None`` = not re-run)."""

    def again(k: Killer) -> bool | None:
        if reproduced is None or k.test in bad or (rerun is not None and k.test not in rerun):
            return k.reproduced
        return k.test in reproduced

    killers = tuple(
        Killer(k.test, k.behaviour_ids, k.reason, k.fails_unmutated or k.test in bad, again(k))
        for k in r.killed_by
    )
    real = [k for k in killers if k.counts]
    status: Status = "survived" if r.status == "killed" and not real else r.status
    detail = (
        "no kill confirmed (the killing checks fail unmutated or passed again)"
        if status != r.status
        else r.detail
    )
    return MutantResult(
        r.name,
        r.breaks,
        r.areas,
        r.expected_ids,
        status,
        r.wall_s,
        r.pytest_exit_code,
        killers,
        detail,
        any(set(k.behaviour_ids) & set(r.expected_ids) for k in real),
        r.diff,
    )


def campaign(mutants: list[Mutant], args: argparse.Namespace) -> list[MutantResult]:
    scratch = scratch_parent()
    results: list[MutantResult] = []
    try:
        flaky = baseline_failures(mutants, scratch, args) if args.baseline else set()
        if flaky:
            print(f"baseline: {len(flaky)} check(s) fail unmutated: {', '.join(sorted(flaky))}", flush=True)
        for i, mutant in enumerate(mutants, 1):
            print(f"[{i}/{len(mutants)}] {mutant.name} ({','.join(mutant.areas)}) ...", end=" ", flush=True)
            result = run_mutant(mutant, scratch, args, flaky)
            diff = f"; differential: {_diff_text(result)}" if result.diff is not None else ""
            print(f"{result.status} in {result.wall_s:.0f} s: {_killers_text(result)}{diff}", flush=True)
            results.append(result)
            write_reports(args.out, results, summary(results))  # partial results survive an interrupt
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        mutants = _select(load_mutants(args.mutants_dir), args.only)
    except MutantError as exc:
        print(f"python -m conformance.mutate: error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for m in mutants:
            jira = f" ({', '.join(m.jira)})" if m.jira else ""
            print(f"{m.name:<40} areas {','.join(m.areas):<24} ids {','.join(m.ids)}{jira}")
            print(f"    breaks: {m.breaks}")
        return 0
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    reap_stale_scratch()
    if args.refresh:
        outcomes = {m.name: refresh(m) for m in mutants}
        for name, what in outcomes.items():
            print(f"{name}: {what}")
        return 1 if any(w.startswith("cannot") for w in outcomes.values()) else 0
    if args.check:
        problems = check_all_apply(mutants)
        for name, text in problems.items():
            print(f"{name}: does not apply: {text}", file=sys.stderr)
        print(f"{len(mutants) - len(problems)} of {len(mutants)} mutants apply to the current tree")
        return 1 if problems else 0
    args.out = args.out.resolve()
    if args.update and (args.out / "mutation.json").is_file():  # campaign() rewrites it as it goes
        shutil.copyfile(args.out / "mutation.json", args.out / "mutation.json.before")
    results = recheck(args) if args.recheck else campaign(mutants, args)
    if args.update and not args.recheck:
        results = merged(args.out / "mutation.json.before", results, load_mutants(args.mutants_dir))
    write_reports(args.out, results, summary(results))
    totals = summary(results)
    print(render_table(results))
    print(render_markdown(results, totals).split("\n\n", 1)[1].strip())
    print(f"reports: {args.out / 'mutation.json'}, {args.out / 'mutation.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
