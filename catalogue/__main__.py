"""Show the behaviour catalogue: every behaviour ID, one line each or as Markdown, or compared with the spec.

The catalogue package's command line (platform ring).

``--markdown`` prints ``CATALOGUE.md``; ``--spec`` compares the catalogue with every
``behaviours*.md`` of the spec folder (``$KZK_SPEC_DIR`` or ``../shared/spec``) and exits 1 when
they differ; with no option, one line per ID.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import catalogue
from catalogue.docs import render_markdown


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m catalogue", description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group()
    what.add_argument("--markdown", action="store_true", help="print the catalogue as Markdown")
    what.add_argument("--spec", action="store_true", help="compare with the spec (exit 1 if they differ)")
    args = p.parse_args(argv)
    if args.markdown:
        sys.stdout.write(render_markdown())
        return 0
    if args.spec:
        result = catalogue.compare_with_spec()
        print(result.describe())
        return 1 if result.status == "differs" else 0
    for b in catalogue.CATALOGUE:
        print(f"{b.id:<13} {b.title}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
