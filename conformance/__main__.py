"""``python -m conformance``: the conformance app's command line (conformance ring).

With no subcommand (or ``run``) it runs the gate (:mod:`conformance.gate`): the suite against a
target, the matrix, the certificate. Every other subcommand is a module with a ``main(argv)``
named in :data:`SUBCOMMANDS`; ``python -m conformance help`` lists them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import cast

#: subcommand → (``module`` with ``main(argv) -> int``, or ``module:function``; one line for the list)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("conformance.gate", "run the suite against a target, print the matrix, write the certificate"),
    "doctor": (
        "conformance.doctor",
        "start one node of a target and say exactly what is wrong with it (the preflight)",
    ),
    "verify": ("conformance.verify", "check a signed certificate: signature, catalogue, coverage, replay"),
    "keygen": ("conformance.keys:keygen", "write an ed25519 key pair for signing certificates"),
    "sign": ("conformance.keys:sign", "sign an existing certificate.json"),
}


def usage() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = [
        "usage: python -m conformance [SUBCOMMAND] [options]",
        "",
        "subcommands (default: run; '<subcommand> --help' says more):",
        *(f"  {name:<{width}}  {what}" for name, (_, what) in SUBCOMMANDS.items()),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("help", "--commands"):
        print(usage())
        return 0
    name = args[0] if args and args[0] in SUBCOMMANDS else "run"
    if args and args[0] == name:
        args = args[1:]
    module_name, _, function = SUBCOMMANDS[name][0].partition(":")
    module = importlib.import_module(module_name)
    return cast(Callable[[Sequence[str]], int], getattr(module, function or "main"))(args)


if __name__ == "__main__":
    sys.exit(main())
