"""Each handler group's port is exactly what the group uses of the controller (ring: tests of the
architecture).

mypy keeps a handler inside its port (a member it does not declare is a type error); this test
keeps the port from growing past the handler: for every `Protocol` of
`reference_controller/controller/handler_ports.py`, its members (its own and its bases') must be
exactly what the functions typed with it use — the members they touch on the controller, plus the
whole port of every handler or helper they pass the controller to. It also refuses a member that a
port declares although a base already has it, a port no function uses, and a handler module that
takes the controller without a port. The modules are parsed with `ast` (nothing is imported).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER = ROOT / "reference_controller" / "controller"
PORTS = CONTROLLER / "handler_ports.py"
PACKAGE = "reference_controller.controller"
HANDLER_MODULES = (
    "common",
    "election",
    "failover",
    "brokers",
    "topics",
    "reassignment",
    "api_reassignment",
    "notifications",
    "leader_elections",
    "shutdown",
)


# ---- the ports --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Port:
    name: str
    own: frozenset[str]
    bases: tuple[str, ...]


def parse_ports(source: str) -> dict[str, Port]:
    ports: dict[str, Port] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = tuple(b.id for b in node.bases if isinstance(b, ast.Name))
        if "Protocol" not in bases:
            continue
        own = {
            item.target.id
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
        } | {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        ports[node.name] = Port(node.name, frozenset(own), tuple(b for b in bases if b != "Protocol"))
    return ports


def members(ports: dict[str, Port], name: str) -> frozenset[str]:
    port = ports[name]
    inherited = frozenset().union(*(members(ports, b) for b in port.bases)) if port.bases else frozenset()
    return port.own | inherited


def inherited(ports: dict[str, Port], name: str) -> frozenset[str]:
    return (
        frozenset().union(*(members(ports, b) for b in ports[name].bases))
        if ports[name].bases
        else frozenset()
    )


# ---- the handlers -----------------------------------------------------------------------------
@dataclass
class Function:
    """A function (or method) that takes the controller through a port."""

    module: str
    name: str
    port: str
    node: ast.FunctionDef
    controller: set[str] = field(default_factory=set)  # how the body names the controller


@dataclass
class Module:
    name: str
    tree: ast.Module
    modules: dict[str, str]  # local alias -> handler module
    imported: dict[str, tuple[str, str]]  # local name -> (handler module, function or class)


def _port_of(annotation: ast.expr | None, ports: dict[str, Port]) -> str | None:
    if isinstance(annotation, ast.Name) and annotation.id in ports:
        return annotation.id
    if isinstance(annotation, ast.Constant) and annotation.value in ports:
        return str(annotation.value)
    return None


def parse_module(name: str) -> Module:
    tree = ast.parse((CONTROLLER / f"{name}.py").read_text(), filename=f"{name}.py")
    modules: dict[str, str] = {}
    imported: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            for alias in node.names:
                if alias.name in HANDLER_MODULES:
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            source = node.module.removeprefix(PACKAGE + ".")
            if source in HANDLER_MODULES:
                for alias in node.names:
                    imported[alias.asname or alias.name] = (source, alias.name)
    return Module(name, tree, modules, imported)


def functions(module: Module, ports: dict[str, Port]) -> Iterator[Function]:
    """Module functions and methods whose parameter is typed with a port; a class whose
    `__init__` keeps such a parameter as `self.ctl` makes its other methods users too."""
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef):
            for arg in node.args.args:
                port = _port_of(arg.annotation, ports)
                if port is not None:
                    yield Function(module.name, node.name, port, node, {arg.arg})
        elif isinstance(node, ast.ClassDef):
            init = next(
                (f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None
            )
            typed = [_port_of(a.annotation, ports) for a in init.args.args] if init else []
            port = next((p for p in typed if p is not None), None)
            if port is None:
                continue
            for method in node.body:
                if isinstance(method, ast.FunctionDef):
                    yield Function(module.name, f"{node.name}.{method.name}", port, method, {"self.ctl"})


def _names_controller(expr: ast.expr, fn: Function) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id in fn.controller
    return (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and f"{expr.value.id}.{expr.attr}" in fn.controller
    )


def _callee(call: ast.Call, module: Module) -> tuple[str, str] | None:
    """(handler module, function or class) called, or None when it is not a handler's."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "partial" and call.args:
        func = call.args[0]
    if isinstance(func, ast.Name):
        return module.imported.get(func.id, (module.name, func.id))
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in module.modules
    ):
        return (module.modules[func.value.id], func.attr)
    return None


def required(
    fn: Function, module: Module, ports: dict[str, Port], entry: dict[tuple[str, str], str]
) -> set[str]:
    """What the function needs of the controller: the members it touches, and the whole port of
    every handler of another port it hands the controller to (its port must be a subtype of
    that one, or mypy refuses the call)."""
    need: set[str] = set()
    for node in ast.walk(fn.node):
        if isinstance(node, ast.Attribute) and _names_controller(node.value, fn):
            need.add(node.attr)
        elif isinstance(node, ast.Call):
            passed = [*node.args, *(k.value for k in node.keywords)]
            callee = _callee(node, module)
            if callee not in entry or not any(_names_controller(a, fn) for a in passed):
                continue
            if entry[callee] != fn.port:  # a function of the same port counts by its own uses
                need |= members(ports, entry[callee])
    return need


# ---- the checks -------------------------------------------------------------------------------
def analyse() -> tuple[dict[str, Port], dict[str, set[str]], list[Function]]:
    ports = parse_ports(PORTS.read_text())
    parsed = {name: parse_module(name) for name in HANDLER_MODULES}
    found = [fn for module in parsed.values() for fn in functions(module, ports)]
    # a class counts by its methods' port: constructing it hands it the controller
    entry = {(fn.module, fn.name.split(".")[0]): fn.port for fn in found}
    use: dict[str, set[str]] = {name: set() for name in ports}
    for fn in found:
        use[fn.port] |= required(fn, parsed[fn.module], ports, entry)
    return ports, use, found


def test_every_port_is_exactly_what_its_handlers_use() -> None:
    ports, use, _ = analyse()
    problems = []
    for name in ports:
        declared = members(ports, name)
        if not use[name]:
            problems.append(f"{name}: no handler takes the controller through it")
            continue
        if declared - use[name]:
            problems.append(f"{name} declares what its handlers never use: {sorted(declared - use[name])}")
        if use[name] - declared:
            problems.append(f"{name} lacks what its handlers use: {sorted(use[name] - declared)}")
    assert not problems, "\n".join(problems)


def test_no_port_redeclares_a_member_of_its_bases() -> None:
    ports = parse_ports(PORTS.read_text())
    twice = {name: sorted(ports[name].own & inherited(ports, name)) for name in ports}
    assert not {n: m for n, m in twice.items() if m}, twice


def test_every_handler_module_takes_the_controller_through_a_port() -> None:
    """A handler function whose parameter is the controller (`ctl`) is typed with a port."""
    ports = parse_ports(PORTS.read_text())
    untyped = []
    for name in HANDLER_MODULES:
        for node in ast.walk(parse_module(name).tree):
            if isinstance(node, ast.FunctionDef):
                untyped += [
                    f"{name}.{node.name}({arg.arg})"
                    for arg in node.args.args
                    if arg.arg == "ctl" and _port_of(arg.annotation, ports) is None
                ]
    assert not untyped, untyped


def test_every_module_that_uses_a_port_is_checked() -> None:
    users = sorted(
        p.stem for p in CONTROLLER.glob("*.py") if "handler_ports import" in p.read_text() and p != PORTS
    )
    assert set(users) <= set(HANDLER_MODULES), users


def test_the_checker_finds_a_member_too_many_and_one_too_few(tmp_path: Path) -> None:
    """The analysis on a planted port and handler: the extra and the missing member are named."""
    ports = parse_ports(
        "class Base(Protocol):\n    a: int\n\nclass P(Base, Protocol):\n    b: int\n    c: int\n"
        "    def m(self) -> None: ...\n"
    )
    assert members(ports, "P") == {"a", "b", "c", "m"}
    tree = ast.parse(
        "def h(ctl: P) -> None:\n    ctl.a\n    ctl.m()\n    ctl.d\n    g(ctl)\n\n"
        "def g(ctl: Base) -> None:\n    ctl.a\n"
    )
    module = Module("planted", tree, {}, {})
    found = list(functions(module, ports))
    entry = {(fn.module, fn.name): fn.port for fn in found}
    need = required(found[0], module, ports, entry)
    assert need == {"a", "m", "d"}
    assert members(ports, "P") - need == {"b", "c"}
    assert need - members(ports, "P") == {"d"}
