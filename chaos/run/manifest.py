"""What a run directory holds, written last, and its verification before any verdict (ring: drivers).

A run writes ``manifest.json`` after every other file of its directory: per file (path relative
to the directory) its byte size, line count and sha256, and the kit's version and commit. It is
written to a temporary name, flushed and renamed, so a directory either has a whole manifest or
none. :func:`verify` checks a directory against it before anything is judged: a missing, empty,
truncated, altered or unreadable file — or no manifest at all — is an :class:`EvidenceError`
naming the file, and the run is then ``unknown``, never valid and never invalid.

``python -m chaos.run.manifest DIR...`` writes the manifest of directories whose files you vouch
for (the checked-in captures under ``tests/chaos/checkers/data``); a run writes its own.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST",
    "NO_MANIFEST",
    "EvidenceError",
    "FileEntry",
    "kit_commit",
    "kit_version",
    "main",
    "read_manifest",
    "verify",
    "write_manifest",
]

MANIFEST = "manifest.json"
FORMAT = 1
NO_MANIFEST = "no manifest: the run did not finish or was written by an older kit"
_REPO = Path(__file__).resolve().parents[2]


class EvidenceError(ValueError):
    """Evidence a verdict cannot be built on; the message names the file (and line) and why."""


@dataclass(frozen=True)
class FileEntry:
    bytes: int
    lines: int
    sha256: str

    @classmethod
    def of(cls, path: Path) -> FileEntry:
        digest, size, lines = hashlib.sha256(), 0, 0
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                lines += chunk.count(b"\n")
        return cls(size, lines, digest.hexdigest())


def kit_version() -> str | None:
    try:
        return metadata.version("kafka-zk-controller-kit")
    except metadata.PackageNotFoundError:
        return None


def kit_commit() -> str | None:
    """The commit of the kit's checkout (None outside a git checkout)."""
    with contextlib.suppress(Exception):
        out = subprocess.run(
            ["git", "-C", str(_REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip() or None
    return None


def _files(run_dir: Path) -> list[str]:
    return sorted(
        p.relative_to(run_dir).as_posix()
        for p in run_dir.rglob("*")
        if p.is_file() and p.name != MANIFEST and not p.name.endswith(".manifest-tmp")
    )


def write_manifest(run_dir: Path, *, commit: str | None = None) -> dict[str, Any]:
    """Write ``run_dir/manifest.json`` for every file now in ``run_dir`` (atomically: a temporary
    file, fsync, rename, fsync of the directory); returns what it wrote."""
    body: dict[str, Any] = {
        "format": FORMAT,
        "kit": {"version": kit_version(), "commit": commit if commit is not None else kit_commit()},
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": {name: FileEntry.of(run_dir / name).__dict__ for name in _files(run_dir)},
    }
    tmp = run_dir / f"{MANIFEST}.{os.getpid()}.manifest-tmp"
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(body, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(run_dir / MANIFEST)
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return body


def read_manifest(run_dir: Path) -> Mapping[str, FileEntry]:
    """The files ``run_dir``'s manifest lists; :class:`EvidenceError` when there is none or it
    is not one."""
    path = run_dir / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvidenceError(NO_MANIFEST) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{MANIFEST}: unreadable ({exc})") from None
    try:
        body = json.loads(text)
        version = body["format"]
        files = {
            n: FileEntry(int(e["bytes"]), int(e["lines"]), str(e["sha256"])) for n, e in body["files"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EvidenceError(f"{MANIFEST}: not a manifest ({type(exc).__name__}: {exc})") from None
    if version != FORMAT:
        raise EvidenceError(f"{MANIFEST}: format {version!r}, this kit reads format {FORMAT}")
    return files


def verify(run_dir: Path, required: Iterable[str] = ()) -> Mapping[str, FileEntry]:
    """Check every file ``run_dir``'s manifest lists; raise :class:`EvidenceError` on the first
    that is missing, empty, truncated, altered or unreadable, or when a ``required`` file is not
    listed. Returns the manifest's files."""
    if not run_dir.exists():
        raise EvidenceError("no such directory")
    if not run_dir.is_dir():
        raise EvidenceError("not a directory")
    try:
        os.listdir(run_dir)
        present = set(_files(run_dir))
    except OSError as exc:
        raise EvidenceError(f"unreadable directory ({exc.strerror or exc})") from None
    listed = read_manifest(run_dir)
    for name in required:
        if name not in listed:
            where = "present but not in the manifest" if name in present else "missing"
            raise EvidenceError(f"{name}: {where}")
    for name, want in sorted(listed.items()):
        _check_file(run_dir, name, want)
    return listed


def _check_file(run_dir: Path, name: str, want: FileEntry) -> None:
    try:
        got = FileEntry.of(run_dir / name)
    except FileNotFoundError:
        raise EvidenceError(f"{name}: missing (the manifest lists {want.bytes} bytes)") from None
    except OSError as exc:
        raise EvidenceError(f"{name}: unreadable ({exc})") from None
    if got == want:
        return
    if got.bytes == 0:
        raise EvidenceError(f"{name}: empty (the manifest says {want.bytes} bytes, {want.lines} lines)")
    sizes = f"{got.bytes} bytes and {got.lines} lines where {want.bytes} and {want.lines} were written"
    if got.bytes < want.bytes:
        raise EvidenceError(f"{name}: truncated or altered: {sizes}")
    if got.bytes > want.bytes:
        raise EvidenceError(f"{name}: altered: {sizes}")
    raise EvidenceError(
        f"{name}: altered: its sha256 differs from the manifest's ({want.bytes} bytes either way)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m chaos.run.manifest",
        description="Write the manifest of directories whose files you vouch for (a run writes its own).",
    )
    p.add_argument("dirs", type=Path, nargs="+", help="directories to write a manifest.json in")
    args = p.parse_args(argv)
    bad = [d for d in args.dirs if not d.is_dir()]
    if bad:
        print(
            f"python -m chaos.run.manifest: error: not a directory: {', '.join(map(str, bad))}",
            file=sys.stderr,
        )
        return 2
    for d in args.dirs:
        body = write_manifest(d)
        print(f"{d / MANIFEST}: {len(body['files'])} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
