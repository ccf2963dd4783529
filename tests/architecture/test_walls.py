"""The house style's walls, enforced on the source tree (ring: tests of the architecture).

Each wall is a rule "modules under X never import Y". The check parses every module with
:mod:`ast` (no import side effects), resolves relative imports, and fails with the offending
file, line and import. Imports guarded by ``if TYPE_CHECKING:`` count too: a wall is about what
a module may know, not only what it loads.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Wall:
    name: str
    under: str
    forbidden: tuple[str, ...]
    exempt: tuple[str, ...] = ()


#: The apps stand on the platform; the platform never imports an app.
APPS = ("conformance", "chaos", "reports", "bench")
#: The platform, lowest first: each package may import only those before it (and the standard
#: library and third-party packages). ``records`` and ``catalogue`` are pure data and import
#: none of the I/O packages.
PLATFORM = ("kafkawire", "probes", "harness", "cluster")
PURE_DATA = ("records", "catalogue")

WALLS = (
    *(
        Wall(
            f"the platform never imports an app ({package})",
            package,
            (*APPS, "reference_controller"),
        )
        for package in (*PLATFORM, *PURE_DATA)
    ),
    *(
        Wall(
            f"the platform is layered: {package} sits below {', '.join(PLATFORM[i + 1 :])}",
            package,
            PLATFORM[i + 1 :],
        )
        for i, package in enumerate(PLATFORM[:-1])
    ),
    *(
        Wall(f"{package} is pure data: no I/O package", package, ("harness", "cluster", "kazoo", "socket"))
        for package in PURE_DATA
    ),
    Wall("chaos is an app: it never imports another app", "chaos", ("conformance", "reports", "bench")),
    Wall("reports is an app: it never imports another app", "reports", ("conformance", "chaos", "bench")),
    Wall(
        "conformance sees targets only through target definitions and probes",
        "conformance",
        ("reference_controller", "chaos", "reports", "bench"),
    ),
    Wall(
        "the probes library is usable outside pytest and the reference",
        "probes",
        ("pytest", "reference_controller"),
    ),
    Wall(
        "the controller's decisions and core do no I/O, threads, time or randomness",
        "reference_controller/controller",
        (
            "kazoo",
            "socket",
            "threading",
            "asyncio",
            "time",
            "random",
            "reference_controller.controller.driver",
        ),
        exempt=("reference_controller/controller/driver",),
    ),
    Wall(
        "the controller's handlers use their ports (handler_ports), never the core that calls them",
        "reference_controller/controller",
        ("reference_controller.controller.core",),
        exempt=("reference_controller/controller/core.py", "reference_controller/controller/driver"),
    ),
    Wall(
        "the node reaches ZooKeeper through its port (NodeZkPort): only its kazoo driver and the "
        "assembly that starts the session import kazoo",
        "reference_controller/node",
        ("kazoo",),
        exempt=("reference_controller/node/zk_driver.py", "reference_controller/node/server.py"),
    ),
    Wall(
        "the product never imports its test doubles (the in-memory ZooKeeper, the manual clock)",
        "reference_controller",
        ("reference_controller.testing",),
        exempt=("reference_controller/testing",),
    ),
    Wall(
        "the reference never imports the kit that certifies it",
        "reference_controller",
        (*APPS, "probes", "harness", "cluster", "records", "catalogue"),
    ),
    Wall(
        "the wire layer is shared by the reference and the probes, so it imports neither",
        "kafkawire",
        ("reference_controller", "probes", "harness", "conformance", "chaos", "pytest"),
    ),
    Wall(
        "chaos checkers never import the implementation under test",
        "chaos/checkers",
        ("reference_controller",),
    ),
    Wall(
        "chaos checkers are pure: no ZooKeeper client, sockets, servers or clusters (the final state "
        "is built in chaos/final_state.py)",
        "chaos/checkers",
        (
            "kazoo",
            "socket",
            "harness",
            "cluster",
            "confluent_kafka",
            "kio",
            "chaos.links",
            "chaos.final_state",
        ),
    ),
    Wall("chaos history is pure data", "chaos/history.py", ("reference_controller",)),
)


@dataclass(frozen=True)
class ImportSite:
    path: Path
    line: int
    module: str


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, path: Path, root: Path) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        package = _module_name(path, root).split(".")
        if path.name != "__init__.py":
            package.pop()
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, node.module] if node.module else package)
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def imports_of(path: Path, root: Path = ROOT) -> Iterator[ImportSite]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield ImportSite(path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            for module in _resolve(node, path, root):
                yield ImportSite(path, node.lineno, module)


def _matches(module: str, forbidden: str) -> bool:
    return module == forbidden or module.startswith(forbidden + ".")


def files_under(rel: str, root: Path = ROOT) -> list[Path]:
    target = root / rel
    if target.is_file():
        return [target]
    return sorted(p for p in target.rglob("*.py") if "__pycache__" not in p.parts)


def violations(wall: Wall, root: Path = ROOT) -> list[str]:
    out = []
    for path in files_under(wall.under, root):
        rel = path.relative_to(root).as_posix()
        if any(rel == e or rel.startswith(e + "/") for e in wall.exempt):
            continue
        for site in imports_of(path, root):
            for forbidden in wall.forbidden:
                if _matches(site.module, forbidden):
                    out.append(f"{rel}:{site.line} imports {site.module} (forbidden: {forbidden})")
    return sorted(set(out))


@pytest.mark.parametrize("wall", WALLS, ids=[w.name for w in WALLS])
def test_wall_holds(wall: Wall) -> None:
    found = violations(wall)
    assert not found, f"wall broken — {wall.name}:\n" + "\n".join(found)


@pytest.mark.parametrize("wall", WALLS, ids=[w.name for w in WALLS])
def test_every_wall_guards_existing_code(wall: Wall) -> None:
    """A wall over an empty or misspelt path would pass on nothing."""
    assert files_under(wall.under), f"wall {wall.name!r} covers no file under {wall.under}"


def _wall_named(name: str) -> Wall:
    return next(w for w in WALLS if w.name == name)


def test_the_checker_sees_a_planted_violation(tmp_path: Path) -> None:
    """The scanner finds plain, dotted, from- and relative imports, and honours exemptions."""
    pkg = tmp_path / "reference_controller" / "controller"
    (pkg / "driver").mkdir(parents=True)
    (pkg / "planted.py").write_text(
        "import time\nfrom kazoo.client import KazooClient\nfrom .driver import zk_driver\n"
    )
    (pkg / "driver" / "ok.py").write_text("import kazoo\nimport threading\n")
    found = violations(
        _wall_named("the controller's decisions and core do no I/O, threads, time or randomness"),
        root=tmp_path,
    )
    assert found == [
        "reference_controller/controller/planted.py:1 imports time (forbidden: time)",
        "reference_controller/controller/planted.py:2 imports kazoo.client (forbidden: kazoo)",
        "reference_controller/controller/planted.py:2 imports kazoo.client.KazooClient (forbidden: kazoo)",
        "reference_controller/controller/planted.py:3 imports reference_controller.controller.driver "
        "(forbidden: reference_controller.controller.driver)",
        "reference_controller/controller/planted.py:3 imports "
        "reference_controller.controller.driver.zk_driver "
        "(forbidden: reference_controller.controller.driver)",
    ]


def test_the_pure_checker_wall_sees_io_in_the_checkers(tmp_path: Path) -> None:
    pkg = tmp_path / "chaos" / "checkers"
    pkg.mkdir(parents=True)
    (pkg / "planted.py").write_text(
        "import socket\nfrom kazoo.client import KazooClient\nfrom chaos import final_state\n"
    )
    found = violations(next(w for w in WALLS if w.name.startswith("chaos checkers are pure")), root=tmp_path)
    assert found == [
        "chaos/checkers/planted.py:1 imports socket (forbidden: socket)",
        "chaos/checkers/planted.py:2 imports kazoo.client (forbidden: kazoo)",
        "chaos/checkers/planted.py:2 imports kazoo.client.KazooClient (forbidden: kazoo)",
        "chaos/checkers/planted.py:3 imports chaos.final_state (forbidden: chaos.final_state)",
    ]
