"""Whether a campaign's ``--out`` can take its results (ring: drivers)."""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["out_problem"]


def out_problem(out: Path, probe_prefix: str = ".chaos-write-probe-") -> str | None:
    """Why ``out`` cannot take a campaign's results (None: it can); creates it when missing."""
    if out.exists() and not out.is_dir():
        return f"--out {out} exists and is not a directory; give a directory for the results"
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=probe_prefix):
            pass
    except OSError as exc:
        return f"--out {out}: cannot write there ({exc.strerror or exc}); give a directory you can write to"
    return None
