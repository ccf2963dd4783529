"""Progress of a gate run by behaviour ID, read from the files the plugin writes (conformance ring).

The plugin writes the checks it collected (``collected-<run>-<worker>.json``) and one run record
per executed check (``runs-<worker>.jsonl``). :class:`Progress` polls them while pytest runs and
prints one line when a behaviour ID is done (all its checks ran) — IDs done/total, checks
done/total, failures so far, elapsed time and an estimate of the time left — and one short line
per failing check with the path of its evidence file. pytest's own output goes to a log file.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster.startup import TARGET_ERROR_PREFIX
from conformance.evidence import evidence_path
from records.run_record import read_records

__all__ = ["Progress", "clock"]

POLL_S = 1.0


def clock(seconds: float) -> str:
    """``75`` → ``1:15``."""
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Watches ``results_dir`` for one run's checks and records; prints through ``say``."""

    def __init__(
        self, results_dir: Path, run_id: str, selected: list[str], say: Callable[[str], None]
    ) -> None:
        self.results_dir, self.run_id, self.say = results_dir, run_id, say
        self.selected = set(selected)
        self.t0 = time.monotonic()
        self.checks: dict[str, list[str]] | None = None  # test → selected IDs it covers
        self.seen: set[str] = set()
        self.done_ids: set[str] = set()
        self.failures = 0
        self.target_errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gate-progress", daemon=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.poll()  # the last records

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            self.poll()

    def poll(self) -> None:
        if self.checks is None:
            self.checks = self._collected()
            if self.checks is not None:
                ids = {i for v in self.checks.values() for i in v}
                n = len(self.checks)
                self.say(f"collected {n} checks covering {len(ids)} of {len(self.selected)} selected IDs")
        for record in self._new_records():
            self._on_record(record)

    def _collected(self) -> dict[str, list[str]] | None:
        for path in sorted(self.results_dir.glob(f"collected-{self.run_id}-*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            return {c["test"]: [i for i in c["ids"] if i in self.selected] for c in data["checks"]}
        return None

    def _new_records(self) -> list[dict[str, Any]]:
        paths = sorted(self.results_dir.glob("runs-*.jsonl"))
        fresh: dict[str, dict[str, Any]] = {}
        for r in read_records(paths, strict=False):
            if r["run_id"] == self.run_id and r["test_id"] not in self.seen:
                fresh.setdefault(r["test_id"], r)  # one line per check, whatever the files hold
        self.seen |= set(fresh)
        return list(fresh.values())

    def _on_record(self, record: dict[str, Any]) -> None:
        if record["outcome"] in ("failed", "error"):
            self._on_failure(record)
        if self.checks is None:
            return
        for bid in record["behaviour_ids"]:
            if bid in self.selected and bid not in self.done_ids and self._all_ran(bid):
                self.done_ids.add(bid)
                self.say(self._line(bid))

    def _all_ran(self, bid: str) -> bool:
        assert self.checks is not None
        return all(test in self.seen for test, ids in self.checks.items() if bid in ids)

    def _on_failure(self, record: dict[str, Any]) -> None:
        reason = str(record.get("reason") or "")
        is_target = reason.startswith(TARGET_ERROR_PREFIX)
        self.target_errors += is_target
        self.failures += not is_target
        kind = "TARGET ERROR" if is_target else "FAIL" if record["outcome"] == "failed" else "ERROR"
        ids = ",".join(record["behaviour_ids"]) or "-"
        short = reason.removeprefix(TARGET_ERROR_PREFIX).splitlines()[0][:180] if reason else "(no reason)"
        name = record["test_id"].removeprefix("conformance/checks/")
        evidence = evidence_path(self.results_dir, record["test_id"])
        where = f"  [{evidence}]" if evidence.is_file() else ""
        self.say(f"{kind:<12} {ids}  {name}: {short}{where}")

    def _line(self, bid: str) -> str:
        assert self.checks is not None
        elapsed = time.monotonic() - self.t0
        done, total = len(self.seen & set(self.checks)), len(self.checks)
        left = f", ~{clock(elapsed / done * (total - done))} left" if 0 < done < total else ""
        bad = f", {self.failures} failed" + (
            f", {self.target_errors} target errors" if self.target_errors else ""
        )
        ids_total = len({i for v in self.checks.values() for i in v})
        return (
            f"[{len(self.done_ids):>3}/{ids_total} IDs, {done}/{total} checks{bad}, {clock(elapsed)}{left}]"
            f" {bid} done"
        )
