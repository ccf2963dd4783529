"""Container images built offline from Debian's packages (ring: drivers).

No registry is reachable on the kit's machines, so the default images are built locally:

=============  ==========================================================================
image          how
=============  ==========================================================================
zookeeper      ``debootstrap --variant=minbase`` of Debian bookworm with OpenJDK 17 and
               ZooKeeper 3.8 (Debian's ``zookeeper`` package), trimmed, ``docker import``.
node base      the same with ``python3`` (Debian's 3.11) only.
node           ``FROM`` the node base, plus the node's runtime dependencies (kazoo, kio and
               theirs, installed by the host's pip with ``--target`` at the venv's exact
               versions: a ``kzk-node-deps:<hash>`` layer image) and the
               ``reference_controller`` sources; ``docker build`` of short Dockerfiles
               (no pull: the bases are local).
=============  ==========================================================================

Every image is tagged with a content hash of its inputs (builder version, suite, package list,
dependency versions, source files), so an image is built once and rebuilt only when an input
changes. Building the node image after a source change reuses the node base and the dependency
image (a ``COPY`` of the sources: seconds).

A user with a registry passes image names instead (e.g. ``zookeeper:3.8``); then nothing is
built, and a name that is neither local nor pullable is an :class:`ImageNotFound` naming the
image and the build command.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BUILD_COMMAND",
    "BuiltImage",
    "DockerUnavailable",
    "ImageBuildError",
    "ImageError",
    "ImageNotFound",
    "build_images",
    "docker_available",
    "ensure_node_image",
    "ensure_zookeeper_image",
    "image_exists",
]

#: Bump when the way images are built changes: every tag changes with it.
BUILDER_VERSION = "1"
SUITE = "bookworm"
BUILD_COMMAND = "python -m harness build-images"
ZOOKEEPER_PACKAGES = ("openjdk-17-jre-headless", "zookeeper")
NODE_PACKAGES = ("python3",)
#: The node's runtime distributions (no pyspark, no test tools): what ``python -m
#: reference_controller.node`` imports, and what those import.
NODE_DISTRIBUTIONS = ("kazoo", "kio", "crc32c", "typing-extensions")
#: Trimmed from every root filesystem: package caches and documentation (about 200 MB).
_TRIM = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale")
_REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULT_MIRROR = "http://deb.debian.org/debian"


class ImageError(Exception):
    """Root of this module's errors."""


class DockerUnavailable(ImageError):
    """No Docker daemon answers."""


class ImageNotFound(ImageError):
    """A named image is neither local nor pullable."""

    def __init__(self, image: str, detail: str = "") -> None:
        super().__init__(
            f"image {image!r} is not available locally and could not be pulled"
            f"{': ' + detail if detail else ''}. "
            f"Build the kit's default images with `{BUILD_COMMAND}`, or pass the name of an image you have."
        )
        self.image = image


class ImageBuildError(ImageError):
    """A build step failed; ``step`` names it and ``output`` is what it printed."""

    def __init__(self, step: str, output: str) -> None:
        tail = "\n".join(output.splitlines()[-40:])
        super().__init__(f"image build step failed: {step}\n--- output (last 40 lines) ---\n{tail}")
        self.step = step
        self.output = output


@dataclass(frozen=True)
class BuiltImage:
    """A local image: its tag, size in bytes, and whether this call built it."""

    tag: str
    size_bytes: int
    built: bool
    seconds: float


def docker_available() -> str | None:
    """``None`` when a Docker daemon answers, else the reason (for skips and errors)."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed (as root: apt-get install -y docker.io; then start dockerd)"
    proc = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"], check=False, capture_output=True, text=True
    )
    if proc.returncode != 0:
        return (
            "no Docker daemon answers (`docker info` failed: "
            f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'no output'}); "
            "start it with `bash scripts/setup_docker.sh` (as root)"
        )
    return None


def image_exists(image: str) -> bool:
    proc = subprocess.run(["docker", "image", "inspect", image], check=False, capture_output=True, text=True)
    return proc.returncode == 0


def _image_size(image: str) -> int:
    proc = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Size}}", image],
        check=False,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout.strip() or 0)


def _run(step: str, argv: Sequence[str], *, stdin: int | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, stdin=stdin, cwd=cwd)
    if proc.returncode != 0:
        raise ImageBuildError(
            f"{step} (`{' '.join(argv)}`, exit {proc.returncode})", proc.stdout + proc.stderr
        )
    return proc.stdout


def _mirror() -> str:
    """The Debian mirror the host's apt uses (the only one reachable), else Debian's default."""
    explicit = os.environ.get("KZK_DEBIAN_MIRROR")
    if explicit:
        return explicit
    for source in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for line in source.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    return _DEFAULT_MIRROR


def _digest(parts: Iterable[str | bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _base_tag(name: str, packages: Sequence[str]) -> str:
    return f"kzk-{name}:{_digest([BUILDER_VERSION, SUITE, *packages])}"


def _debootstrap_image(tag: str, packages: Sequence[str]) -> None:
    """debootstrap → trim → ``docker import`` (the slow part: about 70 s + 10 s here)."""
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "debootstrap", "debootstrap is not installed (as root: apt-get install -y debootstrap)"
        )
    with tempfile.TemporaryDirectory(prefix="kzk-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        _run(
            f"debootstrap {SUITE} with {', '.join(packages)}",
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(packages)}",
                SUITE,
                str(rootfs),
                _mirror(),
            ],
        )
        for rel in _TRIM:
            target = rootfs / rel
            if target.is_dir():
                shutil.rmtree(target)
                target.mkdir(parents=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        try:
            _run(
                f"docker import as {tag}",
                ["docker", "import", "-", tag],
                stdin=tar.stdout.fileno() if tar.stdout else None,
            )
        finally:
            if tar.stdout:
                tar.stdout.close()
            tar.wait()


def _ensure_base(name: str, packages: Sequence[str]) -> BuiltImage:
    tag = _base_tag(name, packages)
    start = time.monotonic()
    built = False
    if not image_exists(tag):
        _debootstrap_image(tag, packages)
        built = True
    return BuiltImage(tag, _image_size(tag), built, time.monotonic() - start)


def ensure_zookeeper_image() -> BuiltImage:
    """The kit's ZooKeeper image (OpenJDK 17 + ZooKeeper 3.8 from Debian), built when missing."""
    _require_docker()
    return _ensure_base("zookeeper", ZOOKEEPER_PACKAGES)


def _node_requirements() -> list[str]:
    """``name==version`` of the node's runtime distributions, as installed in this venv."""
    out = []
    for dist in NODE_DISTRIBUTIONS:
        try:
            out.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError as exc:
            raise ImageBuildError(
                "resolve node dependencies", f"{dist} is not installed in this environment"
            ) from exc
    return out


#: The node's own package; the repository's other top-level packages it imports (transitively,
#: e.g. ``kafkawire``) go into the image with it.
NODE_PACKAGE = "reference_controller"
_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)


def _node_packages() -> list[str]:
    """``reference_controller`` and every first-party top-level package it imports, transitively."""
    found, todo = set(), [NODE_PACKAGE]
    while todo:
        name = todo.pop()
        if name in found or not (_REPO_ROOT / name / "__init__.py").is_file():
            continue
        found.add(name)
        for source in (_REPO_ROOT / name).rglob("*.py"):
            todo += _IMPORT.findall(source.read_text(encoding="utf-8", errors="replace"))
    return sorted(found)


def _node_sources() -> list[Path]:
    return sorted(
        p
        for name in _node_packages()
        for p in (_REPO_ROOT / name).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def _node_tag(base: str, requirements: Sequence[str], sources: Sequence[Path]) -> str:
    parts: list[str | bytes] = [BUILDER_VERSION, base, *requirements]
    for path in sources:
        parts += [str(path.relative_to(_REPO_ROOT)), path.read_bytes()]
    return f"kzk-node:{_digest(parts)}"


_DEPS_DOCKERFILE = """\
FROM {base}
COPY site /opt/kit/site
"""

_NODE_DOCKERFILE = """\
FROM {deps}
COPY src /opt/kit/src
ENV PYTHONPATH=/opt/kit/src:/opt/kit/site PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /opt/kit
"""


def _ensure_deps_image(base: str, requirements: Sequence[str]) -> tuple[str, bool]:
    """``kzk-node-deps:<hash>``: the node base + the pinned dependencies (pip is the slow step, so a
    source change does not repeat it)."""
    tag = f"kzk-node-deps:{_digest([BUILDER_VERSION, base, *requirements])}"
    if image_exists(tag):
        return tag, False
    with tempfile.TemporaryDirectory(prefix="kzk-deps-ctx-") as tmp:
        ctx = Path(tmp)
        _run(
            "pip install of the node's dependencies",
            [
                os.environ.get("KZK_PYTHON", _python()),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--target",
                str(ctx / "site"),
                *requirements,
            ],
        )
        (ctx / "Dockerfile").write_text(_DEPS_DOCKERFILE.format(base=base))
        _run(f"docker build of {tag}", ["docker", "build", "--quiet", "-t", tag, str(ctx)])
    return tag, True


def ensure_node_image() -> BuiltImage:
    """The kit's node image: Debian's Python 3.11 + kazoo/kio + ``reference_controller``."""
    _require_docker()
    start = time.monotonic()
    base = _ensure_base("node-base", NODE_PACKAGES)
    requirements = _node_requirements()
    sources = _node_sources()
    tag = _node_tag(base.tag, requirements, sources)
    if image_exists(tag):
        return BuiltImage(tag, _image_size(tag), False, time.monotonic() - start)
    deps, _ = _ensure_deps_image(base.tag, requirements)
    with tempfile.TemporaryDirectory(prefix="kzk-node-ctx-") as tmp:
        ctx = Path(tmp)
        for path in sources:
            dest = ctx / "src" / path.relative_to(_REPO_ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        (ctx / "Dockerfile").write_text(_NODE_DOCKERFILE.format(deps=deps))
        _run(f"docker build of {tag}", ["docker", "build", "--quiet", "-t", tag, str(ctx)])
    return BuiltImage(tag, _image_size(tag), True, time.monotonic() - start)


def _python() -> str:
    return sys.executable


def _require_docker() -> None:
    reason = docker_available()
    if reason is not None:
        raise DockerUnavailable(reason)


def build_images() -> list[BuiltImage]:
    """Build (or find) every default image; what ``python -m harness build-images`` runs.

    The two root filesystems are independent, so they are bootstrapped at the same time (the
    downloads overlap); the first error is raised."""
    _require_docker()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="kzk-image") as pool:
        zookeeper = pool.submit(ensure_zookeeper_image)
        node = pool.submit(ensure_node_image)
        return [zookeeper.result(), node.result()]


def require_image(image: str) -> str:
    """A user-named image: local, or pulled; else :class:`ImageNotFound` with the build command."""
    _require_docker()
    if image_exists(image):
        return image
    proc = subprocess.run(["docker", "pull", image], check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageNotFound(image, (proc.stderr.strip().splitlines() or ["pull failed"])[-1])
    return image
