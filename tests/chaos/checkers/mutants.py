"""Which checkers flag which deliberate bug of the reference? (test tool, run by hand)

``python -m tests.chaos.checkers.mutants [--only NAME,...] [--timeout-s 300]``

For each mutant of ``conformance/mutants`` (the mutation campaign's patches): copy the working
tree to a scratch dir, apply the patch there (``conformance.mutate``'s copy and apply), run the
real failover scenario of ``real_scenario.py`` leniently in the copy (so its nodes run the
mutated reference), then run every checker over the capture. Prints one line per mutant: the
checkers that said invalid (or "none"). The scratch copy is removed whatever happens; the
scenario's process group is killed on timeout and dies with this process.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from chaos.run.judged import judge_run_dir
from conformance.mutate import Mutant, apply_patch, copy_tree, load_mutants, node_env, scratch_parent


def _die_with_parent() -> None:  # in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _run_scenario(tree: Path, out: Path, timeout_s: float) -> str | None:
    """Run the lenient scenario in ``tree``; None on success, else why not."""
    cmd = [sys.executable, "-m", "tests.chaos.checkers.real_scenario", "--lenient", str(out)]
    log = (out.parent / "scenario.log").open("wb")
    proc = subprocess.Popen(
        cmd, cwd=tree, env=node_env(tree), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True, preexec_fn=_die_with_parent,  # noqa: PLW1509 - prctl only
    )  # fmt: skip
    try:
        rc = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"timed out after {timeout_s:.0f} s"
    finally:
        log.close()
    tail = (out.parent / "scenario.log").read_text(errors="replace")[-600:]
    return None if rc == 0 else f"exit {rc}: {tail}"


def judge(mutant: Mutant, scratch: Path, timeout_s: float) -> tuple[str, list[str], float]:
    began = time.monotonic()
    work = scratch / mutant.name
    tree = copy_tree(work / "repo")
    try:
        problem = apply_patch(mutant.path, tree)
        if problem is not None:
            return f"not applied: {problem}", [], time.monotonic() - began
        out = work / "capture"
        problem = _run_scenario(tree, out, timeout_s)
        if problem is not None:
            return f"no capture: {problem}", [], time.monotonic() - began
        judged = judge_run_dir(out)
        if judged.reason is not None:
            return f"no judgeable capture: {judged.reason}", [], time.monotonic() - began
        flagged = [f"{v.checker}: {v.message[:160]}" for v in judged.verdicts if v.is_invalid]
        return "ok", flagged, time.monotonic() - began
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.checkers.mutants")
    parser.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    args = parser.parse_args(argv)
    mutants = load_mutants()
    wanted = {n for n in args.only.split(",") if n}
    unknown = wanted - {m.name for m in mutants}
    if unknown:
        parser.error(f"unknown mutants {sorted(unknown)}; valid: {', '.join(m.name for m in mutants)}")
    scratch = scratch_parent()
    try:
        for mutant in mutants:
            if wanted and mutant.name not in wanted:
                continue
            status, flagged, took_s = judge(mutant, scratch, args.timeout_s)
            print(
                f"{mutant.name} ({took_s:.0f} s) {status}: {'; '.join(flagged) or 'flagged by none'}",
                flush=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
