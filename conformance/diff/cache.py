"""Reference traces by (scenario, profile, kit version): cached or shipped as golden (conformance ring).

The reference's trace of a scenario depends only on the scenario, the behaviour profile and the
kit: the reference's sources, the platform that starts and observes it, and this package (the
generator, executors, barrier and normaliser). :func:`kit_version` hashes exactly those files, so
a trace is reused only while none of them changed — a second run against another target runs only
the target. Lookups try the golden folders first (``conformance/diff/golden/`` and
``$KZK_DIFF_GOLDEN``: written by ``python -m conformance diff golden``, shipped with the kit), then
the user cache (``$KZK_DIFF_CACHE`` or ``~/.cache/kzk-kit/diff``); new traces go to the user cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from cluster.targets import REPO_ROOT

__all__ = ["GOLDEN_DIR", "ReferenceCache", "kit_version"]

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
#: What the reference's trace depends on (directories hashed recursively, *.py and *.toml).
HASHED = ("reference_controller", "kafkawire", "probes", "harness", "cluster", "conformance/diff")


@functools.cache
def kit_version() -> str:
    digest = hashlib.sha256()
    for top in HASHED:
        for path in sorted((REPO_ROOT / top).rglob("*")):
            if (
                path.suffix in (".py", ".toml")
                and "__pycache__" not in path.parts
                and "golden" not in path.parts
            ):
                digest.update(path.relative_to(REPO_ROOT).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def user_cache_dir() -> Path:
    root = os.environ.get("KZK_DIFF_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "kzk-kit" / "diff"


class ReferenceCache:
    def __init__(self, profile: str, *, version: str | None = None, enabled: bool = True) -> None:
        self.profile, self.version, self.enabled = profile, version or kit_version(), enabled
        golden = [
            GOLDEN_DIR,
            *(Path(p) for p in os.environ.get("KZK_DIFF_GOLDEN", "").split(os.pathsep) if p),
        ]
        self.read_dirs = [d / self._sub for d in golden] + [user_cache_dir() / self._sub]
        self.write_dir = user_cache_dir() / self._sub

    @property
    def _sub(self) -> str:
        return f"{self.profile}-{self.version}"

    def get(self, scenario_key: str) -> dict[str, Any] | None:
        """The reference's trace of the scenario, from the first dir that holds a usable one: a
        file that does not parse, is not a whole reference trace (status ``ok``), or is the trace
        of another scenario (a renamed or swapped file) is passed over — the reference then runs."""
        if not self.enabled:
            return None
        for d in self.read_dirs:
            path = d / f"{scenario_key}.json"
            with contextlib.suppress(OSError, ValueError):
                trace = json.loads(path.read_text(encoding="utf-8"))
                if (
                    isinstance(trace, dict)
                    and trace.get("status") == "ok"
                    and trace.get("scenario") == scenario_key
                    and isinstance(trace.get("segments"), list)
                ):
                    return trace
        return None

    def put(self, scenario_key: str, trace: dict[str, Any], directory: Path | None = None) -> Path:
        """Store an ``ok`` trace (atomically: a reader never sees half a file)."""
        target = (directory / self._sub) if directory is not None else self.write_dir
        target.mkdir(parents=True, exist_ok=True)
        path = target / f"{scenario_key}.json"
        fd, tmp = tempfile.mkstemp(dir=target, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(trace, fh, separators=(",", ":"), default=str)
        os.replace(tmp, path)
        return path
