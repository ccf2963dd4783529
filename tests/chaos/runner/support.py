"""Helpers of the runner tests: run the CLI, find a process tree in /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.reaper import proc_start_time


def chaos(*args: str, timeout_s: float = 900.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos", *args], capture_output=True, text=True, timeout=timeout_s, check=False
    )


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def descendants(root: int) -> dict[int, int]:
    """Every live descendant of ``root``: pid → start time."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _ppid(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    out: dict[int, int] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            start = proc_start_time(child)
            if start is not None:
                out[child] = start
                todo.append(child)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pids: dict[int, int]) -> dict[int, str]:
    """The processes of ``pids`` still running as the same process (pid reuse told apart)."""
    return {pid: cmdline(pid) for pid, start in pids.items() if proc_start_time(pid) == start}


def uid() -> int:
    return os.getuid()
