"""``python -m harness``: the harness's command line (see :mod:`harness.cli`)."""

from __future__ import annotations

import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
